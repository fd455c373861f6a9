package convert

import (
	"bytes"
	"path/filepath"
	"slices"
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
	exact, ge := quantizePure(t, src, "q4_0", false)
	re, gr := quantizePure(t, src, "q4_0", true)
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

// TestQ4FromGPTQAWQ: quantize --type q4_0 of a symmetric 4-bit GPTQ
// checkpoint with groups of 32 and no act-order (AutoGPTQ's own packing,
// testdata/gptq/gptq-4bit-sym), and --type q4_1 of AutoAWQ's 4-bit, group
// 32 checkpoint (testdata/gptq/awq-4bit, zero points), keep the layers'
// blocks where they can: every row of the GPTQ layers (scale d = s, codes
// q with the zero 8), the AWQ rows whose every block has an f16 minimum
// (−z·s, or the lowest value); the rest go through ggml's encoder and are
// counted in the report's inexact rows. A row written exactly decodes to
// values whose float16 rounding is the project's own float16 weight
// (AutoGPTQ's QuantLinear, AutoAWQ's dequantize_gemm: the GGUF view of the
// checkpoint at f16, Q/K rows permuted whole). With Requantize every
// layer goes through ggml's encoder instead (the report says no "exact"):
// other bytes for GPTQ; for AWQ, whose min-max groups span all 16 codes,
// ggml's d = (max − min)/15 and m = min are the layer's own s and −z·s
// rounded to f16, so its exact rows come out the same.
func TestQ4FromGPTQAWQ(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		dir, typ    string
		dt          tensor.DType
		exactLayers int  // layers with no inexact row
		exactRows   int  // rows written exactly, of 1024
		differ      bool // --requantize writes other bytes in every layer
	}{
		{"gptq-4bit-sym", "q4_0", tensor.Q4_0, 14, 1024, true},
		{"awq-4bit", "q4_1", tensor.Q4_1, 0, 153, false},
	} {
		t.Run(c.dir, func(t *testing.T) {
			t.Parallel()
			src := filepath.Join("..", "testdata", "gptq", c.dir)
			exact, ge := quantizePure(t, src, c.typ, false)
			re, gr := quantizePure(t, src, c.typ, true)
			for _, tr := range re.Tensors {
				if strings.Contains(tr.Reason, "exact") {
					t.Errorf("--requantize: %s still %q", tr.Name, tr.Reason)
				}
			}
			ck, err := checkpoint.Open(src)
			if err != nil {
				t.Fatal(err)
			}
			defer ck.Close()
			view, err := Source(ck, Options{To: GGUF, OutType: OutF16})
			if err != nil {
				t.Fatal(err)
			}
			layers, whole, rowsExact, rowsInexact := 0, 0, 0, 0
			for _, tr := range exact.Tensors {
				if !strings.Contains(tr.Reason, "exact") {
					continue
				}
				layers++
				if tr.Type != c.dt {
					t.Errorf("%s: %v, want %v", tr.Name, tr.Type, c.dt)
				}
				if tr.Inexact == 0 {
					whole++
					if tr.MaxAbs != 0 {
						t.Errorf("%s: every row exact, but a max error of %g", tr.Name, tr.MaxAbs)
					}
				}
				x, _ := ge.Tensor(tr.Name)
				xb, _ := x.ReadAll()
				got := make([]float32, x.NumElements())
				if err := quant.Dequantize(got, xb, c.dt); err != nil {
					t.Fatal(err)
				}
				v, _ := view.Tensor(tr.Name)
				vb, _ := v.ReadAll()
				want := make([]float32, v.NumElements())
				if err := quant.Dequantize(want, vb, tensor.F16); err != nil {
					t.Fatal(err)
				}
				// the rows written exactly round to the project's weight;
				// ggml's encoder's (tr.Inexact of them) as a rule do not
				cols := int(x.Shape[len(x.Shape)-1])
				rows, match := len(want)/cols, 0
				h, f := make([]byte, 2*len(got)), make([]float32, len(got))
				if err := quant.Quantize(h, got, tensor.F16); err != nil {
					t.Fatal(err)
				}
				if err := quant.Dequantize(f, h, tensor.F16); err != nil {
					t.Fatal(err)
				}
				for r := range rows {
					if slices.Equal(f[r*cols:(r+1)*cols], want[r*cols:(r+1)*cols]) {
						match++
					}
				}
				if match < rows-int(tr.Inexact) {
					t.Errorf("%s: %d of %d rows round to the project's float16 weight, but %d were written exactly", tr.Name, match, rows, rows-int(tr.Inexact))
				}
				rowsExact += rows - int(tr.Inexact)
				rowsInexact += int(tr.Inexact)
				y, _ := gr.Tensor(tr.Name)
				yb, _ := y.ReadAll()
				if c.differ && bytes.Equal(xb, yb) {
					t.Errorf("%s: --requantize wrote the exact blocks", tr.Name)
				}
			}
			t.Logf("%s: %d layers, %d with every row exact; rows %d exact, %d by ggml's encoder", c.dir, layers, whole, rowsExact, rowsInexact)
			if layers != 14 || whole != c.exactLayers || rowsExact != c.exactRows {
				t.Errorf("%d layers passed (want 14), %d of them whole (want %d), %d rows exact (want %d)", layers, whole, c.exactLayers, rowsExact, c.exactRows)
			}
		})
	}
}

// quantizePure quantizes src to a GGUF of type typ with --pure (every
// weight typ), with or without --requantize, and opens it (closed at the
// test's end).
func quantizePure(t *testing.T, src, typ string, requantize bool) (*QuantizeReport, *checkpoint.Checkpoint) {
	t.Helper()
	target, err := quantize.ParseTarget(typ)
	if err != nil {
		t.Fatal(err)
	}
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
