package quant

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/tfconv/tfconv/tensor"
)

// OverflowError is what Quantize and QuantizeRows return when finite input
// values came out of the encoding as ±Inf or NaN: an F16 value at or beyond
// 65520, a BF16 one past 3.3895e38, or a block whose f16 scale overflowed
// (Q8_0 from a magnitude past 65504·127, for example). dst is written in
// full all the same, so a caller that lets overflow through can keep it; one
// that does not returns the error. Inputs that are already ±Inf or NaN are
// not counted.
type OverflowError struct {
	DType tensor.DType
	// Count is the number of finite inputs whose encoded value is not
	// finite.
	Count int64
	// MaxAbs is the largest magnitude among them.
	MaxAbs float32
}

func (e *OverflowError) Error() string {
	return fmt.Sprintf("quant: %d value(s) beyond the range of %v (largest magnitude %g) would become ±Inf",
		e.Count, e.DType, e.MaxAbs)
}

// Add counts o's values into e (e.DType is taken from o when unset).
func (e *OverflowError) Add(o *OverflowError) {
	if o == nil {
		return
	}
	if e.Count == 0 {
		e.DType = o.DType
	}
	e.Count += o.Count
	e.MaxAbs = max(e.MaxAbs, o.MaxAbs)
}

// blockCheckAbove is the magnitude below which no block type's f16 scales
// can overflow, so its blocks need no decoding to check: every ggml
// quantizer derives a block's scales from the block's largest magnitude
// divided by a level count (≥ 1) or a grid value, times at most a small
// factor (IQ1's 1.1125), all far below 65504/1024 = 64. Real weights stay
// under it, so the check costs one pass over the input.
const blockCheckAbove = 1024

// overflow checks the encoding dst of src as type t (see OverflowError).
func overflow(dst []byte, src []float32, t tensor.DType) *OverflowError {
	var e OverflowError
	note := func(x float32) {
		e.Count++
		e.MaxAbs = max(e.MaxAbs, float32(math.Abs(float64(x))))
	}
	finite := func(x float32) bool { return math.Float32bits(x)&0x7f800000 != 0x7f800000 }
	switch t {
	case tensor.F32:
		return nil
	case tensor.F16, tensor.BF16:
		exp := uint16(0x7c00)
		if t == tensor.BF16 {
			exp = 0x7f80
		}
		for i, x := range src {
			if binary.LittleEndian.Uint16(dst[2*i:])&exp == exp && finite(x) {
				note(x)
			}
		}
	default:
		var amax float32
		for _, x := range src {
			if a := float32(math.Abs(float64(x))); a > amax && finite(x) {
				amax = a
			}
		}
		if amax <= blockCheckAbove {
			return nil
		}
		y := make([]float32, len(src))
		if Dequantize(y, dst, t) != nil {
			return nil
		}
		for i, x := range src {
			if !finite(y[i]) && finite(x) {
				note(x)
			}
		}
	}
	if e.Count == 0 {
		return nil
	}
	e.DType = t
	return &e
}
