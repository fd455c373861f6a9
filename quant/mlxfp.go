package quant

import (
	"fmt"
	"math"

	"github.com/tfconv/tfconv/tensor"
)

// MLXFP is one of MLX's floating-point quantization modes (mx.quantize with
// mode "mxfp4", "mxfp8" or "nvfp4"; MLX 846d176 mlx/ops.cpp fp_quantize,
// fp_dequantize). Each run of GroupSize consecutive values of a row shares
// one uint8 scale, and there are no biases:
//
//	mode   bits  group  code                         scale byte
//	mxfp4  4     32     e2m1 (MLXE2M1 order)         e8m0: 2^(e−127)
//	mxfp8  8     32     e4m3 as MLX decodes it       e8m0: 2^(e−127)
//	nvfp4  4     16     e2m1 (MLXE2M1 order)         e4m3 as MLX decodes it
//
// (MLX's layer classes keep no global scale for nvfp4, so a checkpoint has
// none.) The codes of a row are stored as uint32 words, little-endian:
// 4-bit code i in nibble i (the low nibble of byte i/2 for even i: the
// order of MLX's affine codes, not ggml's block_mxfp4, which puts codes k
// and k+16 in one byte), 8-bit code i in byte i:
//
//	mxfp4/nvfp4 word 0:  c7 c6 c5 c4 c3 c2 c1 c0   (c0 in bits 0..3)
//	mxfp8       word 0:  c3 c2 c1 c0               (c0 in bits 0..7)
//
// The mode names and their parameters are formats/mlx's (mlx.Params): a
// caller sets the fields from them.
type MLXFP struct {
	// Bits is the code width: 4 (e2m1) or 8 (e4m3).
	Bits, GroupSize int
	// E4M3Scales: each scale byte is e4m3 (nvfp4), not e8m0 (mxfp4, mxfp8).
	E4M3Scales bool
}

// MLXE2M1 is the value of each 4-bit code of MLX's mxfp4 and nvfp4 (its
// dequantize's lookup table): sign in bit 3, then OCP's E2M1 magnitudes.
// ggml's kvalues_mxfp4 hold the same codes doubled (its e8m0 scale is
// halved to match), so an MLX code is a ggml code as it is.
var MLXE2M1 = [16]float32{0, 0.5, 1, 1.5, 2, 3, 4, 6, float32(math.Copysign(0, -1)), -0.5, -1, -1.5, -2, -3, -4, -6}

// MLXFP8 is the value MLX gives an fp8 e4m3 byte (from_fp8, CPU backend:
// the low seven bits shifted into a float16's exponent and mantissa, times
// 256, negated when bit 7 is set). It agrees with OCP's E4M3FN everywhere
// but S.1111.111, which OCP reads as NaN and MLX as ±480.
func MLXFP8(b byte) float32 {
	v := F16ToF32(uint16(b&0x7f)<<7) * 256
	if b&0x80 != 0 {
		return -v
	}
	return v
}

// PackedBytes is the size of the codes of n values.
func (m MLXFP) PackedBytes(n int) int { return n / 8 * m.Bits }

// Dequantize writes the value of every code of packed into dst, scaled by
// its group's byte of scales, computed as MLX's dequantize computes it in
// the output type t (F32, F16 or BF16; MLX's default for these modes is
// BF16): the code's value and the group's scale (2^(e−127) or the e4m3
// value) are each taken to t, and their product is rounded to t. Every
// product of two such values is exact in float32, so one float32 multiply
// and one rounding are MLX's t multiply.
func (m MLXFP) Dequantize(dst []float32, packed, scales []byte, t tensor.DType) error {
	if m.Bits != 4 && m.Bits != 8 || m.GroupSize <= 0 {
		return tensor.Unsupported("quant: MLX fp dequantize: %d bits, group size %d (4 or 8 bits, e2m1 or e4m3 codes)", m.Bits, m.GroupSize)
	}
	round, err := roundTo(t)
	if err != nil {
		return fmt.Errorf("quant: MLX fp dequantize: %w", err)
	}
	groups := len(dst) / m.GroupSize
	if len(dst)%m.GroupSize != 0 || len(scales) < groups || len(packed) < m.PackedBytes(len(dst)) {
		return fmt.Errorf("quant: MLX fp dequantize: %d values need %d scales and %d bytes of codes, have %d and %d",
			len(dst), groups, m.PackedBytes(len(dst)), len(scales), len(packed))
	}
	for g := 0; g < groups; g++ {
		var s float32
		if m.E4M3Scales {
			s = round(MLXFP8(scales[g]))
		} else {
			// power(2, e − 127) in float: 2^128 (e = 255) is +Inf.
			s = round(float32(math.Ldexp(1, int(scales[g])-127)))
		}
		out := dst[g*m.GroupSize : (g+1)*m.GroupSize]
		for i := range out {
			k := g*m.GroupSize + i
			var c float32
			if m.Bits == 4 {
				c = MLXE2M1[packed[k/2]>>(4*(k%2))&0xf]
			} else {
				c = round(MLXFP8(packed[k]))
			}
			out[i] = round(c * s)
		}
	}
	return nil
}

// roundTo returns the rounding of a float32 to t's nearest value (RNE),
// as MLX's CPU ops round a float result to the output type.
func roundTo(t tensor.DType) (func(float32) float32, error) {
	switch t {
	case tensor.F32:
		return func(f float32) float32 { return f }, nil
	case tensor.F16:
		return func(f float32) float32 { return F16ToF32(F32ToF16(f)) }, nil
	case tensor.BF16:
		return func(f float32) float32 { return BF16ToF32(F32ToBF16(f)) }, nil
	}
	return nil, tensor.Unsupported("quant: output type %v (MLX computes in f32, f16 or bf16)", t)
}

// Quantize writes the codes (PackedBytes(len(w))) and one scale byte per
// group of w (a whole number of groups of t's values, decoded to float32),
// as MLX's CPU quantize computes them (846d176 fp_quantize, whose CPU path
// is a chain of array ops, each reproduced here in t's arithmetic):
//
//	s = max|w| / m                          (m = 6 for e2m1, 448 for e4m3; rounded to t)
//	e8m0:  e = rint(log2 s) (0 for s = 0),  byte e+127,  w / 2^e
//	e4m3:  byte = to_fp8(s),                w / from_fp8(byte)  (then in float32)
//	codes: e2m1: the first of MLX's 16 values nearest |w − v| (argmin);
//	       e4m3: to_fp8 (round to nearest even, saturating at 448).
func (m MLXFP) Quantize(packed, scales []byte, w []float32, t tensor.DType) error {
	round, err := roundTo(t)
	if err != nil {
		return fmt.Errorf("quant: MLX fp quantize: %w", err)
	}
	if m.Bits != 4 && m.Bits != 8 || m.GroupSize <= 0 || len(w)%m.GroupSize != 0 ||
		len(scales) < len(w)/m.GroupSize || len(packed) < m.PackedBytes(len(w)) {
		return fmt.Errorf("quant: MLX fp quantize: %d values, %d bits, group size %d: need %d scales and %d bytes of codes, have %d and %d",
			len(w), m.Bits, m.GroupSize, len(w)/max(m.GroupSize, 1), m.PackedBytes(len(w)), len(scales), len(packed))
	}
	maxval := float32(6)
	if m.Bits == 8 {
		maxval = 448
	}
	var lut [16]float32
	for i, v := range MLXE2M1 {
		lut[i] = round(v)
	}
	clear(packed[:m.PackedBytes(len(w))])
	q := make([]float32, m.GroupSize)
	for g := 0; g < len(w)/m.GroupSize; g++ {
		grp := w[g*m.GroupSize : (g+1)*m.GroupSize]
		var amax float32
		for _, v := range grp {
			if a := float32(math.Abs(float64(v))); a > amax {
				amax = a
			}
		}
		s := round(amax / maxval)
		// diff is |q − v| as MLX computes it: in t for the e8m0 modes, in
		// float32 for nvfp4 (its quotient was multiplied by a float32 1).
		diff := func(q, v float32) float32 { return float32(math.Abs(float64(round(q - v)))) }
		if m.E4M3Scales {
			b := ToMLXFP8(s)
			scales[g] = b
			d := round(MLXFP8(b))
			for i, v := range grp {
				q[i] = round(v / d)
			}
			diff = func(q, v float32) float32 { return float32(math.Abs(float64(q - v))) }
		} else {
			var e float32
			if s != 0 {
				e = round(float32(math.RoundToEven(float64(round(float32(math.Log2(float64(s))))))))
			}
			p := round(float32(math.Pow(2, float64(e))))
			for i, v := range grp {
				q[i] = round(v / p)
			}
			scales[g] = byte(int32(e + 127))
		}
		for i, v := range q {
			k := g*m.GroupSize + i
			if m.Bits == 8 {
				packed[k] = ToMLXFP8(v)
				continue
			}
			best, bestD := 0, diff(v, lut[0])
			for j := 1; j < 16; j++ {
				if d := diff(v, lut[j]); d < bestD {
					best, bestD = j, d
				}
			}
			packed[k/2] |= byte(best) << (4 * (k % 2))
		}
	}
	return nil
}

// ToMLXFP8 is MLX's to_fp8 (CPU backend): the e4m3 byte nearest f (ties to
// even), saturating at ±448 (0x7e), NaN included.
func ToMLXFP8(f float32) byte {
	bits := math.Float32bits(f)
	sign := bits & 0x80000000
	bits ^= sign
	var r byte
	switch {
	case bits >= 543<<21: // ≥ 464 (and Inf, NaN): the largest finite
		r = 0x7e
	case bits < 121<<23: // below 2^-6: subnormal, by adding 2^14 and rounding there
		const denorm = 141 << 23
		r = byte(math.Float32bits(math.Float32frombits(bits)+math.Float32frombits(denorm)) - denorm)
	default:
		odd := (bits >> 20) & 1
		r = byte((bits - 120<<23 + 0x7ffff + odd) >> 20) // rebias 127 → 7, round to nearest even
	}
	return r | byte(sign>>24)
}
