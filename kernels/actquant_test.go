package kernels

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/tensor"
)

// ggmlVectors is testdata/kernels/ggml-vectors.json: bytes printed by
// llama.cpp c392e509's own functions (see testdata/kernels/README.md).
type ggmlVectors struct {
	Quantize []struct {
		Type string `json:"type"`
		X    string `json:"x"`    // float32 input, little-endian, hex
		Want string `json:"want"` // the blocks from_float wrote, hex
	} `json:"quantize"`
	VecDot []struct {
		Type string `json:"type"`
		N    int    `json:"n"`
		W    string `json:"w"`    // weight row, ggml blocks, hex
		X    string `json:"x"`    // float32 activations, hex
		Want string `json:"want"` // float32 result of vec_dot after from_float, hex
	} `json:"vec_dot"`
}

func readGGMLVectors(t *testing.T) *ggmlVectors {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "kernels", "ggml-vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v ggmlVectors
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Quantize) == 0 || len(v.VecDot) == 0 {
		t.Fatal("no test vectors")
	}
	// The IQ types' dots, made later in the same layout by
	// gen_iq4xs_vecdot.py (ggml-vectors-iq4xs.json), gen_iq2_vecdot.py
	// (ggml-vectors-iq2.json), gen_iq3_vecdot.py (ggml-vectors-iq3.json)
	// and gen_iq1_vecdot.py (ggml-vectors-iq1.json); NVFP4's and Q1_0's by
	// gen_nvfp4_q1_0_vecdot.py against llama.cpp d32676d7.
	for _, name := range []string{"iq4xs", "iq2", "iq3", "iq1", "nvfp4-q1_0"} {
		b, err = os.ReadFile(filepath.Join("..", "testdata", "kernels", "ggml-vectors-"+name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var iq ggmlVectors
		if err := json.Unmarshal(b, &iq); err != nil {
			t.Fatal(err)
		}
		if len(iq.VecDot) == 0 {
			t.Fatalf("no %s test vectors", name)
		}
		v.VecDot = append(v.VecDot, iq.VecDot...)
	}
	return &v
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func f32sOf(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

func dtypeByName(t *testing.T, name string) tensor.DType {
	t.Helper()
	for d := tensor.DType(0); d < 64; d++ {
		if strings.EqualFold(d.String(), name) {
			return d
		}
	}
	t.Fatalf("unknown dtype %q", name)
	return 0
}

func TestQuantizeActivationsMatchesGGML(t *testing.T) {
	v := readGGMLVectors(t)
	for i, c := range v.Quantize {
		dt := dtypeByName(t, c.Type)
		x := f32sOf(mustHex(t, c.X))
		want := mustHex(t, c.Want)
		got := make([]byte, len(want))
		if err := QuantizeActivations(got, x, dt); err != nil {
			t.Fatalf("case %d %v: %v", i, dt, err)
		}
		if string(got) != string(want) {
			for j := range got {
				if got[j] != want[j] {
					t.Fatalf("case %d %v: byte %d = %#02x, ggml wrote %#02x", i, dt, j, got[j], want[j])
				}
			}
		}
		// The row quantizer of every implementation (MatMulQ's).
		for _, impl := range implementations() {
			withImpl(impl, func() {
				p := quantizeRows(x, 1, len(x), dt)
				if string(*p) != string(want) {
					t.Fatalf("case %d %v: %s quantizeRows differs from ggml", i, dt, implName(impl))
				}
				putBytes(p)
			})
		}
	}
}

// TestQuantizeRowsImplementationsAgree: every implementation's row
// quantizer against QuantizeActivations on awkward blocks: zeros, exact
// halves, a subnormal maximum, huge values.
func TestQuantizeRowsImplementationsAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 3))
	const M, K = 5, 256
	x := make([]float32, M*K)
	for trial := 0; trial < 40; trial++ {
		for i := range x {
			x[i] = float32(r.NormFloat64()) * float32(math.Pow(2, float64(r.IntN(40)-20)))
		}
		switch trial % 5 {
		case 1:
			clear(x[32:64])
		case 2:
			for i := range x {
				x[i] = float32(r.IntN(255)-127) / 2 // halves: ties at max 127/2·…
			}
		case 3:
			for i := 64; i < 96; i++ {
				x[i] = float32(r.NormFloat64()) * 1e-40 // subnormal block
			}
		case 4:
			x[7] = 3e38
		}
		for _, dt := range []tensor.DType{tensor.Q8_0, tensor.Q8_1, tensor.Q8_K} {
			want := make([]byte, M*K/int(dt.BlockSize())*int(dt.BlockBytes()))
			if err := QuantizeActivations(want, x, dt); err != nil {
				t.Fatal(err)
			}
			for _, impl := range simdSets {
				withImpl(impl, func() {
					p := quantizeRows(x, M, K, dt)
					if string(*p) != string(want) {
						t.Fatalf("trial %d %v: %s quantizeRows differs from QuantizeActivations", trial, dt, impl.name)
					}
					putBytes(p)
				})
			}
		}
	}
}

// TestMatMulQMatchesGGML runs every implementation on ggml's vec_dot
// vectors, as one row (M = 1) and as the same row repeated (M = 2, 3, 37:
// the batched paths), with the weight row repeated too (N = 1, 20), and
// requires ggml's bits in every output.
func TestMatMulQMatchesGGML(t *testing.T) {
	defer SetThreads(Threads())
	v := readGGMLVectors(t)
	for _, impl := range implementations() {
		t.Run(implName(impl), func(t *testing.T) {
			withImpl(impl, func() {
				for i, c := range v.VecDot {
					dt := dtypeByName(t, c.Type)
					wrow := mustHex(t, c.W)
					xrow := f32sOf(mustHex(t, c.X))
					want := math.Float32frombits(binary.LittleEndian.Uint32(mustHex(t, c.Want)))
					for _, N := range []int{1, 20} {
						w, err := NewMatrix(dt, N, c.N, []byte(strings.Repeat(string(wrow), N)), nil)
						if err != nil {
							t.Fatal(err)
						}
						for _, M := range []int{1, 2, 3, 37} {
							SetThreads(1 + (M+N)%2)
							x := make([]float32, 0, M*c.N)
							for m := 0; m < M; m++ {
								x = append(x, xrow...)
							}
							dst, check := guarded(M * N)
							MatMulQ(dst, x, M, w)
							check(t)
							for j, got := range dst {
								if math.Float32bits(got) != math.Float32bits(want) {
									t.Fatalf("case %d %v K=%d M=%d N=%d: dst[%d] = %g (%#08x), ggml %g (%#08x)",
										i, dt, c.N, M, N, j, got, math.Float32bits(got), want, math.Float32bits(want))
								}
							}
						}
					}
				}
			})
		})
	}
}

// TestMatMulQMatchesGGMLRepacked runs every implementation on the Q4_0
// products ggml's CPU backend computed from repacked weights
// (ggml-vectors-q4_0x8.json: row counts of 8k, one activation row through
// its gemv, groups of four through its gemm) and requires ggml's bits in
// every output; the fixture records how many of them vec_dot's order
// would get wrong.
func TestMatMulQMatchesGGMLRepacked(t *testing.T) {
	defer SetThreads(Threads())
	b, err := os.ReadFile(filepath.Join("..", "testdata", "kernels", "ggml-vectors-q4_0x8.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Cases []struct {
			K, N, M    int
			W, X, Want string
			Differs    int `json:"differs_from_vec_dot"`
		}
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Cases) == 0 {
		t.Fatal("no cases")
	}
	for _, impl := range implementations() {
		withImpl(impl, func() {
			for i, c := range v.Cases {
				if c.Differs == 0 {
					t.Fatalf("case %d: the fixture does not tell the orders apart", i)
				}
				w, err := NewMatrix(tensor.Q4_0, c.N, c.K, mustHex(t, c.W), nil)
				if err != nil {
					t.Fatal(err)
				}
				x := f32sOf(mustHex(t, c.X))
				want := f32sOf(mustHex(t, c.Want))
				if len(x) != c.M*c.K || len(want) != c.M*c.N {
					t.Fatalf("case %d: %d activations, %d outputs for M=%d K=%d N=%d", i, len(x), len(want), c.M, c.K, c.N)
				}
				for _, threads := range []int{1, 3} {
					SetThreads(threads)
					dst, check := guarded(c.M * c.N)
					MatMulQ(dst, x, c.M, w)
					check(t)
					for j, got := range dst {
						if math.Float32bits(got) != math.Float32bits(want[j]) {
							t.Fatalf("%s case %d K=%d N=%d M=%d threads=%d: dst[%d] = %g (%#08x), ggml %g (%#08x)", implName(impl),
								i, c.K, c.N, c.M, threads, j, got, math.Float32bits(got), want[j], math.Float32bits(want[j]))
						}
					}
				}
			}
		})
	}
}

// TestQuantizeActivationsRoundTrip checks the properties that hold for any
// input: every value comes back within half a step (|x − d·q| ≤ |d|/2,
// up to the rounding of d to binary16 for Q8_0/Q8_1), the largest
// magnitude maps to ±127, exact halves round to even, and Q8_1's s and
// Q8_K's bsums are the sums they claim to be.
func TestQuantizeActivationsRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	x := make([]float32, 1024)
	for trial := 0; trial < 50; trial++ {
		scale := float32(math.Pow(10, float64(r.IntN(9)-4)))
		for i := range x {
			x[i] = float32(r.NormFloat64()) * scale
		}
		for _, dt := range []tensor.DType{tensor.Q8_0, tensor.Q8_1, tensor.Q8_K} {
			bs, bb := int(dt.BlockSize()), int(dt.BlockBytes())
			buf := make([]byte, len(x)/bs*bb)
			if err := QuantizeActivations(buf, x, dt); err != nil {
				t.Fatal(err)
			}
			for b := 0; b < len(x)/bs; b++ {
				blk := buf[b*bb : (b+1)*bb]
				xs := x[b*bs : (b+1)*bs]
				var d float32
				var q []byte
				switch dt {
				case tensor.Q8_0:
					d, q = fp16(blk), blk[2:34]
				case tensor.Q8_1:
					d, q = fp16(blk), blk[4:36]
				case tensor.Q8_K:
					d, q = math.Float32frombits(binary.LittleEndian.Uint32(blk)), blk[4:260]
				}
				amax := absMax32(xs)
				// Q8_0/Q8_1 round with 127/max but store d = max/127 in
				// binary16 (subnormal below 2⁻¹⁴): allow 127 times that
				// rounding on top of half a step.
				d32 := amax / 127
				if dt == tensor.Q8_K {
					d32 = abs32(d)
				}
				tol := float64(d32)*0.5 + 127*math.Abs(float64(abs32(d))-float64(d32)) + float64(amax)*0x1p-20
				big := 0
				for j, v := range xs {
					qv := float64(int8(q[j]))
					if e := math.Abs(float64(v) - float64(d)*qv); e > tol {
						t.Fatalf("%v block %d: x[%d] = %g, d·q = %g·%v: error %g > %g", dt, b, j, v, d, qv, e, tol)
					}
					if abs32(v) == amax && math.Abs(qv) != 127 {
						t.Fatalf("%v block %d: max element %g quantized to %v", dt, b, v, qv)
					}
					if math.Abs(qv) == 127 {
						big++
					}
				}
				if big == 0 {
					t.Fatalf("%v block %d: no element reaches ±127", dt, b)
				}
				switch dt {
				case tensor.Q8_1:
					var s int
					for _, v := range q {
						s += int(int8(v))
					}
					d32, _ := q8Scale(xs) // s uses the float32 scale, before its rounding to binary16
					if got, want := fp16(blk[2:]), quant.F16ToF32(quant.F32ToF16(d32*float32(s))); got != want {
						t.Fatalf("Q8_1 block %d: s = %g, want d·Σq = %g", b, got, want)
					}
				case tensor.Q8_K:
					for g := 0; g < 16; g++ {
						var s int
						for _, v := range q[16*g : 16*g+16] {
							s += int(int8(v))
						}
						if got := int(int16(binary.LittleEndian.Uint16(blk[260+2*g:]))); got != s {
							t.Fatalf("Q8_K block %d: bsums[%d] = %d, want %d", b, g, got, s)
						}
					}
				}
			}
		}
	}

	// Ties: with max|x| = 127 the step is exactly 1 (Q8_K: −1), so x.5
	// lands on a tie, which ggml's x86 code rounds to even (roundf, the
	// scalar reference, would round away from zero).
	tie := make([]float32, 256)
	for i := range tie {
		tie[i] = float32(i%8) - 3.5 // −3.5 … 3.5
	}
	tie[0] = 127
	tie[32], tie[64], tie[96], tie[128], tie[160], tie[192], tie[224] = 127, 127, 127, 127, 127, 127, 127
	for _, dt := range []tensor.DType{tensor.Q8_0, tensor.Q8_K} {
		buf := make([]byte, 256/int(dt.BlockSize())*int(dt.BlockBytes()))
		if err := QuantizeActivations(buf, tie, dt); err != nil {
			t.Fatal(err)
		}
		for i := 1; i < 8; i++ {
			var got int8
			sign := 1.0
			if dt == tensor.Q8_0 {
				got = int8(buf[2+i])
			} else {
				got = int8(buf[4+i])
				sign = -1
			}
			want := int8(sign * math.RoundToEven(float64(tie[i])))
			if got != want {
				t.Fatalf("%v: %g quantized to %d, want %d (half to even)", dt, tie[i], got, want)
			}
		}
	}
}

func TestQuantizeActivationsErrors(t *testing.T) {
	x := make([]float32, 64)
	if err := QuantizeActivations(make([]byte, 68), x, tensor.Q4_0); err == nil {
		t.Error("Q4_0 activations accepted")
	}
	if err := QuantizeActivations(make([]byte, 68), x[:40], tensor.Q8_0); err == nil {
		t.Error("40 values accepted for Q8_0")
	}
	if err := QuantizeActivations(make([]byte, 67), x, tensor.Q8_0); err == nil {
		t.Error("short destination accepted")
	}
	if err := QuantizeActivations(make([]byte, 128), x, tensor.BF16); err != nil {
		t.Error(err)
	}
	// An all-zero Q8_K block must come out all zero, bsums included,
	// whatever the destination held.
	dst := make([]byte, 292)
	for i := range dst {
		dst[i] = 0xa5
	}
	if err := QuantizeActivations(dst, make([]float32, 256), tensor.Q8_K); err != nil {
		t.Fatal(err)
	}
	for i, b := range dst {
		if b != 0 {
			t.Fatalf("zero block: byte %d = %#x", i, b)
		}
	}
}

func TestFMA32(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	n := 200000
	if testing.Short() {
		n = 20000 // under an emulator (.ci/run's qemu-aarch64 step)
	}
	for i := 0; i < n; i++ {
		a := float32(r.NormFloat64())
		b := float32(r.NormFloat64() * math.Pow(2, float64(r.IntN(40)-20)))
		c := float32(r.NormFloat64() * math.Pow(2, float64(r.IntN(60)-30)))
		if i%3 == 0 {
			c = -float32(a * b) // cancellation: the result is the product's rounding error
		}
		got := fma32(a, b, c)
		want := fmaBig(a, b, c)
		if math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("fma32(%g, %g, %g) = %g, want %g", a, b, c, got, want)
		}
	}
	// Double rounding: a·b = 2⁻²⁴ − 2⁻⁷⁰, so a·b + c = 1 + 3·2⁻²⁴ − 2⁻⁷⁰,
	// which float64 rounds to the float32 midpoint 1 + 3·2⁻²⁴; rounding
	// that again goes to the even 1 + 2⁻²², but the true value is below
	// the midpoint: 1 + 2⁻²³.
	a, b, c := float32(1+0x1p-23), float32(0x1p-24*(1-0x1p-23)), float32(1+0x1p-23)
	if got, want := fma32(a, b, c), float32(1+0x1p-23); got != want || fmaBig(a, b, c) != want {
		t.Fatalf("fma32 double rounding: got %g, want %g (big: %g)", got, want, fmaBig(a, b, c))
	}
	if got, want := fma32(-a, b, -c), -float32(1+0x1p-23); got != want {
		t.Fatalf("fma32 double rounding, negated: got %g, want %g", got, want)
	}
}

// fmaBig is a·b + c rounded once to float32 through exact rational
// arithmetic: the independent reference for fma32.
func fmaBig(a, b, c float32) float32 {
	newRat := func(f float32) *big.Rat { return new(big.Rat).SetFloat64(float64(f)) }
	p := newRat(a)
	p.Mul(p, newRat(b))
	p.Add(p, newRat(c))
	f, _ := p.Float32()
	return f
}

func TestGELUFP16MatchesGGML(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "testdata", "kernels", "ggml-gelu-f32.bin"))
	if err != nil {
		t.Fatal(err)
	}
	want := f32sOf(b)
	if len(want) != 1<<16 {
		t.Fatalf("%d values", len(want))
	}
	x := make([]float32, 1<<16)
	for i := range x {
		x[i] = quant.F16ToF32(uint16(i))
	}
	GELUFP16(x)
	bad := 0
	for i, g := range x {
		w := want[i]
		if math.Float32bits(g) != math.Float32bits(w) && !(g != g && w != w) {
			if bad < 10 {
				t.Errorf("gelu(%g) (h=%#04x) = %g, ggml %g", quant.F16ToF32(uint16(i)), i, g, w)
			}
			bad++
		}
	}
	if bad > 0 {
		t.Fatalf("%d of 65536 entries differ", bad)
	}
}

// TestMatMulQAgainstFloat64 checks the plain-Go MatMulQ on random matrices
// against the float64 product of the dequantized weights and the exact
// activations: the difference is what quantizing the activations costs,
// at most Σ_k |w_k|·d_b(k)/2 (half a step of the activation's block,
// |d| ≤ max|x|/127), plus float32 rounding.
func TestMatMulQAgainstFloat64(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 2))
	for _, dt := range []tensor.DType{tensor.Q8_0, tensor.Q4_0, tensor.Q5_0, tensor.Q4_1, tensor.Q5_1,
		tensor.Q2_K, tensor.Q3_K, tensor.Q4_K, tensor.Q5_K, tensor.Q6_K, tensor.IQ4_XS, tensor.IQ3_XXS, tensor.IQ3_S} {
		bs := int(ActDType(dt).BlockSize())
		K, N, M := 2*bs, 5, 3
		w, deq := randMatrix(r, dt, N, K)
		x := randVec(r, M*K)
		dst := make([]float32, M*N)
		withImpl(nil, func() { MatMulQ(dst, x, M, w) })
		for m := 0; m < M; m++ {
			for n := 0; n < N; n++ {
				var want, bound float64
				for k := 0; k < K; k++ {
					blk := x[m*K+k/bs*bs : m*K+k/bs*bs+bs]
					step := float64(absMax32(blk)) / 127
					wv := float64(deq[n*K+k])
					want += float64(x[m*K+k]) * wv
					bound += math.Abs(wv) * (step*0.5 + step*0x1p-10)
				}
				bound = bound*1.001 + 1e-5
				if got := float64(dst[m*N+n]); math.Abs(got-want) > bound {
					t.Fatalf("%v: dst[%d][%d] = %g, float64 %g, bound %g", dt, m, n, got, want, bound)
				}
			}
		}
	}
}

// TestMatMulQImplementationsAgree requires every implementation to give
// the plain-Go bits on awkward shapes: many rows, several blocks, M and N
// around the SIMD tile sizes, unaligned data.
func TestMatMulQImplementationsAgree(t *testing.T) {
	defer SetThreads(Threads())
	r := rand.New(rand.NewPCG(6, 6))
	// K = 32 and 352 (1 and 11 blocks of 32) for MXFP4: no pair of blocks,
	// and an odd last block. M = 5 and 12: the MXFP4 kernels' groups of 8.
	ks, ns, ms := []int{32, 256, 352, 512, 1024 + 256}, []int{1, 7, 16, 17, 33, 65}, []int{1, 2, 5, 12, 15, 16, 17, 40}
	if testing.Short() { // under an emulator: one shape of each kind
		ks, ns, ms = []int{256, 352, 1024 + 256}, []int{1, 7, 16, 17, 33}, []int{1, 2, 12, 17, 40}
	}
	for _, dt := range []tensor.DType{tensor.Q8_0, tensor.Q4_0, tensor.Q5_0, tensor.Q4_1, tensor.Q5_1,
		tensor.Q2_K, tensor.Q3_K, tensor.Q4_K, tensor.Q5_K, tensor.Q6_K, tensor.IQ4_XS, tensor.IQ3_XXS, tensor.IQ3_S, tensor.MXFP4} {
		bs := int(dt.BlockSize())
		for _, K := range ks {
			if K%bs != 0 {
				continue
			}
			for _, N := range ns {
				w, _ := randMatrix(r, dt, N, K)
				for _, M := range ms {
					xb := randVec(r, M*K+1)
					x := xb[1:]
					ref := make([]float32, M*N)
					withImpl(nil, func() { MatMulQ(ref, x, M, w) })
					for _, impl := range simdSets {
						SetThreads(1 + (M+N)%3)
						dst, check := guarded(M * N)
						withImpl(impl, func() { MatMulQ(dst, x, M, w) })
						check(t)
						for i := range dst {
							if math.Float32bits(dst[i]) != math.Float32bits(ref[i]) {
								t.Fatalf("%s %v K=%d N=%d M=%d: dst[%d] = %g, generic %g", impl.name, dt, K, N, M, i, dst[i], ref[i])
							}
						}
					}
				}
			}
		}
	}
}

// TestMatMulQHalf: for F16 and BF16 weights MatMulQ is MatMul on the
// activations rounded as ggml rounds them; for F32, MatMul itself.
func TestMatMulQHalf(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 9))
	for _, impl := range implementations() {
		for _, dt := range []tensor.DType{tensor.F16, tensor.BF16, tensor.F32, tensor.I8} {
			const M, K, N = 5, 70, 9
			w, _ := randMatrix(r, dt, N, K)
			x := randVec(r, M*K)
			x[3] = 1 + 0x1p-11 // a binary16 tie: rounds to even, 1
			xr := append([]float32(nil), x...)
			switch dt {
			case tensor.F16:
				for i, v := range xr {
					xr[i] = quant.F16ToF32(quant.F32ToF16(v))
				}
			case tensor.BF16:
				for i, v := range xr {
					xr[i] = quant.BF16ToF32(quant.F32ToBF16(v))
				}
			}
			got, want := make([]float32, M*N), make([]float32, M*N)
			withImpl(impl, func() {
				MatMulQ(got, x, M, w)
				MatMul(want, xr, M, w)
			})
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s %v: dst[%d] = %g, MatMul of the rounded activations %g", implName(impl), dt, i, got[i], want[i])
				}
			}
		}
	}
}

// BenchmarkMatMulQ is BenchmarkMatMul for MatMulQ: GFLOP/s (2·M·N·K per
// op) and, for M=1, the rate the weights stream at, K=N=2048. M=8 is the
// few tokens a prefill routes to one expert (gpt-oss-20b: 64 tokens × 4 of
// 32 experts).
func BenchmarkMatMulQ(b *testing.B) {
	const K, N = 2048, 2048
	r := rand.New(rand.NewPCG(1, 1))
	for _, impl := range implementations() {
		for _, dt := range []tensor.DType{tensor.Q8_0, tensor.Q4_0, tensor.Q4_K, tensor.Q6_K, tensor.MXFP4} {
			w, _ := randMatrix(r, dt, N, K)
			for _, M := range []int{1, 8, 128} {
				b.Run(fmt.Sprintf("%s/%s/M=%d", implName(impl), strings.ToLower(dt.String()), M), func(b *testing.B) {
					x := randVec(r, M*K)
					dst := make([]float32, M*N)
					withImpl(impl, func() {
						for b.Loop() {
							MatMulQ(dst, x, M, w)
						}
					})
					sec := b.Elapsed().Seconds() / float64(b.N)
					b.ReportMetric(2*float64(M*N*K)/sec/1e9, "GFLOP/s")
					if M == 1 {
						b.ReportMetric(float64(len(w.Data))/sec/1e9, "GB/s")
					}
				})
			}
		}
	}
}
