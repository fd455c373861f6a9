package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Tolerances for the element-wise kernels, relative to the float64 value
// computed from the same float32 inputs.
const (
	// elemTol: one float32 rounding of a float64 result, plus one of an
	// intermediate float32 product (weight, bias, inverse norm).
	elemTol = 3 * 0x1p-24
	// ropeTol: the rotation x0·c − x1·s is two float32 products and a
	// difference, each rounded once, of terms bounded by |x0|+|x1|.
	ropeTol = 4 * 0x1p-24
	// attnTol, relative to max|v|: a score Scale·q·k with |q·k|·Scale ≲ 10
	// (unit-normal q, k, HeadDim ≤ 64, Scale = 1/√HeadDim) carries an
	// absolute error of (HeadDim+2)·2⁻²⁴·Σ|q·k|·Scale ≲ 5e-6, which scales
	// each softmax weight by at most 1+2·5e-6; the running sums over ≤ 65
	// keys add (Tk+3)·2⁻²⁴ relative. 1e-4 covers both with margin.
	attnTol = 1e-4
)

func TestDot(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 3))
	for _, impl := range implementations() {
		withImpl(impl, func() {
			for _, n := range append(awkward, 255, 1000) {
				for off := 0; off < 3; off++ {
					a := randVec(r, n+off)[off:]
					b := randVec(r, n+2*off)[2*off:]
					got := float64(Dot(a, b))
					var want, mag float64
					for i := range a {
						want += float64(a[i]) * float64(b[i])
						mag += math.Abs(float64(a[i]) * float64(b[i]))
					}
					if math.Abs(got-want) > sumRoundingBound(n)*mag {
						t.Fatalf("%s: Dot n=%d off=%d = %g, want %g", implName(impl), n, off, got, want)
					}
				}
			}
		})
	}
}

func TestAxpy(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 4))
	for _, impl := range implementations() {
		withImpl(impl, func() {
			for _, n := range append(awkward, 255) {
				dst, check := guarded(n)
				copy(dst, randVec(r, n))
				orig := append([]float32(nil), dst...)
				x := randVec(r, n+1)[1:]
				a := float32(r.NormFloat64())
				axpy(dst, a, x)
				check(t)
				for i := range dst {
					want := float64(orig[i]) + float64(a)*float64(x[i])
					// one rounding (FMA) or two (product, then sum)
					bound := 2 * 0x1p-24 * (math.Abs(float64(orig[i])) + math.Abs(float64(a)*float64(x[i])))
					if math.Abs(float64(dst[i])-want) > bound {
						t.Fatalf("%s: axpy n=%d [%d] = %g, want %g", implName(impl), n, i, dst[i], want)
					}
				}
			}
		})
	}
}

// attentionRef builds the full score matrix in float64 and applies softmax:
// the textbook definition the online version must agree with.
func attentionRef(q, k, v []float32, Tq, Tk int, p AttentionParams) []float64 {
	H, G, D := p.Heads, p.KVHeads, p.HeadDim
	out := make([]float64, Tq*H*D)
	for i := 0; i < Tq; i++ {
		for h := 0; h < H; h++ {
			g := h / (H / G)
			scores := make([]float64, Tk)
			mx := math.Inf(-1)
			for j := range scores {
				scores[j] = math.Inf(-1)
				pos := p.QPos0 + i
				if p.KeyMask != nil && !p.KeyMask[j] {
					continue
				}
				together := p.Groups != nil && p.Groups[pos] >= 0 && p.Groups[j] == p.Groups[pos]
				if !together && (p.Causal && j > pos || p.Window > 0 && pos-j >= p.Window || p.Chunk > 0 && j/p.Chunk != pos/p.Chunk) {
					continue
				}
				var s float64
				for d := 0; d < D; d++ {
					s += float64(q[(i*H+h)*D+d]) * float64(k[(j*G+g)*D+d])
				}
				s *= float64(p.Scale)
				if p.Bias != nil {
					s += float64(p.Bias(h, i, j))
				}
				scores[j] = s
				mx = math.Max(mx, s)
			}
			if math.IsInf(mx, -1) {
				continue // no visible key: zero output
			}
			if p.Sinks != nil {
				mx = math.Max(mx, float64(p.Sinks[h]))
			}
			var sum float64
			for j := range scores {
				scores[j] = math.Exp(scores[j] - mx)
				sum += scores[j]
			}
			if p.Sinks != nil {
				sum += math.Exp(float64(p.Sinks[h]) - mx) // a key without a value
			}
			for j := range scores {
				for d := 0; d < D; d++ {
					out[(i*H+h)*D+d] += scores[j] / sum * float64(v[(j*G+g)*D+d])
				}
			}
		}
	}
	return out
}

func TestAttention(t *testing.T) {
	defer SetThreads(Threads())
	r := rand.New(rand.NewPCG(7, 7))
	for _, impl := range implementations() {
		withImpl(impl, func() {
			for _, D := range []int{1, 8, 17, 64} {
				for _, T := range [][2]int{{0, 5}, {1, 1}, {1, 17}, {7, 7}, {3, 33}, {17, 65}} {
					Tq, Tk := T[0], T[1]
					for variant := 0; variant < 9; variant++ {
						p := AttentionParams{Heads: 4, KVHeads: 2, HeadDim: D, Scale: float32(1 / math.Sqrt(float64(D)))}
						switch variant {
						case 1:
							p.Causal, p.QPos0 = true, Tk-Tq
						case 2:
							p.KeyMask = make([]bool, Tk)
							for j := range p.KeyMask {
								p.KeyMask[j] = r.IntN(3) > 0
							}
						case 3:
							p.Causal = true // QPos0 0: later queries see more keys than the first
							p.Bias = func(h, i, j int) float32 { return -0.25 * float32(h+1) * float32(i-j) }
						case 4:
							p.Causal, p.QPos0, p.Window = true, Tk-Tq, 5 // a sliding window
						case 5:
							p.Causal, p.QPos0, p.Chunk = true, Tk-Tq, 4 // Llama 4's chunks
						case 6:
							// gpt-oss's sinks, some above every score
							p.Causal, p.QPos0, p.Window = true, Tk-Tq, 3
							p.Sinks = []float32{-2, 0.5, 3, 8}
						case 7, 8:
							// Gemma 3's images: runs of positions that see each
							// other both ways, under a causal mask (and a
							// window that cuts them).
							p.Causal, p.QPos0 = true, Tk-Tq
							if variant == 8 {
								p.Window = 3
							}
							p.Groups = make([]int, Tk)
							for j := range p.Groups {
								p.Groups[j] = -1
								if j%11 >= 2 && j%11 < 9 {
									p.Groups[j] = j / 11
								}
							}
						}
						SetThreads(1 + variant%3)
						q := randVec(r, Tq*4*D+1)[1:]
						k := randVec(r, Tk*2*D)
						v := randVec(r, Tk*2*D)
						dst, check := guarded(Tq * 4 * D)
						Attention(dst, q, k, v, Tq, Tk, p)
						check(t)
						want := attentionRef(q, k, v, Tq, Tk, p)
						var vmax float64
						for _, x := range v {
							vmax = math.Max(vmax, math.Abs(float64(x)))
						}
						for i := range want {
							if math.Abs(float64(dst[i])-want[i]) > attnTol*vmax {
								t.Fatalf("%s D=%d Tq=%d Tk=%d variant %d: out[%d] = %g, want %g",
									implName(impl), D, Tq, Tk, variant, i, dst[i], want[i])
							}
						}
					}
				}
			}
		})
	}
}

func TestSoftmax(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	for _, n := range awkward {
		x := randVec(r, n)
		for i := range x {
			x[i] *= 10
			if r.IntN(5) == 0 {
				x[i] = float32(math.Inf(-1))
			}
		}
		want := make([]float64, n)
		mx := math.Inf(-1)
		for _, v := range x {
			mx = math.Max(mx, float64(v))
		}
		var sum float64
		for i, v := range x {
			want[i] = math.Exp(float64(v) - mx)
			sum += want[i]
		}
		Softmax(x)
		for i := range x {
			w := 0.0
			if sum > 0 {
				w = want[i] / sum
			}
			if math.Abs(float64(x[i])-w) > elemTol*w+1e-45 {
				t.Fatalf("Softmax n=%d [%d] = %g, want %g", n, i, x[i], w)
			}
		}
	}
	allMasked := []float32{float32(math.Inf(-1)), float32(math.Inf(-1))}
	Softmax(allMasked)
	if allMasked[0] != 0 || allMasked[1] != 0 {
		t.Fatalf("Softmax of all -Inf = %v, want zeros", allMasked)
	}
}

func TestNorms(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	const eps = 1e-5
	for _, n := range awkward[1:] {
		x := randVec(r, n)
		for i := range x {
			x[i] = 3 + 2*x[i] // a mean far from zero
		}
		wt, bias := randVec(r, n), randVec(r, n)
		var mean, ss float64
		for _, v := range x {
			mean += float64(v)
			ss += float64(v) * float64(v)
		}
		mean /= float64(n)
		var variance float64
		for _, v := range x {
			variance += (float64(v) - mean) * (float64(v) - mean)
		}
		variance /= float64(n)
		for _, b := range [][]float32{nil, bias} {
			dst, check := guarded(n)
			LayerNorm(dst, x, wt, b, eps)
			check(t)
			for i := range dst {
				y := (float64(x[i]) - mean) / math.Sqrt(variance+eps) * float64(wt[i])
				mag := math.Abs(y)
				if b != nil {
					y += float64(b[i])
					mag += math.Abs(float64(b[i]))
				}
				if math.Abs(float64(dst[i])-y) > elemTol*mag {
					t.Fatalf("LayerNorm n=%d bias=%v [%d] = %g, want %g", n, b != nil, i, dst[i], y)
				}
			}
		}
		for _, w := range [][]float32{nil, wt} {
			dst, check := guarded(n)
			RMSNorm(dst, x, w, eps)
			check(t)
			for i := range dst {
				y := float64(x[i]) / math.Sqrt(ss/float64(n)+eps)
				if w != nil {
					y *= float64(w[i])
				}
				if math.Abs(float64(dst[i])-y) > elemTol*math.Abs(y) {
					t.Fatalf("RMSNorm n=%d weight=%v [%d] = %g, want %g", n, w != nil, i, dst[i], y)
				}
			}
		}
	}
}

func TestActivations(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	x := randVec(r, 1000)
	for i := range x {
		x[i] *= 4
	}
	x = append(x, 0, -0, 30, -30, 100, -100)
	cases := []struct {
		name string
		fn   func([]float32)
		ref  func(float64) float64
	}{
		{"GELU", GELU, func(v float64) float64 { return v / 2 * (1 + math.Erf(v/math.Sqrt2)) }},
		{"GELUTanh", GELUTanh, func(v float64) float64 {
			return v / 2 * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(v+0.044715*v*v*v)))
		}},
		{"SiLU", SiLU, func(v float64) float64 { return v / (1 + math.Exp(-v)) }},
		{"ReLU", ReLU, func(v float64) float64 { return math.Max(v, 0) }},
	}
	for _, c := range cases {
		y := append([]float32(nil), x...)
		c.fn(y)
		for i, v := range x {
			want := c.ref(float64(v))
			// GELU's erf and tanh cancel against 1 for large negative
			// inputs: allow an absolute error at float32 resolution of x.
			if math.Abs(float64(y[i])-want) > elemTol*math.Abs(want)+0x1p-24*math.Abs(float64(v))*1e-6 {
				t.Fatalf("%s(%g) = %g, want %g", c.name, v, y[i], want)
			}
		}
	}
	a, b := randVec(r, 33), randVec(r, 33)
	sum, prod, sc := append([]float32(nil), a...), append([]float32(nil), a...), append([]float32(nil), a...)
	Add(sum, b)
	Mul(prod, b)
	Scale(sc, 0.5)
	for i := range a {
		if sum[i] != a[i]+b[i] || prod[i] != a[i]*b[i] || sc[i] != a[i]*0.5 {
			t.Fatalf("Add/Mul/Scale [%d]: %g %g %g from %g, %g", i, sum[i], prod[i], sc[i], a[i], b[i])
		}
	}
}

func TestRoPE(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	const heads, headDim = 3, 10
	for _, rotDim := range []int{10, 6} {
		for _, neox := range []bool{false, true} {
			for _, pos := range []int{0, 1, 17, 4000} {
				x := randVec(r, heads*headDim)
				y := append([]float32(nil), x...)
				RoPE(y, heads, headDim, rotDim, pos, 10000, neox)
				want := make([]float64, len(x))
				for i := range x {
					want[i] = float64(x[i])
				}
				for i := 0; i < rotDim/2; i++ {
					// torch: inv_freq and the angle in float32
					invFreq := float32(1 / math.Pow(10000, float64(2*i)/float64(rotDim)))
					ang := float64(float32(pos) * invFreq)
					c, s := math.Cos(ang), math.Sin(ang)
					for h := 0; h < heads; h++ {
						a, b := h*headDim+2*i, h*headDim+2*i+1
						if neox {
							a, b = h*headDim+i, h*headDim+i+rotDim/2
						}
						x0, x1 := float64(x[a]), float64(x[b])
						want[a] = x0*c - x1*s
						want[b] = x0*s + x1*c
					}
				}
				for i := range y {
					h := i / headDim * headDim
					mag := 0.0
					for _, v := range x[h : h+headDim] {
						mag = math.Max(mag, math.Abs(float64(v)))
					}
					if math.Abs(float64(y[i])-want[i]) > ropeTol*2*mag {
						t.Fatalf("RoPE rot=%d neox=%v pos=%d [%d] = %g, want %g", rotDim, neox, pos, i, y[i], want[i])
					}
				}
			}
		}
	}
}
