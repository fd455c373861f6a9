package quant

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkQuantizeK encodes rows shaped like a 7B model's (4096 wide,
// weights ≈ N(0, 0.02)) into the k-quant types llama-quantize's Q4_K_M
// mixture writes, without importance weights, with every kernel set
// (generic: the plain Go reference).
func BenchmarkQuantizeK(b *testing.B) {
	const n = 64 * 4096
	r := rand.New(rand.NewPCG(5, 6))
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * 0.02)
	}
	q4 := make([]byte, n/qkK*144)
	q6 := make([]byte, n/qkK*210)
	benchImpls(b, func(b *testing.B, k kernelSet) {
		b.Run("Q4_K", func(b *testing.B) {
			b.SetBytes(4 * n)
			for b.Loop() {
				quantRowsQ45K(q4, x, q4KSearch, &k)
			}
			reportGelem(b, n)
		})
		b.Run("Q6_K", func(b *testing.B) {
			b.SetBytes(4 * n)
			for b.Loop() {
				for i := range n / qkK {
					quantQ6_KWith(&k, q6[210*i:210*i+210], x[qkK*i:qkK*i+qkK], nil)
				}
			}
			reportGelem(b, n)
		})
	})
}
