package kernels

import (
	"math"
	"sync"

	"github.com/tfconv/tfconv/quant"
)

// ggml's CPU backend (built with GGML_GELU_FP16, the default) evaluates
// GELU through a table: the input is rounded to binary16 and the table
// holds, for every binary16 value h, binary16(gelu(h)) with gelu the tanh
// form computed in float32,
//
//	gelu(x) = 0.5·x·(1 + tanh(√(2/π)·x·(1 + 0.044715·x²)))
//
// Inputs at or below −10 give 0 and inputs at or above 10 pass through.
// The result differs from the float32 formula by up to half a binary16
// ulp of the output and the effect of rounding the input, about 1e-3 on
// GPT-2's logits.

// gelu16Table maps a binary16 bit pattern to ggml_table_gelu_f16's entry,
// widened to float32.
var gelu16Table = sync.OnceValue(func() *[1 << 16]float32 {
	t := new([1 << 16]float32)
	const (
		coefA       = float32(0.044715)
		sqrt2OverPi = float32(0.79788456080286535587989211986876)
	)
	for i := range t {
		x := quant.F16ToF32(uint16(i))
		// ggml's float32 expression as GCC compiles it with FMA
		// contraction: the inner 1 + a·x·x becomes fma(a·x, x, 1).
		inner := fma32(coefA*x, x, 1)
		u := float32(sqrt2OverPi*x) * inner
		th := float32(math.Tanh(float64(u)))
		g := float32(float32(0.5)*x) * (1 + th)
		t[i] = quant.F16ToF32(quant.F32ToF16(g))
	}
	return t
})

// GELUFP16 applies GELU (tanh form) to x in place the way ggml's CPU
// backend does, through its binary16 table; see the comment above. It is
// what llama.cpp computes for GPT-2-style models; GELUTanh is the exact
// float32 formula transformers uses.
func GELUFP16(x []float32) {
	t := gelu16Table()
	for i, v := range x {
		switch {
		case v <= -10:
			x[i] = 0
		case v >= 10:
		default:
			x[i] = t[quant.F32ToF16(v)]
		}
	}
}
