//go:build !noasm

package kernels

import (
	"bytes"

	"github.com/tfconv/tfconv/tensor"
)

// MatMulQ on AVX2 and on AVX-VNNI (qgemm256_amd64.s), for CPUs without
// AVX-512, for every block type MatMulQ quantizes activations for. Each
// kernel streams weight rows against one activation row in ggml's own
// blocks (Q8_0 for Q4_0/Q5_0/Q8_0, Q8_1 for Q4_1/Q5_1, Q8_K for the
// k-quants), forms a block's eight lane sums (qdot.go) exactly in one ymm
// of int32 and then does qdot.go's float32 arithmetic in its order, so the
// results are bit-identical to the plain-Go ones. The lane sums, with
// u the weights' unsigned integers and x the int8 activations:
//
//	Q8_0        AVX2: VPMADDUBSW(|w|, sign(x, w)) → int16 pairs, VPMADDWD by ones
//	            (pairs ≤ 2·128·127 when no activation is −128; MatMulQ falls back to
//	            plain Go for the rare rows, from NaN or ±Inf input, that have one)
//	            VNNI: VPDPBUSD(w+128, x) − VPDPBUSD(128, x), exact for every byte
//	Q4_0, Q5_0  VPMADDUBSW(u, x) − VPMADDUBSW(8 or 16, x), VPMADDWD by ones
//	            VNNI: VPDPBUSD(u, x) − VPDPBUSD(8 or 16, x)
//	Q4_1, Q5_1  VPMADDUBSW(u, x), VPMADDWD by ones (VNNI: VPDPBUSD(u, x)); summs
//	            = fma(m, s, summs) per block
//	k-quants    per 32 elements VPMADDUBSW(u, x) (− VPMADDUBSW(4 or 32, x) for the
//	            centred Q3_K and Q6_K), then VPMADDWD by the sub-block scale(s) as
//	            int16: the scale of a 16-element sub-block fills one 128-bit half.
//	            Min terms: VPMADDWD(mins, bsums or their pair sums), as qdot.go
//
// No int16 pair saturates: Q8_0's reach 2·128·127, the others' at most
// 2·63·128. The same kernels serve every M: weight rows are taken q256Rows
// at a time (a few tens of KB, L2-resident) and each such block is dotted
// with every activation row before the next; for Q8_0, Q4_0, Q4_K and
// Q6_K, four activation rows at a time (the *Dot4* kernels), each weight
// block unpacked once for the four.
//
// Q4_0 matrices that chainOrder picks (8k rows) take q4_0x8DotAVX2 /
// q4_0x8DotAVXVNNI for every M: eight weight rows a pass, each row's lane
// sums added across lanes by VPHADDD so that row r's block sum lands in
// lane r and the chain acc = fma(Σ, dw·dx, acc) runs for eight outputs
// in one ymm.

// q256Rows is how many weight rows one kernel call streams per activation
// row: for K = 5632 Q8_0, 16 rows are 96 KB, reused from L2 by every row.
const q256Rows = 16

//go:noescape
func q8_0DotAVX2(w *byte, rb, nrows int, xa *byte, nb int, out *float32)

//go:noescape
func q8_0Dot4AVX2(w *byte, rb, nrows int, xa *byte, arb, nb int, out *float32, ldo int)

//go:noescape
func q8_0Dot4AVXVNNI(w *byte, rb, nrows int, xa *byte, arb, nb int, out *float32, ldo int)

//go:noescape
func q4_0Dot4AVX2(w *byte, rb, nrows int, xa *byte, arb, nb int, out *float32, ldo int)

//go:noescape
func q4_0Dot4AVXVNNI(w *byte, rb, nrows int, xa *byte, arb, nb int, out *float32, ldo int)

//go:noescape
func q4_KDot4AVX2(w *byte, rb, nrows int, xa *byte, arb, nsb int, out *float32, ldo int)

//go:noescape
func q6_KDot4AVX2(w *byte, rb, nrows int, xa *byte, arb, nsb int, out *float32, ldo int)

//go:noescape
func q8_0DotAVXVNNI(w *byte, rb, nrows int, xa *byte, nb int, out *float32)

//go:noescape
func q4_0DotAVX2(w *byte, rb, nrows int, xa *byte, nb int, out *float32)

//go:noescape
func q4_0DotAVXVNNI(w *byte, rb, nrows int, xa *byte, nb int, out *float32)

//go:noescape
func q5_0DotAVX2(w *byte, rb, nrows int, xa *byte, nb int, out *float32)

//go:noescape
func q5_0DotAVXVNNI(w *byte, rb, nrows int, xa *byte, nb int, out *float32)

//go:noescape
func q4_1DotAVX2(w *byte, rb, nrows int, xa *byte, nb int, out *float32)

//go:noescape
func q4_1DotAVXVNNI(w *byte, rb, nrows int, xa *byte, nb int, out *float32)

//go:noescape
func q5_1DotAVX2(w *byte, rb, nrows int, xa *byte, nb int, out *float32)

//go:noescape
func q5_1DotAVXVNNI(w *byte, rb, nrows int, xa *byte, nb int, out *float32)

//go:noescape
func q2_KDotAVX2(w *byte, rb, nrows int, xa *byte, nsb int, out *float32)

//go:noescape
func q3_KDotAVX2(w *byte, rb, nrows int, xa *byte, nsb int, out *float32)

//go:noescape
func q5_KDotAVX2(w *byte, rb, nrows int, xa *byte, nsb int, out *float32)

//go:noescape
func q4_KDotAVX2(w *byte, rb, nrows int, xa *byte, nsb int, out *float32)

//go:noescape
func q6_KDotAVX2(w *byte, rb, nrows int, xa *byte, nsb int, out *float32)

//go:noescape
func quantQ8_0AVX2(dst *byte, x *float32, nb int)

// qmmAVX2 is simdSet.qmm for the AVX2 set.
func qmmAVX2(dst, x []float32, M int, w *Matrix) bool { return qmm256(dst, x, M, w, false) }

// qmmAVXVNNI is simdSet.qmm for the AVX-VNNI set.
func qmmAVXVNNI(dst, x []float32, M int, w *Matrix) bool { return qmm256(dst, x, M, w, true) }

func qmm256(dst, x []float32, M int, w *Matrix, vnni bool) bool {
	var kern func(w *byte, rb, nrows int, xa *byte, nb int, out *float32)
	var kern4 func(w *byte, rb, nrows int, xa *byte, arb, nb int, out *float32, ldo int)
	switch w.DType {
	case tensor.Q8_0:
		kern, kern4 = q8_0DotAVX2, q8_0Dot4AVX2
		if vnni {
			kern, kern4 = q8_0DotAVXVNNI, q8_0Dot4AVXVNNI
		}
	case tensor.Q4_0:
		kern, kern4 = q4_0DotAVX2, q4_0Dot4AVX2
		if vnni {
			kern, kern4 = q4_0DotAVXVNNI, q4_0Dot4AVXVNNI
		}
		if chainOrder(w) {
			kern, kern4 = q4_0x8DotAVX2, nil
			if vnni {
				kern = q4_0x8DotAVXVNNI
			}
		}
	case tensor.Q5_0:
		kern = q5_0DotAVX2
		if vnni {
			kern = q5_0DotAVXVNNI
		}
	case tensor.Q4_1:
		kern = q4_1DotAVX2
		if vnni {
			kern = q4_1DotAVXVNNI
		}
	case tensor.Q5_1:
		kern = q5_1DotAVX2
		if vnni {
			kern = q5_1DotAVXVNNI
		}
	case tensor.Q2_K:
		kern = q2_KDotAVX2
	case tensor.Q3_K:
		kern = q3_KDotAVX2
	case tensor.Q5_K:
		kern = q5_KDotAVX2
	case tensor.Q4_K:
		kern, kern4 = q4_KDotAVX2, q4_KDot4AVX2
	case tensor.Q6_K:
		kern, kern4 = q6_KDotAVX2, q6_KDot4AVX2
	case tensor.MXFP4:
		// ggml's AVX2 code, which AVX-512 builds run too.
		kern, kern4 = mxfp4DotAVX2, mxfp4Dot4AVX2
	default:
		return false
	}
	// VPMADDUBSW's sign trick (Q8_0 without VNNI) cannot take a −128.
	return qmmRows(dst, x, M, w, kern, kern4, w.DType == tensor.Q8_0 && !vnni)
}

// qmmRows is MatMulQ with a kernel that streams weight rows against one
// activation row (kern) and, if not nil, one that serves four (kern4);
// chainOrder's kernels take the rows eight at a time, which the q256Rows
// chunks keep whole when w.Rows is a multiple of 8. With no128 it declines
// (false, nothing written) activations that quantize to a −128.
func qmmRows(dst, x []float32, M int, w *Matrix,
	kern func(w *byte, rb, nrows int, xa *byte, nb int, out *float32),
	kern4 func(w *byte, rb, nrows int, xa *byte, arb, nb int, out *float32, ldo int), no128 bool) bool {
	K, N := w.Cols, w.Rows
	at := ActDType(w.DType)
	bs, bb := int(at.BlockSize()), int(at.BlockBytes())
	nb := K / bs
	arb := nb * bb
	qa := quantizeRows(x, M, K, at)
	defer putBytes(qa)
	xa := *qa
	if no128 && hasMinus128(xa) {
		return false
	}
	rb := w.RowBytes()
	parallelFor(N, q256Rows, func(lo, hi int) {
		for r0 := lo; r0 < hi; r0 += q256Rows {
			rows := min(q256Rows, hi-r0)
			m := 0
			if kern4 != nil {
				for ; m+4 <= M; m += 4 {
					kern4(&w.Data[r0*rb], rb, rows, &xa[m*arb], arb, nb, &dst[m*N+r0], N)
				}
			}
			for ; m < M; m++ {
				kern(&w.Data[r0*rb], rb, rows, &xa[m*arb], nb, &dst[m*N+r0])
			}
		}
	})
	return true
}

// hasMinus128 reports whether any quant of the Q8_0 blocks in qa is −128,
// which VPMADDUBSW's sign trick cannot take (−(−128) does not fit a byte).
func hasMinus128(qa []byte) bool {
	for i := 0; i+q8_0Bytes <= len(qa); i += q8_0Bytes {
		if bytes.IndexByte(qa[i+2:i+q8_0Bytes], 0x80) >= 0 {
			return true
		}
	}
	return false
}

//go:noescape
func q4_0x8DotAVX2(w *byte, rb, nrows int, xa *byte, nb int, out *float32)

//go:noescape
func q4_0x8DotAVXVNNI(w *byte, rb, nrows int, xa *byte, nb int, out *float32)

//go:noescape
func q4_0x8DotVNNI512(w *byte, rb, nrows int, xa *byte, nb int, out *float32)
