package kernels

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/tensor"
)

// llama.cpp's CPU backend does not multiply float32 activations by
// quantized weights: it first converts each activation row to the weight
// type's "vec_dot_type" and then forms integer (or half-precision) dot
// products. The functions here reproduce that conversion byte for byte, as
// the x86 build of ggml (commit c392e509) does it:
//
//	weights                  activations   ggml function (x86)
//	Q4_0, Q5_0, Q8_0         Q8_0          quantize_row_q8_0 (AVX2 path)
//	Q4_1, Q5_1               Q8_1          quantize_row_q8_1 (AVX2 path)
//	Q2_K … Q6_K, IQ4_XS,     Q8_K          quantize_row_q8_K_ref
//	IQ3_XXS, IQ3_S, IQ2_XXS, IQ2_XS, IQ2_S,
//	IQ1_S, IQ1_M
//	F16                      F16           ggml_fp32_to_fp16_row
//	BF16                     BF16          ggml_fp32_to_bf16_row
//
// Activation block layouts (little-endian; d, s binary16 unless noted):
//
//	Q8_0  | d | q[32] int8 |                      34 bytes, x ≈ d·q
//	Q8_1  | d | s | q[32] int8 |                  36 bytes, s = d·Σq
//	Q8_K  | d float32 | q[256] int8 | bsums[16] int16 |
//	                                              292 bytes, x ≈ d·q,
//	                                              bsums[g] = Σ q[16g..16g+15]
//
// Rounding differs between them, and the differences matter when results
// are compared bit for bit: Q8_0 and Q8_1 take d = max|x|/127 but multiply
// by 127/max|x| (not 1/d) and round halves to even (_mm256_round_ps);
// Q8_K divides by the signed element of largest magnitude, iscale =
// −127/max, rounds halves to even through the 1.5·2²³ trick and stores
// d = 1/iscale, so its d is negative when that element is positive.

// ActDType returns the dtype llama.cpp's CPU backend converts activations to
// before multiplying them by weights of dtype t: Q8_0, Q8_1, Q8_K, F16 or
// BF16 as listed above, and F32 (no conversion) for every other dtype. It
// is quant's record of t (quant.Type.RowDot): the record says which types
// have a row-dot kernel here.
func ActDType(t tensor.DType) tensor.DType { return actDTypes[t] }

// actDTypes is ActDType for every dtype, read from quant's records once.
var actDTypes = func() (a [256]tensor.DType) {
	for i := range a {
		a[i] = tensor.F32
	}
	for _, r := range quant.Types() {
		if r.RowDot != tensor.Invalid {
			a[r.DType] = r.RowDot
		}
	}
	return a
}()

// Block sizes of the activation types, in bytes.
const (
	q8_0Bytes = 34
	q8_1Bytes = 36
	q8_KBytes = 292
)

// QuantizeActivations writes x, whose length must be a multiple of t's
// block size, to dst as ggml blocks of t (Q8_0, Q8_1, Q8_K, F16 or BF16),
// byte for byte what llama.cpp's x86 CPU backend writes for the same
// floats. dst must hold exactly the encoded size.
func QuantizeActivations(dst []byte, x []float32, t tensor.DType) error {
	switch t {
	case tensor.Q8_0, tensor.Q8_1, tensor.Q8_K, tensor.F16, tensor.BF16:
	default:
		return tensor.Unsupported("kernels: activation dtype %v is not supported", t)
	}
	bs := int(t.BlockSize())
	if len(x)%bs != 0 {
		return fmt.Errorf("kernels: %d activations are not a multiple of the %v block size %d", len(x), t, bs)
	}
	want := len(x) / bs * int(t.BlockBytes())
	if len(dst) != want {
		return fmt.Errorf("kernels: %d %v activations need %d bytes, have %d", len(x), t, want, len(dst))
	}
	switch t {
	case tensor.Q8_0:
		for i := 0; i < len(x); i += 32 {
			quantQ8_0Act(dst[i/32*q8_0Bytes:], x[i:i+32])
		}
	case tensor.Q8_1:
		for i := 0; i < len(x); i += 32 {
			quantQ8_1Act(dst[i/32*q8_1Bytes:], x[i:i+32])
		}
	case tensor.Q8_K:
		for i := 0; i < len(x); i += 256 {
			quantQ8_KAct(dst[i/256*q8_KBytes:], x[i:i+256])
		}
	case tensor.F16:
		for i, v := range x {
			binary.LittleEndian.PutUint16(dst[2*i:], quant.F32ToF16(v))
		}
	case tensor.BF16:
		for i, v := range x {
			binary.LittleEndian.PutUint16(dst[2*i:], bf16GGML(v))
		}
	}
	return nil
}

// bf16GGML is ggml_compute_fp32_to_bf16: round to nearest even, a NaN keeps
// its sign and top payload bits and is made quiet (unlike
// quant.F32ToBF16, which canonicalizes NaNs as PyTorch does).
func bf16GGML(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		return uint16(u>>16) | 64
	}
	return uint16((u + 0x7fff + (u>>16)&1) >> 16)
}

// absMax32 is max|x| over one block, as the max_ps reduction computes it
// for input without NaNs. The magnitudes are compared as integers: for
// non-negative floats the bit patterns order like the values, and the
// integer compare is several times cheaper than Go's float max.
func absMax32(x []float32) float32 {
	var m uint32
	for _, v := range x {
		m = max(m, math.Float32bits(v)&^(1<<31))
	}
	return math.Float32frombits(m)
}

func abs32(f float32) float32 { return math.Float32frombits(math.Float32bits(f) &^ (1 << 31)) }

// cvtRound is _mm256_round_ps(v, nearest) followed by _mm256_cvtps_epi32:
// halves to even, and the "integer indefinite" 0x80000000 for NaN and
// values outside int32.
func cvtRound(v float32) int32 {
	r := math.RoundToEven(float64(v))
	if !(r >= math.MinInt32 && r <= math.MaxInt32) {
		return math.MinInt32
	}
	return int32(r)
}

// sat8 is the int32 → int16 → int8 signed saturation of the pack
// instructions.
func sat8(v int32) int8 { return int8(min(max(v, -128), 127)) }

// q8Scale returns the block scale d = max|x|/127 and multiplier
// id = 127/max|x| (0 for an all-zero block) of quantize_row_q8_0/q8_1.
func q8Scale(x []float32) (d, id float32) {
	amax := absMax32(x)
	d = amax / 127
	if amax != 0 {
		id = 127 / amax
	}
	return d, id
}

// q8Round is cvtRound(v·id) for the 32 values of a Q8_0/Q8_1 block. With
// a finite id every |v·id| ≤ 127 (up to rounding), where nearestInt's add
// is the same round-half-even and much cheaper than math.RoundToEven;
// other blocks (NaN, infinities, a subnormal max) take the general path.
func q8Round(q *[32]int32, x []float32, id float32) {
	x = x[:32]
	if !math.IsInf(float64(id), 0) && id == id && absMax32(x) <= math.MaxFloat32 {
		for j, v := range x {
			q[j] = nearestInt(float32(v * id))
		}
		return
	}
	for j, v := range x {
		q[j] = cvtRound(v * id)
	}
}

func quantQ8_0Act(b []byte, x []float32) {
	b, x = b[:q8_0Bytes], x[:32]
	d, id := q8Scale(x)
	binary.LittleEndian.PutUint16(b, quant.F32ToF16(d))
	var q [32]int32
	q8Round(&q, x, id)
	for j, v := range q {
		b[2+j] = byte(sat8(v))
	}
}

func quantQ8_1Act(b []byte, x []float32) {
	b, x = b[:q8_1Bytes], x[:32]
	d, id := q8Scale(x)
	binary.LittleEndian.PutUint16(b, quant.F32ToF16(d))
	var q [32]int32
	q8Round(&q, x, id)
	var sum int32 // of the rounded values before saturation, as the AVX2 code adds them
	for j, v := range q {
		sum += v
		b[4+j] = byte(sat8(v))
	}
	binary.LittleEndian.PutUint16(b[2:], quant.F32ToF16(d*float32(sum)))
}

// nearestInt is ggml's nearest_int: adding 1.5·2²³ leaves the integer part
// in the low mantissa bits, rounded half to even; for |f| < 2²² it is
// round-half-even, and for any other input the same bits C computes.
func nearestInt(f float32) int32 {
	v := f + 12582912
	return int32(math.Float32bits(v)&0x007fffff) - 0x00400000
}

func quantQ8_KAct(b []byte, x []float32) {
	b, x = b[:q8_KBytes], x[:256]
	var amax, mx float32
	for _, v := range x {
		if a := abs32(v); a > amax { // the first element of largest magnitude
			amax, mx = a, v
		}
	}
	q := b[4:260]
	bsums := b[260:292]
	if amax == 0 {
		// ggml leaves bsums unwritten here; zero is what a fresh buffer holds.
		clear(b)
		return
	}
	iscale := -127 / mx
	for j, v := range x {
		q[j] = byte(int8(min(127, nearestInt(float32(iscale*v))))) // rounded product, then the add: no FMA
	}
	for g := 0; g < 16; g++ {
		var s int16
		for _, v := range q[16*g : 16*g+16] {
			s += int16(int8(v))
		}
		binary.LittleEndian.PutUint16(bsums[2*g:], uint16(s))
	}
	binary.LittleEndian.PutUint32(b, math.Float32bits(1/iscale))
}

// fma32 returns a·b + c rounded once to float32, as VFMADD231PS computes
// it. The product of two float32 is exact in float64; the float64 sum is
// then correctly rounded to float32 unless it lands exactly halfway
// between two float32 values, where the exact error of the float64 sum
// (TwoSum) says which way the true value lies.
func fma32(a, b, c float32) float32 {
	p := float64(a) * float64(b)
	fc := float64(c)
	s := p + fc
	// Fast path: s is not halfway between two float32 normals when the 29
	// mantissa bits float32 drops are not exactly 1000…0 (and s is in the
	// float32 normal range, where those are the dropped bits).
	if u := math.Float64bits(s); u&0x1fffffff != 0x10000000 {
		if e := u >> 52 & 0x7ff; e >= 1023-126 && e <= 1023+127 {
			return float32(s)
		}
	}
	r := float32(s)
	if float64(r) == s || math.IsInf(s, 0) || s != s {
		return r
	}
	// The float32 neighbour on the other side of s.
	o := math.Nextafter32(r, float32(math.Copysign(math.Inf(1), s-float64(r))))
	if s != (float64(r)+float64(o))/2 {
		return r
	}
	bb := s - p
	err := (p - (s - bb)) + (fc - bb)
	switch {
	case err > 0:
		return max(r, o)
	case err < 0:
		return min(r, o)
	}
	return r
}

// hsum8 is ggml's hsum_float_8: the 8 lanes of an AVX accumulator added as
// ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)).
func hsum8(a *[8]float32) float32 {
	r0, r1, r2, r3 := a[0]+a[4], a[1]+a[5], a[2]+a[6], a[3]+a[7]
	return (r0 + r2) + (r1 + r3)
}
