package arch

import "math"

// expf is exp in float32 as torch's CPU kernels compute it (their
// vectorised exp, SLEEF's 1-ULP single-precision algorithm), so that a
// tensor the converter transforms with torch.exp (A_log → −exp(A_log))
// comes out bit for bit: correctly rounded exp differs from it in the last
// bit for about one value in ten. The argument is split as x = q·ln 2 + s
// (q the nearest integer to x/ln 2, ln 2 in two parts), eˢ is a degree-7
// polynomial evaluated with fused multiply-adds, and the result is scaled
// by 2^q; below −104 it is 0, above 100 +Inf.
func expf(x float32) float32 {
	const (
		invLn2 = float32(1.442695040888963407359924681001892137426645954152985934135449406931)
		ln2Hi  = float32(0.693145751953125)
		ln2Lo  = float32(1.428606765330187045e-06)
	)
	fma := func(a, b, c float32) float32 { return float32(math.FMA(float64(a), float64(b), float64(c))) }
	q := float32(math.RoundToEven(float64(x * invLn2)))
	s := fma(q, -ln2Hi, x)
	s = fma(q, -ln2Lo, s)
	u := float32(0.000198527617612853646278381)
	for _, c := range []float32{0.00139304355252534151077271, 0.00833336077630519866943359,
		0.0416664853692054748535156, 0.166666671633720397949219, 0.5} {
		u = fma(u, s, c)
	}
	u = 1 + fma(s*s, u, s)
	// 2^q in two steps, so that q past the exponent range of one factor
	// still scales (u is near 1).
	h := int(q) >> 1
	u = u * float32(math.Ldexp(1, h)) * float32(math.Ldexp(1, int(q)-h))
	switch {
	case x < -104:
		return 0
	case x > 100:
		return float32(math.Inf(1))
	}
	return u
}
