package kernels

import (
	"encoding/binary"
	"math"
	"sync"

	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/tensor"
)

// The SIMD matrix multiply computes Cᵀ = W·Xᵀ in register tiles of mr
// weight rows × nr activation rows (simdSet.gemm): every weight is
// broadcast from its row as stored, so f32 weights are used in place and
// block-quantized ones need only a row-major dequantization of the mr×kc
// block in use (into an L1-sized buffer, reused across every activation
// panel). Only the activations are repacked, once per call, into panels of
// nr rows interleaved by k (packX), and the finished Cᵀ tiles are written
// back transposed into dst.
//
// Loop nest per thread (threads take chunks of weight-row blocks in turn):
//
//	for each panel group of up to pcBlock panels       (activations in L2)
//	  for each k range of kcOuter                      (its activations stay in L2)
//	    for each mr-row weight block of this chunk
//	      for each k chunk of kcBlock in the range     (Cᵀ tiles accumulate)
//	        dequantize the mr×kc weights (L1)
//	        for each panel: one microkernel call
//	  write the chunk's Cᵀ tiles back
//
// The weight blocks are walked inside a k range of several kcBlock so that
// each of the mr rows is read from DRAM in runs of kcOuter elements: the
// whole model's weights go through here once per prefill step, and reading
// 256-element pieces of ~100 rows at a time left the loop waiting on
// memory. The range is bounded so that its activations (up to pcBlock
// panels × kcOuter) stay in L2 for every block, K = 5632 included.

const (
	// kcBlock is the depth of one microkernel call: a multiple of every
	// block size (32 and the k-quants' 256), large enough that loading and
	// storing the accumulator tile is a few percent of the call, and small
	// enough that the mr×kcBlock weight block (12 KB at mr=12) stays in L1.
	kcBlock = 256
	// kcOuter is the k range the weight blocks are walked over (see the
	// loop nest): pcBlock panels of 32 rows × kcOuter floats is 1 MB.
	kcOuter = 1024
	// pcBlock bounds the activation panels one pass keeps hot: 8 panels of
	// 32 rows × kcBlock floats is 256 KB of L2.
	pcBlock = 8
	// rowChunk is how many weights of a row the M=1 path decodes at a time
	// when it has no fused kernel for the dtype: 8 KB of floats, well
	// inside L1 beside the activations' chunk.
	rowChunk = 2048
)

// f32Pool hands out scratch buffers so that MatMul does not allocate in
// steady state.
var f32Pool sync.Pool

func getBuf(n int) *[]float32 {
	p, _ := f32Pool.Get().(*[]float32)
	if p == nil {
		p = new([]float32)
	}
	if cap(*p) < n {
		*p = make([]float32, n)
	}
	*p = (*p)[:n]
	return p
}

func putBuf(p *[]float32) { f32Pool.Put(p) }

// packX writes rows m0..m0+rows-1 of x (K columns) into panel as
// panel[k*nr+j] = x[m0+j][k], and zeros for rows ≥ rows.
func packX(panel, x []float32, m0, rows, K, nr int) {
	panel = panel[:K*nr]
	if rows < nr {
		clear(panel)
	}
	// k outer: the panel is written in address order while the rows are
	// read as rows parallel streams, rather than one store per cache line.
	x = x[m0*K : (m0+rows)*K]
	for k := 0; k < K; k++ {
		dst := panel[k*nr : k*nr+rows]
		for j := range dst {
			dst[j] = x[j*K+k]
		}
	}
}

// rowDecoder returns decodeRow for t, through s's decoder when it has one,
// resolved once so that per-row calls do no map lookups. s's decoders take
// whole vectors of 16 for the element-wise dtypes (block size 1); the tail
// goes through decodeRow.
func rowDecoder(s *simdSet, t tensor.DType) func(dst []float32, src []byte) {
	if s != nil {
		if dec := s.decode[t]; dec != nil {
			if t.BlockSize() != 1 {
				return func(dst []float32, src []byte) {
					if len(dst) > 0 {
						dec(&dst[0], &src[0], len(dst))
					}
				}
			}
			es := int(t.BlockBytes())
			return func(dst []float32, src []byte) {
				n := len(dst) &^ 15
				if n > 0 {
					dec(&dst[0], &src[0], n)
				}
				if n < len(dst) {
					decodeRow(dst[n:], src[n*es:len(dst)*es], t)
				}
			}
		}
	}
	return func(dst []float32, src []byte) { decodeRow(dst, src, t) }
}

// decodeRow decodes the whole blocks in src (dtype t, not I8's row scale)
// into dst, which holds exactly their elements, with quant's decoder: the
// one plain-Go transcription of ggml's dequantize_row_*, which every SIMD
// decoder is tested against (blocks_test.go).
func decodeRow(dst []float32, src []byte, t tensor.DType) {
	if err := quant.Dequantize(dst, src, t); err != nil {
		panic(err) // NewMatrix checked dtype and sizes
	}
}

// fillBlock decodes rows n0..n0+rows-1, columns k0..k0+kc-1, of w into buf
// as rows of kc floats, and zeros the rows from rows to mr. dec is
// rowDecoder(s, w.DType).
func fillBlock(dec func(dst []float32, src []byte), buf []float32, w *Matrix, n0, rows, mr, k0, kc int) {
	buf = buf[:mr*kc]
	t := w.DType
	bs, bb := int(t.BlockSize()), int(t.BlockBytes())
	rb := w.RowBytes()
	for i := 0; i < rows; i++ {
		dst := buf[i*kc : (i+1)*kc]
		off := (n0+i)*rb + k0/bs*bb
		src := w.Data[off : off+kc/bs*bb]
		if t == tensor.F32 {
			for j := range dst {
				dst[j] = f32At(src, j)
			}
			continue
		}
		dec(dst, src)
		if t == tensor.I8 {
			s := w.Scales[n0+i]
			for j := range dst {
				dst[j] *= s
			}
		}
	}
	clear(buf[rows*kc:])
}

// gemmSIMD is MatMul for M ≥ 2 on s.
func gemmSIMD(s *simdSet, dst, x []float32, M int, w *Matrix) {
	K, N := w.Cols, w.Rows
	mr, nr := s.mr, s.nr
	panels := (M + nr - 1) / nr
	nblocks := (N + mr - 1) / mr

	xtp := getBuf(panels * nr * K)
	xt := *xtp
	parallelFor(panels, 1, func(lo, hi int) {
		for p := lo; p < hi; p++ {
			packX(xt[p*nr*K:(p+1)*nr*K], x, p*nr, min(nr, M-p*nr), K, nr)
		}
	})

	tile := mr * nr
	dec := rowDecoder(s, w.DType)
	parallelFor(nblocks, 1, func(lo, hi int) {
		wbp := getBuf(mr * kcBlock)
		ctp := getBuf((hi - lo) * min(panels, pcBlock) * tile)
		wb, ct := *wbp, *ctp
		for p0 := 0; p0 < panels; p0 += pcBlock {
			pc := min(pcBlock, panels-p0)
			for kk := 0; kk < K; kk += kcOuter {
				for b := lo; b < hi; b++ {
					n0 := b * mr
					rows := min(mr, N-n0)
					for k0 := kk; k0 < min(kk+kcOuter, K); k0 += kcBlock {
						kc := min(kcBlock, K-k0)
						prefetchNext(w, mr, lo, hi, b, kk, k0)
						var wp *byte
						ldw := K
						if w.DType == tensor.F32 && rows == mr {
							wp = &w.Data[(n0*K+k0)*4]
						} else {
							fillBlock(dec, wb, w, n0, rows, mr, k0, kc)
							wp, ldw = bytePtr(&wb[0]), kc
						}
						for p := 0; p < pc; p++ {
							c := &ct[((b-lo)*pc+p)*tile]
							s.gemm(wp, ldw, &xt[(p0+p)*nr*K+k0*nr], kc, c, k0 > 0)
						}
					}
				}
			}
			// Write the finished Cᵀ tiles back as rows of dst.
			for b := lo; b < hi; b++ {
				n0 := b * mr
				rows := min(mr, N-n0)
				for p := 0; p < pc; p++ {
					t := ct[((b-lo)*pc+p)*tile : ((b-lo)*pc+p+1)*tile]
					m0 := (p0 + p) * nr
					for j := 0; j < min(nr, M-m0); j++ {
						d := dst[(m0+j)*N+n0 : (m0+j)*N+n0+rows]
						for i := range d {
							d[i] = t[i*nr+j]
						}
					}
				}
			}
		}
		putBuf(ctp)
		putBuf(wbp)
	})
	putBuf(xtp)
}

// prefetchNext asks for the weight block gemmSIMD's loop nest takes after
// block b's k chunk at k0 (in the k range from kk), into L2 while the
// microkernel works on this one. Each block is mr rows of kcBlock weights,
// a run of a few hundred bytes to a few KB in each row, too short for the
// hardware prefetchers to follow: without this, prefill waited on memory
// for every block (decQ8_0 took 15% of a Q8_0 prefill, most of it in
// cache misses, and the f32 microkernel stalled the same way).
func prefetchNext(w *Matrix, mr, lo, hi, b, kk, k0 int) {
	K, N := w.Cols, w.Rows
	kEnd := min(kk+kcOuter, K)
	nb, nk := b, k0+kcBlock
	if nk >= kEnd {
		nb, nk = b+1, kk
		if nb >= hi {
			if kEnd >= K {
				return
			}
			nb, nk = lo, kEnd
		}
	}
	n0 := nb * mr
	bs, bb := int(w.DType.BlockSize()), int(w.DType.BlockBytes())
	rb := w.RowBytes()
	prefetchRows(&w.Data[n0*rb+nk/bs*bb], rb, min(mr, N-n0), min(kcBlock, K-nk)/bs*bb)
}

// gemvSIMD is MatMul for M = 1 on s: one dot product per weight row, fused
// with the decoding where s.rowDot has a kernel for the dtype (doc.go lists
// them), through rowChunk decoded weights at a time in L1 otherwise. It is
// bound by the rate the weights stream from memory.
func gemvSIMD(s *simdSet, dst, x []float32, w *Matrix) {
	K, N := w.Cols, w.Rows
	rb := w.RowBytes()
	sumsDot := s.rowDotSums[w.DType]
	var xs []float32
	if sumsDot != nil && K%int(w.DType.BlockSize()) == 0 {
		p := getBuf(K / 32)
		defer putBuf(p)
		xs = *p
		subBlockSums(xs, x[:K])
	}
	parallelFor(N, 16, func(lo, hi int) {
		if xs != nil {
			for r := lo; r < hi; r++ {
				dst[r] = sumsDot(&x[0], &xs[0], &w.Data[r*rb], K)
			}
			return
		}
		switch w.DType {
		case tensor.F32:
			n := K &^ (s.lanes - 1)
			for r := lo; r < hi; r++ {
				row := w.Data[r*rb : (r+1)*rb]
				var sum float32
				if n > 0 {
					sum = s.dot(&x[0], &row[0], n)
				}
				for k := n; k < K; k++ {
					sum += x[k] * f32At(row, k)
				}
				dst[r] = sum
			}
		case tensor.Q8_0:
			for r := lo; r < hi; r++ {
				dst[r] = s.dotQ8_0(&x[0], &w.Data[r*rb], K/32)
			}
		default:
			if f := s.rowDot[w.DType]; f != nil && K%s.lanes == 0 && K%int(w.DType.BlockSize()) == 0 {
				for r := lo; r < hi; r++ {
					sum := f(&x[0], &w.Data[r*rb], K)
					if w.DType == tensor.I8 {
						sum *= w.Scales[r]
					}
					dst[r] = sum
				}
				return
			}
			// Decode a chunk of blocks into L1 and dot it, so the row is
			// read once from memory and never leaves the cache decoded.
			bs, bb := int(w.DType.BlockSize()), int(w.DType.BlockBytes())
			chunk := min(K, max(bs, rowChunk/bs*bs))
			dec := rowDecoder(s, w.DType)
			p := getBuf(chunk)
			buf := *p
			for r := lo; r < hi; r++ {
				row := w.Data[r*rb : (r+1)*rb]
				var sum float32
				for k0 := 0; k0 < K; k0 += chunk {
					kc := min(chunk, K-k0)
					dec(buf[:kc], row[k0/bs*bb:(k0+kc)/bs*bb])
					sum += dotSIMD(s, x[k0:k0+kc], buf[:kc])
				}
				if w.DType == tensor.I8 {
					sum *= w.Scales[r]
				}
				dst[r] = sum
			}
			putBuf(p)
		}
	})
}

// subBlockSums sets xs[j] = Σ x[32j:32j+32], summed in order in float32.
func subBlockSums(xs, x []float32) {
	for j := range xs {
		var t float32
		for _, v := range x[32*j : 32*j+32] {
			t += v
		}
		xs[j] = t
	}
}

// f32At reads the little-endian float32 at element i of b, which need not
// be aligned.
func f32At(b []byte, i int) float32 {
	return math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
}
