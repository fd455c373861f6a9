package quant

import "math"

// ErrorSums returns Σx², Σ(x−y)² and max |x−y| over x and y[:len(x)], in
// float64: how far a round trip y (decode of encode of x) is from x.
// maxAbs is NaN when any difference is (a NaN in x or y). The sums'
// rounding depends on the kernel (their order of additions), not their
// exact value: they are measures, not encodings.
func ErrorSums(x, y []float32) (sig, noise, maxAbs float64) {
	return active.errorSums(x, y[:len(x)])
}

// errorSumsGeneric keeps four independent float64 chains per sum, so that
// the additions are not one long dependency.
func errorSumsGeneric(x, y []float32) (sig, noise, maxAbs float64) {
	var s, q [4]float64
	i := 0
	y = y[:len(x)]
	for ; i+4 <= len(x); i += 4 {
		for k := range 4 {
			xv := float64(x[i+k])
			d := xv - float64(y[i+k])
			s[k] += xv * xv
			q[k] += d * d
			if a := math.Abs(d); a > maxAbs || a != a {
				maxAbs = a
			}
		}
	}
	for ; i < len(x); i++ {
		xv := float64(x[i])
		d := xv - float64(y[i])
		s[0] += xv * xv
		q[0] += d * d
		if a := math.Abs(d); a > maxAbs || a != a {
			maxAbs = a
		}
	}
	return (s[0] + s[1]) + (s[2] + s[3]), (q[0] + q[1]) + (q[2] + q[3]), maxAbs
}
