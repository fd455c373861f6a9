package kernels

import (
	"math"
	"math/rand"
	"testing"
)

// chunkedDeltaRule is the gated delta rule in the chunked form transformers
// runs over a whole sequence (torch_chunk_gated_delta_rule's algebra, float64):
// within a chunk of positions with cumulative log decays G, the delta rule's
// corrections are a unit lower-triangular system solved by substitution,
// then each chunk reads the state once and writes it once.
func chunkedDeltaRule(q, k, v, g, beta []float32, T, H, Dk, Dv, chunk int, scale float64) []float64 {
	out := make([]float64, T*H*Dv)
	for h := 0; h < H; h++ {
		S := make([]float64, Dk*Dv)
		at := func(x []float32, t, d, D int) float64 { return float64(x[(t*H+h)*D+d]) }
		for c0 := 0; c0 < T; c0 += chunk {
			L := min(chunk, T-c0)
			G := make([]float64, L)
			sum := 0.0
			for t := 0; t < L; t++ {
				sum += float64(g[(c0+t)*H+h])
				G[t] = sum
			}
			dot := func(a []float32, t int, b []float32, s int) float64 {
				r := 0.0
				for i := 0; i < Dk; i++ {
					r += at(a, c0+t, i, Dk) * at(b, c0+s, i, Dk)
				}
				return r
			}
			// M = (I + strictly lower [β_t k_t·k_s e^{G_t−G_s}])⁻¹, row by row
			// by forward substitution.
			M := make([][]float64, L)
			for t := range M {
				M[t] = make([]float64, L)
				M[t][t] = 1
			}
			for t := 0; t < L; t++ {
				for s := 0; s < t; s++ {
					acc := 0.0
					for r := s; r < t; r++ {
						acc += float64(beta[(c0+t)*H+h]) * dot(k, t, k, r) * math.Exp(G[t]-G[r]) * M[r][s]
					}
					M[t][s] = -acc
				}
			}
			// u = M·(βv), w = M·(β k e^G); v' = u − w·S.
			vn := make([][]float64, L)
			for t := 0; t < L; t++ {
				vn[t] = make([]float64, Dv)
				for s := 0; s <= t; s++ {
					b := float64(beta[(c0+s)*H+h]) * M[t][s]
					for j := 0; j < Dv; j++ {
						u := at(v, c0+s, j, Dv)
						for i := 0; i < Dk; i++ {
							u -= at(k, c0+s, i, Dk) * math.Exp(G[s]) * S[i*Dv+j]
						}
						vn[t][j] += b * u
					}
				}
			}
			for t := 0; t < L; t++ {
				for j := 0; j < Dv; j++ {
					o := 0.0
					for i := 0; i < Dk; i++ {
						o += at(q, c0+t, i, Dk) * math.Exp(G[t]) * S[i*Dv+j]
					}
					for s := 0; s <= t; s++ {
						o += dot(q, t, k, s) * math.Exp(G[t]-G[s]) * vn[s][j]
					}
					out[((c0+t)*H+h)*Dv+j] = o * scale
				}
			}
			next := make([]float64, Dk*Dv)
			for i := 0; i < Dk; i++ {
				for j := 0; j < Dv; j++ {
					x := S[i*Dv+j] * math.Exp(G[L-1])
					for s := 0; s < L; s++ {
						x += at(k, c0+s, i, Dk) * math.Exp(G[L-1]-G[s]) * vn[s][j]
					}
					next[i*Dv+j] = x
				}
			}
			S = next
		}
	}
	return out
}

// TestGatedDeltaRule holds the recurrent form against the chunked one
// (chunks of 4 over 11 steps: two whole chunks and a short one, as
// transformers pads), and feeds the recurrent form at once and in pieces.
func TestGatedDeltaRule(t *testing.T) {
	t.Parallel()
	const T, H, Dk, Dv = 11, 3, 5, 7
	r := rand.New(rand.NewSource(7))
	vec := func(n int, f func() float32) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = f()
		}
		return x
	}
	unit := func(x []float32) { // L2-normalised rows of Dk, as the mixer gives
		for o := 0; o < len(x); o += Dk {
			s := float32(0)
			for _, v := range x[o : o+Dk] {
				s += v * v
			}
			s = float32(1 / math.Sqrt(float64(s)))
			for i := o; i < o+Dk; i++ {
				x[i] *= s
			}
		}
	}
	norm := func() float32 { return float32(r.NormFloat64()) }
	q, k, v := vec(T*H*Dk, norm), vec(T*H*Dk, norm), vec(T*H*Dv, norm)
	unit(q)
	unit(k)
	g := vec(T*H, func() float32 { return -float32(r.Float64()) })
	beta := vec(T*H, func() float32 { return float32(r.Float64()) })
	scale := float32(1 / math.Sqrt(Dk))
	want := chunkedDeltaRule(q, k, v, g, beta, T, H, Dk, Dv, 4, float64(scale))

	// maxDiff: float32 accumulation over 11 steps of O(1) values.
	const maxDiff = 1e-5
	got := make([]float32, T*H*Dv)
	GatedDeltaRule(got, q, k, v, g, beta, make([]float32, H*Dk*Dv), T, H, Dk, Dv, scale)
	for i, w := range want {
		if d := math.Abs(float64(got[i]) - w); d > maxDiff {
			t.Fatalf("element %d: recurrent %v, chunked %v", i, got[i], w)
		}
	}
	for _, split := range []int{1, 3, 7} {
		st := make([]float32, H*Dk*Dv)
		part := make([]float32, T*H*Dv)
		for t0 := 0; t0 < T; t0 += split {
			n := min(split, T-t0)
			GatedDeltaRule(part[t0*H*Dv:(t0+n)*H*Dv], q[t0*H*Dk:], k[t0*H*Dk:], v[t0*H*Dv:], g[t0*H:], beta[t0*H:], st, n, H, Dk, Dv, scale)
		}
		for i := range part {
			if part[i] != got[i] {
				t.Fatalf("split %d: element %d: %v in pieces, %v at once", split, i, part[i], got[i])
			}
		}
	}
}
