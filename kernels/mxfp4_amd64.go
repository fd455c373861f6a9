//go:build !noasm

package kernels

import (
	"unsafe"

	"github.com/tfconv/tfconv/quant"
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

//go:noescape
func mxfp4Pairs4VNNI512(w *byte, rb, nrows int, xa *byte, arb, pairs int, out *float32, ldo int)

// mxfp4DotVNNI512 is mxfp4DotAVX2 (the same bits) on AVX-512 VNNI: a pair
// of blocks per 512-bit register, the even block's lanes in its low half
// and the odd block's in its high half, the lane sums by VPDPBUSD.
func mxfp4DotVNNI512(w *byte, rb, nrows int, xa *byte, nb int, out *float32) {
	mxfp4PairsVNNI512(w, rb, nrows, xa, nb/2, out)
	if nb%2 != 0 {
		mxfp4LastBlock(w, rb, nrows, xa, nb, out)
	}
}

// mxfp4Dot4VNNI512 is mxfp4Dot4AVX2 (the same bits) on AVX-512 VNNI.
func mxfp4Dot4VNNI512(w *byte, rb, nrows int, xa *byte, arb, nb int, out *float32, ldo int) {
	mxfp4Pairs4VNNI512(w, rb, nrows, xa, arb, nb/2, out, ldo)
	if nb%2 == 0 {
		return
	}
	for m := 0; m < 4; m++ {
		mxfp4LastBlock(w, rb, nrows, (*byte)(unsafe.Add(unsafe.Pointer(xa), m*arb)), nb,
			(*float32)(unsafe.Add(unsafe.Pointer(out), m*ldo*4)))
	}
}
