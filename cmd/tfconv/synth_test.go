package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/tensor"
)

// TestSynthBertGGUF writes the smallest built-in shape (bert-base, Q8_0,
// ~116 MB) and checks it opens with BERT's 197 tensors and the published
// 109,482,240 parameters minus the pooler's 590,592 (llama.cpp's converter
// drops the pooler).
func TestSynthBertGGUF(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 116 MB")
	}
	dst := filepath.Join(t.TempDir(), "bert.gguf")
	code, out, errs := run(t, "synth", "--like", "bert-base", dst, "--type", "q8_0", "--seed", "5")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "197 tensors") {
		t.Errorf("report: %q", out)
	}
	c, err := checkpoint.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var params int64
	types := map[tensor.DType]int{}
	for _, ti := range c.Tensors {
		n, _ := ti.Shape.NumElements()
		params += n
		types[ti.DType]++
	}
	if len(c.Tensors) != 197 || params != 109_482_240-590_592 {
		t.Errorf("%d tensors, %d parameters", len(c.Tensors), params)
	}
	// 12 layers × 6 matrices + the token embedding are Q8_0; the position
	// and token-type embeddings stay F32 as the converter writes them
	// (arch.GGUFTensorType), and the 1-D tensors.
	if types[tensor.Q8_0] != 73 || types[tensor.F32] != 124 {
		t.Errorf("types %v", types)
	}
	// An existing output is refused without --force.
	if code, _, errs := run(t, "synth", "--like", "bert-base", dst, "--type", "q8_0"); code != 2 || !strings.Contains(errs, "already exists") {
		t.Errorf("existing output: exit %d %q", code, errs)
	}
}

func TestSynthUsageErrors(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"synth", filepath.Join(dir, "a.gguf")},
		{"synth", "--like", "gpt5", filepath.Join(dir, "a.gguf")},
		{"synth", "--like", "gpt2-124m", "--type", "q4_0", filepath.Join(dir, "a.gguf")},
		{"synth", "--like", "gpt2-124m", "--type", "q8_0", filepath.Join(dir, "hf")},
		{"synth", "--like", "gpt2-124m", "--to", "onnx", filepath.Join(dir, "a.gguf")},
	} {
		if code, _, errs := run(t, args...); code != 2 || !strings.HasPrefix(errs, "tfconv: synth: ") {
			t.Errorf("%v: exit %d %q", args, code, errs)
		}
	}
	hf := filepath.Join(dir, "hf")
	os.Mkdir(hf, 0o755)
	os.WriteFile(filepath.Join(hf, "x"), nil, 0o644)
	if code, _, errs := run(t, "synth", "--like", "gpt2-124m", hf); code != 2 || !strings.Contains(errs, "already exists") {
		t.Errorf("non-empty folder: exit %d %q", code, errs)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("failed runs left files: %v", ents)
	}
}
