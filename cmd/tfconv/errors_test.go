package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// Issue 14 item 11: every error names the command; a missing path is named
// without the system call's "stat …"/"open …" text; writing into a missing
// folder names the folder, not a temporary file; and no message ends in a
// stray ": unsupported".
func TestErrorMessages(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "no-such")       // a path that does not exist
	folder := filepath.Join(dir, "no-such-folder") // a folder that does not exist
	in := filepath.Join(folder, "")
	q8 := "../../testdata/tiny-fortunes/tiny-fortunes-Q8_0.gguf"
	gpt2 := "../../testdata/convert/gpt2/hf"
	noFile := missing + ": no such file or directory"
	noFolder := "the folder " + folder + " does not exist"
	for _, tc := range []struct {
		args []string
		want string // the message must contain this
	}{
		// A missing input.
		{[]string{"inspect", missing}, noFile},
		{[]string{"tokenize", missing, "hi"}, noFile},
		{[]string{"tokenize", missing + "/tokenizer.json", "hi"}, missing + "/tokenizer.json: no such file or directory"},
		{[]string{"quantize", missing, filepath.Join(dir, "o.gguf"), "--type", "q8_0"}, noFile},
		{[]string{"convert", missing, filepath.Join(dir, "o.gguf")}, noFile},
		{[]string{"run", missing, "--tokens", "1"}, noFile},
		{[]string{"generate", missing, "--tokens", "1"}, noFile},
		{[]string{"bench", missing}, noFile},
		{[]string{"verify", missing, q8, "--tokens", "1"}, noFile},
		{[]string{"verify", q8, missing, "--tokens", "1"}, noFile},
		{[]string{"verify", q8, "--baseline", missing}, noFile},
		{[]string{"verify", q8, q8, "--prompt-file", missing}, noFile},
		{[]string{"diff", missing, q8}, noFile},
		{[]string{"diff", q8, missing}, noFile},
		{[]string{"perplexity", missing, "--file", "../../testdata/tiny-fortunes/README.md"}, noFile},
		{[]string{"perplexity", q8, "--file", missing}, noFile},
		{[]string{"check", missing}, noFile},
		// An output in a missing folder.
		{[]string{"quantize", q8, filepath.Join(in, "o.gguf"), "--type", "q8_0", "--allow-requantize"}, noFolder},
		{[]string{"quantize", gpt2, filepath.Join(in, "o.tfn"), "--type", "int8"}, noFolder},
		{[]string{"quantize", gpt2, filepath.Join(in, "o"), "--to", "safetensors", "--type", "int8"}, noFolder},
		{[]string{"convert", gpt2, filepath.Join(in, "o.gguf")}, noFolder},
		{[]string{"convert", q8, filepath.Join(in, "o")}, noFolder},
		{[]string{"synth", "--like", "gpt2-124m", filepath.Join(in, "o.gguf")}, noFolder},
		{[]string{"run", q8, "--tokens", "1", "--out", filepath.Join(in, "o.json")}, noFolder},
		{[]string{"verify", q8, q8, "--tokens", "1", "--report", filepath.Join(in, "r.html")}, noFolder},
		{[]string{"verify", q8, "--tokens", "1", "--save-baseline", filepath.Join(in, "b.json")}, noFolder},
		// Things tfconv does not do, said in a sentence.
		{[]string{"convert", "../../testdata/arch/mamba/gguf/llama-quantize/mamba-q4_k_m.gguf", filepath.Join(dir, "o.gguf"), "--outtype", "q8_0"},
			"pass --allow-requantize to do it"},
		{[]string{"quantize", gpt2, filepath.Join(dir, "o.gguf"), "--type", "int8"}, "int8 with per-row scales has no GGUF type"},
		{[]string{"synth", "--like", "gpt2-124m", "--type", "q4_0", filepath.Join(dir, "o.gguf")}, "want f32, f16, bf16 or q8_0"},
		{[]string{"convert", q8, filepath.Join(dir, "o"), "--outtype", "q8_0"}, "safetensors output holds f32, f16 or bf16"},
	} {
		code, _, errs := run(t, tc.args...)
		msg := strings.TrimSuffix(errs, "\n")
		prefix := "tfconv: " + tc.args[0] + ": "
		if code != exitError || !strings.HasPrefix(msg, prefix) || !strings.Contains(msg, tc.want) ||
			strings.Contains(msg, "stat ") || strings.Contains(msg, "open /") || strings.Contains(msg, ".tmp-") ||
			strings.HasSuffix(msg, ": unsupported") || strings.Count(msg, "\n") > 0 {
			t.Errorf("%v: exit %d\n got: %s\nwant: %s… %s", tc.args, code, msg, prefix, tc.want)
		}
	}
}
