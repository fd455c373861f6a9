//go:build !noasm

package kernels

import (
	"encoding/binary"
	"math"
	"unsafe"

	"golang.org/x/sys/cpu"

	"github.com/tfconv/tfconv/tensor"
)

// MatMulQ on AVX-512 VNNI (qgemm_amd64.s). VPDPBUSD multiplies unsigned
// by signed bytes, four products per int32 lane, which is exactly the
// lane sum ggml forms (qdot.go); one operand is made unsigned by an offset
// whose contribution is known and subtracted by starting the lane at
// −offset·Σ(other operand), so the lane comes out exact. Everything after
// the lane sums is the float32 arithmetic of qdot.go in the same order, so
// the results are bit-identical to the plain-Go ones.
//
// M ≥ 4 (prefill): a register tile of 3 weight rows × 16 activation rows
// (q0GemmVNNI; 2 × 16 for Q4_1/Q5_1, which carry a min term). The zmm
// lanes are the 16 activation rows, so each weight row's four bytes of a
// lane are a broadcast from memory, and for each (weight row, lane l) one
// zmm accumulates lane l of 16 outputs. Weights are prepared once per
// 3-row block and reused by every activation panel: their integers as
// signed bytes, each lane's correction −128·Σw (the activations carry the
// +128 offset) and the block scale as float32. Activations are packed
// once per call into panels of 16 rows:
//
//	panel, per 32-element block b (576 bytes; Q8_1: 640):
//	+---------------------+---------------------+-----+-------------+--------------+
//	| lane 0: 16 rows ×   | lane 1: 16 rows ×   | ... | dx[16]      | (Q8_1: s[16] |
//	| x[4l..4l+3]+128 u8  | 4 bytes             |     | float32     |  float32)    |
//	+---------------------+---------------------+-----+-------------+--------------+
//
//	prepared weight row (q0Prep*): nb × [q[32] int8 | corr[8] int32], then nb × d float32
//	                               (Q4_1/Q5_1: then nb × m float32)
//
// M < 4 (decoding): each output is one pass over its weight row. Q8_0 and
// Q4_0 (q*M1VNNI): two rows per zmm (lanes 0–7 one row, 8–15 the next),
// the weights unsigned (Q8_0: q+128; Q4_0: the raw nibbles) and the
// activation correction −offset·Σx per lane computed once per call. Q4_K
// and Q6_K (qkM1*VNNI): one row at a time, its int16 weights times the
// activations widened to int16 (VPDPWSSD) into 16 partial sums, two per
// lane. The other types take the tile path, whose weight preparation is in
// plain Go for Q5_0, Q4_1, Q5_1, Q2_K, Q3_K and Q5_K (correct, slower).
//
// Q4_0 matrices that chainOrder picks (8k rows) sum each output in one
// float32 chain per block instead of eight lanes: for M ≥ 4 the same tile
// (q0ChainGemmVNNI), the eight lanes of a weight row added into one int32
// per block — started at the block's whole correction, which
// q0PrepQ4_0ChainVNNI stores — in four partial sums, then one FMA; for
// M < 4, q4_0x8DotVNNI512, the AVX2 set's eight-row kernel
// (qgemm256_amd64.go) with the EVEX VPDPBUSD on 256-bit registers. (A
// 16-row zmm version was faster from cache but streamed from memory at
// 36–41 GB/s against this one's 45: BenchmarkDecodeQ.)

// Register-tile and panel geometry.
const (
	qPanelRows = 16  // activation rows per panel: the zmm lanes
	qPanel0    = 576 // bytes per block of a Q8_0 panel
	qPanel1    = 640 // bytes per block of a Q8_1 panel (plus s[16])
	qPrep0     = 68  // prepared bytes per block of a weight row (q, corr, d)
	qPrep1     = 72  // … plus m (Q4_1, Q5_1)
	// qPanelGroup is how many panels one pass over the weights serves:
	// 8 panels of K = 5632 are 800 KB, inside L2 while every weight
	// block is reused across them.
	qPanelGroup = 8
	// qGemmMinRows is the smallest M the tile path takes: below it the
	// 16-lane panels are mostly padding and streaming the weights once
	// per activation row (the decode kernels) is faster.
	qGemmMinRows = 4
)

//go:noescape
func q0GemmVNNI(w *byte, wstride, doff int, xp *byte, nb int, out *float32, ldc, nj, ni int, pf *byte)

//go:noescape
func q0ChainGemmVNNI(w *byte, wstride, doff int, xp *byte, nb int, out *float32, ldc, nj, ni int, pf *byte)

//go:noescape
func q1GemmVNNI(w *byte, wstride, doff int, xp *byte, nb int, out *float32, ldc, nj, ni int, pf *byte)

//go:noescape
func quantQ8_0AVX512(dst *byte, x *float32, nb int)

//go:noescape
func q0PrepQ8_0VNNI(dst *byte, w *byte, nb int)

//go:noescape
func q0PrepQ4_0VNNI(dst *byte, w *byte, nb int)

//go:noescape
func q0PrepQ4_0ChainVNNI(dst *byte, w *byte, nb int)

//go:noescape
func q8_0M1VNNI(w *byte, rb, nrows int, xq *byte, xc *int32, xd *float32, nb int, out *float32)

//go:noescape
func q4_0M1VNNI(w *byte, rb, nrows int, xq *byte, xc *int32, xd *float32, nb int, out *float32)

func init() {
	x := cpu.X86
	if x.HasAVX512F && x.HasAVX512BW && x.HasAVX512VL && x.HasAVX512VNNI {
		avx512Set.qmm = qmmVNNI
	} else {
		// AVX-512 without VNNI (Skylake-SP): the AVX2 kernels.
		avx512Set.qmm = qmmAVX2
	}
	if x.HasAVX512F && x.HasAVX512BW && x.HasAVX512VL {
		avx512Set.quantQ8_0 = quantQ8_0AVX512
	}
}

// qmmVNNI is simdSet.qmm for the AVX-512 VNNI set.
func qmmVNNI(dst, x []float32, M int, w *Matrix) bool {
	switch w.DType {
	case tensor.MXFP4:
		// ggml's AVX2 order, computed with 512-bit registers (ggml has no
		// AVX-512 MXFP4 dot).
		return mxfp4RowsVNNI512(dst, x, M, w)
	case tensor.Q8_0, tensor.Q4_0, tensor.Q5_0, tensor.Q4_1, tensor.Q5_1:
	case tensor.Q2_K, tensor.Q3_K, tensor.Q4_K, tensor.Q5_K, tensor.Q6_K:
		if M < qGemmMinRows && (w.DType == tensor.Q4_K || w.DType == tensor.Q6_K) {
			qkm1VNNI(dst, x, M, w)
			return true
		}
		qkgemmVNNI(dst, x, M, w)
		return true
	default:
		return false
	}
	if chainOrder(w) && M < qGemmMinRows {
		return qmmRows(dst, x, M, w, q4_0x8DotVNNI512, nil, false)
	}
	if w.DType == tensor.Q8_0 && M >= 2 && M <= q8PackedMaxRows {
		q8_0PackedVNNI(dst, x, M, w)
		return true
	}
	if M < qGemmMinRows {
		if m1 := m1Kernel(w.DType); m1 != nil {
			qm1VNNI(m1, dst, x, M, w)
			return true
		}
	}
	qgemmVNNI(dst, x, M, w)
	return true
}

// m1Kernel returns the decode kernel for t, nil when there is none (the
// tile path then serves M < qGemmMinRows too).
func m1Kernel(t tensor.DType) func(w *byte, rb, nrows int, xq *byte, xc *int32, xd *float32, nb int, out *float32) {
	switch t {
	case tensor.Q8_0:
		return q8_0M1VNNI
	case tensor.Q4_0:
		return q4_0M1VNNI
	}
	return nil
}

// m1Offset is what the decode kernels add to t's weights to make them
// unsigned.
func m1Offset(t tensor.DType) int32 {
	switch t {
	case tensor.Q8_0:
		return 128
	case tensor.Q4_0:
		return 8
	case tensor.Q5_0:
		return 16
	}
	return 0
}

// qm1VNNI is MatMulQ for M < qGemmMinRows: per activation row, its Q8_0
// quants, per-lane corrections −offset·Σx and scales, then one kernel pass
// over the weight rows, two at a time (an odd last row goes through a
// two-row copy).
func qm1VNNI(kern func(w *byte, rb, nrows int, xq *byte, xc *int32, xd *float32, nb int, out *float32),
	dst, x []float32, M int, w *Matrix) {
	K, N := w.Cols, w.Rows
	nb := K / 32
	rb := w.RowBytes()
	off := m1Offset(w.DType)
	qa := quantizeRows(x, M, K, tensor.Q8_0)
	defer putBytes(qa)
	xqp := getBytes(M * nb * 32)
	defer putBytes(xqp)
	xcp := getBytes(M * nb * 32) // per block 8 int32 corrections
	defer putBytes(xcp)
	xdp := getBuf(M * nb)
	defer putBuf(xdp)
	xq, xc, xd := *xqp, *xcp, *xdp
	for m := 0; m < M; m++ {
		for b := 0; b < nb; b++ {
			i := m*nb + b
			blk := (*qa)[i*q8_0Bytes : (i+1)*q8_0Bytes]
			q := xq[i*32 : (i+1)*32]
			copy(q, blk[2:34])
			for l := 0; l < 8; l++ {
				s := int32(int8(q[4*l])) + int32(int8(q[4*l+1])) + int32(int8(q[4*l+2])) + int32(int8(q[4*l+3]))
				binary.LittleEndian.PutUint32(xc[i*32+4*l:], uint32(-off*s))
			}
			xd[i] = fp16(blk)
		}
	}
	even := N &^ 1
	for m := 0; m < M; m++ {
		xqm := &xq[m*nb*32]
		xc := (*int32)(unsafe.Pointer(&xc[m*nb*32]))
		xd := &xd[m*nb]
		out := dst[m*N : (m+1)*N]
		if even > 0 {
			parallelFor(even/2, 8, func(lo, hi int) {
				kern(&w.Data[2*lo*rb], rb, 2*(hi-lo), xqm, xc, xd, nb, &out[2*lo])
			})
		}
		if even < N {
			pair := rowTwice(w, even)
			var two [2]float32
			kern(&(*pair)[0], rb, 2, xqm, xc, xd, nb, &two[0])
			out[even] = two[0]
			putBytes(pair)
		}
	}
}

// qgemmVNNI is MatMulQ on the 3×16 (2×16) register tiles.
func qgemmVNNI(dst, x []float32, M int, w *Matrix) {
	K, N := w.Cols, w.Rows
	nb := K / 32
	t := w.DType
	one := t == tensor.Q4_1 || t == tensor.Q5_1
	mr, pb, prb := 3, qPanel0, qPrep0
	kern := q0GemmVNNI
	at := tensor.Q8_0
	if one {
		mr, pb, prb = 2, qPanel1, qPrep1
		kern = q1GemmVNNI
		at = tensor.Q8_1
	}
	qa := quantizeRows(x, M, K, at)
	defer putBytes(qa)
	panels := (M + qPanelRows - 1) / qPanelRows
	xpp := getBytes(panels * nb * pb)
	defer putBytes(xpp)
	xp := *xpp
	parallelFor(panels, 1, func(lo, hi int) {
		for p := lo; p < hi; p++ {
			packPanel(xp[p*nb*pb:(p+1)*nb*pb], *qa, p*qPanelRows, min(qPanelRows, M-p*qPanelRows), nb, one)
		}
	})
	nblocks := (N + mr - 1) / mr
	prep := prepFunc(t)
	if chainOrder(w) {
		kern = q0ChainGemmVNNI
		prep = func(dst, w []byte, nb int) { q0PrepQ4_0ChainVNNI(&dst[0], &w[0], nb) }
	}
	wrb := w.RowBytes()
	for g := 0; g < panels; g += qPanelGroup {
		gp := min(qPanelGroup, panels-g)
		parallelFor(nblocks, 1, func(lo, hi int) {
			wpp := getBytes(mr * nb * prb)
			wp := *wpp
			for b := lo; b < hi; b++ {
				n0 := b * mr
				rows := min(mr, N-n0)
				for i := 0; i < rows; i++ {
					prep(wp[i*nb*prb:(i+1)*nb*prb], w.Data[(n0+i)*wrb:(n0+i+1)*wrb], nb)
				}
				clear(wp[rows*nb*prb:])
				// The kernels prefetch the next block's weights (128 bytes
				// per 32-element block ≥ mr rows' share) while they compute;
				// the first kernel of a block covers it, the others re-touch
				// cached lines. Past the matrix end prefetches are harmless.
				pf := &w.Data[min(n0+mr, N-1)*wrb]
				for p := g; p < g+gp; p++ {
					m0 := p * qPanelRows
					kern(&wp[0], nb*prb, nb*64, &xp[p*nb*pb], nb, &dst[m0*N+n0], N, min(qPanelRows, M-m0), rows, pf)
				}
			}
			putBytes(wpp)
		})
	}
}

// packPanel writes rows m0..m0+rows-1 of the ggml Q8_0 (one: Q8_1)
// activation rows in qa (nb blocks each) as one panel, zero rows padding
// it to qPanelRows (zero scales: their outputs are never read).
func packPanel(dst, qa []byte, m0, rows, nb int, one bool) {
	ab, qo, pb := q8_0Bytes, 2, qPanel0
	if one {
		ab, qo, pb = q8_1Bytes, 4, qPanel1
	}
	clear(dst)
	for b := 0; b < nb; b++ {
		o := dst[b*pb : (b+1)*pb]
		for j := 0; j < qPanelRows; j++ {
			if j >= rows {
				for l := 0; l < 8; l++ {
					binary.LittleEndian.PutUint32(o[l*64+4*j:], 0x80808080)
				}
				continue
			}
			blk := qa[((m0+j)*nb+b)*ab : ((m0+j)*nb+b+1)*ab]
			q := blk[qo : qo+32]
			for l := 0; l < 8; l++ {
				v := binary.LittleEndian.Uint32(q[4*l:]) ^ 0x80808080
				binary.LittleEndian.PutUint32(o[l*64+4*j:], v)
			}
			binary.LittleEndian.PutUint32(o[512+4*j:], math.Float32bits(fp16(blk)))
			if one {
				binary.LittleEndian.PutUint32(o[576+4*j:], math.Float32bits(fp16(blk[2:])))
			}
		}
	}
}

// prepFunc returns the weight-row preparation for t: assembly for Q8_0
// and Q4_0, plain Go (prepRowGo) for the others.
func prepFunc(t tensor.DType) func(dst, w []byte, nb int) {
	switch t {
	case tensor.Q8_0:
		return func(dst, w []byte, nb int) { q0PrepQ8_0VNNI(&dst[0], &w[0], nb) }
	case tensor.Q4_0:
		return func(dst, w []byte, nb int) { q0PrepQ4_0VNNI(&dst[0], &w[0], nb) }
	}
	return func(dst, w []byte, nb int) { prepRowGo(t, dst, w, nb) }
}

// prepRowGo prepares one weight row for the tile kernels: per block its
// 32 integers as signed bytes and the lane corrections −128·Σ4 q, then
// the nb scales, then (Q4_1, Q5_1) the nb mins.
func prepRowGo(t tensor.DType, dst, w []byte, nb int) {
	wb := int(t.BlockBytes())
	var q [32]int8
	for b := 0; b < nb; b++ {
		d, m := unpack0(t, &q, w[b*wb:(b+1)*wb])
		o := dst[b*64 : (b+1)*64]
		for j, v := range q {
			o[j] = byte(v)
		}
		for l := 0; l < 8; l++ {
			s := int32(q[4*l]) + int32(q[4*l+1]) + int32(q[4*l+2]) + int32(q[4*l+3])
			binary.LittleEndian.PutUint32(o[32+4*l:], uint32(-128*s))
		}
		binary.LittleEndian.PutUint32(dst[nb*64+4*b:], math.Float32bits(d))
		if t == tensor.Q4_1 || t == tensor.Q5_1 {
			binary.LittleEndian.PutUint32(dst[nb*68+4*b:], math.Float32bits(m))
		}
	}
}

// The k-quants (qkGemmVNNI). Their lane sums include each weight's
// sub-block scale (qdot.go's W), which does not fit a byte, so weights
// are prepared as int16 and multiplied with VPDPWSSD (signed int16 pairs,
// no offset needed) by the activations widened to int16. The float32
// scaling happens once per 256-element super-block, so these tiles do more
// work per instruction than Q8_0's. Register tile: 2 weight rows × 16
// activation rows, 8 lane accumulators per row plus Q4_K's four min lanes.
//
//	panel, per super-block (qkPanelSB bytes):
//	  for lane l, chunk c < 8, pair p < 2: 16 rows × (x[32c+4l+2p], x[…+1]) int16   8192 bytes
//	  dx[16] float32                                                                  64
//	  min sums: Q2_K 8 × 16 rows × (bsums[2l], bsums[2l+1]);
//	            Q4_K/Q5_K 4 × 16 rows × (S[2k], S[2k+1]), S[s] = bsums[2s]+bsums[2s+1]  512
//
//	prepared weight row, per super-block (qkPrepSB bytes):
//	  W[256] int16 | mins as int16 pairs (Q2_K 16, Q4_K/Q5_K 8) | dw float32 | −dmin float32
const (
	qkPanelSB = 8192 + 64 + 512
	qkPrepSB  = 512 + 32 + 8
)

// qkMode tells qkGemmVNNI how a type's min term is accumulated (qdot.go's
// dotKGeneric): none, into the lanes before the block (Q2_K), into four
// separate lanes (Q4_K), or into one sum (Q5_K).
func qkMode(t tensor.DType) int {
	switch t {
	case tensor.Q2_K:
		return 1
	case tensor.Q4_K:
		return 2
	case tensor.Q5_K:
		return 3
	}
	return 0
}

//go:noescape
func qkGemmVNNI(w *byte, wstride int, xp *byte, nsb int, out *float32, ldc, nj, ni int, pf *byte, mode int)

//go:noescape
func qkPrepQ4_KVNNI(dst *byte, w *byte, nsb int)

//go:noescape
func qkPrepQ6_KVNNI(dst *byte, w *byte, nsb int)

// qkgemmVNNI is MatMulQ for the k-quants on the 2×16 tiles: every M ≥
// qGemmMinRows, and every M for Q2_K, Q3_K and Q5_K, which have no decode
// kernel (one activation row then fills one of the 16 lanes).
func qkgemmVNNI(dst, x []float32, M int, w *Matrix) {
	K, N := w.Cols, w.Rows
	nsb := K / 256
	t := w.DType
	const mr = 2
	qa := quantizeRows(x, M, K, tensor.Q8_K)
	defer putBytes(qa)
	panels := (M + qPanelRows - 1) / qPanelRows
	xpp := getBytes(panels * nsb * qkPanelSB)
	defer putBytes(xpp)
	xp := *xpp
	mode := qkMode(t)
	parallelFor(panels, 1, func(lo, hi int) {
		for p := lo; p < hi; p++ {
			packPanelK(xp[p*nsb*qkPanelSB:(p+1)*nsb*qkPanelSB], *qa, p*qPanelRows, min(qPanelRows, M-p*qPanelRows), nsb, mode)
		}
	})
	var prep func(dst, w []byte, nsb int)
	switch t {
	case tensor.Q4_K:
		prep = func(dst, w []byte, nsb int) { qkPrepQ4_KVNNI(&dst[0], &w[0], nsb) }
	case tensor.Q6_K:
		prep = func(dst, w []byte, nsb int) { qkPrepQ6_KVNNI(&dst[0], &w[0], nsb) }
	default:
		prep = func(dst, w []byte, nsb int) { prepRowKGo(t, dst, w, nsb) }
	}
	nblocks := (N + mr - 1) / mr
	wrb := w.RowBytes()
	for g := 0; g < panels; g += qPanelGroup {
		gp := min(qPanelGroup, panels-g)
		parallelFor(nblocks, 1, func(lo, hi int) {
			wpp := getBytes(mr * nsb * qkPrepSB)
			wp := *wpp
			for b := lo; b < hi; b++ {
				n0 := b * mr
				rows := min(mr, N-n0)
				for i := 0; i < rows; i++ {
					prep(wp[i*nsb*qkPrepSB:(i+1)*nsb*qkPrepSB], w.Data[(n0+i)*wrb:(n0+i+1)*wrb], nsb)
				}
				clear(wp[rows*nsb*qkPrepSB:])
				pf := &w.Data[min(n0+mr, N-1)*wrb]
				for p := g; p < g+gp; p++ {
					m0 := p * qPanelRows
					qkGemmVNNI(&wp[0], nsb*qkPrepSB, &xp[p*nsb*qkPanelSB], nsb, &dst[m0*N+n0], N,
						min(qPanelRows, M-m0), rows, pf, mode)
				}
			}
			putBytes(wpp)
		})
	}
}

// packPanelK writes rows m0..m0+rows-1 of the Q8_K activation rows in qa
// (nsb super-blocks each) as one k-quant panel, zero rows padding it.
func packPanelK(dst, qa []byte, m0, rows, nsb, mode int) {
	clear(dst)
	for sb := 0; sb < nsb; sb++ {
		o := dst[sb*qkPanelSB : (sb+1)*qkPanelSB]
		for j := 0; j < rows; j++ {
			blk := qa[((m0+j)*nsb+sb)*q8_KBytes : ((m0+j)*nsb+sb+1)*q8_KBytes]
			q := blk[4:260]
			for l := 0; l < 8; l++ {
				for c := 0; c < 8; c++ {
					for p := 0; p < 2; p++ {
						e := 32*c + 4*l + 2*p
						off := ((l*8+c)*2+p)*64 + 4*j
						binary.LittleEndian.PutUint16(o[off:], uint16(int16(int8(q[e]))))
						binary.LittleEndian.PutUint16(o[off+2:], uint16(int16(int8(q[e+1]))))
					}
				}
			}
			copy(o[8192+4*j:8192+4*j+4], blk[0:4])
			bs := blk[260:292]
			switch mode {
			case 1: // bsums pairs per lane
				for l := 0; l < 8; l++ {
					copy(o[8256+l*64+4*j:8256+l*64+4*j+4], bs[4*l:4*l+4])
				}
			case 2, 3: // 32-element sub-block sums, in pairs
				for k := 0; k < 4; k++ {
					for h := 0; h < 2; h++ {
						s := 2*k + h
						v := int16(binary.LittleEndian.Uint16(bs[4*s:])) + int16(binary.LittleEndian.Uint16(bs[4*s+2:]))
						binary.LittleEndian.PutUint16(o[8256+k*64+4*j+2*h:], uint16(v))
					}
				}
			}
		}
	}
}

// prepRowKGo prepares one k-quant weight row for qkGemmVNNI in plain Go.
func prepRowKGo(t tensor.DType, dst, w []byte, nsb int) {
	wb := int(t.BlockBytes())
	var W [256]int16
	for sb := 0; sb < nsb; sb++ {
		d, dm, mins := unpackK(t, &W, w[sb*wb:(sb+1)*wb])
		o := dst[sb*qkPrepSB : (sb+1)*qkPrepSB]
		for e, v := range W {
			binary.LittleEndian.PutUint16(o[2*e:], uint16(v))
		}
		for g, v := range mins {
			binary.LittleEndian.PutUint16(o[512+2*g:], uint16(int16(v)))
		}
		binary.LittleEndian.PutUint32(o[544:], math.Float32bits(d))
		binary.LittleEndian.PutUint32(o[548:], math.Float32bits(-dm))
	}
}

//go:noescape
func qkM1Q4_KVNNI(w *byte, rb, nrows int, xw *int16, xd *float32, xs *int16, nsb int, out *float32)

//go:noescape
func qkM1Q6_KVNNI(w *byte, rb, nrows int, xw *int16, xd *float32, xs *int16, nsb int, out *float32)

// qkm1VNNI is MatMulQ for Q4_K and Q6_K weights and M < qGemmMinRows:
// per activation row its Q8_K quants widened to int16, scales and
// 32-element sums, then one pass of the decode kernel over the weight rows.
func qkm1VNNI(dst, x []float32, M int, w *Matrix) {
	K, N := w.Cols, w.Rows
	nsb := K / 256
	kern := qkM1Q4_KVNNI
	if w.DType == tensor.Q6_K {
		kern = qkM1Q6_KVNNI
	}
	qa := quantizeRows(x, M, K, tensor.Q8_K)
	defer putBytes(qa)
	// Per row: K int16 values, then nsb·8 int16 sums; scales separately.
	xwp := getBytes(M * (2*K + 16*nsb))
	defer putBytes(xwp)
	xdp := getBuf(M * nsb)
	defer putBuf(xdp)
	xw, xd := *xwp, *xdp
	rowb := 2*K + 16*nsb
	for m := 0; m < M; m++ {
		o := xw[m*rowb : (m+1)*rowb]
		for sb := 0; sb < nsb; sb++ {
			blk := (*qa)[(m*nsb+sb)*q8_KBytes : (m*nsb+sb+1)*q8_KBytes]
			for e, v := range blk[4:260] {
				binary.LittleEndian.PutUint16(o[2*(256*sb+e):], uint16(int16(int8(v))))
			}
			bs := blk[260:292]
			for s := 0; s < 8; s++ {
				v := int16(binary.LittleEndian.Uint16(bs[4*s:])) + int16(binary.LittleEndian.Uint16(bs[4*s+2:]))
				binary.LittleEndian.PutUint16(o[2*K+16*sb+2*s:], uint16(v))
			}
			xd[m*nsb+sb] = math.Float32frombits(binary.LittleEndian.Uint32(blk))
		}
	}
	rb := w.RowBytes()
	for m := 0; m < M; m++ {
		o := xw[m*rowb : (m+1)*rowb]
		xwm := (*int16)(unsafe.Pointer(&o[0]))
		xsm := (*int16)(unsafe.Pointer(&o[2*K]))
		xdm := &xd[m*nsb]
		out := dst[m*N : (m+1)*N]
		parallelFor(N, 16, func(lo, hi int) {
			kern(&w.Data[lo*rb], rb, hi-lo, xwm, xdm, xsm, nsb, &out[lo])
		})
	}
}

// rowTwice returns row r of w twice over (a pooled buffer, for putBytes):
// the two-row kernels take an odd matrix's last row as a pair.
func rowTwice(w *Matrix, r int) *[]byte {
	rb := w.RowBytes()
	pair := getBytes(2 * rb)
	copy((*pair)[:rb], w.Data[r*rb:])
	copy((*pair)[rb:], w.Data[r*rb:])
	return pair
}

// q8PackBytes is one packed activation block (qgemm_amd64.s): its 32
// quants + 128 and, in the group's second part, its float32 scale.
const q8PackBytes = 32 + 4

// q8PackGroup is the most activation rows one pass of q8_0PackedVNNI's
// kernels serves (eight accumulators).
const q8PackGroup = 8

// q8PackedMaxRows is the largest M q8_0PackedVNNI takes: from there on the
// 16-row tiles are faster (K = 5120, N = 8192, 2 threads: BenchmarkMatMulQFewRows).
const q8PackedMaxRows = 12

//go:noescape
func q8_0Packed2VNNI(w *byte, rb, npairs int, xp *byte, nb int, out *float32, ldo int)

//go:noescape
func q8_0Packed3VNNI(w *byte, rb, npairs int, xp *byte, nb int, out *float32, ldo int)

//go:noescape
func q8_0Packed4VNNI(w *byte, rb, npairs int, xp *byte, nb int, out *float32, ldo int)

//go:noescape
func q8_0Packed5VNNI(w *byte, rb, npairs int, xp *byte, nb int, out *float32, ldo int)

//go:noescape
func q8_0Packed6VNNI(w *byte, rb, npairs int, xp *byte, nb int, out *float32, ldo int)

//go:noescape
func q8_0Packed7VNNI(w *byte, rb, npairs int, xp *byte, nb int, out *float32, ldo int)

//go:noescape
func q8_0Packed8VNNI(w *byte, rb, npairs int, xp *byte, nb int, out *float32, ldo int)

// q8_0PackedKernels[T-2] serves T activation rows.
var q8_0PackedKernels = [q8PackGroup - 1]func(w *byte, rb, npairs int, xp *byte, nb int, out *float32, ldo int){
	q8_0Packed2VNNI, q8_0Packed3VNNI, q8_0Packed4VNNI, q8_0Packed5VNNI, q8_0Packed6VNNI, q8_0Packed7VNNI, q8_0Packed8VNNI,
}

// q8Groups splits M ≥ 2 activation rows into the fewest groups of at most
// q8PackGroup, as even as they come (so none is a single row: 9 is 5 + 4).
func q8Groups(M int) []struct{ m0, n int } {
	k := (M + q8PackGroup - 1) / q8PackGroup
	gs := make([]struct{ m0, n int }, k)
	m0 := 0
	for i := range gs {
		n := M / k
		if i < M%k {
			n++
		}
		gs[i] = struct{ m0, n int }{m0, n}
		m0 += n
	}
	return gs
}

// q8_0Pack writes the T Q8_0 activation rows of qa from m0 (nb blocks
// each) as the packed group the kernels read (qgemm_amd64.s).
func q8_0Pack(dst, qa []byte, m0, T, nb int) {
	xs, ds := dst[:nb*T*32], dst[nb*T*32:nb*T*q8PackBytes]
	for t := 0; t < T; t++ {
		for b := 0; b < nb; b++ {
			blk := qa[((m0+t)*nb+b)*q8_0Bytes : ((m0+t)*nb+b+1)*q8_0Bytes]
			o := xs[(b*T+t)*32 : (b*T+t+1)*32]
			for i, q := range blk[2:] {
				o[i] = q ^ 0x80
			}
			binary.LittleEndian.PutUint32(ds[(b*T+t)*4:], math.Float32bits(fp16(blk)))
		}
	}
}

// q8_0PackedVNNI is MatMulQ of Q8_0 weights for 2 ≤ M ≤ q8PackedMaxRows,
// with the decode kernels' bits: a prefill routes a few tokens to each
// expert, and reading each weight block once for all of them (up to eight
// at a time) beats both a pass per token and the 16-row tiles' padding.
func q8_0PackedVNNI(dst, x []float32, M int, w *Matrix) {
	K, N := w.Cols, w.Rows
	nb := K / 32
	qa := quantizeRows(x, M, K, tensor.Q8_0)
	defer putBytes(qa)
	xpp := getBytes(M * nb * q8PackBytes)
	defer putBytes(xpp)
	xp := *xpp
	groups := q8Groups(M)
	for _, g := range groups {
		q8_0Pack(xp[g.m0*nb*q8PackBytes:], *qa, g.m0, g.n, nb)
	}
	rb := w.RowBytes()
	even := N &^ 1
	parallelFor(even/2, 8, func(lo, hi int) {
		for _, g := range groups {
			q8_0PackedKernels[g.n-2](&w.Data[2*lo*rb], rb, hi-lo, &xp[g.m0*nb*q8PackBytes], nb, &dst[g.m0*N+2*lo], N)
		}
	})
	if even < N {
		pair := rowTwice(w, even)
		two := getBuf(2 * M)
		for _, g := range groups {
			q8_0PackedKernels[g.n-2](&(*pair)[0], rb, 1, &xp[g.m0*nb*q8PackBytes], nb, &(*two)[2*g.m0], 2)
		}
		for m := 0; m < M; m++ {
			dst[m*N+even] = (*two)[2*m]
		}
		putBuf(two)
		putBytes(pair)
	}
}
