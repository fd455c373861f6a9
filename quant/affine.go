package quant

import (
	"fmt"
	"math"

	"github.com/tfconv/tfconv/tensor"
)

// Affine is MLX's affine group quantization (mx.quantize with mode
// "affine", what mlx-lm writes): each run of GroupSize consecutive values
// of a row shares a scale s and a bias b, and a value w is stored as the
// Bits-bit code q = clamp(round(w − b) / s), 0, 2^Bits−1), read back as
// q·s + b.
//
// The codes of a row are one little-endian bit stream, code i at bit
// i·Bits, stored as uint32 words (the tensor's last dimension is
// cols·Bits/32):
//
//	bits 4, word 0:  q7 q6 q5 q4 q3 q2 q1 q0   (q0 in bits 0..3)
//	bits 3, bytes:   |q2:2 q1:3 q0:3| … 8 codes in 3 bytes, 32 codes in 3 words
//
// The scale and bias of a group are chosen as MLX's CPU kernel chooses them
// (mlx/backend/cpu/quantized.cpp, quantize): from the group's minimum and
// maximum, the edge of larger magnitude is put on a code exactly and the
// scale is adjusted so that it is; the scales and biases are then stored in
// the weight's own float type.
type Affine struct {
	Bits      int // 2, 3, 4, 5, 6 or 8
	GroupSize int // 32, 64 or 128
}

// AffineBits and AffineGroupSizes are the parameters MLX's quantize accepts.
var (
	AffineBits       = []int{2, 3, 4, 5, 6, 8}
	AffineGroupSizes = []int{32, 64, 128}
)

// Check reports whether a holds parameters MLX accepts.
func (a Affine) Check() error {
	okBits := false
	for _, b := range AffineBits {
		okBits = okBits || b == a.Bits
	}
	okGroup := false
	for _, g := range AffineGroupSizes {
		okGroup = okGroup || g == a.GroupSize
	}
	if !okBits || !okGroup {
		return tensor.Unsupported("quant: affine quantization with %d bits and group size %d: MLX takes bits 2, 3, 4, 5, 6 or 8 and group size 32, 64 or 128", a.Bits, a.GroupSize)
	}
	return nil
}

// PackedBytes is the size of the codes of n values.
func (a Affine) PackedBytes(n int) int { return n / 8 * a.Bits }

// affineEps is the smallest scale MLX uses (a constant group would
// otherwise divide by zero).
const affineEps = float32(1e-7)

// Quantize quantizes w (a whole number of groups) into packed (PackedBytes
// of len(w)), scales and biases (one per group). scales and biases are the
// float32 values MLX computes before it casts them to the weight's type;
// the codes were computed with these, not with the cast ones, as MLX does.
// Each operation is MLX's float32 operation in its order, so that the
// result is MLX's bit for bit.
func (a Affine) Quantize(packed []byte, scales, biases []float32, w []float32) {
	nBins := float32(int(1)<<a.Bits - 1)
	groups := len(w) / a.GroupSize
	clear(packed[:a.PackedBytes(groups*a.GroupSize)])
	for g := 0; g < groups; g++ {
		x := w[g*a.GroupSize : (g+1)*a.GroupSize]
		wMin, wMax := float32(math.Inf(1)), float32(math.Inf(-1))
		for _, v := range x {
			// std::max / std::min: the first argument unless the second is
			// strictly beyond it (a NaN never replaces).
			if wMax < v {
				wMax = v
			}
			if v < wMin {
				wMin = v
			}
		}
		mask := abs32(wMin) > abs32(wMax)
		scale := (wMax - wMin) / nBins
		if scale < affineEps {
			scale = affineEps
		}
		if !mask {
			scale = -scale
		}
		edge := wMax
		if mask {
			edge = wMin
		}
		q0 := rint32(edge / scale)
		bias := float32(0)
		if q0 != 0 {
			scale = edge / q0
			bias = edge
		}
		scales[g], biases[g] = scale, bias
		bit := g * a.GroupSize * a.Bits
		for _, v := range x {
			q := rint32((v - bias) / scale)
			if q < 0 {
				q = 0
			}
			if nBins < q {
				q = nBins
			}
			putBits(packed, bit, a.Bits, uint32(q))
			bit += a.Bits
		}
	}
}

// Dequantize writes q·s + b for every code of packed into dst. The
// arithmetic is MLX's dequantize in the weight's type t (F32, F16 or
// BF16): the product and then the sum are each computed in float32 and
// rounded to t, as MLX's CPU ops compute half-precision arithmetic.
// scales and biases hold t's values (decoded to float32).
func (a Affine) Dequantize(dst []float32, packed []byte, scales, biases []float32, t tensor.DType) error {
	round, err := roundTo(t)
	if err != nil {
		return tensor.Unsupported("quant: affine scales of type %v (MLX stores f32, f16 or bf16)", t)
	}
	if len(dst)%a.GroupSize != 0 || len(scales) < len(dst)/a.GroupSize || len(biases) < len(dst)/a.GroupSize || len(packed) < a.PackedBytes(len(dst)) {
		return fmt.Errorf("quant: affine dequantize: %d values need %d scales and biases and %d bytes of codes, have %d, %d and %d",
			len(dst), len(dst)/a.GroupSize, a.PackedBytes(len(dst)), len(scales), len(biases), len(packed))
	}
	bit := 0
	for i := range dst {
		g := i / a.GroupSize
		q := float32(getBits(packed, bit, a.Bits))
		bit += a.Bits
		dst[i] = round(round(float32(q*scales[g])) + biases[g])
	}
	return nil
}

// putBits ORs the n-bit value v into the little-endian bit stream b at bit
// offset off (b's bits there are zero).
func putBits(b []byte, off, n int, v uint32) {
	for n > 0 {
		i, s := off/8, off%8
		b[i] |= byte(v << s)
		take := 8 - s
		if take > n {
			take = n
		}
		v >>= take
		off += take
		n -= take
	}
}

// getBits reads the n-bit value at bit offset off of the little-endian bit
// stream b.
func getBits(b []byte, off, n int) uint32 {
	var v uint32
	for got := 0; got < n; {
		i, s := off/8, off%8
		take := 8 - s
		if take > n-got {
			take = n - got
		}
		v |= uint32(b[i]>>s) & (1<<take - 1) << got
		off += take
		got += take
	}
	return v
}

// rint32 is C's rint in the default rounding mode: to nearest, ties to even.
func rint32(f float32) float32 { return float32(math.RoundToEven(float64(f))) }
