package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// errorSumsRelTol bounds how far two orders of float64 additions of
// non-negative terms can drift apart: n·2^-53 relative for n terms, far
// below this for the sizes tested.
const errorSumsRelTol = 1e-12

// TestErrorSums checks every kernel set against a float64 sum in plain
// order over awkward lengths and offsets, and that a NaN anywhere in x or y
// makes max |x-y| NaN.
func TestErrorSums(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, impl := range implementations() {
		for _, n := range awkwardSizes {
			for _, off := range []int{0, 1, 3} {
				x := make([]float32, n+off)[off:]
				y := make([]float32, n+off)[off:]
				for i := range x {
					x[i] = float32(r.NormFloat64())
					y[i] = x[i] + float32(r.NormFloat64()*0.01)
				}
				var ws, wq, wm float64
				for i := range x {
					d := float64(x[i]) - float64(y[i])
					ws += float64(x[i]) * float64(x[i])
					wq += d * d
					wm = max(wm, math.Abs(d))
				}
				s, q, m := impl.errorSums(x, y)
				name := fmt.Sprintf("%s n=%d off=%d", impl.name, n, off)
				if math.Abs(s-ws) > errorSumsRelTol*ws || math.Abs(q-wq) > errorSumsRelTol*wq || m != wm {
					t.Fatalf("%s: %v %v %v, want %v %v %v", name, s, q, m, ws, wq, wm)
				}
				if n == 0 {
					continue
				}
				for _, k := range []int{0, n / 2, n - 1} {
					for _, side := range [][]float32{x, y} {
						old := side[k]
						side[k] = float32(math.NaN())
						if _, _, m := impl.errorSums(x, y); !math.IsNaN(m) {
							t.Fatalf("%s: NaN at %d: max %v", name, k, m)
						}
						side[k] = old
					}
				}
			}
		}
	}
}
