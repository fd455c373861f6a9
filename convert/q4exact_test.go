package convert

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/quantize"
	"github.com/tfconv/tfconv/tensor"
)

// TestQ4_0FromW4A16: quantize --type q4_0 of the compressed-tensors W4A16
// fixture (symmetric int4, groups of 32, bf16 scales: all f16 values) keeps
// every one of its 14 layers exactly: each Q4_0 tensor decodes to the
// layer's values as tfconv reads them (the GGUF view, Q/K rows permuted
// whole) value for value, with a max error of 0 and no inexact row; with
// Requantize (--requantize) the same layers go through ggml's Q4_0 encoder,
// other bytes and a non-zero error.
func TestQ4_0FromW4A16(t *testing.T) {
	t.Parallel()
	src := filepath.Join("..", "testdata", "ct", "w4a16")
	target, err := quantize.ParseTarget("q4_0")
	if err != nil {
		t.Fatal(err)
	}
	run := func(requantize bool) (*QuantizeReport, *checkpoint.Checkpoint) {
		out := filepath.Join(t.TempDir(), "q.gguf")
		rep, err := Quantize(src, out, QuantizeOptions{Options: quantize.Options{Target: target, Pure: true, Requantize: requantize}, Requantize: true})
		if err != nil {
			t.Fatal(err)
		}
		g, err := checkpoint.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { g.Close() })
		return rep, g
	}
	exact, ge := run(false)
	re, gr := run(true)
	c, err := checkpoint.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	view, err := Source(c, Options{To: GGUF, OutType: OutF32})
	if err != nil {
		t.Fatal(err)
	}
	reMax := map[string]float64{}
	for _, tr := range re.Tensors {
		reMax[tr.Name] = tr.MaxAbs
	}
	n, worse := 0, 0
	for _, tr := range exact.Tensors {
		if !strings.Contains(tr.Reason, "exact") {
			continue
		}
		n++
		if tr.Type != tensor.Q4_0 || tr.MaxAbs != 0 || tr.Inexact != 0 {
			t.Errorf("%s: %v, max error %g, %d inexact rows", tr.Name, tr.Type, tr.MaxAbs, tr.Inexact)
		}
		x, _ := ge.Tensor(tr.Name)
		xb, _ := x.ReadAll()
		got := make([]float32, x.NumElements())
		if err := quant.Dequantize(got, xb, tensor.Q4_0); err != nil {
			t.Fatal(err)
		}
		v, _ := view.Tensor(tr.Name)
		vb, _ := v.ReadAll()
		want := make([]float32, v.NumElements())
		if err := quant.Dequantize(want, vb, tensor.F32); err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%s: value %d is %v, the layer's %v", tr.Name, i, got[i], want[i])
			}
		}
		y, _ := gr.Tensor(tr.Name)
		yb, _ := y.ReadAll()
		if bytes.Equal(xb, yb) {
			t.Errorf("%s: --requantize wrote the exact blocks", tr.Name)
		}
		if reMax[tr.Name] > 0 {
			worse++
		}
	}
	if n != 14 || worse != 14 {
		t.Errorf("%d layers kept exactly (want 14), %d with an error under --requantize (want 14)", n, worse)
	}
}
