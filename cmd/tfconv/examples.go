package main

import "github.com/spf13/cobra"

// examples are the Examples sections of the commands' --help, by command
// name: 2–4 invocations of the installed tfconv each, the everyday ones
// first. They sit in one table rather than in each command's literal so
// that TestEveryCommandHasExamples can name a command that has none, and
// setExamples fills them in once the commands are built. A command that
// sets its own Example keeps it.
var examples = map[string]string{
	"tfconv": `  tfconv convert ./Qwen2.5-0.5B-Instruct qwen2.5-0.5b-f16.gguf
  tfconv quantize qwen2.5-0.5b-f16.gguf qwen2.5-0.5b-Q4_K_M.gguf --type q4_k_m
  tfconv verify qwen2.5-0.5b-f16.gguf qwen2.5-0.5b-Q4_K_M.gguf
  tfconv inspect qwen2.5-0.5b-Q4_K_M.gguf`,
	"inspect": `  tfconv inspect Llama-3.2-1B-Instruct-Q4_K_M.gguf
  tfconv inspect ./Qwen2.5-0.5B-Instruct --tensors
  tfconv inspect model.gguf --ctx 8192 --kv-type q8_0
  tfconv inspect hf://Qwen/Qwen2.5-0.5B-Instruct-GGUF/qwen2.5-0.5b-instruct-q8_0.gguf --metadata`,
	"convert": `  tfconv convert ./Qwen2.5-0.5B-Instruct qwen2.5-0.5b-f16.gguf
  tfconv convert ./Llama-3.2-1B model-q8_0.gguf --outtype q8_0
  tfconv convert model-f16.gguf ./model-hf --to safetensors --max-shard-size 2GB
  tfconv convert ./my-lora adapter.gguf --base ./Llama-3.2-1B`,
	"merge-lora": `  tfconv merge-lora ./Llama-3.2-1B ./my-lora ./merged-hf
  tfconv merge-lora base-f16.gguf ./my-lora merged-f16.gguf
  tfconv merge-lora ./Llama-3.2-1B ./my-lora merged-q8_0.gguf --scale 0.5 --outtype q8_0`,
	"quantize": `  tfconv quantize model-f16.gguf model-Q4_K_M.gguf --type q4_k_m
  tfconv quantize model-f16.gguf model-IQ4_XS.gguf --type iq4_xs --imatrix imatrix.gguf
  tfconv quantize model-f16.gguf model-mix.gguf --target-bpw 4.5 --calib wiki.txt
  tfconv quantize model-f16.gguf model-Q8_0.gguf --type q8_0 --dry-run --json`,
	"synth": `  tfconv synth --like tinyllama-1.1b tiny.gguf
  tfconv synth --like llama-7b llama7b-2layers.gguf --layers 2 --type q8_0
  tfconv synth --like gpt2-124m ./gpt2-synth --to safetensors`,
	"card": `  tfconv card ./Qwen2.5-0.5B-Instruct-GGUF --base-model Qwen/Qwen2.5-0.5B-Instruct --license apache-2.0
  tfconv card ./gguf-out --verify q4_k_m.verify.json --verify q8_0.verify.json --force
  tfconv card ./gguf-out --quantized-by me --tag chat --json`,
	"plan": `  tfconv plan ./Llama-3.1-8B --type q4_k_m --split-max-size 2GB
  tfconv plan hf://moonshotai/Kimi-K2-Instruct --type q4_k_m --split-max-size 5GB --part 3/8 --json
  tfconv plan ./Qwen2.5-7B-Instruct --outtype bf16`,
	"check": `  tfconv check model.gguf
  tfconv check ./Qwen2.5-0.5B-Instruct
  tfconv check model.safetensors --json`,
	"run": `  tfconv run model.gguf --prompt "The capital of France is"
  tfconv run model.gguf --tokens 1,450,7483,310 --json
  tfconv run ./bert-base-uncased --prompt "Hello world" --out hidden.json`,
	"generate": `  tfconv generate model.gguf --prompt "Once upon a time" --max-new 64
  tfconv generate model.gguf --prompt "Write a haiku" --temperature 0.8 --top-p 0.95 --seed 42
  tfconv generate ./t5-small --prompt "translate English to German: Hello" --beams 4`,
	"bench": `  tfconv bench model-Q4_K_M.gguf
  tfconv bench model-Q8_0.gguf --prompt 512 --gen 64 --threads 8
  tfconv bench model-Q4_0.gguf --match-llamacpp --json`,
	"verify": `  tfconv verify model-f16.gguf model-Q4_K_M.gguf
  tfconv verify ./Qwen2.5-0.5B-Instruct model-q8_0.gguf --prompt "The quick brown fox" --positions
  tfconv verify model-f16.gguf model-Q4_K_M.gguf --prompt-file wiki.txt --report report.html
  tfconv verify model-Q4_K_M.gguf --save-baseline golden.json --prompt "Hello"`,
	"diff": `  tfconv diff model-f16.gguf model-q8_0.gguf
  tfconv diff ./model-hf model-f16.gguf --all
  tfconv diff a.safetensors b.safetensors --json`,
	"perplexity": `  tfconv perplexity model-Q4_K_M.gguf --file wiki.test.raw
  tfconv perplexity model-f16.gguf --file wiki.test.raw --ctx 512 --chunks 20 --json`,
	"imatrix": `  tfconv imatrix model-f16.gguf -f calibration.txt -o imatrix.gguf
  tfconv imatrix model-f16.gguf -f calibration.txt -c 512 --chunks 100 -o imatrix.dat
  tfconv quantize model-f16.gguf model-IQ3_M.gguf --type iq3_m --imatrix imatrix.gguf`,
	"edit": `  tfconv edit model.gguf --set general.name="My Model"
  tfconv edit model.gguf --out fixed.gguf --set tokenizer.ggml.add_bos_token=true:bool
  tfconv edit model.gguf --chat-template-file template.jinja
  tfconv edit model.gguf --delete general.url`,
}

// setExamples gives root and each of its commands its entry of examples
// (root's under "tfconv"), unless it has an Example of its own.
func setExamples(root *cobra.Command) {
	for _, c := range append(root.Commands(), root) {
		if c.Example == "" {
			c.Example = examples[c.Name()]
		}
	}
}
