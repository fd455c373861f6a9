package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSSDScan checks the scan against its definition in float64 (the
// state as a sum over earlier positions of decayed inputs, groups shared
// by their heads), and that any split of the sequence gives the same
// output and final state.
func TestSSDScan(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	const T, H, P, N, G = 7, 4, 3, 5, 2
	stride := H*P + 2*G*N + 1 // x, B, C inside a wider row, as in Mamba-2
	row := make([]float32, T*stride)
	dt := make([]float32, T*H)
	A := make([]float32, H)
	D := make([]float32, H)
	for _, s := range [][]float32{row, D} {
		for i := range s {
			s[i] = r.Float32()*2 - 1
		}
	}
	for i := range dt {
		dt[i] = r.Float32()
	}
	for i := range A {
		A[i] = -r.Float32() * 3
	}
	x, B, C := row, row[H*P:], row[H*P+G*N:]
	want := make([]float64, T*H*P)
	final := make([]float64, H*P*N)
	for h := 0; h < H; h++ {
		g := h / (H / G)
		for p := 0; p < P; p++ {
			for n := 0; n < N; n++ {
				var s float64
				for tt := 0; tt < T; tt++ {
					d := float64(dt[tt*H+h])
					s = math.Exp(d*float64(A[h]))*s + d*float64(x[tt*stride+h*P+p])*float64(B[tt*stride+g*N+n])
					want[tt*H*P+h*P+p] += s * float64(C[tt*stride+g*N+n])
				}
				final[(h*P+p)*N+n] = s
			}
			for tt := 0; tt < T; tt++ {
				want[tt*H*P+h*P+p] += float64(D[h]) * float64(x[tt*stride+h*P+p])
			}
		}
	}
	for _, split := range [][]int{{T}, {1, 1, 1, 1, 1, 1, 1}, {3, 4}, {1, 5, 1}} {
		state := make([]float32, H*P*N)
		y := make([]float32, T*H*P)
		pos := 0
		for _, n := range split {
			o := pos * stride
			SSDScan(y[pos*H*P:], state, x[o:], B[o:], C[o:], stride, dt[pos*H:], A, D, n, H, P, N, G)
			pos += n
		}
		for i, v := range y {
			if math.Abs(float64(v)-want[i]) > 1e-5 {
				t.Fatalf("split %v: y[%d] = %v, want %v", split, i, v, want[i])
			}
		}
		for i, v := range state {
			if math.Abs(float64(v)-final[i]) > 1e-5 {
				t.Fatalf("split %v: state[%d] = %v, want %v", split, i, v, final[i])
			}
		}
	}
}
