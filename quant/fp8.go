package quant

import (
	"math"

	"github.com/tfconv/tfconv/tensor"
)

// The 8-bit float formats safetensors names. Every code decodes exactly to
// float32 through a 256-entry table built from the format's definition:
//
//	F8_E4M3      (OCP "E4M3FN", torch.float8_e4m3fn): bias 7, no infinities, S.1111.111 is NaN; max 448
//	F8_E5M2      (OCP E5M2, torch.float8_e5m2): bias 15, IEEE-like: S.11111.00 is ±Inf, S.11111.xx NaN
//	F8_E4M3FNUZ  (torch.float8_e4m3fnuz): bias 8, no -0: 0x80 is the only NaN, no infinities
//	F8_E5M2FNUZ  (torch.float8_e5m2fnuz): bias 16, 0x80 the only NaN, no infinities
//	F8_E8M0      (OCP MX scale, "E8M0FNU"): 2^(e−127), no sign, 0xFF is NaN
var fp8Tables = map[tensor.DType]*[256]float32{
	tensor.F8_E4M3:     fp8Table(4, 3, 7, false),
	tensor.F8_E5M2:     fp8Table(5, 2, 15, false),
	tensor.F8_E4M3FNUZ: fp8Table(4, 3, 8, true),
	tensor.F8_E5M2FNUZ: fp8Table(5, 2, 16, true),
	tensor.F8_E8M0:     e8m0Table(),
}

// fp8Table decodes every code of a sign/exponent/mantissa format with the
// given bias; fnuz formats have no negative zero (0x80 is NaN) and no
// infinities. Of the non-fnuz ones, E5M2 keeps IEEE's all-ones exponent for
// Inf/NaN and E4M3 ("FN") only S.1111.111 for NaN.
func fp8Table(ebits, mbits, bias int, fnuz bool) *[256]float32 {
	var t [256]float32
	for c := 0; c < 256; c++ {
		sign := float64(1)
		if c&0x80 != 0 {
			sign = -1
		}
		e := (c >> mbits) & (1<<ebits - 1)
		m := c & (1<<mbits - 1)
		var v float64
		switch {
		case fnuz && c == 0x80:
			v = math.NaN()
		case !fnuz && ebits == 5 && e == 1<<ebits-1:
			if m == 0 {
				v = sign * math.Inf(1)
			} else {
				v = math.NaN()
			}
		case !fnuz && ebits == 4 && e == 1<<ebits-1 && m == 1<<mbits-1:
			v = math.NaN()
		case e == 0: // subnormal
			v = sign * math.Ldexp(float64(m), 1-bias-mbits)
		default:
			v = sign * math.Ldexp(float64(m|1<<mbits), e-bias-mbits)
		}
		t[c] = float32(v)
	}
	return &t
}

func e8m0Table() *[256]float32 {
	var t [256]float32
	for c := 0; c < 255; c++ {
		t[c] = float32(math.Ldexp(1, c-127))
	}
	t[255] = float32(math.NaN())
	return &t
}

// IsFP8 reports whether d is one of the 8-bit float formats DecodeFP8
// handles.
func IsFP8(d tensor.DType) bool { _, ok := fp8Tables[d]; return ok }

// DecodeFP8 writes the float32 value of each 8-bit float code of src (in
// format d) to dst and returns the number written, min(len(dst),
// len(src)); it returns 0 for a d that is not an 8-bit float format.
func DecodeFP8(dst []float32, src []byte, d tensor.DType) int {
	t, ok := fp8Tables[d]
	if !ok {
		return 0
	}
	n := min(len(dst), len(src))
	for i := range n {
		dst[i] = t[src[i]]
	}
	return n
}
