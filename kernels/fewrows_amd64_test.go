//go:build !noasm

package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"golang.org/x/sys/cpu"

	"github.com/tfconv/tfconv/tensor"
)

// BenchmarkMatMulQFewRows times a Q8_0 matrix of Llama 4 Scout's expert
// shape (K = 5120, N = 8192, 44.6 MB: each call streams it from memory)
// for the few rows a prefill routes to one expert, on AVX-512 VNNI: the
// packed kernels (q8_0PackedVNNI), the per-row decode kernel and the
// 16-row tiles side by side; q8PackedMaxRows is where the tiles take over.
func BenchmarkMatMulQFewRows(b *testing.B) {
	if !cpu.X86.HasAVX512VNNI || !cpu.X86.HasAVX512BW {
		b.Skip("no AVX-512 VNNI")
	}
	const K, N = 5120, 8192
	r := rand.New(rand.NewPCG(3, 3))
	ws := make([]*Matrix, 4)
	for i := range ws {
		ws[i], _ = randMatrix(r, tensor.Q8_0, N, K)
	}
	paths := map[string]func(dst, x []float32, M int, w *Matrix){
		"packed": q8_0PackedVNNI,
		"rows":   func(dst, x []float32, M int, w *Matrix) { qm1VNNI(q8_0M1VNNI, dst, x, M, w) },
		"tiles":  qgemmVNNI,
	}
	for _, M := range []int{2, 3, 4, 6, 8, 10, 12, 16} {
		x := randVec(r, M*K)
		dst := make([]float32, M*N)
		for _, name := range []string{"packed", "rows", "tiles"} {
			if name == "rows" && M > 4 || name == "packed" && M > 16 {
				continue
			}
			b.Run(fmt.Sprintf("M=%d/%s", M, name), func(b *testing.B) {
				i := 0
				for b.Loop() {
					paths[name](dst, x, M, ws[i%len(ws)])
					i++
				}
				b.ReportMetric(2*float64(M*N*K)/(b.Elapsed().Seconds()/float64(b.N))/1e9, "GFLOP/s")
			})
		}
	}
}
