//go:build !noasm

package kernels

import (
	"golang.org/x/sys/cpu"

	"github.com/tfconv/tfconv/tensor"
)

// Assembly in f32_arm64.s, rowdot_arm64.s, rowdot01_arm64.s,
// kquant_arm64.s, lanesk_arm64.s and qdot_arm64.s; see simdSet for the
// contracts. NEON (Advanced SIMD) is part of every arm64 CPU Go runs on; the dot-product extension (SDOT, FEAT_DotProd: Apple M1 and
// later, Graviton 2 and later, Cortex-A55/A76 and later) only speeds up
// MatMulQ's lane sums, so the two sets differ only in qdot.

//go:noescape
func dotNEON(a *float32, b *byte, n int) float32

//go:noescape
func axpyNEON(dst *float32, a float32, x *float32, n int)

//go:noescape
func gemm6x16NEON(w *byte, ldw int, xt *float32, kc int, c *float32, acc bool)

//go:noescape
func prefetchRows(p *byte, stride, rows, n int)

//go:noescape
func expNEON(x *float32, n int)

//go:noescape
func dotF16NEON(x *float32, w *byte, n int) float32

//go:noescape
func dotBF16NEON(x *float32, w *byte, n int) float32

//go:noescape
func dotI8NEON(x *float32, w *byte, n int) float32

//go:noescape
func dotQ8_0NEON(x *float32, q *byte, nb int) float32

//go:noescape
func dotQ4_0NEON(x *float32, w *byte, n int) float32

//go:noescape
func decF16NEON(dst *float32, w *byte, n int)

//go:noescape
func decBF16NEON(dst *float32, w *byte, n int)

//go:noescape
func decQ8_0NEON(dst *float32, w *byte, n int)

//go:noescape
func decQ4_0NEON(dst *float32, w *byte, n int)

//go:noescape
func dotQ4_1NEON(x *float32, w *byte, n int) float32

//go:noescape
func decQ4_1NEON(dst *float32, w *byte, n int)

//go:noescape
func dotQ5_0NEON(x *float32, w *byte, n int) float32

//go:noescape
func decQ5_0NEON(dst *float32, w *byte, n int)

//go:noescape
func dotQ5_1NEON(x *float32, w *byte, n int) float32

//go:noescape
func decQ5_1NEON(dst *float32, w *byte, n int)

//go:noescape
func qdotQ8_0SDOT(w, a *byte, nb int) float32

//go:noescape
func qdotQ4_0SDOT(w, a *byte, nb int) float32

//go:noescape
func qdotQ8_0NEON(w, a *byte, nb int) float32

//go:noescape
func qdotQ4_0NEON(w, a *byte, nb int) float32

//go:noescape
func qdotQ4_0ChainSDOT(w, a *byte, nb int) float32

//go:noescape
func qdotQ4_0ChainNEON(w, a *byte, nb int) float32

//go:noescape
func qdotQ5_0SDOT(w, a *byte, nb int) float32

//go:noescape
func qdotQ5_0NEON(w, a *byte, nb int) float32

//go:noescape
func qdotQ4_1SDOT(w, a *byte, nb int) float32

//go:noescape
func qdotQ4_1NEON(w, a *byte, nb int) float32

//go:noescape
func qdotQ5_1SDOT(w, a *byte, nb int) float32

//go:noescape
func qdotQ5_1NEON(w, a *byte, nb int) float32

// Assembly in ssd_arm64.s; see simdSet.ssdStep.

//go:noescape
func ssdStepNEON(s, b, c *float32, a, dx float32, n int) float32

//go:noescape
func ssdRowsNEON(s, x, b, c, y *float32, a, d float32, P, N int)

// neonSet returns the NEON set with the given name and integer dots for
// the 32-element block types; both sets take the k-quants' lane sums in
// NEON.
func neonSet(name string, qdot map[tensor.DType]func(w, a *byte, nb int) float32, chain func(w, a *byte, nb int) float32) *simdSet {
	for _, t := range []tensor.DType{tensor.Q2_K, tensor.Q3_K, tensor.Q4_K, tensor.Q5_K, tensor.Q6_K} {
		qdot[t] = qdotK(t)
	}
	return &simdSet{
		name: name,
		mr:   6, nr: 16, gemm: gemm6x16NEON,
		lanes: 16, dot: dotNEON,
		dotQ8_0: dotQ8_0NEON,
		axpy:    axpyNEON,
		exp:     expNEON,
		ssdStep: ssdStepNEON,
		ssdRows: ssdRowsNEON,
		rowDot: map[tensor.DType]func(x *float32, w *byte, n int) float32{
			tensor.F16: dotF16NEON, tensor.BF16: dotBF16NEON, tensor.I8: dotI8NEON, tensor.Q4_0: dotQ4_0NEON,
			tensor.Q4_1: dotQ4_1NEON, tensor.Q5_0: dotQ5_0NEON, tensor.Q5_1: dotQ5_1NEON,
			tensor.Q4_K: dotQ4_KRowNEON, tensor.Q6_K: dotQ6_KRowNEON,
		},
		decode: map[tensor.DType]func(dst *float32, w *byte, n int){
			tensor.F16: decF16NEON, tensor.BF16: decBF16NEON, tensor.Q8_0: decQ8_0NEON, tensor.Q4_0: decQ4_0NEON,
			tensor.Q4_1: decQ4_1NEON, tensor.Q5_0: decQ5_0NEON, tensor.Q5_1: decQ5_1NEON,
			tensor.Q4_K: decQ4_KRowNEON, tensor.Q6_K: decQ6_KRowNEON,
		},
		qdot:      qdot,
		qdotChain: chain,
	}
}

var (
	neonDotSet = neonSet("neon-dotprod", map[tensor.DType]func(w, a *byte, nb int) float32{
		tensor.Q8_0: qdotQ8_0SDOT, tensor.Q4_0: qdotQ4_0SDOT, tensor.Q5_0: qdotQ5_0SDOT,
		tensor.Q4_1: qdotQ4_1SDOT, tensor.Q5_1: qdotQ5_1SDOT,
	}, qdotQ4_0ChainSDOT)
	neonPlainSet = neonSet("neon", map[tensor.DType]func(w, a *byte, nb int) float32{
		tensor.Q8_0: qdotQ8_0NEON, tensor.Q4_0: qdotQ4_0NEON, tensor.Q5_0: qdotQ5_0NEON,
		tensor.Q4_1: qdotQ4_1NEON, tensor.Q5_1: qdotQ5_1NEON,
	}, qdotQ4_0ChainNEON)
)

// simdSets lists the sets this CPU can run, best first: with the
// dot-product extension (GODEBUG=cpu.asimddp=off masks it) both, else
// plain NEON.
var simdSets = func() []*simdSet {
	if cpu.ARM64.HasASIMDDP {
		return []*simdSet{neonDotSet, neonPlainSet}
	}
	return []*simdSet{neonPlainSet}
}()
