package quant

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/tfconv/tfconv/tensor"
)

// qk is the element count of the 32-element ggml blocks; qkK of the
// 256-element k-quant super-blocks.
const (
	qk  = 32
	qkK = 256
)

// Dequantize decodes src, a whole number of blocks of type t, into dst,
// which must hold exactly the elements those blocks encode. Every ggml
// block type is supported, with the arithmetic of ggml's dequantize_row_*
// (float32 operations in the same order, none fused), so the results equal
// ggml's bit for bit; so are the plain types F32, F16, BF16, F64, I8, I16,
// I32 and I64 (little-endian; integers and F64 are converted to the nearest
// float32) and the 8-bit floats (DecodeFP8, exact). Any other dtype returns an error matching tensor.ErrUnsupported.
func Dequantize(dst []float32, src []byte, t tensor.DType) error {
	n, err := checkSizes(len(dst), len(src), t, "Dequantize")
	if err != nil {
		return err
	}
	r := registry[t]
	if r == nil || r.Decode == nil {
		return tensor.Unsupported("quant: cannot dequantize %v", t)
	}
	r.Decode(dst[:n], src)
	return nil
}

// Quantize encodes src into dst as blocks of type t; len(src) must be a
// whole number of blocks and dst exactly their size. The quantized types are
// bit-exact with ggml's reference quantizers, which are what llama-quantize
// runs when no importance matrix is given: quantize_row_{q4_0, q4_1, q5_0,
// q5_1, q8_0, q8_1, q2_K, q3_K, q4_K, q5_K, q6_K, q8_K, tq1_0, tq2_0,
// mxfp4}_ref, IQ4_NL, IQ4_XS, IQ3_XXS and IQ3_S with ggml's weights x², and
// quantize_iq2_s and quantize_iq1_m without weights (iq2.go, iq1.go). F32, F16 and BF16 are written as
// little-endian bytes. The other IQ types need an importance matrix
// (QuantizeRows) or are not transcribed, and return an error matching
// tensor.ErrUnsupported, as does any other dtype.
//
// NaN and Inf inputs produce blocks ggml would also produce garbage from;
// they are not an error and never panic. Finite inputs that the encoding
// turns into ±Inf or NaN (an F16 value past 65504, a block scale past f16's
// range) are: dst is still written in full and the error is an
// *OverflowError, which a caller may let through.
func Quantize(dst []byte, src []float32, t tensor.DType) error {
	if err := quantize(dst, src, t); err != nil {
		return err
	}
	if e := overflow(dst, src, t); e != nil {
		return e
	}
	return nil
}

// quantize is Quantize without the overflow check.
func quantize(dst []byte, src []float32, t tensor.DType) error {
	n, err := checkSizes(len(src), len(dst), t, "Quantize")
	if err != nil {
		return err
	}
	r := registry[t]
	if r == nil || r.Encode == nil {
		return tensor.Unsupported("quant: cannot quantize to %v", t)
	}
	return r.Encode(dst, src[:n])
}

// CanQuantize reports whether Quantize accepts t.
func CanQuantize(t tensor.DType) bool { r := registry[t]; return r != nil && r.Encode != nil }

// CanDequantize reports whether Dequantize accepts t.
func CanDequantize(t tensor.DType) bool { r := registry[t]; return r != nil && r.Decode != nil }

// checkSizes validates nElem elements against nBytes bytes of type t and
// returns the element count.
func checkSizes(nElem, nBytes int, t tensor.DType, op string) (int, error) {
	if !t.Valid() {
		return 0, tensor.Unsupported("quant: %s: invalid dtype %d", op, uint8(t))
	}
	bs, bb := int(t.BlockSize()), int(t.BlockBytes())
	if nBytes%bb != 0 {
		return 0, fmt.Errorf("quant: %s %v: %d bytes is not a whole number of %d-byte blocks", op, t, nBytes, bb)
	}
	if nElem%bs != 0 {
		return 0, fmt.Errorf("quant: %s %v: %d elements is not a whole number of %d-element blocks", op, t, nElem, bs)
	}
	if nElem/bs != nBytes/bb {
		return 0, fmt.Errorf("quant: %s %v: %d elements need %d bytes, have %d", op, t, nElem, nElem/bs*bb, nBytes)
	}
	return nElem, nil
}

// blockFunc decodes one block (dst: BlockSize elements, src: BlockBytes).
type blockFunc func(dst []float32, src []byte)

// encodeFunc encodes one block (dst: BlockBytes, src: BlockSize elements).
type encodeFunc func(dst []byte, src []float32)

func half(b []byte) float32       { return F16ToF32(binary.LittleEndian.Uint16(b)) }
func putHalf(b []byte, f float32) { binary.LittleEndian.PutUint16(b, F32ToF16(f)) }

// roundAway is C's roundf: halves round away from zero.
func roundAway(f float32) float32 { return float32(math.Round(float64(f))) }

// ---- 32-element blocks ----

func dequantQ4_0(y []float32, b []byte) {
	y, b = y[:qk], b[:18] // fixed lengths: no bounds checks in the loop
	d := half(b)
	qs := b[2:18]
	for j := range 16 {
		y[j] = float32(int(qs[j]&0xf)-8) * d
		y[j+16] = float32(int(qs[j]>>4)-8) * d
	}
}

func dequantQ4_1(y []float32, b []byte) {
	y, b = y[:qk], b[:20]
	d, m := half(b), half(b[2:])
	qs := b[4:20]
	for j := range 16 {
		y[j] = float32(float32(qs[j]&0xf)*d) + m
		y[j+16] = float32(float32(qs[j]>>4)*d) + m
	}
}

func dequantQ5_0(y []float32, b []byte) {
	y, b = y[:qk], b[:22]
	d := half(b)
	qh := binary.LittleEndian.Uint32(b[2:])
	qs := b[6:22]
	for j := range 16 {
		h0 := byte(qh>>j<<4) & 0x10
		h1 := byte(qh>>(j+12)) & 0x10
		y[j] = float32(int(qs[j]&0xf|h0)-16) * d
		y[j+16] = float32(int(qs[j]>>4|h1)-16) * d
	}
}

func dequantQ5_1(y []float32, b []byte) {
	y, b = y[:qk], b[:24]
	d, m := half(b), half(b[2:])
	qh := binary.LittleEndian.Uint32(b[4:])
	qs := b[8:24]
	for j := range 16 {
		h0 := byte(qh>>j<<4) & 0x10
		h1 := byte(qh>>(j+12)) & 0x10
		y[j] = float32(float32(qs[j]&0xf|h0)*d) + m
		y[j+16] = float32(float32(qs[j]>>4|h1)*d) + m
	}
}

// dequantizeQ8_0Generic is ggml's dequantize_row_q8_0: y = d·q.
func dequantizeQ8_0Generic(y []float32, src []byte) {
	for o, i := 0, 0; o+34 <= len(src); o, i = o+34, i+32 {
		d := half(src[o:])
		q := src[o+2 : o+34]
		yy := y[i : i+32]
		for j := range 32 {
			yy[j] = float32(int8(q[j])) * d
		}
	}
}

func dequantQ8_1(y []float32, b []byte) {
	d := half(b)
	for j, q := range b[4:36] {
		y[j] = float32(int8(q)) * d
	}
}

func dequantIQ4_NL(y []float32, b []byte) {
	d := half(b)
	qs := b[2:18]
	for j := range 16 {
		y[j] = d * float32(kvaluesIQ4NL[qs[j]&0xf])
		y[j+16] = d * float32(kvaluesIQ4NL[qs[j]>>4])
	}
}

// e8m0Half is GGML_E8M0_TO_FP32_HALF: 2^(e-128), half the E8M0 scale,
// because ggml's FP4 table holds doubled E2M1 values.
func e8m0Half(e uint8) float32 {
	if e < 2 {
		return math.Float32frombits(0x00200000 << e)
	}
	return math.Float32frombits(uint32(e-1) << 23)
}

func dequantMXFP4(y []float32, b []byte) {
	d := e8m0Half(b[0])
	qs := b[1:17]
	for j := range 16 {
		y[j] = float32(kvaluesFP4[qs[j]&0xf]) * d
		y[j+16] = float32(kvaluesFP4[qs[j]>>4]) * d
	}
}

// quantQ4_0 is quantize_row_q4_0_ref: d = -max/8 where max is the signed
// value of largest magnitude (the first one on ties), q = min(15,
// trunc(x/d + 8.5)).
func quantQ4_0(b []byte, x []float32) {
	var amax, max float32
	for _, v := range x[:qk] {
		if a := abs32(v); amax < a {
			amax, max = a, v
		}
	}
	d := max / -8
	var id float32
	if d != 0 {
		id = 1 / d
	}
	putHalf(b, d)
	for j := range 16 {
		x0 := x[j] * id
		x1 := x[j+16] * id
		q0 := min(15, int8(x0+8.5))
		q1 := min(15, int8(x1+8.5))
		b[2+j] = uint8(q0) | uint8(q1)<<4
	}
}

// minScale is the common start of quantize_row_q4_1_ref and _q5_1_ref:
// the block's minimum m and step d = (max-min)/levels, stored as f16 d then
// f16 m; it returns m and 1/d (0 for a constant block).
func minScale(b []byte, x []float32, levels float32) (mn, id float32) {
	mn, mx := float32(math.MaxFloat32), float32(-math.MaxFloat32)
	for _, v := range x[:qk] {
		if v < mn {
			mn = v
		}
		if v > mx {
			mx = v
		}
	}
	d := (mx - mn) / levels
	if d != 0 {
		id = 1 / d
	}
	putHalf(b, d)
	putHalf(b[2:], mn)
	return mn, id
}

// quantQ4_1 is quantize_row_q4_1_ref: d = (max-min)/15, m = min, q =
// min(15, trunc((x-min)/d + 0.5)).
func quantQ4_1(b []byte, x []float32) {
	mn, id := minScale(b, x, 15)
	for j := range 16 {
		x0 := (x[j] - mn) * id
		x1 := (x[j+16] - mn) * id
		q0 := min(15, int8(x0+0.5))
		q1 := min(15, int8(x1+0.5))
		b[4+j] = uint8(q0) | uint8(q1)<<4
	}
}

// quantQ5_0 is quantize_row_q5_0_ref: as Q4_0 with 32 levels, d = -max/16.
func quantQ5_0(b []byte, x []float32) {
	var amax, max float32
	for _, v := range x[:qk] {
		if a := abs32(v); amax < a {
			amax, max = a, v
		}
	}
	d := max / -16
	var id float32
	if d != 0 {
		id = 1 / d
	}
	putHalf(b, d)
	var qh uint32
	for j := range 16 {
		x0 := x[j] * id
		x1 := x[j+16] * id
		q0 := uint8(min(31, int8(x0+16.5)))
		q1 := uint8(min(31, int8(x1+16.5)))
		b[6+j] = q0&0xf | (q1&0xf)<<4
		qh |= uint32(q0&0x10) >> 4 << j
		qh |= uint32(q1&0x10) >> 4 << (j + 16)
	}
	binary.LittleEndian.PutUint32(b[2:], qh)
}

// quantQ5_1 is quantize_row_q5_1_ref: d = (max-min)/31, m = min, q =
// trunc((x-min)/d + 0.5) (no clamp, as in ggml).
func quantQ5_1(b []byte, x []float32) {
	mn, id := minScale(b, x, 31)
	var qh uint32
	for j := range 16 {
		x0 := (x[j] - mn) * id
		x1 := (x[j+16] - mn) * id
		q0 := f32ToU8(x0 + 0.5)
		q1 := f32ToU8(x1 + 0.5)
		b[8+j] = q0&0xf | (q1&0xf)<<4
		qh |= uint32(q0&0x10) >> 4 << j
		qh |= uint32(q1&0x10) >> 4 << (j + 16)
	}
	binary.LittleEndian.PutUint32(b[4:], qh)
}

// f32ToU8 is C's (uint8_t) conversion of a float in range: truncation.
// Out-of-range input (only from NaN/Inf data) wraps instead of being
// undefined.
func f32ToU8(f float32) uint8 { return uint8(int32(f)) }

// quantizeQ8_0Generic is quantize_row_q8_0_ref for whole blocks: d =
// max|x|/127 (stored as f16), q = roundf(x·(1/d)), halves away from zero.
func quantizeQ8_0Generic(dst []byte, src []float32) {
	for o, i := 0, 0; i+qk <= len(src); o, i = o+34, i+qk {
		x := src[i : i+qk]
		var amax float32
		for _, v := range x {
			amax = max(amax, abs32(v))
		}
		d := amax / 127
		var id float32
		if d != 0 {
			id = 1 / d
		}
		putHalf(dst[o:], d)
		q := dst[o+2 : o+34]
		for j, v := range x {
			q[j] = uint8(int8(roundAway(v * id)))
		}
	}
}

// quantQ8_1 is quantize_row_q8_1_ref: Q8_0 plus s = f16(d·Σq).
func quantQ8_1(b []byte, x []float32) {
	var amax float32
	for _, v := range x[:qk] {
		amax = max(amax, abs32(v))
	}
	d := amax / 127
	var id float32
	if d != 0 {
		id = 1 / d
	}
	putHalf(b, d)
	sum := 0
	for j := range 16 {
		q0 := int8(roundAway(x[j] * id))
		q1 := int8(roundAway(x[j+16] * id))
		b[4+j] = uint8(q0)
		b[4+j+16] = uint8(q1)
		sum += int(q0) + int(q1)
	}
	putHalf(b[2:], float32(sum)*d)
}

// quantMXFP4 is quantize_row_mxfp4_ref: the shared exponent is
// floor(log2(max|x|)) - 2 (+127 bias) and each element takes the nearest of
// the 16 FP4 values (first on ties).
func quantMXFP4(b []byte, x []float32) {
	var amax float32
	for _, v := range x[:qk] {
		if amax < abs32(v) {
			amax = abs32(v)
		}
	}
	var e uint8
	if amax > 0 {
		e = uint8(int32(float32(math.Floor(float64(log2f(amax)))) - 2 + 127))
	}
	d := e8m0Half(e)
	b[0] = e
	for j := range 16 {
		b[1+j] = bestFP4(x[j], d) | bestFP4(x[j+16], d)<<4
	}
}

// log2f is C's log2f for positive finite float32 input: exact for powers of
// two, and otherwise only its floor matters, which float64 log2 gives
// correctly for every float32.
func log2f(f float32) float32 { return float32(math.Log2(float64(f))) }

func bestFP4(x, e float32) uint8 {
	best := 0
	bestErr := abs32(float32(float32(kvaluesFP4[0])*e) - x)
	for i := 1; i < 16; i++ {
		if err := abs32(float32(float32(kvaluesFP4[i])*e) - x); err < bestErr {
			best, bestErr = i, err
		}
	}
	return uint8(best)
}

func abs32(f float32) float32 { return math.Float32frombits(math.Float32bits(f) &^ (1 << 31)) }
