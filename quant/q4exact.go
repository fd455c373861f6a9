package quant

import "math"

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
