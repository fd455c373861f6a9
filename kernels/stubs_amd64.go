//go:build !noasm

package kernels

import (
	"golang.org/x/sys/cpu"

	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/tensor"
)

// f16Table maps every binary16 bit pattern to its float32 value
// (quant.F16ToF32). MatMulQ's kernels read weight scales through it, with
// two loads instead of a broadcast and a conversion on the vector ports;
// the reference decode kernels convert with VCVTPH2PS instead, which from
// memory is faster with a real checkpoint's scales (q8_amd64.s).
var f16Table [1 << 16]float32

func init() {
	for i := range f16Table {
		f16Table[i] = quant.F16ToF32(uint16(i))
	}
}

//go:noescape
func dotQ8_0AVX512(x *float32, q *byte, nb int) float32

//go:noescape
func decQ8_0AVX512(dst *float32, w *byte, n int)

//go:noescape
func decF16AVX512(dst *float32, w *byte, n int)

//go:noescape
func decBF16AVX512(dst *float32, w *byte, n int)

// Assembly in gemm_amd64.s, dot_amd64.s and rowdot_amd64.s; see simdSet for the contracts.

//go:noescape
func gemm12x32AVX512(w *byte, ldw int, xt *float32, kc int, c *float32, acc bool)

//go:noescape
func gemm6x16AVX2(w *byte, ldw int, xt *float32, kc int, c *float32, acc bool)

//go:noescape
func prefetchRows(p *byte, stride, rows, n int)

//go:noescape
func dotAVX512(a *float32, b *byte, n int) float32

//go:noescape
func dotAVX2(a *float32, b *byte, n int) float32

//go:noescape
func dotQ8_0AVX2(x *float32, q *byte, nb int) float32

//go:noescape
func axpyAVX512(dst *float32, a float32, x *float32, n int)

//go:noescape
func expAVX512(x *float32, n int)

//go:noescape
func expAVX2(x *float32, n int)

//go:noescape
func axpyAVX2(dst *float32, a float32, x *float32, n int)

//go:noescape
func dotF16AVX512(x *float32, w *byte, n int) float32

//go:noescape
func dotBF16AVX512(x *float32, w *byte, n int) float32

//go:noescape
func dotI8AVX512(x *float32, w *byte, n int) float32

//go:noescape
func dotQ4_0AVX512(x *float32, w *byte, n int) float32

//go:noescape
func dotQ6_KAVX512(x *float32, w *byte, n int) float32

//go:noescape
func dotQ5_KAVX512(x *float32, w *byte, n int) float32

//go:noescape
func dotQ4_1AVX512(x *float32, w *byte, n int) float32

//go:noescape
func dotQ5_0AVX512(x *float32, w *byte, n int) float32

//go:noescape
func dotQ5_1AVX512(x *float32, w *byte, n int) float32

//go:noescape
func dotQ2_KAVX512(x *float32, w *byte, n int) float32

//go:noescape
func dotQ3_KAVX512(x *float32, w *byte, n int) float32

//go:noescape
func decQ2_KAVX512(dst *float32, w *byte, n int)

//go:noescape
func decQ3_KAVX512(dst *float32, w *byte, n int)

//go:noescape
func decQ4_KAVX512(dst *float32, w *byte, n int)

//go:noescape
func decQ5_KAVX512(dst *float32, w *byte, n int)

//go:noescape
func decQ6_KAVX512(dst *float32, w *byte, n int)

//go:noescape
func dotF16AVX2(x *float32, w *byte, n int) float32

//go:noescape
func dotBF16AVX2(x *float32, w *byte, n int) float32

//go:noescape
func dotI8AVX2(x *float32, w *byte, n int) float32

//go:noescape
func dotQ6_KAVX2(x *float32, w *byte, n int) float32

//go:noescape
func dotQ4_1AVX2(x *float32, w *byte, n int) float32

//go:noescape
func dotQ5_0AVX2(x *float32, w *byte, n int) float32

//go:noescape
func dotQ5_1AVX2(x *float32, w *byte, n int) float32

//go:noescape
func decQ8_0AVX2(dst *float32, w *byte, n int)

//go:noescape
func decF16AVX2(dst *float32, w *byte, n int)

//go:noescape
func decBF16AVX2(dst *float32, w *byte, n int)

//go:noescape
func dotQ2_KAVX2(x *float32, w *byte, n int) float32

//go:noescape
func decQ2_KAVX2(dst *float32, w *byte, n int)

//go:noescape
func dotQ3_KAVX2(x *float32, w *byte, n int) float32

//go:noescape
func decQ3_KAVX2(dst *float32, w *byte, n int)

//go:noescape
func dotQ5_KAVX2(x *float32, w *byte, n int) float32

//go:noescape
func decQ5_KAVX2(dst *float32, w *byte, n int)

//go:noescape
func decQ4_KAVX2(dst *float32, w *byte, n int)

//go:noescape
func decQ6_KAVX2(dst *float32, w *byte, n int)

// Assembly in kquant_amd64.s; see simdSet.rowDotSums.

//go:noescape
func dotQ4_KSumsAVX512(x, xs *float32, w *byte, n int) float32

//go:noescape
func dotQ4_KSumsAVX2(x, xs *float32, w *byte, n int) float32

// Assembly in rowdot_amd64.s.

//go:noescape
func dotQ4_0SumsAVX2(x, xs *float32, w *byte, n int) float32

//go:noescape
func decQ4_0AVX512(dst *float32, w *byte, n int)

//go:noescape
func decQ4_0AVX2(dst *float32, w *byte, n int)

// Assembly in ssd_amd64.s; see simdSet.ssdStep.

//go:noescape
func ssdStepAVX512(s, b, c *float32, a, dx float32, n int) float32

//go:noescape
func ssdStepAVX2(s, b, c *float32, a, dx float32, n int) float32

//go:noescape
func ssdRowsAVX512(s, x, b, c, y *float32, a, d float32, P, N int)

//go:noescape
func ssdRowsAVX2(s, x, b, c, y *float32, a, d float32, P, N int)

var avx512Set = &simdSet{
	name: "avx512",
	mr:   12, nr: 32, gemm: gemm12x32AVX512,
	lanes: 16, dot: dotAVX512,
	dotQ8_0: dotQ8_0AVX512,
	axpy:    axpyAVX512,
	exp:     expAVX512,
	ssdStep: ssdStepAVX512,
	ssdRows: ssdRowsAVX512,
	rowDot: map[tensor.DType]func(x *float32, w *byte, n int) float32{
		tensor.F16: dotF16AVX512, tensor.BF16: dotBF16AVX512, tensor.I8: dotI8AVX512, tensor.Q4_0: dotQ4_0AVX512,
		tensor.Q6_K: dotQ6_KAVX512, tensor.Q5_K: dotQ5_KAVX512,
		tensor.Q4_1: dotQ4_1AVX512, tensor.Q5_0: dotQ5_0AVX512, tensor.Q5_1: dotQ5_1AVX512,
		tensor.Q2_K: dotQ2_KAVX512, tensor.Q3_K: dotQ3_KAVX512,
	},
	rowDotSums: map[tensor.DType]func(x, xs *float32, w *byte, n int) float32{
		tensor.Q4_K: dotQ4_KSumsAVX512,
	},
	decode: map[tensor.DType]func(dst *float32, w *byte, n int){
		tensor.Q2_K: decQ2_KAVX512, tensor.Q3_K: decQ3_KAVX512, tensor.Q4_K: decQ4_KAVX512,
		tensor.Q5_K: decQ5_KAVX512, tensor.Q6_K: decQ6_KAVX512,
		tensor.Q8_0: decQ8_0AVX512, tensor.F16: decF16AVX512, tensor.BF16: decBF16AVX512,
		tensor.Q4_0: decQ4_0AVX512,
	},
}

var avx2Set = &simdSet{
	name: "avx2",
	mr:   6, nr: 16, gemm: gemm6x16AVX2,
	lanes: 8, dot: dotAVX2,
	dotQ8_0: dotQ8_0AVX2,
	axpy:    axpyAVX2,
	exp:     expAVX2,
	ssdStep: ssdStepAVX2,
	ssdRows: ssdRowsAVX2,
	rowDot: map[tensor.DType]func(x *float32, w *byte, n int) float32{
		tensor.F16: dotF16AVX2, tensor.BF16: dotBF16AVX2, tensor.I8: dotI8AVX2,
		tensor.Q6_K: dotQ6_KAVX2,
		tensor.Q4_1: dotQ4_1AVX2, tensor.Q5_0: dotQ5_0AVX2, tensor.Q5_1: dotQ5_1AVX2,
		tensor.Q2_K: dotQ2_KAVX2, tensor.Q3_K: dotQ3_KAVX2, tensor.Q5_K: dotQ5_KAVX2,
	},
	rowDotSums: map[tensor.DType]func(x, xs *float32, w *byte, n int) float32{
		tensor.Q4_0: dotQ4_0SumsAVX2, tensor.Q4_K: dotQ4_KSumsAVX2,
	},
	decode: map[tensor.DType]func(dst *float32, w *byte, n int){
		tensor.Q8_0: decQ8_0AVX2, tensor.F16: decF16AVX2, tensor.BF16: decBF16AVX2, tensor.Q4_0: decQ4_0AVX2,
		tensor.Q2_K: decQ2_KAVX2, tensor.Q3_K: decQ3_KAVX2, tensor.Q4_K: decQ4_KAVX2,
		tensor.Q5_K: decQ5_KAVX2, tensor.Q6_K: decQ6_KAVX2,
	},
	qmm:       qmmAVX2,
	quantQ8_0: quantQ8_0AVX2,
}

// avxVNNISet is the AVX2 set with MatMulQ's Q8_0 and Q4_0 lane sums on
// AVX-VNNI's VEX-encoded VPDPBUSD (qgemm256_amd64.go).
var avxVNNISet = func() *simdSet {
	s := *avx2Set
	s.name = "avxvnni"
	s.qmm = qmmAVXVNNI
	return &s
}()

// simdSets lists the sets this CPU can run, best first. All need FMA and
// F16C (Q8_0 scales are binary16); the AVX-512 set also needs BW for the
// word broadcast, the AVX-VNNI set AVX-VNNI (CPUID leaf 7 subleaf 1).
var simdSets = func() []*simdSet {
	x := cpu.X86
	var sets []*simdSet
	if !x.HasAVX || !x.HasAVX2 || !x.HasFMA || !x.HasF16C {
		return nil
	}
	if x.HasAVX512F && x.HasAVX512BW && x.HasAVX512VL {
		sets = append(sets, avx512Set)
	}
	if x.HasAVXVNNI {
		sets = append(sets, avxVNNISet)
	}
	return append(sets, avx2Set)
}()

// The peak loops of peak_amd64.s, for BenchmarkPeak only.

func peakFMA512(n int)
func peakFMA256(n int)
func peakDPBUSD512(n int)
func peakMADDUBSW256(n int)
