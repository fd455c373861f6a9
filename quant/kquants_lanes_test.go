package quant

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
)

// kquantCases are super-blocks that exercise every branch of the k-quant
// searches: weights-like data, constant and all-zero sub-blocks (mx == mn,
// amax below groupMaxEps), single spikes, huge and tiny magnitudes,
// infinities and NaNs (which the lane kernels leave to the plain Go search).
func kquantCases(r *rand.Rand) [][]float32 {
	var cases [][]float32
	gen := func(f func(i int) float32) {
		x := make([]float32, qkK)
		for i := range x {
			x[i] = f(i)
		}
		cases = append(cases, x)
	}
	for range 200 {
		s := math.Pow(10, r.Float64()*8-6)
		gen(func(int) float32 { return float32(r.NormFloat64() * s) })
	}
	for range 50 {
		gen(func(int) float32 { return float32(r.NormFloat64()*0.02 + 0.05) }) // all positive: min clamps to 0
		gen(func(int) float32 { return -float32(r.ExpFloat64()) })
	}
	gen(func(int) float32 { return 0 })
	gen(func(int) float32 { return float32(math.Copysign(0, -1)) })
	gen(func(int) float32 { return 1 })
	gen(func(i int) float32 { return float32(i%32) - 7 })
	gen(func(i int) float32 { return float32(i%16) * 0.25 })
	for _, special := range []float32{0, 1e-30, 1e-20, 3e38, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())} {
		for range 4 {
			j := r.IntN(qkK)
			sub := r.IntN(16)
			gen(func(i int) float32 {
				switch {
				case i == j:
					return special
				case i/16 == sub:
					return 0 // one sub-block of zeros beside it
				}
				return float32(r.NormFloat64() * 0.02)
			})
		}
	}
	// a sub-block of zeros next to large ones: its stored scale is 0, so
	// the search's own levels are what the block keeps
	gen(func(i int) float32 {
		if i < 32 {
			return float32(r.NormFloat64() * 1e-9)
		}
		return float32(r.NormFloat64() * 10)
	})
	for range 100 {
		gen(func(int) float32 { return math.Float32frombits(r.Uint32()) })
	}
	return cases
}

// TestKQuantLanes checks every lane kernel against the plain Go search,
// byte for byte, through the block quantizers, with and without importance
// weights for Q6_K.
func TestKQuantLanes(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	cases := kquantCases(r)
	qw := make([]float32, qkK)
	for i := range qw {
		qw[i] = float32(r.ExpFloat64())
	}
	nanW := append([]float32(nil), qw...)
	nanW[77] = float32(math.NaN())
	// an importance entry with zero columns: whole sub-blocks of weight 0
	sparseW := append([]float32(nil), qw...)
	for i := range sparseW {
		if i%64 < 40 {
			sparseW[i] = 0
		}
	}
	for _, impl := range implementations() {
		if impl.kq == kqGo {
			continue
		}
		for ci, x := range cases {
			for _, c := range []struct {
				name     string
				size     int
				ref, got func(b []byte)
			}{
				{"Q2_K", 84, func(b []byte) { quantQ2_KWith(&genericKernels, b, x) }, func(b []byte) { quantQ2_KWith(&impl, b, x) }},
				{"Q3_K", 110, func(b []byte) { quantQ3_KWith(&genericKernels, b, x) }, func(b []byte) { quantQ3_KWith(&impl, b, x) }},
				{"Q4_K", 144, func(b []byte) { quantQ4_KWith(&genericKernels, b, x) }, func(b []byte) { quantQ4_KWith(&impl, b, x) }},
				{"Q5_K", 176, func(b []byte) { quantQ5_KWith(&genericKernels, b, x) }, func(b []byte) { quantQ5_KWith(&impl, b, x) }},
				{"Q4_K/imatrix", 144, func(b []byte) { quantQ4_KWWith(&genericKernels, b, x, qw) }, func(b []byte) { quantQ4_KWWith(&impl, b, x, qw) }},
				{"Q5_K/imatrix", 176, func(b []byte) { quantQ5_KWWith(&genericKernels, b, x, qw) }, func(b []byte) { quantQ5_KWWith(&impl, b, x, qw) }},
				{"Q4_K/sparse-imatrix", 144, func(b []byte) { quantQ4_KWWith(&genericKernels, b, x, sparseW) }, func(b []byte) { quantQ4_KWWith(&impl, b, x, sparseW) }},
				{"Q4_K/NaN-imatrix", 144, func(b []byte) { quantQ4_KWWith(&genericKernels, b, x, nanW) }, func(b []byte) { quantQ4_KWWith(&impl, b, x, nanW) }},
				{"Q6_K", 210, func(b []byte) { quantQ6_KWith(&genericKernels, b, x, nil) }, func(b []byte) { quantQ6_KWith(&impl, b, x, nil) }},
				{"Q6_K/imatrix", 210, func(b []byte) { quantQ6_KWith(&genericKernels, b, x, qw) }, func(b []byte) { quantQ6_KWith(&impl, b, x, qw) }},
				{"Q6_K/NaN-imatrix", 210, func(b []byte) { quantQ6_KWith(&genericKernels, b, x, nanW) }, func(b []byte) { quantQ6_KWith(&impl, b, x, nanW) }},
			} {
				want := bytes.Repeat([]byte{0xa5}, c.size)
				got := bytes.Repeat([]byte{0x5a}, c.size)
				c.ref(want)
				c.got(got)
				if !bytes.Equal(got, want) {
					t.Fatalf("%s %s case %d: block differs from the plain Go search\n got %x\nwant %x\nx[:8] %v", impl.name, c.name, ci, got, want, x[:8])
				}
			}
		}
	}
}

// TestKQuantLanesRows checks the row encoders, which search two
// super-blocks at once with sixteen lanes, against the plain Go blocks,
// without and with importance weights: on pairs of the cases (NaN-free
// pairs, pairs with a NaN on either side) and an odd count, whose last
// block goes alone.
func TestKQuantLanesRows(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	cases := kquantCases(r)
	var src []float32
	for _, x := range cases {
		src = append(src, x...)
	}
	if len(cases)%2 == 0 {
		src = append(src, cases[0]...)
	}
	nb := len(src) / qkK
	qw := make([]float32, len(src))
	for i := range qw {
		if i%9 != 0 {
			qw[i] = float32(r.ExpFloat64())
		}
	}
	for _, impl := range implementations() {
		for _, c := range []struct {
			name string
			p    *qkx2Search
			bb   int
			ref  func(b []byte, x []float32)
		}{
			{"Q4_K", q4KSearch, 144, func(b []byte, x []float32) { quantQ4_KWith(&genericKernels, b, x) }},
			{"Q5_K", q5KSearch, 176, func(b []byte, x []float32) { quantQ5_KWith(&genericKernels, b, x) }},
		} {
			got := bytes.Repeat([]byte{0x5a}, nb*c.bb)
			quantRowsQ45K(got, src, c.p, &impl)
			for i := range nb {
				want := make([]byte, c.bb)
				c.ref(want, src[i*qkK:(i+1)*qkK])
				if !bytes.Equal(got[i*c.bb:(i+1)*c.bb], want) {
					t.Fatalf("%s %s block %d of %d: differs from the plain Go search\n got %x\nwant %x", impl.name, c.name, i, nb, got[i*c.bb:(i+1)*c.bb], want)
				}
			}
			// with importance weights: a row of them, as QuantizeRows
			// passes one entry for the whole row
			wp := q4KWSearch
			if c.p == q5KSearch {
				wp = q5KWSearch
			}
			got = bytes.Repeat([]byte{0x5a}, nb*c.bb)
			quantRowQ45KW(got, src, qw, wp, &impl)
			for i := range nb {
				want := make([]byte, c.bb)
				var L [qkK]uint8
				quantQ45KW(want, src[i*qkK:(i+1)*qkK], qw[i*qkK:], &L, wp, &genericKernels)
				if wp == q5KWSearch {
					packQ5_K(want, &L)
				} else {
					packQ4_K(want, &L)
				}
				if !bytes.Equal(got[i*c.bb:(i+1)*c.bb], want) {
					t.Fatalf("%s %s/imatrix block %d of %d: differs from the plain Go search\n got %x\nwant %x", impl.name, c.name, i, nb, got[i*c.bb:(i+1)*c.bb], want)
				}
			}
		}
	}
}

// TestKQuantLanesScales checks the kernels' raw output, scales and mins
// for every sub-block, against the plain Go search, and that a NaN makes
// them decline.
func TestKQuantLanesScales(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for _, impl := range implementations() {
		if impl.kq == kqGo {
			continue
		}
		cases := kquantCases(r)
		for ci, x := range cases {
			hasNaN := false
			for _, v := range x {
				hasNaN = hasNaN || v != v
			}
			// weights as quantQ45KW gives makeQKX3Quants: any non-negative
			// values, zeros included
			var w [qkK]float32
			for i := range w {
				if i%7 != 0 {
					w[i] = float32(r.ExpFloat64())
				}
			}
			for _, c := range []struct {
				p *qkx2Search
				w *[qkK]float32
			}{{q4KSearch, nil}, {q5KSearch, nil}, {q4KWSearch, &w}, {q5KWSearch, &w}} {
				p := c.p
				var scales, mins [8]float32
				ok := impl.kq.searchQ45K((*[qkK]float32)(x), c.w, p, &scales, &mins)
				if ok == hasNaN {
					t.Fatalf("%s case %d nmax %d: ok %v with NaN %v", impl.name, ci, p.nmax, ok, hasNaN)
				}
				if !ok {
					continue
				}
				for j := range 8 {
					var L, laux [32]uint8
					var m, s float32
					if c.w == nil {
						s = searchQ45KSub(x[32*j:], L[:], p, &m)
					} else {
						s = makeQKX3Quants(p.nmax, x[32*j:32*j+32], w[32*j:32*j+32], L[:], &m, laux[:], p.rmin, p.rdelta, p.nstep, false)
					}
					if math.Float32bits(s) != math.Float32bits(scales[j]) || math.Float32bits(m) != math.Float32bits(mins[j]) {
						t.Fatalf("%s case %d nmax %d weighted %v sub-block %d: scale %v min %v, want %v %v", impl.name, ci, p.nmax, c.w != nil, j, scales[j], mins[j], s, m)
					}
				}
			}
			if ci%2 == 1 && impl.kq == kqAVX512 {
				var pair [2 * qkK]float32
				copy(pair[:], cases[ci-1])
				copy(pair[qkK:], x)
				pairNaN := hasNaN
				for _, v := range cases[ci-1] {
					pairNaN = pairNaN || v != v
				}
				for _, p := range []*qkx2Search{q4KSearch, q5KSearch} {
					var scales, mins [16]float32
					ok := impl.kq.searchQ45K16(&pair, nil, p, &scales, &mins)
					if ok == pairNaN {
						t.Fatalf("%s cases %d,%d nmax %d: 16 lanes ok %v with NaN %v", impl.name, ci-1, ci, p.nmax, ok, pairNaN)
					}
					for j := 0; ok && j < 16; j++ {
						var L [32]uint8
						var m float32
						s := searchQ45KSub(pair[32*j:], L[:], p, &m)
						if math.Float32bits(s) != math.Float32bits(scales[j]) || math.Float32bits(m) != math.Float32bits(mins[j]) {
							t.Fatalf("%s cases %d,%d nmax %d lane %d: scale %v min %v, want %v %v", impl.name, ci-1, ci, p.nmax, j, scales[j], mins[j], s, m)
						}
					}
				}
			}
			var q2s, q2m [16]float32
			if ok := impl.kq.searchQ2K((*[qkK]float32)(x), &q2s, &q2m); ok == hasNaN {
				t.Fatalf("%s case %d Q2_K: ok %v with NaN %v", impl.name, ci, ok, hasNaN)
			} else if ok {
				for j := range 16 {
					var L, laux [16]uint8
					var wts [16]float32
					for l := range wts {
						wts[l] = abs32(x[16*j+l])
					}
					var m float32
					sc := makeQKX2Quants(3, x[16*j:16*j+16], wts[:], L[:], &m, laux[:], -0.5, 0.1, 15, true)
					if math.Float32bits(sc) != math.Float32bits(q2s[j]) || math.Float32bits(m) != math.Float32bits(q2m[j]) {
						t.Fatalf("%s case %d Q2_K sub-block %d: scale %v min %v, want %v %v", impl.name, ci, j, q2s[j], q2m[j], sc, m)
					}
				}
			}
			if impl.kq == kqAVX512 {
				var q3s [16]float32
				if ok := impl.kq.searchQ3K((*[qkK]float32)(x), &q3s); ok == hasNaN {
					t.Fatalf("%s case %d Q3_K: ok %v with NaN %v", impl.name, ci, ok, hasNaN)
				} else if ok {
					for j := range 16 {
						var L [16]int8
						if sc := makeQ3Quants(4, x[16*j:16*j+16], L[:]); math.Float32bits(sc) != math.Float32bits(q3s[j]) {
							t.Fatalf("%s case %d Q3_K sub-block %d: scale %v, want %v", impl.name, ci, j, q3s[j], sc)
						}
					}
				}
			}
			var scales [16]float32
			if ok := impl.kq.searchQ6K((*[qkK]float32)(x), nil, &scales); ok == hasNaN {
				t.Fatalf("%s case %d Q6_K: ok %v with NaN %v", impl.name, ci, ok, hasNaN)
			} else if ok {
				var L [qkK]int8
				for ib := range 16 {
					if s := q6KSub(x, nil, L[:], ib); math.Float32bits(s) != math.Float32bits(scales[ib]) {
						t.Fatalf("%s case %d Q6_K sub-block %d: scale %v, want %v", impl.name, ci, ib, scales[ib], s)
					}
				}
			}
		}
	}
}

// FuzzKQuantLanes feeds two super-blocks of arbitrary values (one byte each
// through fuzzFloat, the input repeated to fill them) and importance
// weights (the bytes read backwards) to every kernel set's k-quant
// encoders and wants the plain Go bytes back.
func FuzzKQuantLanes(f *testing.F) {
	f.Add(make([]byte, 2*qkK))
	f.Add(bytes.Repeat([]byte{0x41, 0xc1, 0x45, 0x3a}, 2*qkK/4))
	f.Add(bytes.Repeat([]byte{0x80, 0x41, 0x00, 0x01}, 2*qkK/4))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		var x, qw [2 * qkK]float32
		for i := range x { // shorter inputs repeat
			x[i] = fuzzFloat(b[i%len(b)])
			qw[i] = abs32(fuzzFloat(b[(2*qkK-1-i)%len(b)]))
		}
		for _, impl := range implementations()[1:] {
			for _, c := range []struct {
				name string
				bb   int
				run  func(k *kernelSet, dst []byte)
			}{
				{"Q2_K", 84, func(k *kernelSet, dst []byte) {
					quantQ2_KWith(k, dst[:84], x[:qkK])
					quantQ2_KWith(k, dst[84:], x[qkK:])
				}},
				{"Q3_K", 110, func(k *kernelSet, dst []byte) {
					quantQ3_KWith(k, dst[:110], x[:qkK])
					quantQ3_KWith(k, dst[110:], x[qkK:])
				}},
				{"Q4_K", 144, func(k *kernelSet, dst []byte) { quantRowsQ45K(dst, x[:], q4KSearch, k) }},
				{"Q5_K", 176, func(k *kernelSet, dst []byte) { quantRowsQ45K(dst, x[:], q5KSearch, k) }},
				{"Q4_K/imatrix", 144, func(k *kernelSet, dst []byte) { quantRowQ45KW(dst, x[:], qw[:], q4KWSearch, k) }},
				{"Q6_K/imatrix", 210, func(k *kernelSet, dst []byte) {
					quantQ6_KWith(k, dst[:210], x[:qkK], qw[:qkK])
					quantQ6_KWith(k, dst[210:], x[qkK:], nil)
				}},
			} {
				want := make([]byte, 2*c.bb)
				got := make([]byte, 2*c.bb)
				c.run(&genericKernels, want)
				c.run(&impl, got)
				if !bytes.Equal(got, want) {
					t.Fatalf("%s %s: differs from the plain Go\n got %x\nwant %x", impl.name, c.name, got, want)
				}
			}
		}
	})
}
