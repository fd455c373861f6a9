package quant

import (
	"fmt"
	"math"
)

// Symmetric int8 quantization, the scheme weight-only int8 inference uses
// (no zero point, so dequantization is one multiply):
//
//	scale = max|x| / 127          (float32; 0 for an all-zero group)
//	q     = clamp(round(x / scale), -127, 127)   round: halves away from zero
//	x'    = q · scale
//
// -128 is never produced, so the range is symmetric and negation is exact.
// A group is either one row (per output channel: a [out, in] weight matrix
// gets out scales) or the whole tensor. NaN inputs quantize to 0; ±Inf
// make the scale Inf and every finite element 0.

// QuantizeInt8 quantizes src as one group into dst (min(len(dst),
// len(src)) elements) and returns the scale.
func QuantizeInt8(dst []int8, src []float32) (scale float32) {
	n := min(len(dst), len(src))
	return quantizeInt8Group(dst[:n], src[:n])
}

// QuantizeInt8Rows quantizes a row-major [rows, cols] matrix with one scale
// per row (per output channel). dst must hold rows·cols values, scales rows,
// and src rows·cols.
func QuantizeInt8Rows(dst []int8, scales []float32, src []float32, rows, cols int) error {
	if err := checkInt8(len(dst), len(scales), len(src), rows, cols); err != nil {
		return err
	}
	for r := range rows {
		scales[r] = quantizeInt8Group(dst[r*cols:(r+1)*cols], src[r*cols:(r+1)*cols])
	}
	return nil
}

// DequantizeInt8 writes min(len(dst), len(src)) values q·scale and returns
// that count.
func DequantizeInt8(dst []float32, src []int8, scale float32) int {
	n := min(len(dst), len(src))
	for i, q := range src[:n] {
		dst[i] = float32(q) * scale
	}
	return n
}

// DequantizeInt8Rows is the inverse of QuantizeInt8Rows.
func DequantizeInt8Rows(dst []float32, src []int8, scales []float32, rows, cols int) error {
	if err := checkInt8(len(src), len(scales), len(dst), rows, cols); err != nil {
		return err
	}
	for r := range rows {
		DequantizeInt8(dst[r*cols:(r+1)*cols], src[r*cols:(r+1)*cols], scales[r])
	}
	return nil
}

func checkInt8(nq, ns, nf, rows, cols int) error {
	if rows < 0 || cols < 0 || (cols > 0 && rows > math.MaxInt/cols) {
		return fmt.Errorf("quant: int8: bad matrix shape [%d, %d]", rows, cols)
	}
	n := rows * cols
	if nq != n || nf != n || ns != rows {
		return fmt.Errorf("quant: int8: [%d, %d] needs %d values and %d scales, have %d quants, %d floats, %d scales",
			rows, cols, n, rows, nq, nf, ns)
	}
	return nil
}

func quantizeInt8Group(dst []int8, src []float32) float32 {
	var amax float32
	for _, v := range src {
		if a := abs32(v); a > amax { // false for NaN, which is skipped
			amax = a
		}
	}
	scale := amax / 127
	for i, v := range src {
		if scale == 0 || v != v {
			dst[i] = 0
			continue
		}
		q := math.Round(float64(v / scale))
		dst[i] = int8(max(-127, min(127, q)))
	}
	return scale
}
