package synth

import "math"

// golden is 2^64/φ, splitmix64's increment.
const golden = 0x9E3779B97F4A7C15

// mix is splitmix64's finalizer: a bijection of uint64 with full avalanche,
// so neighbouring keys (chunk 0, 1, 2 …) start unrelated streams.
func mix(z uint64) uint64 {
	z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
	z = (z ^ z>>27) * 0x94D049BB133111EB
	return z ^ z>>31
}

// Irwin–Hall with four 16-bit uniforms: their sum has mean 4·(2^16−1)/2 and
// standard deviation sqrt(4·(2^32−1)/12).
const (
	ihMean = 2 * 65535
	ihStd  = 37837.63
	ihUnit = Sigma / ihStd
)

// fill writes chunk c of the stream key into x: one splitmix64 draw per
// value, turned into ≈N(0, Sigma) as the centred sum of its 16-bit quarters;
// norms get 1 + that.
func fill(x []float32, key, c uint64, k kind) {
	s := mix(key + c*golden)
	var off float32
	if k == norm {
		off = 1
	}
	for i := range x {
		s += golden
		z := mix(s)
		y := z&0x0000FFFF0000FFFF + z>>16&0x0000FFFF0000FFFF
		sum := y&0xFFFFFFFF + y>>32
		x[i] = off + float32(int64(sum)-ihMean)*ihUnit
	}
}

func mathFloat32bits(f float32) uint32 { return math.Float32bits(f) }
