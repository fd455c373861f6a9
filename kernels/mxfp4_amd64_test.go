//go:build !noasm

package kernels

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tfconv/tfconv/quant"
)

// TestMXFP4KernelOddBlocks: rows of an odd number of blocks (the last one
// summed in Go, as ggml sums it in scalar code) and of one block give
// dotMXFP4's bits, one activation row at a time and four at once (the
// outputs between rows of ldo left alone).
func TestMXFP4KernelOddBlocks(t *testing.T) {
	if !slices.Contains(simdSets, avx2Set) {
		t.Skip("no AVX2")
	}
	r := rand.New(rand.NewPCG(3, 17))
	for _, nb := range []int{1, 3, 5, 90} {
		const N = 3
		rb := nb * 17
		w := make([]byte, N*rb)
		for i := range w {
			w[i] = byte(r.Uint32())
		}
		for b := 0; b < N*nb; b++ {
			w[b*17] = byte(118 + r.IntN(20))
		}
		arb := nb * q8_0Bytes
		a := make([]byte, 4*arb)
		for i := range a {
			a[i] = byte(r.Uint32())
		}
		for b := 0; b < 4*nb; b++ {
			binary.LittleEndian.PutUint16(a[b*q8_0Bytes:], quant.F32ToF16(float32(r.NormFloat64())))
		}
		got := make([]float32, N)
		mxfp4DotAVX2(&w[0], rb, N, &a[0], nb, &got[0])
		for n := range got {
			if want := dotMXFP4(w[n*rb:(n+1)*rb], a, nb); math.Float32bits(got[n]) != math.Float32bits(want) {
				t.Errorf("%d blocks, row %d: %g, dotMXFP4 %g", nb, n, got[n], want)
			}
		}
		const ldo = N + 2
		got4 := make([]float32, 4*ldo)
		for i := range got4 {
			got4[i] = guardVal
		}
		mxfp4Dot4AVX2(&w[0], rb, N, &a[0], arb, nb, &got4[0], ldo)
		for m := 0; m < 4; m++ {
			for n := 0; n < ldo; n++ {
				want := guardVal
				if n < N {
					want = dotMXFP4(w[n*rb:(n+1)*rb], a[m*arb:(m+1)*arb], nb)
				}
				if g := got4[m*ldo+n]; math.Float32bits(g) != math.Float32bits(want) {
					t.Errorf("%d blocks, four rows: activation %d, row %d: %g, want %g", nb, m, n, g, want)
				}
			}
		}
	}
}
