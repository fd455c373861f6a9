package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// maxWKV7Diff bounds float32 WKV7 against the float64 definition: a few
// dozen accumulations of values below 1 over 9 steps.
const maxWKV7Diff = 1e-5

// wkv7Ref is WKV7's definition in float64, the state kept as S[h][i][j].
func wkv7Ref(r, w, k, v, a, b []float32, S []float64, T, H, N int) []float64 {
	out := make([]float64, T*H*N)
	for t := 0; t < T; t++ {
		for h := 0; h < H; h++ {
			o := (t*H + h) * N
			St := S[h*N*N : (h+1)*N*N]
			for i := 0; i < N; i++ {
				sa := 0.0
				for j := 0; j < N; j++ {
					sa += float64(a[o+j]) * St[i*N+j]
				}
				y := 0.0
				for j := 0; j < N; j++ {
					St[i*N+j] = St[i*N+j]*float64(w[o+j]) + float64(v[o+i])*float64(k[o+j]) + sa*float64(b[o+j])
					y += St[i*N+j] * float64(r[o+j])
				}
				out[o+i] = y
			}
		}
	}
	return out
}

func TestWKV7(t *testing.T) {
	t.Parallel()
	for _, sz := range []struct{ T, H, N int }{{1, 1, 1}, {9, 2, 7}, {5, 3, 8}, {3, 1, 65}} {
		rng := rand.New(rand.NewPCG(uint64(sz.N), 7))
		n := sz.T * sz.H * sz.N
		vec := func(lo, hi float32) []float32 {
			x := make([]float32, n)
			for i := range x {
				x[i] = lo + (hi-lo)*rng.Float32()
			}
			return x
		}
		r, w, k, v := vec(-1, 1), vec(0.55, 1), vec(-1, 1), vec(-1, 1)
		// a = −κ̂ and b = κ̂·α as RWKV-7 makes them: a small rank-one
		// removal keeps the state bounded.
		a, b := vec(-0.3, 0), vec(0, 0.3)
		state := make([]float32, sz.H*sz.N*sz.N)
		ref := make([]float64, len(state))
		want := wkv7Ref(r, w, k, v, a, b, ref, sz.T, sz.H, sz.N)
		// at once, then again token by token from a fresh state
		got := make([]float32, n+1)
		got[n] = 42 // guard
		WKV7(got[:n], r, w, k, v, a, b, state, sz.T, sz.H, sz.N)
		if got[n] != 42 {
			t.Fatalf("%+v: wrote past dst", sz)
		}
		for i := range want {
			if d := math.Abs(float64(got[i]) - want[i]); d > maxWKV7Diff {
				t.Fatalf("%+v: out[%d] = %g, want %g", sz, i, got[i], want[i])
			}
		}
		for i := range ref {
			if d := math.Abs(float64(state[i]) - ref[i]); d > maxWKV7Diff {
				t.Fatalf("%+v: state[%d] = %g, want %g", sz, i, state[i], ref[i])
			}
		}
		step := make([]float32, len(state))
		hn := sz.H * sz.N
		for tt := 0; tt < sz.T; tt++ {
			o := tt * hn
			one := make([]float32, hn)
			WKV7(one, r[o:o+hn], w[o:o+hn], k[o:o+hn], v[o:o+hn], a[o:o+hn], b[o:o+hn], step, 1, sz.H, sz.N)
			for i, x := range one {
				if x != got[o+i] {
					t.Fatalf("%+v: step %d out[%d] = %g token by token, %g at once", sz, tt, i, x, got[o+i])
				}
			}
		}
	}
	WKV7(nil, nil, nil, nil, nil, nil, nil, nil, 0, 1, 1) // nothing to do
}
