package convert

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/checkpoint"
)

// TestRequantize: each block pass-through copies the source's blocks (the
// report's conversion "copied", copied true), and Options.Requantize
// (--requantize) sends the same weights through dequantize and encode
// instead: conversion "exact" or "reencoded" (with the largest error), never
// "copied", and for NVFP4, MLX and Q2_K other bytes. Rows: MXFP4 → MXFP4
// (gpt-oss's experts), NVFP4 → NVFP4 (ModelOpt's export, dense and one
// tensor per expert), GGUF Q4_0 → MLX 4-bit groups of 32, and GGUF → GGUF
// with the types kept (Q4_0 and Q2_K as they are). MXFP4 and Q4_0 blocks
// that ggml's encoder made come out of it again the same (conversion
// "exact", max error 0): ggml's d is the block's extreme over −8 (Q4_0's
// code 0), recovered from the decoded values.
func TestRequantize(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, src string
		opts      Options
		dtype     string // of the passed weights in the output
		n         int    // how many
	}{
		{"mxfp4", "../testdata/arch/gptoss/hf", Options{OutType: OutF32}, "MXFP4", 6},
		{"nvfp4", "../testdata/modelopt/nvfp4-ffn128", Options{}, "NVFP4", 14},
		{"nvfp4-experts", "../testdata/modelopt/nvfp4-moe", Options{}, "NVFP4", 14},
		{"mlx-q4_0", "../testdata/gguf/llama-Q4_0.gguf", Options{To: MLX}, "U32", 16},
		// GGUF → GGUF: same-type tensors, copied without --requantize
		{"gguf-q4_0", "../testdata/gguf/llama-Q4_0.gguf", Options{}, "Q4_0", 16}, // re-encoded to the same bytes
		{"gguf-q2_k", "../testdata/gguf/llama-Q2_K.gguf", Options{}, "Q2_K", 16},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			run := func(requantize bool) (*Report, string) {
				out := filepath.Join(t.TempDir(), "out")
				if c.opts.To != MLX {
					out += ".gguf"
				}
				opts := c.opts
				opts.Requantize = requantize
				rep, err := Run(c.src, out, opts)
				if err != nil {
					t.Fatal(err)
				}
				return rep, out
			}
			pass, passOut := run(false)
			re, reOut := run(true)
			var names []string
			for _, tr := range pass.Tensors {
				if tr.DType == c.dtype && tr.Conversion == "copied" && tr.Copied {
					names = append(names, tr.Name)
				}
			}
			if len(names) != c.n {
				t.Fatalf("%d %s tensors copied, want %d", len(names), c.dtype, c.n)
			}
			byName := map[string]TensorReport{}
			for _, tr := range re.Tensors {
				byName[tr.Name] = tr
				if tr.Copied || tr.Conversion == "copied" || tr.Conversion == "" {
					t.Errorf("--requantize: %s (%s from %s): conversion %q, copied %v", tr.Name, tr.DType, tr.SourceDType, tr.Conversion, tr.Copied)
				}
				if strings.HasSuffix(tr.Name, ".scale") {
					t.Errorf("--requantize: %s written (the factor is in the re-encoded values)", tr.Name)
				}
			}
			a, err := checkpoint.OpenStored(passOut)
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			b, err := checkpoint.OpenStored(reOut)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			differ := 0
			for _, name := range names {
				tr, ok := byName[name]
				if !ok || tr.DType != c.dtype {
					t.Fatalf("--requantize: %s is %v, want %s", name, tr.DType, c.dtype)
				}
				if tr.Conversion == "reencoded" && !(tr.MaxAbsError > 0) || tr.Conversion == "exact" && tr.MaxAbsError != 0 {
					t.Errorf("--requantize: %s: %s with max error %g", name, tr.Conversion, tr.MaxAbsError)
				}
				x, _ := a.Tensor(name)
				y, _ := b.Tensor(name)
				xb, _ := x.ReadAll()
				yb, _ := y.ReadAll()
				if !bytes.Equal(xb, yb) {
					differ++
				}
			}
			t.Logf("--requantize: %d of %d passed tensors have other bytes", differ, len(names))
			if c.dtype != "MXFP4" && c.dtype != "Q4_0" && differ == 0 {
				t.Error("--requantize wrote the copied bytes again")
			}
		})
	}
}
