package kernels

import "math"

// expInPlace sets x[i] = e^x[i] in float32, on the SIMD set's exp kernel
// when one is active and in expGo otherwise (which also does the tails).
// Inputs are clamped to [expLo, expHi] first, so -Inf gives e^expLo
// (about 1.2e-38, not 0) and large inputs stay finite: callers that need
// an exact 0 (masked attention keys) must leave those entries out.
func expInPlace(x []float32) {
	n := 0
	if s := active; s != nil && s.exp != nil {
		n = len(x) &^ (s.lanes - 1)
		if n > 0 {
			s.exp(&x[0], n)
		}
	}
	expGo(x[n:])
}

// The float32 exponential used by attention and SiLU: e^x = 2ⁿ·e^r with
// n = round(x·log₂e) and r = x − n·ln 2 (ln 2 split into a short c1, whose
// product with n is exact, and a correction c2), and e^r on |r| ≤ ln2/2
// from Cephes' degree-7 minimax polynomial 1 + r + r²·P(r). The error is
// within 2 ulp of e^x over the clamp range (TestExp), below what the
// float32 sums around it add, and about 10× cheaper than math.Exp.
const (
	expLo    = -87.33654 // e^expLo is just above the smallest normal float32
	expHi    = 88.0      // keeps n ≤ 127, so 2ⁿ is a normal float32
	expLog2e = 1.44269504088896341
	expC1    = 0.693359375
	expC2    = -2.12194440e-4
	expP0    = 1.9875691500e-4
	expP1    = 1.3981999507e-3
	expP2    = 8.3334519073e-3
	expP3    = 4.1665795894e-2
	expP4    = 1.6666665459e-1
	expP5    = 5.0000001201e-1
)

// expGo is the plain-Go form of the SIMD exp kernels: the same steps in
// float32 (without fused multiply-adds, so it may differ from them in the
// last bit).
func expGo(x []float32) {
	for i, v := range x {
		v = min(max(v, expLo), expHi)
		n := float32(math.RoundToEven(float64(v * expLog2e)))
		r := v - n*expC1
		r -= n * expC2
		z := r * r
		y := ((((expP0*r+expP1)*r+expP2)*r+expP3)*r+expP4)*r + expP5
		y = y*z + r + 1
		x[i] = y * math.Float32frombits(uint32(int32(n)+127)<<23)
	}
}
