//go:build !noasm

package quant

import (
	"math"
	"unsafe"

	"golang.org/x/sys/cpu"
)

// The amd64 kernels (half_amd64.s) need AVX2 and F16C; they process whole
// vectors and leave the tail to the generic code.

//go:noescape
func encodeF16F16C(dst *uint16, src *float32, n int)

//go:noescape
func decodeF16F16C(dst *float32, src *uint16, n int)

//go:noescape
func encodeBF16AVX2(dst *uint16, src *float32, n int)

//go:noescape
func decodeBF16AVX2(dst *float32, src *uint16, n int)

//go:noescape
func quantQ8_0AVX2(dst *byte, src *float32, nblocks int)

//go:noescape
func dequantQ8_0AVX2(dst *float32, src *byte, nblocks int)

//go:noescape
func quantQ8_0AVX512(dst *byte, src *float32, nblocks int)

// The k-quant searches, kquants_amd64.s.

//go:noescape
func searchQ45KAVX2(x, w *float32, n, mode int, num *float32, nnum int, nmax int, scales, mins *float32) bool

//go:noescape
func searchQ45KAVX512(x, w *float32, n, mode int, num *float32, nnum int, nmax int, scales, mins *float32) bool

//go:noescape
func searchQXAVX512(x, w *float32, n int, nmax int, num *float32, nnum int, scales *float32) bool

//go:noescape
func searchQ3KAVX512(x *float32, scales *float32) bool

//go:noescape
func errorSumsAVX2(x, y *float32, n int, acc *[12]float64) bool

//go:noescape
func levelsAVX2(L *byte, x *float32, n int, d, m *float32, nsub int, lo, hi, off int)

//go:noescape
func searchQXAVX2(x, w *float32, n int, nmax int, num *float32, nnum int, scales *float32) bool

// simdSets are the SIMD kernel sets this CPU runs, best last; the tests run
// every one of them against the generic set.
var simdSets = func() []kernelSet {
	if !cpu.X86.HasAVX2 || !cpu.X86.HasF16C || !cpu.X86.HasAVX {
		return nil
	}
	sets := []kernelSet{avx2Kernels}
	if cpu.X86.HasAVX512F {
		k := avx2Kernels
		k.name = "avx512"
		k.quantQ8_0 = quantizeQ8_0AVX512
		k.kq = kqAVX512
		sets = append(sets, k)
	}
	return sets
}()

var simdKernels = func() *kernelSet {
	if len(simdSets) == 0 {
		return nil
	}
	return &simdSets[len(simdSets)-1]
}()

var avx2Kernels = kernelSet{
	name:        "avx2",
	encF16:      encodeF16SIMD,
	decF16:      decodeF16SIMD,
	encBF16:     encodeBF16SIMD,
	decBF16:     decodeBF16SIMD,
	quantQ8_0:   quantizeQ8_0SIMD,
	dequantQ8_0: dequantizeQ8_0SIMD,
	kq:          kqAVX2,
	errorSums:   errorSumsSIMD,
}

// errorSumsSIMD runs errorSumsAVX2 on whole vectors, the tail in Go.
func errorSumsSIMD(x, y []float32) (sig, noise, maxAbs float64) {
	n := len(x) &^ 7
	y = y[:len(x)]
	var acc [12]float64
	nan := false
	if n > 0 {
		nan = errorSumsAVX2(&x[0], &y[0], n, &acc)
	}
	s, q, m := errorSumsGeneric(x[n:], y[n:])
	sig = (acc[0] + acc[1]) + (acc[2] + acc[3]) + s
	noise = (acc[4] + acc[5]) + (acc[6] + acc[7]) + q
	maxAbs = max(acc[8], acc[9], acc[10], acc[11], m)
	if nan {
		maxAbs = math.NaN()
	}
	return sig, noise, maxAbs
}

// levelsSIMD runs levelsAVX2; the sub-blocks are whole vectors (16 or 32
// elements).
func levelsSIMD(L []uint8, x, d, m []float32, lo, hi, off int32) bool {
	nsub := len(d)
	if nsub == 0 || len(x)%nsub != 0 || len(x)/nsub%8 != 0 || len(L) < len(x) || (m != nil && len(m) < nsub) {
		return false
	}
	n := len(x) / nsub
	var mp *float32
	if m != nil {
		mp = &m[0]
	}
	levelsAVX2(&L[0], &x[0], n, &d[0], mp, nsub, int(lo), int(hi), int(off))
	return true
}

// searchQ45KSIMD runs quantQ45K's search (w nil) or quantQ45KW's with
// eight lanes.
func searchQ45KSIMD(x, w *[qkK]float32, p *qkx2Search, scales, mins *[8]float32) bool {
	var wp *float32
	if w != nil {
		wp = &w[0]
	}
	return searchQ45KAVX2(&x[0], wp, 32, 0, &p.num[0], len(p.num), int(p.nmax), &scales[0], &mins[0])
}

// searchQ45K16SIMD runs quantQ45K's search (w nil) or quantQ45KW's for two
// super-blocks with sixteen lanes.
func searchQ45K16SIMD(x, w *[2 * qkK]float32, p *qkx2Search, scales, mins *[16]float32) bool {
	var wp *float32
	if w != nil {
		wp = &w[0]
	}
	return searchQ45KAVX512(&x[0], wp, 32, 0, &p.num[0], len(p.num), int(p.nmax), &scales[0], &mins[0])
}

// searchQ2KSIMD runs quantQ2_K's sixteen makeQKX2Quants calls (weights
// |x|, absolute errors: mode 3) as two passes of eight lanes.
func searchQ2KSIMD(x *[qkK]float32, p *qkx2Search, scales, mins *[16]float32) bool {
	return searchQ45KAVX2(&x[0], nil, 16, 3, &p.num[0], len(p.num), int(p.nmax), &scales[0], &mins[0]) &&
		searchQ45KAVX2(&x[128], nil, 16, 3, &p.num[0], len(p.num), int(p.nmax), &scales[8], &mins[8])
}

// searchQ2K16SIMD is searchQ2KSIMD in one pass of sixteen lanes.
func searchQ2K16SIMD(x *[qkK]float32, p *qkx2Search, scales, mins *[16]float32) bool {
	return searchQ45KAVX512(&x[0], nil, 16, 3, &p.num[0], len(p.num), int(p.nmax), &scales[0], &mins[0])
}

// searchQ3K16SIMD runs quantQ3_K's search in one pass of sixteen lanes.
func searchQ3K16SIMD(x *[qkK]float32, scales *[16]float32) bool {
	return searchQ3KAVX512(&x[0], &scales[0])
}

// searchQ6K16SIMD runs quantQ6_KW's search in one pass of sixteen lanes.
func searchQ6K16SIMD(x, qw *[qkK]float32, scales *[16]float32) bool {
	var w *float32
	if qw != nil {
		w = &qw[0]
	}
	return searchQXAVX512(&x[0], w, 16, 32, &q6KNum[0], len(q6KNum), &scales[0])
}

// searchQ6KSIMD runs quantQ6_KW's search as two passes of eight lanes.
func searchQ6KSIMD(x, qw *[qkK]float32, scales *[16]float32) bool {
	var w0, w1 *float32
	if qw != nil {
		w0, w1 = &qw[0], &qw[128]
	}
	return searchQXAVX2(&x[0], w0, 16, 32, &q6KNum[0], len(q6KNum), &scales[0]) &&
		searchQXAVX2(&x[128], w1, 16, 32, &q6KNum[0], len(q6KNum), &scales[8])
}

func encodeF16SIMD(dst []uint16, src []float32) {
	n := len(src) &^ 7
	if n > 0 {
		_ = dst[n-1]
		encodeF16F16C(unsafe.SliceData(dst), unsafe.SliceData(src), n)
	}
	encodeF16Generic(dst[n:len(src)], src[n:])
}

func decodeF16SIMD(dst []float32, src []uint16) {
	n := len(src) &^ 7
	if n > 0 {
		_ = dst[n-1]
		decodeF16F16C(unsafe.SliceData(dst), unsafe.SliceData(src), n)
	}
	decodeF16Generic(dst[n:len(src)], src[n:])
}

func encodeBF16SIMD(dst []uint16, src []float32) {
	n := len(src) &^ 7
	if n > 0 {
		_ = dst[n-1]
		encodeBF16AVX2(unsafe.SliceData(dst), unsafe.SliceData(src), n)
	}
	encodeBF16Generic(dst[n:len(src)], src[n:])
}

func decodeBF16SIMD(dst []float32, src []uint16) {
	n := len(src) &^ 7
	if n > 0 {
		_ = dst[n-1]
		decodeBF16AVX2(unsafe.SliceData(dst), unsafe.SliceData(src), n)
	}
	decodeBF16Generic(dst[n:len(src)], src[n:])
}

func quantizeQ8_0SIMD(dst []byte, src []float32) {
	nb := len(src) / qk
	if nb > 0 {
		_ = dst[nb*34-1]
		quantQ8_0AVX2(unsafe.SliceData(dst), unsafe.SliceData(src), nb)
	}
}

func dequantizeQ8_0SIMD(dst []float32, src []byte) {
	nb := len(src) / 34
	if nb > 0 {
		_ = dst[nb*qk-1]
		dequantQ8_0AVX2(unsafe.SliceData(dst), unsafe.SliceData(src), nb)
	}
}

// quantizeQ8_0AVX512 runs the eight-block AVX-512 kernel and leaves the last
// nblocks%8 blocks to the AVX2 one.
func quantizeQ8_0AVX512(dst []byte, src []float32) {
	nb := len(src) / qk
	n8 := nb &^ 7
	if n8 > 0 {
		_ = dst[n8*34-1]
		quantQ8_0AVX512(unsafe.SliceData(dst), unsafe.SliceData(src), n8)
	}
	quantizeQ8_0SIMD(dst[n8*34:], src[n8*qk:nb*qk])
}
