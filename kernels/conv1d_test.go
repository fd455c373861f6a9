package kernels

import (
	"math/rand/v2"
	"testing"
)

// TestCausalConv1D checks the convolution against its definition written
// out on zero-padded input, and that any split of the sequence into steps
// gives the same output and final state.
func TestCausalConv1D(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	const T, C = 9, 5
	for _, K := range []int{1, 2, 4} {
		x := make([]float32, T*C)
		w := make([]float32, C*K)
		b := make([]float32, C)
		for _, s := range [][]float32{x, w, b} {
			for i := range s {
				s[i] = r.Float32()*2 - 1
			}
		}
		want := make([]float32, T*C)
		for tt := 0; tt < T; tt++ {
			for c := 0; c < C; c++ {
				sum := float64(b[c])
				for j := 0; j < K; j++ {
					if src := tt - (K - 1) + j; src >= 0 {
						sum += float64(w[c*K+j]) * float64(x[src*C+c])
					}
				}
				want[tt*C+c] = float32(sum)
			}
		}
		for _, split := range [][]int{{T}, {1, 1, 1, 1, 1, 1, 1, 1, 1}, {2, 5, 2}, {1, 8}} {
			state := make([]float32, (K-1)*C)
			got := make([]float32, T*C)
			pos := 0
			for _, n := range split {
				CausalConv1D(got[pos*C:(pos+n)*C], x[pos*C:(pos+n)*C], state, w, b, n, C, K)
				pos += n
			}
			for i := range want {
				if d := got[i] - want[i]; d > 1e-6 || d < -1e-6 {
					t.Fatalf("K=%d split %v: dst[%d] = %v, want %v", K, split, i, got[i], want[i])
				}
			}
			for j := 0; j < K-1; j++ {
				for c := 0; c < C; c++ {
					if state[j*C+c] != x[(T-(K-1)+j)*C+c] {
						t.Fatalf("K=%d split %v: state[%d][%d] = %v, want the input of position %d", K, split, j, c, state[j*C+c], T-(K-1)+j)
					}
				}
			}
		}
	}
}
