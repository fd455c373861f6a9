package quant

import (
	"errors"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

// The weighted quantizers are checked byte for byte against llama-quantize
// --imatrix in cmd/tfconv (TestQuantizeImatrixMatchesLlamaQuantize); here
// the contract around them.
func TestQuantizeRowsContract(t *testing.T) {
	src := make([]float32, 2*256)
	for i := range src {
		src[i] = float32(i%37) - 18
	}
	w := make([]float32, 256)
	for i := range w {
		w[i] = 1 + float32(i%5)
	}
	dst := make([]byte, 2*144)
	if err := QuantizeRows(dst, src, tensor.Q4_K, 256, w); err != nil {
		t.Fatal(err)
	}
	// Without weights it is the reference quantizer.
	ref, plain := make([]byte, len(dst)), make([]byte, len(dst))
	if err := Quantize(ref, src, tensor.Q4_K); err != nil {
		t.Fatal(err)
	}
	if err := QuantizeRows(plain, src, tensor.Q4_K, 256, nil); err != nil || string(plain) != string(ref) {
		t.Errorf("nil weights: %v, differs from Quantize", err)
	}
	// Q8_0, TQ1_0 and TQ2_0 ignore the weights, as ggml's quantize_q8_0,
	// quantize_tq1_0 and quantize_tq2_0 do.
	for _, d := range []tensor.DType{tensor.Q8_0, tensor.TQ1_0, tensor.TQ2_0} {
		n, _ := d.ByteSize(int64(len(src)))
		plain, weighted := make([]byte, n), make([]byte, n)
		if err := Quantize(plain, src, d); err != nil {
			t.Fatal(err)
		}
		if err := QuantizeRows(weighted, src, d, 256, w); err != nil || string(plain) != string(weighted) {
			t.Errorf("%v with weights: %v", d, err)
		}
	}
	for _, c := range []struct {
		name   string
		t      tensor.DType
		rowLen int
		w      []float32
		unsup  bool
	}{
		{"a type ggml has no quantizer for", tensor.Q8_K, 256, w, true},
		{"weights shorter than a row", tensor.Q4_K, 256, w[:100], false},
		{"row not a multiple of the block", tensor.Q4_K, 128, w[:128], false},
	} {
		out := make([]byte, 2*144)
		if c.t == tensor.Q8_K {
			out = make([]byte, 2*292)
		}
		err := QuantizeRows(out, src, c.t, c.rowLen, c.w)
		if err == nil || errors.Is(err, tensor.ErrUnsupported) != c.unsup {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	if !CanQuantizeWeighted(tensor.Q2_K) || !CanQuantizeWeighted(tensor.IQ4_NL) || !CanQuantizeWeighted(tensor.IQ4_XS) ||
		!CanQuantizeWeighted(tensor.IQ2_XXS) || !CanQuantizeWeighted(tensor.IQ1_S) || !CanQuantizeWeighted(tensor.TQ1_0) || CanQuantizeWeighted(tensor.Q8_K) {
		t.Error("CanQuantizeWeighted")
	}
}
