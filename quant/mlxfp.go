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
