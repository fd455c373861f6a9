//go:build !noasm

package kernels

import (
	"unsafe"

	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/tensor"
)

// e8m0HalfTable maps an MXFP4 block's E8M0 scale byte to its half scale
// 2^(e−128) (quant.MXFP4Ints', ggml's GGML_E8M0_TO_FP32_HALF), for
// mxfp4PairsAVX2.
var e8m0HalfTable = func() (t [256]float32) {
	var q [32]int8
	b := make([]byte, 17)
	for e := range t {
		b[0] = byte(e)
		t[e] = quant.MXFP4Ints(&q, b)
	}
	return t
}()

//go:noescape
func mxfp4PairsAVX2(w *byte, rb, nrows int, xa *byte, pairs int, out *float32)

//go:noescape
func mxfp4Pairs4AVX2(w *byte, rb, nrows int, xa *byte, arb, pairs int, out *float32, ldo int)

// mxfp4DotAVX2 is the qmmRows kernel of MXFP4 weights: dotMXFP4 for nrows
// rows, the pairs of blocks in assembly and an odd last block in Go.
func mxfp4DotAVX2(w *byte, rb, nrows int, xa *byte, nb int, out *float32) {
	mxfp4PairsAVX2(w, rb, nrows, xa, nb/2, out)
	if nb%2 != 0 {
		mxfp4LastBlock(w, rb, nrows, xa, nb, out)
	}
}

// mxfp4Dot4AVX2 is mxfp4DotAVX2 for four activation rows arb bytes apart
// (qmmRows' kern4), out[m·ldo + r] for row m: each weight block is decoded
// once for the four, which prefill's experts (a few tokens each) and
// attention need, and every output keeps mxfp4DotAVX2's bits.
func mxfp4Dot4AVX2(w *byte, rb, nrows int, xa *byte, arb, nb int, out *float32, ldo int) {
	mxfp4Pairs4AVX2(w, rb, nrows, xa, arb, nb/2, out, ldo)
	if nb%2 == 0 {
		return
	}
	for m := 0; m < 4; m++ {
		mxfp4LastBlock(w, rb, nrows, (*byte)(unsafe.Add(unsafe.Pointer(xa), m*arb)), nb,
			(*float32)(unsafe.Add(unsafe.Pointer(out), m*ldo*4)))
	}
}

// mxfp4LastBlock adds the odd last block of nb to out[r] for nrows rows, as
// ggml's scalar tail does after its pairs.
func mxfp4LastBlock(w *byte, rb, nrows int, xa *byte, nb int, out *float32) {
	last := nb - 1
	a := unsafe.Slice(xa, nb*q8_0Bytes)[last*q8_0Bytes:]
	outs := unsafe.Slice(out, nrows)
	for r := range outs {
		row := unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(w), r*rb)), nb*17)
		var q [32]int8
		d := fp16(a) * quant.MXFP4Ints(&q, row[last*17:])
		var si int32
		for _, v := range lanesSign(q[:], a[2:]) {
			si += v
		}
		outs[r] = fma32(d, float32(si), outs[r])
	}
}

//go:noescape
func mxfp4PairsVNNI512(w *byte, rb, nrows int, xa *byte, pairs int, out *float32)

// mxfp4DotVNNI512 is mxfp4DotAVX2 (the same bits) on AVX-512 VNNI: a pair
// of blocks per 512-bit register, the even block's lanes in its low half
// and the odd block's in its high half, the lane sums by VPDPBUSD.
func mxfp4DotVNNI512(w *byte, rb, nrows int, xa *byte, nb int, out *float32) {
	mxfp4PairsVNNI512(w, rb, nrows, xa, nb/2, out)
	if nb%2 != 0 {
		mxfp4LastBlock(w, rb, nrows, xa, nb, out)
	}
}

// mxfp4PackBytes is one packed activation pair of blocks (the layout is in
// mxfp4_amd64.s): 64 quants + 128, then 16 binary16 scales.
const mxfp4PackBytes = 96

// mxfp4PackGroup is the most activation rows one pass over the weights
// serves: eight accumulators, and eight rows' packed pairs of a K = 2880
// row (35 KB) stay in a 48 KB L1 while the weight rows stream.
const mxfp4PackGroup = 8

//go:noescape
func mxfp4Packed1VNNI512(w *byte, rb, nrows int, xp *byte, pairs int, out *float32, ldo int)

//go:noescape
func mxfp4Packed2VNNI512(w *byte, rb, nrows int, xp *byte, pairs int, out *float32, ldo int)

//go:noescape
func mxfp4Packed3VNNI512(w *byte, rb, nrows int, xp *byte, pairs int, out *float32, ldo int)

//go:noescape
func mxfp4Packed4VNNI512(w *byte, rb, nrows int, xp *byte, pairs int, out *float32, ldo int)

//go:noescape
func mxfp4Packed5VNNI512(w *byte, rb, nrows int, xp *byte, pairs int, out *float32, ldo int)

//go:noescape
func mxfp4Packed6VNNI512(w *byte, rb, nrows int, xp *byte, pairs int, out *float32, ldo int)

//go:noescape
func mxfp4Packed7VNNI512(w *byte, rb, nrows int, xp *byte, pairs int, out *float32, ldo int)

//go:noescape
func mxfp4Packed8VNNI512(w *byte, rb, nrows int, xp *byte, pairs int, out *float32, ldo int)

// mxfp4PackedVNNI512[T-1] serves T activation rows: out[t·ldo + r] for
// weight row r, the sum over the pairs of blocks only.
var mxfp4PackedVNNI512 = [mxfp4PackGroup]func(w *byte, rb, nrows int, xp *byte, pairs int, out *float32, ldo int){
	mxfp4Packed1VNNI512, mxfp4Packed2VNNI512, mxfp4Packed3VNNI512, mxfp4Packed4VNNI512,
	mxfp4Packed5VNNI512, mxfp4Packed6VNNI512, mxfp4Packed7VNNI512, mxfp4Packed8VNNI512,
}

// mxfp4Pack writes rows m0..m0+T−1 of the Q8_0 activation rows in xa (arb
// bytes each) as the packed pairs the kernels read: per pair of blocks, the
// T rows one after another.
func mxfp4Pack(dst, xa []byte, m0, T, arb, pairs int) {
	for t := 0; t < T; t++ {
		row := xa[(m0+t)*arb:]
		for p := 0; p < pairs; p++ {
			o := dst[(p*T+t)*mxfp4PackBytes : (p*T+t+1)*mxfp4PackBytes]
			for h := 0; h < 2; h++ {
				blk := row[(2*p+h)*q8_0Bytes : (2*p+h+1)*q8_0Bytes]
				for i, q := range blk[2:] {
					o[32*h+i] = q ^ 0x80
				}
				for l := 0; l < 8; l++ {
					o[64+16*h+2*l], o[65+16*h+2*l] = blk[0], blk[1]
				}
			}
		}
	}
}

// mxfp4RowsVNNI512 is MatMulQ of MXFP4 weights on AVX-512 VNNI, with
// mxfp4DotVNNI512's bits: up to eight activation rows share each decoded
// pair of weight blocks (a prefill's expert sees a few tokens), an odd last
// block is added in Go as ggml's scalar tail adds it. Activations with a
// −128 (never from quantizeRows; the unsigned-weight lane sums would differ
// from the sign trick's there) and rows of one block take qmmRows.
func mxfp4RowsVNNI512(dst, x []float32, M int, w *Matrix) bool {
	K, N := w.Cols, w.Rows
	nb := K / 32
	pairs := nb / 2
	if pairs == 0 {
		return qmmRows(dst, x, M, w, mxfp4DotVNNI512, nil, false)
	}
	qa := quantizeRows(x, M, K, tensor.Q8_0)
	defer putBytes(qa)
	xa := *qa
	if hasMinus128(xa) {
		return qmmRows(dst, x, M, w, mxfp4DotVNNI512, nil, false)
	}
	arb := nb * q8_0Bytes
	xpp := getBytes(M * pairs * mxfp4PackBytes)
	defer putBytes(xpp)
	xp := *xpp
	groups := (M + mxfp4PackGroup - 1) / mxfp4PackGroup
	parallelFor(groups, 1, func(lo, hi int) {
		for g := lo; g < hi; g++ {
			m0 := g * mxfp4PackGroup
			mxfp4Pack(xp[m0*pairs*mxfp4PackBytes:], xa, m0, min(mxfp4PackGroup, M-m0), arb, pairs)
		}
	})
	rb := w.RowBytes()
	parallelFor(N, q256Rows, func(lo, hi int) {
		for r0 := lo; r0 < hi; r0 += q256Rows {
			rows := min(q256Rows, hi-r0)
			for m0 := 0; m0 < M; m0 += mxfp4PackGroup {
				T := min(mxfp4PackGroup, M-m0)
				mxfp4PackedVNNI512[T-1](&w.Data[r0*rb], rb, rows, &xp[m0*pairs*mxfp4PackBytes], pairs, &dst[m0*N+r0], N)
				if nb%2 == 0 {
					continue
				}
				for t := m0; t < m0+T; t++ {
					mxfp4LastBlock(&w.Data[r0*rb], rb, rows, &xa[t*arb], nb, &dst[t*N+r0])
				}
			}
		}
	})
	return true
}
