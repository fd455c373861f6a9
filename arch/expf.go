package arch

import "math"

// expf is eˣ in float32 as torch computes it on the CPU (SLEEF's 1-ulp
// expf, which torch's vectorised exp calls for every length of tensor):
// x = q·ln 2 + s with q = round(x/ln 2) and ln 2 in two parts, eˢ by a
// degree-6 polynomial in fused multiply-adds, then 2^q in two halves; 0
// below −104, +∞ above 100. The converter's A = −exp(A_log) is torch's, so
// a correctly rounded exponential would differ from it by an ulp in about
// one value in ten.
func expf(x float32) float32 {
	const (
		invLn2 = float32(1.442695040888963407359924681001892137426645954152985934135449406931)
		ln2Hi  = float32(0.693145751953125)
		ln2Lo  = float32(1.428606765330187045e-06)
	)
	if x < -104 {
		return 0
	}
	if x > 100 {
		return float32(math.Inf(1))
	}
	q := int32(math.RoundToEven(float64(x * invLn2)))
	qf := float32(q)
	s := fma32(qf, -ln2Hi, x)
	s = fma32(qf, -ln2Lo, s)
	u := float32(0.000198527617612853646278381)
	for _, c := range [...]float32{0.00139304355252534151077271, 0.00833336077630519866943359,
		0.0416664853692054748535156, 0.166666671633720397949219, 0.5} {
		u = fma32(u, s, c)
	}
	u = 1 + fma32(s*s, u, s)
	return u * pow2i(q>>1) * pow2i(q-q>>1)
}

// fma32 is x·y + z rounded once to float32 (through float64, whose FMA is
// exact for float32 inputs up to its own rounding).
func fma32(x, y, z float32) float32 {
	return float32(math.FMA(float64(x), float64(y), float64(z)))
}

// pow2i is 2^q for q in float32's normal exponent range.
func pow2i(q int32) float32 { return math.Float32frombits(uint32(q+0x7f) << 23) }

// logOfExpf is log(y) in float32, moved by up to two ulps to a value whose
// expf is y where one is that near: a GGUF's A = −exp(A_log) written back
// as A_log gives the runtimes (torch's exp) the GGUF's A again.
func logOfExpf(y float32) float32 {
	x := float32(math.Log(float64(y)))
	if expf(x) == y {
		return x
	}
	for _, dir := range [...]float64{math.Inf(1), math.Inf(-1)} {
		c := x
		for k := 0; k < 2; k++ {
			c = float32(math.Nextafter32(c, float32(dir)))
			if expf(c) == y {
				return c
			}
		}
	}
	return x
}
