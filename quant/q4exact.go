package quant

import (
	"math"

	"github.com/tfconv/tfconv/tensor"
)

// EncodeQ4_0Exact writes x as Q4_0 blocks to dst when every block of 32
// holds its values exactly: a scale d that is an f16 value and codes c in
// [0, 15] with (c − 8)·d, ggml's decoding in float32, equal to each value
// (a zero as ±0). That is so for the values of a symmetric 4-bit layer with
// groups of 32 (GPTQ, compressed-tensors' W4A16), q·s with q in [−8, 7],
// whenever its scales s are f16 values; ggml's own encoder (d = max/−8)
// would round them unless the block's extreme is −8·s. ok is false, with
// dst partly written, when a block is not exact; len(x) must be a multiple
// of 32 and dst 18 bytes per block.
//
// Per block the candidates are d = ±max|x|/k for k = 8 … 1 (the largest
// |code − 8| the block uses; a negative d when the values reach +8·|s|),
// so the first that fits is the layer's own scale when its codes reach −8
// or 7, and a multiple of it otherwise.
func EncodeQ4_0Exact(dst []byte, x []float32) (ok bool) {
	if len(x)%qk != 0 || len(dst) != len(x)/qk*18 {
		return false
	}
	for b := range len(x) / qk {
		if !q4_0Exact(dst[18*b:18*b+18], x[qk*b:qk*b+qk]) {
			return false
		}
	}
	return true
}

func q4_0Exact(b []byte, x []float32) bool {
	var amax float32
	for _, v := range x {
		if v != v || math.IsInf(float64(v), 0) {
			return false
		}
		amax = max(amax, abs32(v))
	}
	var codes [qk]uint8
	try := func(d float32) bool {
		for i, v := range x {
			var q float32
			if d != 0 {
				q = float32(math.Round(float64(v / d)))
			}
			if q < -8 || q > 7 || q*d != v {
				return false
			}
			codes[i] = uint8(int(q) + 8)
		}
		return true
	}
	found := false
	var h uint16
	if amax == 0 {
		found = try(0) // ggml's zero block: d 0, codes 8
	}
	for k := 8; k >= 1 && !found; k-- {
		for _, d := range []float32{amax / float32(k), -amax / float32(k)} {
			if h = F32ToF16(d); F16ToF32(h) == d && try(d) {
				found = true
				break
			}
		}
	}
	if !found {
		return false
	}
	b[0], b[1] = byte(h), byte(h>>8)
	for j := range 16 {
		b[2+j] = codes[j] | codes[j+16]<<4
	}
	return true
}

// EncodeQ4_1Exact writes x as Q4_1 blocks to dst when every block of 32
// holds its values exactly: a step d and a minimum m that are f16 values
// and codes c in [0, 15] with c·d + m, ggml's decoding in float32, equal to
// each value. That is so for the values of an asymmetric 4-bit layer with
// groups of 32 (AWQ, GPTQ with zero points), (q − z)·s with q and z in
// [0, 15], whenever s and −z·s are f16 values (d = s, m = −z·s: then
// q·s + (−z·s) is (q − z)·s in float32 without rounding); ggml's own
// encoder (d = (max − min)/15, m = min) rounds them unless the block spans
// all 16 levels. ok is false, with dst partly written, when a block is not
// exact; len(x) must be a multiple of 32 and dst 20 bytes per block.
//
// Per block the candidates are d = (max − min)/k for k = 15 … 1 (the span
// of the codes the block uses) and m = min − j·d for j = 0 … 15 − k (the
// lowest code it uses), so the layer's own d = s and m = −z·s are among
// them.
func EncodeQ4_1Exact(dst []byte, x []float32) (ok bool) {
	if len(x)%qk != 0 || len(dst) != len(x)/qk*20 {
		return false
	}
	for b := range len(x) / qk {
		if !q4_1Exact(dst[20*b:20*b+20], x[qk*b:qk*b+qk]) {
			return false
		}
	}
	return true
}

func q4_1Exact(b []byte, x []float32) bool {
	mn, mx := x[0], x[0]
	for _, v := range x {
		if v != v || math.IsInf(float64(v), 0) {
			return false
		}
		mn, mx = min(mn, v), max(mx, v)
	}
	var codes [qk]uint8
	try := func(d, m float32) bool {
		for i, v := range x {
			var c float32
			if d != 0 {
				c = float32(math.Round(float64((v - m) / d)))
			}
			if c < 0 || c > 15 || float32(c*d)+m != v {
				return false
			}
			codes[i] = uint8(c)
		}
		return true
	}
	exactF16 := func(v float32) (uint16, bool) { h := F32ToF16(v); return h, F16ToF32(h) == v }
	put := func(hd, hm uint16) bool {
		b[0], b[1], b[2], b[3] = byte(hd), byte(hd>>8), byte(hm), byte(hm>>8)
		for j := range 16 {
			b[4+j] = codes[j] | codes[j+16]<<4
		}
		return true
	}
	if mn == mx {
		if hm, ok := exactF16(mn); ok && try(0, mn) {
			return put(0, hm)
		}
		return false
	}
	for k := 15; k >= 1; k-- {
		d := (mx - mn) / float32(k)
		hd, ok := exactF16(d)
		if !ok {
			continue
		}
		for j := 0; j <= 15-k; j++ {
			m := mn - float32(j)*d
			if hm, ok := exactF16(m); ok && try(d, m) {
				return put(hd, hm)
			}
		}
	}
	return false
}

// EncodeExact writes x as blocks of dt (Q4_0 or Q4_1) that hold its values
// exactly (EncodeQ4_0Exact, EncodeQ4_1Exact); ok is false for another
// type or when a block cannot.
func EncodeExact(dst []byte, x []float32, dt tensor.DType) (ok bool) {
	switch dt {
	case tensor.Q4_0:
		return EncodeQ4_0Exact(dst, x)
	case tensor.Q4_1:
		return EncodeQ4_1Exact(dst, x)
	}
	return false
}
