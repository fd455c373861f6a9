package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSelectiveScan checks the scan against its recurrence written out in
// float64 from a zero state, and that any split of the sequence into steps
// gives the same output and final state.
func TestSelectiveScan(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	const T, C, N = 7, 5, 3
	fill := func(n int, lo, hi float32) []float32 {
		s := make([]float32, n)
		for i := range s {
			s[i] = lo + r.Float32()*(hi-lo)
		}
		return s
	}
	x, dt := fill(T*C, -1, 1), fill(T*C, 0.01, 1.5)
	A, B, Cm, D := fill(C*N, -3, -0.1), fill(T*N, -1, 1), fill(T*N, -1, 1), fill(C, -1, 1)
	want := make([]float64, T*C)
	h := make([]float64, C*N)
	for tt := 0; tt < T; tt++ {
		for c := 0; c < C; c++ {
			d := float64(dt[tt*C+c])
			var sum float64
			for n := 0; n < N; n++ {
				h[c*N+n] = math.Exp(d*float64(A[c*N+n]))*h[c*N+n] + d*float64(B[tt*N+n])*float64(x[tt*C+c])
				sum += h[c*N+n] * float64(Cm[tt*N+n])
			}
			want[tt*C+c] = sum + float64(D[c])*float64(x[tt*C+c])
		}
	}
	for _, split := range [][]int{{T}, {1, 1, 1, 1, 1, 1, 1}, {3, 4}, {1, 6}} {
		state := make([]float32, C*N)
		got := make([]float32, T*C)
		pos := 0
		for _, n := range split {
			SelectiveScan(got[pos*C:(pos+n)*C], state, x[pos*C:(pos+n)*C], dt[pos*C:(pos+n)*C], A,
				B[pos*N:(pos+n)*N], Cm[pos*N:(pos+n)*N], D, n, C, N)
			pos += n
		}
		for i := range want {
			if d := float64(got[i]) - want[i]; math.Abs(d) > 1e-5 {
				t.Fatalf("split %v: y[%d] = %v, want %v", split, i, got[i], want[i])
			}
		}
		for i := range h {
			if d := float64(state[i]) - h[i]; math.Abs(d) > 1e-5 {
				t.Fatalf("split %v: state[%d] = %v, want %v", split, i, state[i], h[i])
			}
		}
	}
}

// TestSoftplus checks log(1+eˣ) on both sides of the threshold.
func TestSoftplus(t *testing.T) {
	t.Parallel()
	x := []float32{-30, -1, 0, 1, 19.5, 20, 21, 80}
	got := append([]float32(nil), x...)
	Softplus(got)
	for i, v := range x {
		want := math.Log1p(math.Exp(float64(v)))
		if v > 20 {
			want = float64(v)
		}
		if math.Abs(float64(got[i])-want) > 1e-6*math.Max(1, math.Abs(want)) {
			t.Errorf("Softplus(%v) = %v, want %v", v, got[i], want)
		}
	}
}
