package convert

import (
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/formats/safetensors"
	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/tensor"
)

// bf16WithOutliers writes the shipped tiny LLaMA as a bf16 Hugging Face
// checkpoint (as Qwen2 and most recent models ship) with the values of
// outliers set in model.layers.0.mlp.up_proj.weight at the given indices.
func bf16WithOutliers(t *testing.T, outliers map[int]float32) string {
	t.Helper()
	dir := t.TempDir()
	c, err := checkpoint.Open(shippedTinyLlama)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b, _ := c.ReadAux("config.json")
	if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	infos := make([]tensor.Info, len(c.Tensors))
	for i, tt := range c.Tensors {
		infos[i] = tensor.Info{Name: tt.Name, DType: tensor.BF16, Shape: tt.Shape}
	}
	f, err := os.Create(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := safetensors.NewWriter(f, infos, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range c.Tensors {
		raw, err := io.ReadAll(tt.Open())
		if err != nil {
			t.Fatal(err)
		}
		x := make([]float32, tt.NumElements())
		if err := quant.Dequantize(x, raw, tt.DType); err != nil {
			t.Fatal(err)
		}
		if tt.Name == "model.layers.0.mlp.up_proj.weight" {
			for i, v := range outliers {
				x[i] = v
			}
		}
		out := make([]byte, 2*len(x))
		quant.EncodeBF16Bytes(out, x)
		bw, _ := w.Next(tt.Name)
		if _, err := bw.Write(out); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestOverflowRefused: a bf16 weight beyond f16's range (65504) makes the
// default f16 GGUF fail, naming the tensor, the count and the largest
// magnitude, with no output left behind; bf16 output holds it; and
// AllowOverflow writes it as ±Inf and reports it.
func TestOverflowRefused(t *testing.T) {
	t.Parallel()
	src := bf16WithOutliers(t, map[int]float32{5: 1e6, 77: -7e4, 80: 65280})
	out := t.TempDir()
	dst := filepath.Join(out, "m.gguf")
	_, err := Run(src, dst, Options{})
	var oe *quant.OverflowError
	if !errors.As(err, &oe) || oe.Count != 2 || oe.MaxAbs != 999424 { // 1e6 in bf16
		t.Fatalf("f16 GGUF of a bf16 1e6: %v, want an overflow of 2 values, largest 999424", err)
	}
	for _, s := range []string{`"blk.0.ffn_up.weight"`, "2 value(s)", "999424", "--outtype bf16", "--allow-overflow"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not say %s", err, s)
		}
	}
	if ents, _ := os.ReadDir(out); len(ents) != 0 {
		t.Errorf("failed conversion left %v", ents)
	}
	// The same to a Hugging Face directory in f16.
	if _, err := Run(src, filepath.Join(out, "hf"), Options{OutType: OutF16}); !errors.As(err, &oe) ||
		!strings.Contains(err.Error(), `"model.layers.0.mlp.up_proj.weight"`) {
		t.Errorf("f16 HF output: %v", err)
	}
	if ents, _ := os.ReadDir(out); len(ents) != 0 {
		t.Errorf("failed conversion left %v", ents)
	}

	if rep, err := Run(src, filepath.Join(out, "bf16.gguf"), Options{OutType: OutBF16}); err != nil {
		t.Fatalf("bf16 GGUF: %v", err)
	} else {
		for _, w := range rep.Warnings {
			if strings.Contains(w, "overflow") {
				t.Errorf("bf16 GGUF: warning %q", w)
			}
		}
	}

	rep, err := Run(src, dst, Options{AllowOverflow: true})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, tr := range rep.Tensors {
		if tr.Overflow != 0 {
			n++
			if tr.Name != "blk.0.ffn_up.weight" || tr.Overflow != 2 || tr.OverflowMaxAbs != 999424 {
				t.Errorf("report: %+v", tr)
			}
		}
	}
	if n != 1 || !strings.Contains(strings.Join(rep.Warnings, "\n"), "overflow (--allow-overflow): 2 value(s) beyond their type's range written as ±Inf in 1 tensor(s) (blk.0.ffn_up.weight: 2)") {
		t.Errorf("%d tensors overflowed, warnings %q", n, rep.Warnings)
	}
	c, err := checkpoint.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	up, _ := c.Tensor("blk.0.ffn_up.weight")
	raw, _ := io.ReadAll(up.Open())
	x := make([]float32, up.NumElements())
	if err := quant.Dequantize(x, raw, up.DType); err != nil {
		t.Fatal(err)
	}
	if !math.IsInf(float64(x[5]), 1) || !math.IsInf(float64(x[77]), -1) || x[80] != 65280 {
		t.Errorf("written as %v %v %v, want +Inf -Inf 65280", x[5], x[77], x[80])
	}
}

// TestMergeLoRAOverflow: merged weights beyond an f16 base's range (the
// adapter scaled by 1e9) fail naming the tensor, or with AllowOverflow are
// written as ±Inf and reported.
func TestMergeLoRAOverflow(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := filepath.Join(dir, "base-f16")
	if _, err := Run("../testdata/arch/qwen2/gguf/qwen2-f32.gguf", base, Options{OutType: OutF16}); err != nil {
		t.Fatal(err)
	}
	adapter := filepath.Join(loraDir, "qwen2-r2", "adapter")
	out := filepath.Join(dir, "merged.gguf")
	_, err := MergeLoRA(base, adapter, out, MergeOptions{Scale: 1e9})
	var oe *quant.OverflowError
	if !errors.As(err, &oe) || oe.Count == 0 || !strings.Contains(err.Error(), "--allow-overflow") || !strings.Contains(err.Error(), `tensor "model.layers.`) {
		t.Fatalf("merge with scale 1e9 into f16: %v, want an overflow naming the tensor", err)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("failed merge left %s: %v", out, err)
	}
	rep, err := MergeLoRA(base, adapter, out, MergeOptions{Scale: 1e9, Options: Options{AllowOverflow: true}})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, tr := range rep.Tensors {
		if tr.Overflow > 0 {
			n++
		}
	}
	if n == 0 || n > rep.LoRA.Merged || !strings.Contains(strings.Join(rep.Warnings, "\n"), "overflow (--allow-overflow)") {
		t.Errorf("%d of %d merged tensors report overflow; warnings %q", n, rep.LoRA.Merged, rep.Warnings)
	}
}
