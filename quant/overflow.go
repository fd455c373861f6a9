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

// blockCheckAbove is the magnitude up to which no block type's f16 scales
// can overflow, so its blocks need no decoding to check: every ggml
// quantizer derives a block's scales from the block's largest magnitude
// divided by a level count (≥ 1) or a grid value, times at most a small
// factor (IQ1's 1.1125), all far below 65504/1024 = 64. Real weights stay
// under it, so the check costs one pass over the input.
const blockCheckAbove = 1024

// overflow checks the encoding dst of src as type t (see OverflowError).
// An F16 or BF16 output is scanned for an all-ones exponent, four values a
// word, and only when one is found is each value looked at; a block type's
// input is scanned for a magnitude past blockCheckAbove (or a non-finite
// one), and only then decoded. On one core of the benchmark machine the
// scans take 21 GB/s of F16 input and 8.6 GB/s for a block type (the
// F16C encode itself 34 GB/s), far above what a checkpoint is read at.
func overflow(dst []byte, src []float32, t tensor.DType) *OverflowError {
	switch t {
	case tensor.F32:
		return nil
	case tensor.F16, tensor.BF16:
		// Each 16-bit lane of ((w & exp) + low) has its top bit set when
		// the lane's exponent is all ones (±Inf or NaN), with no carry
		// into the next lane.
		exp, low := uint64(0x7c007c007c007c00), uint64(0x0400040004000400)
		if t == tensor.BF16 {
			exp, low = 0x7f807f807f807f80, 0x0080008000800080
		}
		var acc uint64
		b := dst[:2*len(src)]
		i := 0
		for ; i+8 <= len(b); i += 8 {
			acc |= binary.LittleEndian.Uint64(b[i:])&exp + low
		}
		for ; i < len(b); i += 2 {
			acc |= uint64(binary.LittleEndian.Uint16(b[i:]))&exp + low
		}
		if acc&0x8000800080008000 == 0 {
			return nil
		}
		e16 := uint16(exp)
		return count(t, src, func(i int) bool { return binary.LittleEndian.Uint16(dst[2*i:])&e16 == e16 })
	default:
		// The top bit of |x|'s bits + (2³¹ − 1 − bits(blockCheckAbove))
		// is set when |x| > blockCheckAbove (or x is ±Inf or NaN).
		const add = 1<<31 - 1 - 0x44800000 // 0x44800000: float32 1024
		var acc uint32
		for _, x := range src {
			acc |= math.Float32bits(x)&0x7fffffff + add
		}
		if acc>>31 == 0 {
			return nil
		}
		y := make([]float32, len(src))
		if Dequantize(y, dst, t) != nil {
			return nil
		}
		return count(t, src, func(i int) bool { return !finite(y[i]) })
	}
}

// count returns the overflow of the finite values src[i] for which bad(i)
// says the encoding is not finite, or nil when there is none.
func count(t tensor.DType, src []float32, bad func(i int) bool) *OverflowError {
	e := OverflowError{DType: t}
	for i, x := range src {
		if finite(x) && bad(i) {
			e.Count++
			e.MaxAbs = max(e.MaxAbs, float32(math.Abs(float64(x))))
		}
	}
	if e.Count == 0 {
		return nil
	}
	return &e
}

func finite(x float32) bool { return math.Float32bits(x)&0x7f800000 != 0x7f800000 }
