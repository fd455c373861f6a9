package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

// TestWeightBytesStreamed: every MatMul or MatMulQ call with M > 0 counts
// its matrix's bytes once — also when MatMul hands a RoundActivations
// matrix to MatMulQ, and whatever M — and M = 0 counts nothing.
func TestWeightBytesStreamed(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 7))
	const K, N = 64, 24
	q, _ := randMatrix(r, tensor.Q8_0, N, K)
	f, _ := randMatrix(r, tensor.F32, N, K)
	x := randVec(r, 5*K)
	dst := make([]float32, 5*N)
	for _, c := range []struct {
		name  string
		call  func()
		bytes int64
	}{
		{"MatMul Q8_0 M=1", func() { MatMul(dst, x, 1, q) }, N * 34 * K / 32},
		{"MatMul Q8_0 M=5", func() { MatMul(dst, x, 5, q) }, N * 34 * K / 32},
		{"MatMulQ Q8_0 M=2", func() { MatMulQ(dst, x, 2, q) }, N * 34 * K / 32},
		{"MatMulQ F32 M=3", func() { MatMulQ(dst, x, 3, f) }, N * 4 * K},
		{"MatMul F32 M=4", func() { MatMul(dst, x, 4, f) }, N * 4 * K},
		{"MatMul RoundActivations Q8_0", func() {
			q.RoundActivations = true
			defer func() { q.RoundActivations = false }()
			MatMul(dst, x, 2, q)
		}, N * 34 * K / 32},
		{"MatMul M=0", func() { MatMul(dst, x, 0, q) }, 0},
	} {
		before := WeightBytesStreamed()
		c.call()
		if got := WeightBytesStreamed() - before; got != c.bytes {
			t.Errorf("%s: counted %d bytes, want %d", c.name, got, c.bytes)
		}
	}
}

// TestReadBandwidth: a finite, positive rate from a small matrix, and the
// matrix it measures is not counted as weights streamed.
func TestReadBandwidth(t *testing.T) {
	before := WeightBytesStreamed()
	bw := ReadBandwidth(4<<20, 3)
	if !(bw > 0) || math.IsInf(bw, 0) {
		t.Fatalf("ReadBandwidth = %g", bw)
	}
	if d := WeightBytesStreamed() - before; d != 0 {
		t.Errorf("ReadBandwidth counted %d bytes as weights streamed", d)
	}
}
