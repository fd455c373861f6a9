package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/x448/float16"
)

// implementations returns every kernel set this build and CPU can run.
func implementations() []kernelSet {
	return append([]kernelSet{genericKernels}, simdSets...)
}

// awkwardSizes straddle every vector width and unroll factor of the kernels.
var awkwardSizes = []int{0, 1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 1000}

const guard = 0x5a5a // sentinel written around destination slices

// f16Naive rounds in float64: to 11 significant bits (fewer below 2^-14,
// where the step is 2^-24), ties to even, then encodes the exactly
// representable result.
func f16Naive(f float32) uint16 {
	x := float64(f)
	if math.IsNaN(x) {
		return float16.Fromfloat32(f).Bits()
	}
	if x == 0 || math.IsInf(x, 0) {
		return float16.Fromfloat32(f).Bits()
	}
	_, e := math.Frexp(x) // x = m·2^e, 0.5 ≤ |m| < 1
	step := max(e-11, -24)
	r := math.RoundToEven(math.Ldexp(x, -step))
	r = math.Ldexp(r, step)
	if math.Abs(r) > 65504 {
		return float16.Fromfloat32(float32(math.Copysign(math.Inf(1), r))).Bits()
	}
	return float16.Fromfloat32(float32(r)).Bits() // exact: r is a half
}

// bf16Naive is the same with 8 significant bits and bfloat16's float32
// exponent range; NaN is 0x7FC0 as in PyTorch.
func bf16Naive(f float32) uint16 {
	x := float64(f)
	if math.IsNaN(x) {
		return 0x7fc0
	}
	if x == 0 || math.IsInf(x, 0) {
		return uint16(math.Float32bits(f) >> 16)
	}
	_, e := math.Frexp(x)
	step := max(e-8, -133)
	r := math.Ldexp(math.RoundToEven(math.Ldexp(x, -step)), step)
	return uint16(math.Float32bits(float32(r)) >> 16) // exact, or ±Inf past the range
}

// halfNaive decodes binary16 in float64 from the definition.
func halfNaive(h uint16) float64 {
	s := 1.0
	if h&0x8000 != 0 {
		s = -1
	}
	e := int(h>>10) & 0x1f
	m := float64(h & 0x3ff)
	switch e {
	case 0:
		return s * m * math.Ldexp(1, -24)
	case 0x1f:
		if m == 0 {
			return math.Inf(int(s))
		}
		return math.NaN()
	}
	return s * (1 + m/1024) * math.Ldexp(1, e-15)
}

// randFloats mixes magnitudes from subnormal to overflow, signs, zeros and
// exact ties.
func randFloats(r *rand.Rand, n int) []float32 {
	out := make([]float32, n)
	for i := range out {
		switch r.IntN(8) {
		case 0:
			out[i] = math.Float32frombits(r.Uint32()) // anything, NaN and Inf included
		case 1:
			out[i] = float32(r.NormFloat64() * 1e-6)
		case 2:
			out[i] = float32(r.NormFloat64() * 7e4)
		case 3:
			// a tie for f16 or bf16 rounding: low bits exactly half
			out[i] = math.Float32frombits(r.Uint32()&^0x1fff | 0x1000)
		case 4:
			out[i] = math.Float32frombits(r.Uint32()&^0xffff | 0x8000)
		default:
			out[i] = float32(r.NormFloat64())
		}
	}
	return out
}

func TestHalfKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, impl := range implementations() {
		for _, n := range awkwardSizes {
			for _, off := range []int{0, 1, 3} {
				name := fmt.Sprintf("%s/n=%d/off=%d", impl.name, n, off)
				src := randFloats(r, n+off)[off:]

				for _, c := range []struct {
					kind  string
					enc   func([]uint16, []float32)
					dec   func([]float32, []uint16)
					naive func(float32) uint16
				}{{"f16", impl.encF16, impl.decF16, f16Naive}, {"bf16", impl.encBF16, impl.decBF16, bf16Naive}} {
					buf := make([]uint16, n+off+2)
					for i := range buf {
						buf[i] = guard
					}
					dst := buf[off+1 : off+1+n]
					c.enc(dst, src)
					if buf[off] != guard || buf[off+1+n] != guard {
						t.Fatalf("%s %s encode: wrote outside dst", name, c.kind)
					}
					for i, f := range src {
						if want := c.naive(f); dst[i] != want {
							t.Fatalf("%s %s encode(%#08x) = %#04x, naive %#04x", name, c.kind, math.Float32bits(f), dst[i], want)
						}
					}
					fbuf := make([]float32, n+off+2)
					for i := range fbuf {
						fbuf[i] = guard
					}
					out := fbuf[off+1 : off+1+n]
					c.dec(out, dst)
					if fbuf[off] != guard || fbuf[off+1+n] != guard {
						t.Fatalf("%s %s decode: wrote outside dst", name, c.kind)
					}
					for i, h := range dst {
						var want float64
						if c.kind == "f16" {
							want = halfNaive(h)
						} else {
							want = float64(math.Float32frombits(uint32(h) << 16))
						}
						got := float64(out[i])
						if got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
							t.Fatalf("%s %s decode(%#04x) = %v, naive %v", name, c.kind, h, got, want)
						}
					}
				}
			}
		}
	}
}

func TestF16Exhaustive(t *testing.T) {
	src := make([]uint16, 1<<16)
	for i := range src {
		src[i] = uint16(i)
	}
	for _, impl := range implementations() {
		dec := make([]float32, len(src))
		impl.decF16(dec, src)
		back := make([]uint16, len(src))
		impl.encF16(back, dec)
		for i, h := range src {
			want := float16.Frombits(h).Float32()
			if math.Float32bits(dec[i]) != math.Float32bits(want) {
				t.Fatalf("%s: decode %#04x = %#08x, x448 %#08x", impl.name, h, math.Float32bits(dec[i]), math.Float32bits(want))
			}
			isNaN := h&0x7c00 == 0x7c00 && h&0x3ff != 0
			if isNaN {
				if back[i] != h|0x200 { // the quiet bit is set, the payload kept
					t.Fatalf("%s: NaN %#04x round-trips to %#04x", impl.name, h, back[i])
				}
			} else if back[i] != h {
				t.Fatalf("%s: %#04x round-trips to %#04x", impl.name, h, back[i])
			}
		}
	}
}

func TestBF16Exhaustive(t *testing.T) {
	src := make([]uint16, 1<<16)
	for i := range src {
		src[i] = uint16(i)
	}
	for _, impl := range implementations() {
		dec := make([]float32, len(src))
		impl.decBF16(dec, src)
		back := make([]uint16, len(src))
		impl.encBF16(back, dec)
		for i, h := range src {
			if got := math.Float32bits(dec[i]); got != uint32(h)<<16 {
				t.Fatalf("%s: decode %#04x = %#08x", impl.name, h, got)
			}
			isNaN := h&0x7f80 == 0x7f80 && h&0x7f != 0
			want := h
			if isNaN {
				want = 0x7fc0
			}
			if back[i] != want {
				t.Fatalf("%s: %#04x round-trips to %#04x, want %#04x", impl.name, h, back[i], want)
			}
		}
	}
}

func TestEncodeEdges(t *testing.T) {
	f16 := []struct {
		in   uint32
		want uint16
	}{
		{0x3f800000, 0x3c00}, // 1
		{0x3f801000, 0x3c00}, // 1 + 2^-11: tie, stays even
		{0x3f803000, 0x3c02}, // 1 + 3·2^-11: tie, rounds up to even
		{0x3f801001, 0x3c01}, // just above the tie
		{0x477fe000, 0x7bff}, // 65504, the largest half
		{0x477fefff, 0x7bff}, // just below the midpoint to 65536
		{0x477ff000, 0x7c00}, // 65520: tie, rounds to even = Inf
		{0x7f7fffff, 0x7c00}, // max float32 overflows
		{0x33800000, 0x0001}, // 2^-24, the smallest subnormal
		{0x33000000, 0x0000}, // 2^-25: tie between 0 and 2^-24, to even 0
		{0x33000001, 0x0001}, // just above it
		{0x33c00000, 0x0002}, // 1.5·2^-24: tie, to even 2
		{0x387fe000, 0x0400}, // 2^-14 - 2^-25: tie between the largest subnormal and 2^-14
		{0x387fc000, 0x03ff}, // 2^-14 - 2^-24: the largest subnormal
		{0x80000000, 0x8000}, // -0
		{0x00000001, 0x0000}, // float32 subnormal underflows
		{0x7f800000, 0x7c00}, // +Inf
		{0xff800000, 0xfc00}, // -Inf
		{0x7fc00000, 0x7e00}, // quiet NaN
		{0x7f802000, 0x7e01}, // signalling NaN, payload bit 13: quieted, payload kept
		{0xffffffff, 0xffff}, // negative NaN, full payload
	}
	bf16 := []struct {
		in   uint32
		want uint16
	}{
		{0x3f800000, 0x3f80},
		{0x3f808000, 0x3f80}, // tie, even
		{0x3f818000, 0x3f82}, // tie, odd rounds up
		{0x3f808001, 0x3f81},
		{0x7f7f7fff, 0x7f7f},
		{0x7f7f8000, 0x7f80}, // tie at the top rounds to Inf
		{0x7f7fffff, 0x7f80}, // max float32 rounds to Inf
		{0x00008000, 0x0000}, // subnormal tie
		{0x00018000, 0x0002},
		{0x80000000, 0x8000},
		{0xff800000, 0xff80},
		{0x7f800001, 0x7fc0}, // NaNs: torch's canonical quiet NaN
		{0xffc00001, 0x7fc0},
		{0x7fffffff, 0x7fc0},
	}
	for _, impl := range implementations() {
		// Pad each case to a full vector so the SIMD body, not its scalar
		// tail, converts it.
		for _, c := range f16 {
			src := make([]float32, 16)
			for i := range src {
				src[i] = math.Float32frombits(c.in)
			}
			dst := make([]uint16, 16)
			impl.encF16(dst, src)
			for _, h := range dst {
				if h != c.want {
					t.Errorf("%s: f16(%#08x) = %#04x, want %#04x", impl.name, c.in, h, c.want)
					break
				}
			}
		}
		for _, c := range bf16 {
			src := make([]float32, 16)
			for i := range src {
				src[i] = math.Float32frombits(c.in)
			}
			dst := make([]uint16, 16)
			impl.encBF16(dst, src)
			for _, h := range dst {
				if h != c.want {
					t.Errorf("%s: bf16(%#08x) = %#04x, want %#04x", impl.name, c.in, h, c.want)
					break
				}
			}
		}
	}
	if F32ToF16(1) != 0x3c00 || F32ToBF16(1) != 0x3f80 {
		t.Error("scalar conversions disagree with the edge table")
	}
}

// q8Naive checks one Q8_0 block against the definition evaluated in
// float64: d = f16(amax/127), q = x/d_exact rounded half away from zero.
// ggml multiplies by a float32 reciprocal, so a product within 1e-5 of a
// half-integer may land on either side; elsewhere q must match exactly.
func q8Naive(t *testing.T, name string, x []float32, b []byte) {
	t.Helper()
	var amax float64
	for _, v := range x {
		amax = max(amax, math.Abs(float64(v)))
	}
	d := float32(amax / 127)
	if got := half(b); got != F16ToF32(F32ToF16(d)) {
		t.Fatalf("%s: d = %v, want f16(%v)", name, got, d)
	}
	for j, v := range x {
		q := int8(b[2+j])
		if d == 0 {
			if q != 0 {
				t.Fatalf("%s: q[%d] = %d for an all-zero block", name, j, q)
			}
			continue
		}
		p := float64(v) / float64(d)
		want := math.Round(p)
		frac := math.Abs(p - math.Trunc(p))
		if float64(q) != want && math.Abs(frac-0.5) > 1e-5 {
			t.Fatalf("%s: q[%d] = %d for x/d = %v", name, j, q, p)
		}
	}
}

func TestQ8_0Kernels(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	impls := implementations()
	for _, nb := range []int{0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 33, 64} {
		for _, off := range []int{0, 1, 3} {
			src := make([]float32, nb*32+off)
			for i := range src {
				src[i] = float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(8)-4)))
			}
			src = src[off:]
			if nb > 2 {
				clear(src[32:64]) // an all-zero block
				for i := 64; i < 96; i++ {
					src[i] = float32(i-80) / 2 // exact halves: roundf ties
				}
			}
			var ref []byte
			for _, impl := range impls {
				name := fmt.Sprintf("%s/blocks=%d/off=%d", impl.name, nb, off)
				buf := make([]byte, nb*34+off+2)
				for i := range buf {
					buf[i] = 0x5a
				}
				dst := buf[off+1 : off+1+nb*34]
				impl.quantQ8_0(dst, src)
				if buf[off] != 0x5a || buf[off+1+nb*34] != 0x5a {
					t.Fatalf("%s: quantize wrote outside dst", name)
				}
				for b := range nb {
					q8Naive(t, fmt.Sprintf("%s block %d", name, b), src[32*b:32*b+32], dst[34*b:])
				}
				if ref == nil {
					ref = append([]byte{}, dst...)
				} else if string(ref) != string(dst) {
					t.Fatalf("%s: bytes differ from the generic kernel", name)
				}

				fbuf := make([]float32, nb*32+off+2)
				for i := range fbuf {
					fbuf[i] = guard
				}
				out := fbuf[off+1 : off+1+nb*32]
				impl.dequantQ8_0(out, dst)
				if fbuf[off] != guard || fbuf[off+1+nb*32] != guard {
					t.Fatalf("%s: dequantize wrote outside dst", name)
				}
				for b := range nb {
					d := halfNaive(uint16(dst[34*b]) | uint16(dst[34*b+1])<<8)
					for j := range 32 {
						want := float32(float64(int8(dst[34*b+2+j])) * d) // exact product, one rounding
						if out[32*b+j] != want {
							t.Fatalf("%s: dequant[%d] = %v, want %v", name, 32*b+j, out[32*b+j], want)
						}
					}
				}
			}
		}
	}
}

// ---- benchmarks ----

const benchN = 1 << 16

func reportGelem(b *testing.B, n int) {
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
}

func benchImpls(b *testing.B, run func(b *testing.B, k kernelSet)) {
	for _, impl := range implementations() {
		b.Run(impl.name, func(b *testing.B) { run(b, impl) })
	}
}

func benchData() ([]float32, []uint16, []byte) {
	r := rand.New(rand.NewPCG(5, 6))
	f := make([]float32, benchN)
	for i := range f {
		f[i] = float32(r.NormFloat64())
	}
	return f, make([]uint16, benchN), make([]byte, benchN/32*34)
}

func BenchmarkEncodeF16(b *testing.B) {
	f, h, _ := benchData()
	benchImpls(b, func(b *testing.B, k kernelSet) {
		b.SetBytes(4 * benchN)
		for b.Loop() {
			k.encF16(h, f)
		}
		reportGelem(b, benchN)
	})
}

func BenchmarkDecodeF16(b *testing.B) {
	f, h, _ := benchData()
	encodeF16Generic(h, f)
	benchImpls(b, func(b *testing.B, k kernelSet) {
		b.SetBytes(2 * benchN)
		for b.Loop() {
			k.decF16(f, h)
		}
		reportGelem(b, benchN)
	})
}

func BenchmarkEncodeBF16(b *testing.B) {
	f, h, _ := benchData()
	benchImpls(b, func(b *testing.B, k kernelSet) {
		b.SetBytes(4 * benchN)
		for b.Loop() {
			k.encBF16(h, f)
		}
		reportGelem(b, benchN)
	})
}

func BenchmarkDecodeBF16(b *testing.B) {
	f, h, _ := benchData()
	encodeBF16Generic(h, f)
	benchImpls(b, func(b *testing.B, k kernelSet) {
		b.SetBytes(2 * benchN)
		for b.Loop() {
			k.decBF16(f, h)
		}
		reportGelem(b, benchN)
	})
}

func BenchmarkQuantizeQ8_0(b *testing.B) {
	f, _, q := benchData()
	benchImpls(b, func(b *testing.B, k kernelSet) {
		b.SetBytes(4 * benchN)
		for b.Loop() {
			k.quantQ8_0(q, f)
		}
		reportGelem(b, benchN)
	})
}

func BenchmarkDequantizeQ8_0(b *testing.B) {
	f, _, q := benchData()
	quantizeQ8_0Generic(q, f)
	benchImpls(b, func(b *testing.B, k kernelSet) {
		b.SetBytes(int64(len(q)))
		for b.Loop() {
			k.dequantQ8_0(f, q)
		}
		reportGelem(b, benchN)
	})
}

// TestHalfBytesAlignment checks the byte-slice codecs on aligned bytes (read
// and written in place as uint16s on a little-endian host) and on bytes at
// an odd address (through the staging buffer) against the element-wise
// conversions, for lengths around the staging chunk.
func TestHalfBytesAlignment(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for _, n := range []int{1, 3, chunk - 1, chunk, chunk + 5, 3*chunk + 17} {
		src := make([]float32, n)
		for i := range src {
			src[i] = float32(rng.NormFloat64() * 100)
		}
		src[0] = float32(math.Inf(-1))
		for _, off := range []int{0, 1} {
			for _, c := range []struct {
				name string
				enc  func([]byte, []float32) int
				dec  func([]float32, []byte) int
				one  func(float32) uint16
				back func(uint16) float32
			}{
				{"f16", EncodeF16Bytes, DecodeF16Bytes, F32ToF16, F16ToF32},
				{"bf16", EncodeBF16Bytes, DecodeBF16Bytes, F32ToBF16, BF16ToF32},
			} {
				raw := make([]byte, 2*n+1)[off : off+2*n]
				if got := c.enc(raw, src); got != n {
					t.Fatalf("%s n=%d off=%d: encoded %d", c.name, n, off, got)
				}
				back := make([]float32, n)
				if got := c.dec(back, raw); got != n {
					t.Fatalf("%s n=%d off=%d: decoded %d", c.name, n, off, got)
				}
				for i, f := range src {
					h := c.one(f)
					if g := binary.LittleEndian.Uint16(raw[2*i:]); g != h {
						t.Fatalf("%s n=%d off=%d [%d]: wrote %#04x, want %#04x", c.name, n, off, i, g, h)
					}
					if w := c.back(h); math.Float32bits(back[i]) != math.Float32bits(w) {
						t.Fatalf("%s n=%d off=%d [%d]: read %v, want %v", c.name, n, off, i, back[i], w)
					}
				}
			}
		}
	}
}
