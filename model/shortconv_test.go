package model

import (
	"math"
	"math/rand"
	"testing"

	"github.com/tfconv/tfconv/kernels"
)

// TestShortConvSplits runs LFM2's short convolution on random weights
// against its definition in float64 (in_proj to B, C, x; C ⊙ causal
// depthwise conv of B ⊙ x; out_proj), fed at once and in two pieces at
// every split: the state carried between pieces must give the same
// output.
func TestShortConvSplits(t *testing.T) {
	t.Parallel()
	const d, T, tol = 8, 7, 1e-5
	for _, k := range []int{1, 2, 3, 4, 9} {
		r := rand.New(rand.NewSource(int64(k)))
		rnd := func(n int) []float32 {
			out := make([]float32, n)
			for i := range out {
				out[i] = float32(r.NormFloat64())
			}
			return out
		}
		m := &shortConv{d: d, k: k, In: linear{W: kernels.F32Matrix(3*d, d, rnd(3*d*d))},
			Conv: rnd(d * k), Out: linear{W: kernels.F32Matrix(d, d, rnd(d*d))}}
		h := rnd(T * d)
		want := shortConvRef(m, h, T)
		for split := 0; split <= T; split++ {
			state := make([]float32, m.stateSize())
			got := make([]float32, T*d)
			if err := m.forward(got[:split*d], h[:split*d], state, split, nil); err != nil {
				t.Fatal(err)
			}
			if err := m.forward(got[split*d:], h[split*d:], state, T-split, nil); err != nil {
				t.Fatal(err)
			}
			for i, v := range got {
				if math.Abs(float64(v)-want[i]) > tol*math.Max(1, math.Abs(want[i])) {
					t.Fatalf("K=%d split %d: out[%d][%d] = %v, want %v", k, split, i/d, i%d, v, want[i])
				}
			}
		}
	}
}

// shortConvRef is the short convolution by its definition, in float64.
func shortConvRef(m *shortConv, h []float32, T int) []float64 {
	d, k := m.d, m.k
	mat := func(w *kernels.Matrix, x []float64) []float64 {
		out := make([]float64, w.Rows)
		row := make([]float32, w.Cols)
		for n := range out {
			w.Row(row, n)
			for j, v := range row {
				out[n] += float64(v) * x[j]
			}
		}
		return out
	}
	bx := make([][]float64, T)
	cs := make([][]float64, T)
	for t := 0; t < T; t++ {
		x := make([]float64, d)
		for i := range x {
			x[i] = float64(h[t*d+i])
		}
		p := mat(m.In.W, x)
		bx[t], cs[t] = make([]float64, d), p[d:2*d]
		for c := 0; c < d; c++ {
			bx[t][c] = p[c] * p[2*d+c]
		}
	}
	out := make([]float64, 0, T*d)
	for t := 0; t < T; t++ {
		y := make([]float64, d)
		for c := 0; c < d; c++ {
			var s float64
			for j := 0; j < k; j++ {
				if src := t - (k - 1) + j; src >= 0 {
					s += float64(m.Conv[c*k+j]) * bx[src][c]
				}
			}
			y[c] = cs[t][c] * s
		}
		out = append(out, mat(m.Out.W, y)...)
	}
	return out
}
