package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tfconv/tfconv/convert"
	"github.com/tfconv/tfconv/internal/output"
)

type convertOptions struct {
	src, dst     string
	to           string
	outType      string
	force        bool
	json         bool
	arch         string
	maxShardSize string
	splitMaxSize string
	part         string
	resume       bool
	progress     bool
	base         string
	modelName    string
	metadata     string
	vocabOnly    bool
	dryRun       bool
	// mmproj, mmprojOnly, textOnly: what a multimodal checkpoint converts to.
	mmproj, mmprojOnly, textOnly bool
	// mmprojFile: GGUF → HF, the projector GGUF (--mmproj's third argument).
	mmprojFile    string
	listModels    bool
	allowOverflow bool
	// allowRequantize: GGUF → GGUF --outtype may re-encode quantized tensors.
	allowRequantize bool
	// requantize: no block pass-through; re-encode instead.
	requantize bool
	// bits and groupSize quantize MLX output ('quantize --to mlx').
	bits, groupSize int
	mlxMode         string // MLX's quantization mode ('quantize --to mlx --mode')
	// scheme is compressed-tensors' ('quantize --to compressed-tensors').
	scheme string
}

func newCmdConvert(a *app) *cobra.Command {
	opts := &convertOptions{}
	cmd := &cobra.Command{
		Use:   "convert SRC [DST] [MMPROJ]",
		Short: "Convert between Hugging Face safetensors, GGUF and native, architecture-aware",
		Long: `Convert turns a Hugging Face checkpoint into a GGUF that llama.cpp loads, a GGUF
back into a Hugging Face directory that transformers loads, and either into
tfconv's native format.

SRC is a safetensors file, a Hugging Face directory (config.json, single or
sharded safetensors or pytorch_model.bin, tokenizer files), an index .json, a
PyTorch .bin file (read without running its pickle), a GGUF file or split set,
or a native .tfn file. DST is a .gguf file, a .tfn file
(native) or a directory (Hugging Face layout); --to overrides the guess.

HF → GGUF follows llama.cpp's convert_hf_to_gguf.py: the same tensor names,
types, bytes and metadata keys (LLaMA's Q/K rows permuted, GPT-2's Conv1D
weights transposed, buffers and BERT's pooler dropped). Architectures: ` + strings.Join(convert.Supported(), ", ") + `.
GGUF → HF writes config.json, generation_config.json (causal LMs), the
safetensors (sharded above --max-shard-size) and the tokenizer files.
--split-max-size writes GGUF output as a gguf-split set (the first shard holds
all metadata; every shard split.no, split.count, split.tensors.count); any
shard of a set is a valid SRC. Native
output is a lossless repack of SRC (same names and metadata, side files
embedded); a native file converts onwards exactly like its source.
--to mlx writes the directory as mlx-lm saves it (Hugging Face names,
"format": "mlx" safetensors metadata); 'tfconv quantize SRC DIR --to mlx
--bits 4 --group-size 64' quantizes it as mlx_lm.convert -q does. An MLX
directory, quantized or not, is a SRC like any other (its layers read
dequantized exactly as mx.dequantize computes them).

general.name and the other general.* keys about the model are
derived as convert_hf_to_gguf.py derives them (without reading the model
card): from config.json's _name_or_path, else the folder's name — a
Hugging Face cache snapshot (…/models--ORG--NAME/snapshots/HASH) counts as
ORG/NAME, not HASH —, "TinyLlama-1.1B-Chat-v1.0" giving basename,
size label, finetune and version. --metadata FILE overrides them with the
converter's override JSON ({"general.name": "…", "general.version": "…",
"general.license": "…", "general.tags": […], "general.base_models":
[{"name": …}], …}); --model-name sets general.name over both. DST may be
omitted (the current directory) or, with --to gguf, be an existing
directory: the file is then named as the converter names it,
{basename or name}-{size label}-{finetune}-{version}-{FILE TYPE}.gguf
(Hf-2.1M-F16.gguf from a folder "hf"); {ftype} or {FTYPE} in DST's name
becomes the file type. --vocab-only writes the GGUF without tensors
(vocabulary and every other key; named …-vocab.gguf by default).
--dry-run prints the tensors, types, shapes and files the conversion would
write, after checking DST, and writes nothing. --print-supported-models
lists the architectures convert writes as GGUF with the config.json
classes and model types that convert to each.

A PEFT LoRA adapter directory (adapter_config.json with
adapter_model.safetensors or .bin) converts to the GGUF LoRA adapter that
llama.cpp's convert_lora_to_gguf.py writes (llama-cli --lora loads it):
--base names the base model's Hugging Face directory (only its config.json
is read; default: the adapter's base_model_name_or_path when that is a local
directory). 'tfconv merge-lora' writes a merged model instead.

--outtype: f32, f16, bf16, q8_0 or auto. GGUF output defaults to f16 (as
convert_hf_to_gguf.py); auto is its --outtype auto (f16 when the first tensor
is float16, else bf16). 1-D tensors, norms and position/token-type embeddings
stay f32, and q8_0 falls back to f16 for rows that are not whole blocks.
Hugging Face output defaults to auto: every f32, f16 and bf16 tensor keeps
its type and quantized tensors become f32, so nothing is lost (config.json's
torch_dtype is the type most parameters have); f32, f16 or bf16 casts every
tensor. A tensor written in a type that cannot hold every value of its
source (f16 from f32, anything from a quantized type but f32) is named in a
warning on stderr and flagged "lossy" in --json. A value beyond the range of
its output type (an f16 weight past 65504, which the cast would make ±Inf)
is an error naming the tensor, how many values and the largest, and nothing
is written: --outtype bf16 or f32 holds them; --allow-overflow writes them
as ±Inf and names the tensors and counts in a warning ("overflow" in --json).

Tensors are streamed one at a time; the output is written to a temporary
file or directory beside DST (.DST.tmp-PID-N) and renamed into place; an
existing DST is replaced only with --force; SRC is never modified. An
existing DST folder is never removed: with --force the files the output has
(config.json, generation_config.json, tokenizer files, the safetensors and
their index) replace those of the same names, an earlier save's
model*.safetensors files the new one does not have (another shard count, the
index or the single file) are removed, as transformers' save_pretrained
does, and every other file and subfolder stays; the output names the files
replaced and removed. An empty folder is written into without --force. SIGINT
and SIGTERM remove the temporary; one a killed run left is named on the
next run to DST and removed when its process is gone (see the README). Afterwards the output is
re-read and every tensor checked against the bytes converted (one line).
Progress goes to stderr when it is a terminal, or with --progress.

--json prints: {"source", "output", "format", "arch", "outtype",
"tensors": [{"name", "source_name", "dtype", "shape", "bytes",
"source_dtype", "lossy", "overflow", "overflow_max_abs" (the last two only
with --allow-overflow, when values became ±Inf)}], "dropped": [{"name", "reason"}], "bytes" (total
tensor data), "seconds", "self_check": "ok" ("dry run" with --dry-run),
"warnings": [...] (omitted when none), "pre_tokenizer" (how
tokenizer.ggml.pre was chosen when no hash of llama.cpp's table names the
tokenizer: the name that splits the test texts as tokenizer.json does;
omitted otherwise), "files": [the files written, or
that --dry-run would write], "dry_run": true (--dry-run only),
"replaced": [file names of DST replaced, with --force], "removed_stale": [an
earlier save's weight files removed from DST]}.
--print-supported-models --json prints [{"gguf", "hf_classes",
"model_types"}].

Examples:
  tfconv convert ./TinyLlama-1.1B-Chat-v1.0 model.gguf
  tfconv convert ~/.cache/huggingface/hub/models--Qwen--Qwen2.5-0.5B/snapshots/*/ --outtype bf16
  tfconv convert ./model out/ --to gguf --metadata meta.json --model-name "My Model"
  tfconv convert ./model vocab.gguf --vocab-only
  tfconv convert ./model model.gguf --split-max-size 2GB --dry-run
  tfconv convert model.gguf ./hf-out
  tfconv convert ./gemma-3-4b-it gemma3.gguf --mmproj          # gemma3.gguf and mmproj-gemma3.gguf
  tfconv convert gemma3.gguf ./hf-out --mmproj mmproj-gemma3.gguf`,
		Args: func(c *cobra.Command, args []string) error {
			if opts.listModels {
				return nil
			}
			if opts.mmproj && len(args) == 3 {
				return nil // GGUF → HF: TEXT.gguf DIR MMPROJ.gguf
			}
			if len(args) < 1 || len(args) > 2 {
				return fmt.Errorf("%s: expected 1 or 2 arguments, got %d (usage: %s)", c.Name(), len(args), c.UseLine())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.listModels {
				return printSupportedModels(a, opts.json)
			}
			opts.src = args[0]
			if len(args) >= 2 {
				opts.dst = args[1]
			}
			if len(args) == 3 {
				opts.mmprojFile = args[2]
			}
			return runConvert(a, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.to, "to", "", "output format: gguf|safetensors|mlx|native (default from DST)")
	f.StringVar(&opts.outType, "outtype", "", "weight type: "+strings.Join(convert.OutTypes, "|")+" (default f16 for GGUF, auto otherwise)")
	f.BoolVar(&opts.force, "force", false, "replace an existing DST (a folder: only the files the output has, others kept)")
	f.BoolVar(&opts.json, "json", false, "print the report as JSON")
	f.StringVar(&opts.base, "base", "", "LoRA adapter SRC: the base model's Hugging Face directory (its config.json)")
	f.StringVar(&opts.arch, "arch", "", "architecture override (default: config.json model_type or GGUF general.architecture)")
	f.StringVar(&opts.maxShardSize, "max-shard-size", "5GB", "largest safetensors shard of Hugging Face output (e.g. 500MB, 2GB, 2G, 1GiB)")
	f.StringVar(&opts.splitMaxSize, "split-max-size", "", "write GGUF output as a gguf-split set with at most this much tensor data per shard (e.g. 2GB, or gguf-split's 2G, 500M): DST model.gguf gives model-00001-of-0000N.gguf, …")
	f.StringVar(&opts.modelName, "model-name", "", "general.name of GGUF output, and the default output name (convert_hf_to_gguf.py's --model-name)")
	f.StringVar(&opts.metadata, "metadata", "", "JSON file of general.* keys overriding those derived from SRC (convert_hf_to_gguf.py's --metadata)")
	f.BoolVar(&opts.vocabOnly, "vocab-only", false, "write the GGUF without tensors: vocabulary and metadata only")
	f.BoolVar(&opts.mmproj, "mmproj", false, "multimodal SRC (Gemma3ForConditionalGeneration, …): write the text model to DST and its vision projector to mmproj-DST beside it, both or neither; GGUF → HF: 'convert TEXT.gguf DIR --mmproj MMPROJ.gguf' puts the multimodal checkpoint back together")
	f.BoolVar(&opts.mmprojOnly, "mmproj-only", false, "multimodal SRC: write only the projector GGUF (clip.*), to DST (convert_hf_to_gguf.py's --mmproj)")
	f.BoolVar(&opts.textOnly, "text-only", false, "multimodal SRC: write the text model alone; the report says what was left out")
	cmd.MarkFlagsMutuallyExclusive("mmproj", "mmproj-only", "text-only")
	f.BoolVar(&opts.dryRun, "dry-run", false, "print the tensors, types and files the conversion would write; write nothing")
	f.BoolVar(&opts.listModels, "print-supported-models", false, "list the architectures convert writes as GGUF and the Hugging Face classes of each")
	f.BoolVar(&opts.allowRequantize, "allow-requantize", false, "GGUF → GGUF with --outtype: re-encode quantized tensors in another quantized type (refused without it)")
	f.BoolVar(&opts.requantize, "requantize", false, "no block pass-through: dequantize and re-encode weights whose blocks the target type could hold as they are (MXFP4, NVFP4, Q4_0/Q8_0 ↔ MLX, GGUF → GGUF in the same type)")
	f.BoolVar(&opts.allowOverflow, "allow-overflow", false, "write values beyond the output type's range (f16: 65504) as ±Inf instead of failing; the tensors and counts are reported")
	f.StringVar(&opts.part, "part", "", "with --split-max-size: write only part K of N (K/N, K from 1) of the set's shards, contiguous ranges as 'tfconv plan' lists them; auto/N takes K from JOB_COMPLETION_INDEX (Kubernetes Indexed Job) or SLURM_ARRAY_TASK_ID−SLURM_ARRAY_TASK_MIN (Slurm array)")
	f.BoolVar(&opts.resume, "resume", false, "with --split-max-size: continue a run that was killed or failed, keeping the shards its record DST.tfconv-resume names whose sha256 still matches")
	addProgressFlag(cmd, &opts.progress)
	addTokenFlag(cmd)
	return cmd
}

// printSupportedModels lists convert's registry: GGUF name, config.json
// classes and model types.
func printSupportedModels(a *app, asJSON bool) error {
	models := convert.SupportedModels()
	if asJSON {
		return output.JSON(a.out, models)
	}
	tb := output.NewTable("gguf architecture", "hugging face classes", "model types")
	for _, m := range models {
		tb.Row(m.GGUF, strings.Join(m.HFClasses, ", "), strings.Join(m.ModelTypes, ", "))
	}
	return tb.Render(a.out)
}

// parseSize parses every size flag: "5GB", "500MB", "1GiB", gguf-split's
// and convert_hf_to_gguf.py's "1G", "500M", "40K", or a byte count; units
// are decimal (as transformers' max_shard_size and both llama.cpp tools
// take them) unless they say "i".
func parseSize(flag, s string) (int64, error) {
	t := strings.TrimSpace(strings.ToUpper(s))
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KIB", 1 << 10}, {"MIB", 1 << 20}, {"GIB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9},
		{"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"B", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseFloat(t, 64)
	if err != nil || n <= 0 || n*float64(mult) > 1<<62 {
		return 0, fmt.Errorf("convert: --%s %q: want a positive size such as 5GB, 500MB or 2G", flag, s)
	}
	return int64(n * float64(mult)), nil
}

func runConvert(a *app, opts *convertOptions) error {
	maxShard, err := parseSize("max-shard-size", opts.maxShardSize)
	if err != nil {
		return err
	}
	copts := convert.Options{To: convert.Format(strings.ToLower(opts.to)), OutType: strings.ToLower(opts.outType),
		Force: opts.force, Arch: opts.arch, MaxShardBytes: maxShard, Base: opts.base,
		ModelName: opts.modelName, MetadataFile: opts.metadata, VocabOnly: opts.vocabOnly, DryRun: opts.dryRun,
		AllowOverflow: opts.allowOverflow, AllowRequantize: opts.allowRequantize, Requantize: opts.requantize, Bits: opts.bits, GroupSize: opts.groupSize, MLXMode: opts.mlxMode, Scheme: opts.scheme}
	if opts.splitMaxSize != "" {
		if copts.SplitMaxBytes, err = parseSize("split-max-size", opts.splitMaxSize); err != nil {
			return err
		}
	}
	if opts.part != "" {
		if copts.Part, err = convert.ParsePart(opts.part, os.Getenv); err != nil {
			return err
		}
	}
	copts.Resume = opts.resume
	switch {
	case opts.mmprojFile != "":
		copts.MmprojFile = opts.mmprojFile
	case opts.mmproj:
		copts.Multimodal = convert.MultimodalBoth
	case opts.mmprojOnly:
		copts.Multimodal = convert.MultimodalProjector
	case opts.textOnly:
		copts.Multimodal = convert.MultimodalText
	}
	copts.Note = func(msg string) { fmt.Fprintln(a.err, "tfconv:", msg) }
	copts.Progress = a.progressOut(opts.progress)
	rep, err := convert.Run(opts.src, opts.dst, copts)
	if err != nil {
		return err
	}
	warnings := rep.Warnings
	if rep.Mmproj != nil {
		warnings = append(warnings[:len(warnings):len(warnings)], rep.Mmproj.Warnings...)
	}
	for _, w := range warnings {
		fmt.Fprintln(a.err, "tfconv: warning:", w)
	}
	if rep.PreTokenizer != "" {
		fmt.Fprintln(a.err, "tfconv: note:", rep.PreTokenizer)
	}
	if opts.json {
		return output.JSON(a.out, rep)
	}
	if len(rep.Dropped) > 0 {
		tb := output.NewTable("dropped tensor", "reason")
		for _, d := range rep.Dropped {
			tb.Row(d.Name, d.Reason)
		}
		if err := tb.Render(a.out); err != nil {
			return err
		}
	}
	if rep.DryRun {
		tb := output.NewTable("tensor", "source", "type", "shape", "bytes")
		for _, t := range rep.Tensors {
			tb.Row(t.Name, t.SourceName, t.DType, t.Shape, t.Bytes)
		}
		if err := tb.Render(a.out); err != nil {
			return err
		}
		for _, f := range rep.Files {
			fmt.Fprintln(a.out, "would write", f)
		}
		if _, err := fmt.Fprintf(a.out, "would convert %s → %s (%s, %s, %s): %d tensors, %s; nothing written (dry run)\n", rep.Source, rep.Output,
			rep.Format, rep.Arch, rep.OutType, len(rep.Tensors), output.Bytes(rep.Bytes)); err != nil {
			return err
		}
		if m := rep.Mmproj; m != nil {
			_, err := fmt.Fprintf(a.out, "would convert %s → %s (%s, %s projector, %s): %d tensors, %s; nothing written (dry run)\n", m.Source, m.Output,
				m.Format, m.Arch, m.OutType, len(m.Tensors), output.Bytes(m.Bytes))
			return err
		}
		return nil
	}
	fmt.Fprintf(a.out, "converted %s → %s (%s, %s, %s): %d tensors, %s in %.2fs\n", rep.Source, rep.Output, rep.Format,
		rep.Arch, rep.OutType, len(rep.Tensors), output.Bytes(rep.Bytes), rep.Seconds)
	if err := printReplaced(a.out, rep.Output, rep.Format == convert.Safetensors || rep.Format == convert.MLX || rep.Format == convert.CompressedTensors, rep.Replaced, rep.RemovedStale); err != nil {
		return err
	}
	if _, err := fmt.Fprintln(a.out, rep.SelfCheckLine); err != nil {
		return err
	}
	if m := rep.Mmproj; m != nil {
		fmt.Fprintf(a.out, "converted %s → %s (%s, %s projector, %s): %d tensors, %s\n", m.Source, m.Output, m.Format,
			m.Arch, m.OutType, len(m.Tensors), output.Bytes(m.Bytes))
		if err := printReplaced(a.out, m.Output, false, m.Replaced, m.RemovedStale); err != nil {
			return err
		}
		fmt.Fprintln(a.out, m.SelfCheckLine)
	}
	if l := rep.LeftOut; l != nil {
		fmt.Fprintf(a.out, "left out: %d tensors, %s (%s)\n", l.Tensors, output.Bytes(l.Bytes), l.Reason)
	}
	return nil
}
