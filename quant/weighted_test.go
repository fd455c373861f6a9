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
	// Q8_0 ignores the weights, as ggml's quantize_q8_0 does.
	q8, q8w := make([]byte, 16*34), make([]byte, 16*34)
	Quantize(q8, src, tensor.Q8_0)
	if err := QuantizeRows(q8w, src, tensor.Q8_0, 256, w); err != nil || string(q8) != string(q8w) {
		t.Errorf("Q8_0 with weights: %v", err)
	}
	for _, c := range []struct {
		name   string
		t      tensor.DType
		rowLen int
		w      []float32
		unsup  bool
	}{
		{"TQ1_0 has no transcribed weighted quantizer", tensor.TQ1_0, 256, w, true},
		{"weights shorter than a row", tensor.Q4_K, 256, w[:100], false},
		{"row not a multiple of the block", tensor.Q4_K, 128, w[:128], false},
	} {
		out := make([]byte, 2*144)
		if c.t == tensor.TQ1_0 {
			out = make([]byte, 2*54)
		}
		err := QuantizeRows(out, src, c.t, c.rowLen, c.w)
		if err == nil || errors.Is(err, tensor.ErrUnsupported) != c.unsup {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	if !CanQuantizeWeighted(tensor.Q2_K) || !CanQuantizeWeighted(tensor.IQ4_NL) || !CanQuantizeWeighted(tensor.IQ4_XS) ||
		!CanQuantizeWeighted(tensor.IQ2_XXS) || !CanQuantizeWeighted(tensor.IQ1_S) || CanQuantizeWeighted(tensor.TQ1_0) {
		t.Error("CanQuantizeWeighted")
	}
}
