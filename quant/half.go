package quant

import (
	"encoding/binary"
	"math"
	"unsafe"
)

// F32ToF16 rounds f to the nearest IEEE 754 binary16 value, ties to even.
// Values at or beyond 65520 become ±Inf, values below half the smallest
// subnormal (2^-25, ties to even) become ±0. A NaN stays a NaN: its sign and
// the top 9 payload bits are kept and the quiet bit is set, which is what
// F16C's VCVTPS2PH and github.com/x448/float16 do, so the generic and SIMD
// paths agree bit for bit.
func F32ToF16(f float32) uint16 {
	u := math.Float32bits(f)
	sign := uint16(u>>16) & 0x8000
	u &^= 0x80000000
	switch {
	case u > 0x7f800000: // NaN
		return sign | 0x7e00 | uint16((u&0x7fffff)>>13)
	case u >= 0x477ff000: // ≥ 65520, the midpoint above 65504: Inf
		return sign | 0x7c00
	case u >= 0x38800000: // ≥ 2^-14: a normal half
		v := u - 0x38000000 // rebias the exponent from 127 to 15
		v += 0xfff + (v>>13)&1
		return sign | uint16(v>>13)
	case u < 0x33000000: // < 2^-25 rounds to zero (2^-25 itself ties to even zero)
		return sign
	default: // a half subnormal: units of 2^-24
		e := u >> 23
		m := u&0x7fffff | 0x800000
		shift := 126 - e // 14..24
		q := m >> shift
		rem := m & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || rem == half && q&1 == 1 {
			q++
		}
		return sign | uint16(q)
	}
}

// F16ToF32 widens an IEEE binary16 value exactly. NaNs come out quiet
// (payload kept, quiet bit set) as VCVTPH2PS makes them.
func F16ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	e := uint32(h>>10) & 0x1f
	m := uint32(h & 0x3ff)
	switch e {
	case 0x1f:
		if m == 0 {
			return math.Float32frombits(sign | 0x7f800000)
		}
		return math.Float32frombits(sign | 0x7fc00000 | m<<13)
	case 0:
		// m·2^-24 is exact in float32.
		return math.Float32frombits(sign | math.Float32bits(float32(m)*0x1p-24))
	}
	return math.Float32frombits(sign | (e+112)<<23 | m<<13)
}

// F32ToBF16 rounds f to bfloat16 with ties to even, exactly as PyTorch's
// c10::detail::round_to_nearest_even: every NaN becomes the canonical quiet
// NaN 0x7FC0 (sign and payload dropped), and values past the largest finite
// bfloat16 round to ±Inf.
func F32ToBF16(f float32) uint16 {
	if f != f {
		return 0x7fc0
	}
	u := math.Float32bits(f)
	return uint16((u + 0x7fff + (u>>16)&1) >> 16)
}

// BF16ToF32 widens a bfloat16 value: its bits are the top half of a float32.
func BF16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// The plain-Go kernels. Each is the reference its SIMD twin is tested
// against; all take equal-length slices.

func encodeF16Generic(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	for i, f := range src {
		dst[i] = F32ToF16(f)
	}
}

func decodeF16Generic(dst []float32, src []uint16) {
	dst = dst[:len(src)]
	for i, h := range src {
		dst[i] = F16ToF32(h)
	}
}

func encodeBF16Generic(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	for i, f := range src {
		dst[i] = F32ToBF16(f)
	}
}

func decodeBF16Generic(dst []float32, src []uint16) {
	dst = dst[:len(src)]
	for i, h := range src {
		dst[i] = BF16ToF32(h)
	}
}

// EncodeF16 converts min(len(dst), len(src)) float32s to IEEE half
// precision (round to nearest even, see F32ToF16) and returns that count.
func EncodeF16(dst []uint16, src []float32) int {
	n := min(len(dst), len(src))
	active.encF16(dst[:n], src[:n])
	return n
}

// DecodeF16 widens min(len(dst), len(src)) halves to float32 and returns
// that count. The conversion is exact.
func DecodeF16(dst []float32, src []uint16) int {
	n := min(len(dst), len(src))
	active.decF16(dst[:n], src[:n])
	return n
}

// EncodeBF16 converts min(len(dst), len(src)) float32s to bfloat16 (round
// to nearest even, NaN → 0x7FC0, see F32ToBF16) and returns that count.
func EncodeBF16(dst []uint16, src []float32) int {
	n := min(len(dst), len(src))
	active.encBF16(dst[:n], src[:n])
	return n
}

// DecodeBF16 widens min(len(dst), len(src)) bfloat16s to float32 and returns
// that count. The conversion is exact.
func DecodeBF16(dst []float32, src []uint16) int {
	n := min(len(dst), len(src))
	active.decBF16(dst[:n], src[:n])
	return n
}

// chunk is the number of elements the byte-slice codecs convert per step
// through a stack buffer: large enough for the SIMD kernels to run at full
// speed, small enough to stay in L1.
const chunk = 512

// EncodeF16Bytes writes min(len(dst)/2, len(src)) halves to dst in
// little-endian order (as safetensors and GGUF store them) and returns the
// number of elements written.
func EncodeF16Bytes(dst []byte, src []float32) int {
	return encodeBytes(dst, src, active.encF16)
}

// EncodeBF16Bytes is EncodeBF16 writing little-endian bytes.
func EncodeBF16Bytes(dst []byte, src []float32) int {
	return encodeBytes(dst, src, active.encBF16)
}

// DecodeF16Bytes reads min(len(dst), len(src)/2) little-endian halves and
// returns the number of elements decoded.
func DecodeF16Bytes(dst []float32, src []byte) int {
	return decodeBytes(dst, src, active.decF16)
}

// DecodeBF16Bytes is DecodeBF16 reading little-endian bytes.
func DecodeBF16Bytes(dst []float32, src []byte) int {
	return decodeBytes(dst, src, active.decBF16)
}

func encodeBytes(dst []byte, src []float32, enc func([]uint16, []float32)) int {
	n := min(len(dst)/2, len(src))
	if h, ok := halves(dst[:2*n]); ok {
		enc(h, src[:n]) // the bytes are the halves themselves: no staging copy
		return n
	}
	var buf [chunk]uint16
	for i := 0; i < n; i += chunk {
		m := min(chunk, n-i)
		enc(buf[:m], src[i:i+m])
		b := dst[2*i : 2*(i+m)]
		for j, h := range buf[:m] {
			binary.LittleEndian.PutUint16(b[2*j:], h)
		}
	}
	return n
}

func decodeBytes(dst []float32, src []byte, dec func([]float32, []uint16)) int {
	n := min(len(dst), len(src)/2)
	if h, ok := halves(src[:2*n]); ok {
		dec(dst[:n], h)
		return n
	}
	var buf [chunk]uint16
	for i := 0; i < n; i += chunk {
		m := min(chunk, n-i)
		b := src[2*i : 2*(i+m)]
		for j := range buf[:m] {
			buf[j] = binary.LittleEndian.Uint16(b[2*j:])
		}
		dec(dst[i:i+m], buf[:m])
	}
	return n
}

// HostLittleEndian: the host stores numbers as their little-endian bytes,
// as safetensors and GGUF do, so file bytes can be viewed in place as
// uint16s or float32s.
var HostLittleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// halves views little-endian bytes as the uint16s they store when the host
// is little-endian and the bytes are 2-byte aligned (always so for tensor
// data at an aligned offset); otherwise the caller converts through a
// buffer.
func halves(b []byte) ([]uint16, bool) {
	if !HostLittleEndian || len(b) < 2 || uintptr(unsafe.Pointer(unsafe.SliceData(b)))%2 != 0 {
		return nil, false
	}
	return unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/2), true
}
