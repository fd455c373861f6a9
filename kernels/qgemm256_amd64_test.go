//go:build !noasm

package kernels

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/tensor"
)

// TestQ256KernelsExtremes runs the AVX2 and AVX-VNNI MatMulQ kernels on
// blocks of random bytes, which hold the extremes quantization rarely
// makes (Q8_0 weights of −128, activations of ±127 and, for VPDPBUSD,
// −128, every 6-bit scale and min), and requires qdotGeneric's bits.
func TestQ256KernelsExtremes(t *testing.T) {
	if !slices.Contains(simdSets, avx2Set) {
		t.Skip("no AVX2")
	}
	vnni := slices.Contains(simdSets, avxVNNISet)
	r := rand.New(rand.NewPCG(25, 11))
	type kernel func(w *byte, rb, nrows int, xa *byte, nb int, out *float32)
	cases := []struct {
		t      tensor.DType
		k      kernel
		vnni   bool
		no0x80 bool // the activations must not hold −128
	}{
		{tensor.Q8_0, q8_0DotAVX2, false, true},
		{tensor.Q8_0, q8_0DotAVXVNNI, true, false},
		{tensor.Q4_0, q4_0DotAVX2, false, false},
		{tensor.Q4_0, q4_0DotAVXVNNI, true, false},
		{tensor.Q8_0, four(tensor.Q8_0, q8_0Dot4AVX2), false, true},
		{tensor.Q8_0, four(tensor.Q8_0, q8_0Dot4AVXVNNI), true, false},
		{tensor.Q4_0, four(tensor.Q4_0, q4_0Dot4AVX2), false, false},
		{tensor.Q4_0, four(tensor.Q4_0, q4_0Dot4AVXVNNI), true, false},
		{tensor.Q4_K, four(tensor.Q4_K, q4_KDot4AVX2), false, false},
		{tensor.Q6_K, four(tensor.Q6_K, q6_KDot4AVX2), false, false},
		{tensor.Q5_0, q5_0DotAVX2, false, false},
		{tensor.Q5_0, q5_0DotAVXVNNI, true, false},
		{tensor.Q4_1, q4_1DotAVX2, false, false},
		{tensor.Q4_1, q4_1DotAVXVNNI, true, false},
		{tensor.Q5_1, q5_1DotAVX2, false, false},
		{tensor.Q5_1, q5_1DotAVXVNNI, true, false},
		{tensor.Q2_K, q2_KDotAVX2, false, false},
		{tensor.Q3_K, q3_KDotAVX2, false, false},
		{tensor.Q4_K, q4_KDotAVX2, false, false},
		{tensor.Q5_K, q5_KDotAVX2, false, false},
		{tensor.Q6_K, q6_KDotAVX2, false, false},
		{tensor.MXFP4, mxfp4DotAVX2, false, false},
		{tensor.MXFP4, four(tensor.MXFP4, mxfp4Dot4AVX2), false, false},
	}
	for _, c := range cases {
		if c.vnni && !vnni {
			continue
		}
		const K, N = 1024, 5
		at := ActDType(c.t)
		nb := K / int(at.BlockSize())
		rb := K / int(c.t.BlockSize()) * int(c.t.BlockBytes())
		for trial := 0; trial < 20; trial++ {
			w := make([]byte, N*rb)
			for i := range w {
				w[i] = byte(r.Uint32())
			}
			a := make([]byte, nb*int(at.BlockBytes()))
			for i := range a {
				a[i] = byte(r.Uint32())
				if c.no0x80 && a[i] == 0x80 {
					a[i] = 0x81
				}
			}
			// Finite scales: binary16 in [2⁻⁸, 2⁸), float32 for Q8_K.
			h := func() uint16 { return quant.F32ToF16(float32(r.NormFloat64()) * 4) }
			for n := 0; n < N; n++ {
				for b := 0; b < rb/int(c.t.BlockBytes()); b++ {
					blk := w[n*rb+b*int(c.t.BlockBytes()):]
					switch c.t {
					case tensor.Q8_0, tensor.Q4_0, tensor.Q5_0:
						binary.LittleEndian.PutUint16(blk, h())
					case tensor.Q4_1, tensor.Q5_1:
						binary.LittleEndian.PutUint16(blk, h())
						binary.LittleEndian.PutUint16(blk[2:], h())
					case tensor.Q4_K, tensor.Q5_K:
						binary.LittleEndian.PutUint16(blk, h())
						binary.LittleEndian.PutUint16(blk[2:], h())
					case tensor.Q2_K:
						binary.LittleEndian.PutUint16(blk[80:], h())
						binary.LittleEndian.PutUint16(blk[82:], h())
					case tensor.Q3_K:
						binary.LittleEndian.PutUint16(blk[108:], h())
					case tensor.Q6_K:
						binary.LittleEndian.PutUint16(blk[208:], h())
					case tensor.MXFP4:
						blk[0] = byte(120 + r.IntN(16)) // E8M0 2^-8 … 2^7
					}
				}
			}
			for b := 0; b < nb; b++ {
				blk := a[b*int(at.BlockBytes()):]
				if at == tensor.Q8_K {
					binary.LittleEndian.PutUint32(blk, math.Float32bits(float32(r.NormFloat64())/64))
					// bsums as ggml forms them: the sums of 16 quants.
					for g := 0; g < 16; g++ {
						var s int16
						for _, q := range blk[4+16*g : 20+16*g] {
							s += int16(int8(q))
						}
						binary.LittleEndian.PutUint16(blk[260+2*g:], uint16(s))
					}
				} else {
					binary.LittleEndian.PutUint16(blk, h())
					if at == tensor.Q8_1 {
						binary.LittleEndian.PutUint16(blk[2:], h())
					}
				}
			}
			got := make([]float32, N+1)
			got[N] = guardVal
			c.k(&w[0], rb, N, &a[0], nb, &got[0])
			if got[N] != guardVal {
				t.Fatalf("%v: wrote past nrows", c.t)
			}
			for n := 0; n < N; n++ {
				want := qdotGeneric(c.t, w[n*rb:(n+1)*rb], a, K)
				if math.Float32bits(got[n]) != math.Float32bits(want) {
					t.Fatalf("%v vnni=%v trial %d row %d: %g, generic %g", c.t, c.vnni, trial, n, got[n], want)
				}
			}
		}
	}
}

// four runs a four-row kernel of weight type t on four activation rows:
// the given one, then the same blocks rotated by 1, 2 and 3 places, and
// reports the first row's outputs, or NaN where another row's output is
// not qdotGeneric's or a write went past nrows.
func four(t tensor.DType, k4 func(w *byte, rb, nrows int, xa *byte, arb, nb int, out *float32, ldo int)) func(w *byte, rb, nrows int, xa *byte, nb int, out *float32) {
	return func(w *byte, rb, nrows int, xa *byte, nb int, out *float32) {
		at := ActDType(t)
		ab := int(at.BlockBytes())
		arb := nb * ab
		a := unsafe.Slice(xa, arb)
		x4 := make([]byte, 4*arb)
		for m := 0; m < 4; m++ {
			for b := 0; b < nb; b++ {
				copy(x4[m*arb+b*ab:m*arb+(b+1)*ab], a[(b+m)%nb*ab:])
			}
		}
		ldo := nrows + 3
		o := make([]float32, 4*ldo)
		for i := range o {
			o[i] = guardVal
		}
		k4(w, rb, nrows, &x4[0], arb, nb, &o[0], ldo)
		ws := unsafe.Slice(w, nrows*rb)
		K := nb * int(at.BlockSize())
		res := unsafe.Slice(out, nrows)
		for r := 0; r < nrows; r++ {
			res[r] = o[r]
			for m := 1; m < 4; m++ {
				want := qdotGeneric(t, ws[r*rb:(r+1)*rb], x4[m*arb:(m+1)*arb], K)
				if math.Float32bits(o[m*ldo+r]) != math.Float32bits(want) {
					res[r] = float32(math.NaN()) // reported as a mismatch
				}
			}
		}
		for m := 0; m < 4; m++ {
			for r := nrows; r < ldo; r++ {
				if o[m*ldo+r] != guardVal {
					res[0] = float32(math.NaN())
				}
			}
		}
	}
}

// TestQmm256Minus128 checks the AVX2 Q8_0 path's fallback: an activation
// block with a −128 (from an infinite input) makes it decline, and
// MatMulQ still returns the plain-Go bits.
func TestQmm256Minus128(t *testing.T) {
	if !slices.Contains(simdSets, avx2Set) {
		t.Skip("no AVX2")
	}
	r := rand.New(rand.NewPCG(3, 4))
	const M, K, N = 2, 64, 3
	w, _ := randMatrix(r, tensor.Q8_0, N, K)
	x := randVec(r, M*K)
	x[40] = float32(math.Inf(-1))
	dst := make([]float32, M*N)
	if qmmAVX2(dst, x, M, w) {
		t.Fatal("qmmAVX2 took activations holding −128")
	}
	withImpl(avx2Set, func() { MatMulQ(dst, x, M, w) })
	ref := make([]float32, M*N)
	withImpl(nil, func() { MatMulQ(ref, x, M, w) })
	for i := range dst {
		if math.Float32bits(dst[i]) != math.Float32bits(ref[i]) {
			t.Fatalf("dst[%d] = %g, generic %g", i, dst[i], ref[i])
		}
	}
}
