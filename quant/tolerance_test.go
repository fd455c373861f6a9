package quant

import (
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

// Largest |x - dequant(quant(x))| allowed, as a fraction of the largest
// |x| in the block (32 or 256 elements). The legacy bounds follow from the
// formats: a step d = range/levels gives at most d/2 of rounding error, plus
// the f16 rounding of d and m (2^-11 relative, times up to the largest
// level), and Q4_0/Q5_0 clamp the level opposite the signed maximum, which
// costs one full step. The k-quant bounds are empirical upper bounds on the
// fixtures with headroom: their 4-/6-bit sub-block scales and the min
// search make a closed form loose.
const (
	maxErrQ8_0 = (0.5 + 127.0/2048) / 127   // half a step of amax/127, plus f16(d)
	maxErrQ4_0 = (1 + 8.0/2048) / 8         // one step of amax/8 (the clamped level)
	maxErrQ5_0 = (1 + 16.0/2048) / 16       // one step of amax/16
	maxErrQ4_1 = (1 + 15.0/2048) / 15 * 1.1 // half a step of range/15 ≤ 2·amax/15, plus f16(d), f16(m)
	maxErrQ5_1 = (1 + 31.0/2048) / 31 * 1.1 // half a step of range/31
	maxErrQ2_K = 0.50
	maxErrQ3_K = 0.30
	maxErrQ4_K = 0.15
	maxErrQ5_K = 0.08
	maxErrQ6_K = 0.04
	// IQ4_XS: half the widest gap between the IQ4_NL levels (24 of the
	// ≈127 the block max maps to, ≈0.094) plus the rounding of each 32-value
	// block's scale to a 6-bit multiple of the super-block's; the sine
	// input of TestRoundTripAllTypes reaches 0.106.
	maxErrIQ4_XS = 0.15
)

var maxErr = map[tensor.DType]float64{
	tensor.Q8_0: maxErrQ8_0, tensor.Q4_0: maxErrQ4_0, tensor.Q5_0: maxErrQ5_0,
	tensor.Q4_1: maxErrQ4_1, tensor.Q5_1: maxErrQ5_1,
	tensor.Q2_K: maxErrQ2_K, tensor.Q3_K: maxErrQ3_K, tensor.Q4_K: maxErrQ4_K,
	tensor.Q5_K: maxErrQ5_K, tensor.Q6_K: maxErrQ6_K, tensor.IQ4_XS: maxErrIQ4_XS,
}

// checkDequantError checks dec (a decoded tensor) against src block by
// block with the type's tolerance.
func checkDequantError(t *testing.T, name string, src, dec []float32, dt tensor.DType) {
	t.Helper()
	tol, ok := maxErr[dt]
	if !ok {
		t.Fatalf("no tolerance for %v", dt)
	}
	bs := int(dt.BlockSize())
	worst := 0.0
	for o := 0; o+bs <= len(src); o += bs {
		var amax, e float64
		for i := o; i < o+bs; i++ {
			amax = max(amax, abs64(float64(src[i])))
			e = max(e, abs64(float64(src[i])-float64(dec[i])))
		}
		if amax > 0 {
			worst = max(worst, e/amax)
		}
	}
	if worst > tol {
		t.Errorf("%s %v: decoded error %.4g of the block max, tolerance %.4g", name, dt, worst, tol)
	}
	if testing.Verbose() {
		t.Logf("%s %v: worst decoded error %.4g of block max (tolerance %.4g)", name, dt, worst, tol)
	}
}

func abs64(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}
