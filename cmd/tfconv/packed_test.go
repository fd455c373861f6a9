package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/checkpoint"
)

// A GPTQ and an AWQ checkpoint (packed by AutoGPTQ's and AutoAWQ's own code,
// testdata/gptq) convert to a plain Hugging Face checkpoint whose weights
// are, byte for byte, what the projects' own dequantization computes, and
// whose config.json no longer asks transformers to load packed layers.
func TestConvertPackedToHF(t *testing.T) {
	for _, name := range []string{"gptq-4bit-actorder", "awq-4bit"} {
		t.Run(name, func(t *testing.T) {
			src := filepath.Join("..", "..", "testdata", "gptq", name)
			out := filepath.Join(t.TempDir(), "out")
			if code, _, stderr := run(t, "convert", src, out, "--to", "safetensors"); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			got, err := checkpoint.Open(out)
			if err != nil {
				t.Fatal(err)
			}
			defer got.Close()
			ref, err := checkpoint.Open(filepath.Join(src, "dequant.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			defer ref.Close()
			if len(got.Tensors) != 21 {
				t.Errorf("%d tensors, want 21 (14 dequantized layers, 7 stored)", len(got.Tensors))
			}
			for _, r := range ref.Tensors {
				g, ok := got.Tensor(r.Name)
				if !ok {
					t.Fatalf("output has no %q", r.Name)
				}
				a, _ := r.ReadAll()
				b, err := g.ReadAll()
				if err != nil || !bytes.Equal(a, b) {
					t.Errorf("%s differs from the reference dequantization (%v)", r.Name, err)
				}
			}
			b, err := os.ReadFile(filepath.Join(out, "config.json"))
			if err != nil {
				t.Fatal(err)
			}
			var cfg map[string]any
			if err := json.Unmarshal(b, &cfg); err != nil {
				t.Fatal(err)
			}
			if _, ok := cfg["quantization_config"]; ok {
				t.Error("output config.json keeps quantization_config")
			}
			code, stdout, _ := run(t, "inspect", src, "--json")
			var s checkpoint.Summary
			if code != 0 || json.Unmarshal([]byte(stdout), &s) != nil || s.Quantized == nil || s.Quantized.Layers != 14 || s.Quantized.Bits != 4 {
				t.Errorf("inspect --json: exit %d, quantized %+v", code, s.Quantized)
			}
		})
	}
}

// A DeepSeek-V3-style FP8 checkpoint converted with --outtype bf16 holds,
// byte for byte, what DeepSeek's own weight_dequant gives (x·s in float32,
// stored as bfloat16: testdata/fp8/deepseek-block/dequant-bf16.safetensors),
// and inspect says how it was stored.
func TestConvertFP8ToBF16(t *testing.T) {
	src := filepath.Join("..", "..", "testdata", "fp8", "deepseek-block")
	out := filepath.Join(t.TempDir(), "out")
	if code, _, stderr := run(t, "convert", src, out, "--to", "safetensors", "--outtype", "bf16"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got, err := checkpoint.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close()
	ref, err := checkpoint.Open(filepath.Join(src, "dequant-bf16.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	for _, r := range ref.Tensors {
		g, ok := got.Tensor(r.Name)
		if !ok {
			t.Fatalf("no %q", r.Name)
		}
		a, _ := r.ReadAll()
		b, err := g.ReadAll()
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs from DeepSeek's weight_dequant (%v)", r.Name, err)
		}
	}
	code, stdout, _ := run(t, "inspect", src)
	if code != 0 || !strings.Contains(stdout, "fp8: float8 e4m3, a scale per 128×128 block; 3 weights listed as the floats they dequantize to") {
		t.Errorf("inspect: exit %d:\n%s", code, stdout)
	}
}
