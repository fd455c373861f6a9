package quant

import (
	"math/rand/v2"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

// BenchmarkQuantizeK encodes rows shaped like a 7B model's (4096 wide,
// weights ≈ N(0, 0.02)) into the k-quant types llama-quantize's Q4_K_M
// mixture writes, without importance weights.
func BenchmarkQuantizeK(b *testing.B) {
	const n = 64 * 4096
	r := rand.New(rand.NewPCG(5, 6))
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * 0.02)
	}
	for _, t := range []tensor.DType{tensor.Q4_K, tensor.Q6_K} {
		dst := make([]byte, n/qkK*int(t.BlockBytes()))
		b.Run(t.String(), func(b *testing.B) {
			b.SetBytes(4 * n)
			for b.Loop() {
				if err := Quantize(dst, x, t); err != nil {
					b.Fatal(err)
				}
			}
			reportGelem(b, n)
		})
	}
}
