package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// expMaxULP is the error allowed on expInPlace, in units in the last place
// of the float32 result: Cephes documents its expf within 1 ulp with
// exact arithmetic; the float32 reduction and evaluation add up to one more.
const expMaxULP = 2

// TestExp checks every implementation against float64 math.Exp over the
// whole clamp range (random and at the edges), including tails shorter
// than a vector, and the clamping of ±Inf and out-of-range inputs.
func TestExp(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	in := []float32{0, -0, 1, -1, 0.5, -0.5, expLo, expHi, -87, 87.9, 1e-8, -1e-8, 0.34657359, -0.34657359}
	for len(in) < 4099 {
		in = append(in, float32(r.Float64()*(expHi-expLo)+expLo))
		in = append(in, float32(r.NormFloat64()*4))
	}
	for _, impl := range implementations() {
		withImpl(impl, func() {
			x := append([]float32(nil), in...)
			expInPlace(x)
			for i, v := range in {
				want := math.Exp(float64(v))
				ulp := float64(math.Nextafter32(float32(want), float32(math.Inf(1))) - float32(want))
				if d := math.Abs(float64(x[i]) - want); d > expMaxULP*ulp {
					t.Fatalf("%s: exp(%g) = %g, want %g (%.1f ulp)", implName(impl), v, x[i], want, d/ulp)
				}
			}
			edge := []float32{float32(math.Inf(-1)), -1000, float32(math.Inf(1)), 1000, 5}
			expInPlace(edge)
			lo, hi := float32(math.Exp(expLo)), float32(math.Exp(expHi))
			for i, want := range []float32{lo, lo, hi, hi} {
				if rel := math.Abs(float64(edge[i]-want)) / float64(want); rel > 1e-6 {
					t.Errorf("%s: clamped exp = %g, want %g", implName(impl), edge[i], want)
				}
			}
		})
	}
}

// BenchmarkExp reports elements per second of expInPlace on 4096 values.
func BenchmarkExp(b *testing.B) {
	src, x := make([]float32, 4096), make([]float32, 4096)
	for i := range src {
		src[i] = float32(i%200) * -0.1
	}
	for _, impl := range implementations() {
		b.Run(implName(impl), func(b *testing.B) {
			withImpl(impl, func() {
				for b.Loop() {
					copy(x, src)
					expInPlace(x)
				}
			})
			b.ReportMetric(float64(len(x))*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
		})
	}
}
