//go:build !noasm

package kernels

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"golang.org/x/sys/cpu"

	"github.com/tfconv/tfconv/quant"
)

// TestMXFP4KernelOddBlocks: rows of an odd number of blocks (the last one
// summed in Go, as ggml sums it in scalar code) and of one block give
// dotMXFP4's bits, one activation row at a time and four at once (the
// outputs between rows of ldo left alone), in the AVX2 kernels and, where
// the CPU has AVX-512 VNNI, the 512-bit one-row kernel (its several-row
// kernels take no −128: TestMatMulQImplementationsAgree). Activations are
// random bytes (−128 included), weights random but for finite scales.
func TestMXFP4KernelOddBlocks(t *testing.T) {
	if !slices.Contains(simdSets, avx2Set) {
		t.Skip("no AVX2")
	}
	type kernels struct {
		name string
		one  func(w *byte, rb, nrows int, xa *byte, nb int, out *float32)
		four func(w *byte, rb, nrows int, xa *byte, arb, nb int, out *float32, ldo int)
	}
	ks := []kernels{{"avx2", mxfp4DotAVX2, mxfp4Dot4AVX2}}
	if slices.Contains(simdSets, avx512Set) && cpu.X86.HasAVX512VNNI {
		ks = append(ks, kernels{"vnni512", mxfp4DotVNNI512, nil})
	}
	for _, k := range ks {
		t.Run(k.name, func(t *testing.T) { testMXFP4Kernels(t, k.one, k.four) })
	}
}

func testMXFP4Kernels(t *testing.T, one func(w *byte, rb, nrows int, xa *byte, nb int, out *float32),
	four func(w *byte, rb, nrows int, xa *byte, arb, nb int, out *float32, ldo int)) {
	r := rand.New(rand.NewPCG(3, 17))
	for _, nb := range []int{1, 2, 3, 5, 64, 90} {
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
		one(&w[0], rb, N, &a[0], nb, &got[0])
		for n := range got {
			if want := dotMXFP4(w[n*rb:(n+1)*rb], a, nb); math.Float32bits(got[n]) != math.Float32bits(want) {
				t.Errorf("%d blocks, row %d: %g, dotMXFP4 %g", nb, n, got[n], want)
			}
		}
		if four == nil {
			continue
		}
		const ldo = N + 2
		got4 := make([]float32, 4*ldo)
		for i := range got4 {
			got4[i] = guardVal
		}
		four(&w[0], rb, N, &a[0], arb, nb, &got4[0], ldo)
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
