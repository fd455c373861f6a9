package kernels

import (
	"unsafe"

	"github.com/tfconv/tfconv/tensor"
)

// simdSet is one SIMD implementation of the hot loops. The plain-Go code is
// the reference and is used when active is nil; a set replaces it at
// start-up when the CPU supports it (stubs_amd64.go). Every function works on
// whole vectors only; the Go wrappers below finish the tails in plain Go.
type simdSet struct {
	name string

	// gemm computes one mr×nr tile of Cᵀ = W·Xᵀ, for i < mr, j < nr:
	//
	//	c[i*nr+j] (+)= Σ_{k<kc} w[i*ldw+k] · xt[k*nr+j]
	//
	// w is mr rows of float32 weights ldw elements apart, xt a packed
	// activation panel (packX), c a contiguous tile; acc selects += over =.
	mr, nr int
	gemm   func(w *byte, ldw int, xt *float32, kc int, c *float32, acc bool)

	// dot returns Σ a[i]·b[i] for n a multiple of lanes; b is little-endian
	// float32 bytes, so weight rows need no alignment.
	lanes int
	dot   func(a *float32, b *byte, n int) float32

	// dotQ8_0 returns Σ x[i]·dequant(q)[i] over nb Q8_0 blocks.
	dotQ8_0 func(x *float32, q *byte, nb int) float32

	// rowDot, per weight dtype, returns Σ x[i]·W[i] over n elements of a
	// weight row stored in that dtype (before the row scale, for I8); n is
	// a multiple of lanes and of the dtype's block size.
	rowDot map[tensor.DType]func(x *float32, w *byte, n int) float32

	// rowDotSums, per weight dtype, is rowDot for the types whose weights
	// are w = s·q − m per 32-element sub-block: xs[j] = Σ x[32j:32j+32]
	// (subBlockSums, once per matrix), so that a row's offsets cost one
	// product per sub-block, Σ m_j·xs_j, rather than one subtraction per
	// weight. It takes precedence over rowDot.
	rowDotSums map[tensor.DType]func(x, xs *float32, w *byte, n int) float32

	// decode, per weight dtype, writes the n elements (a multiple of the
	// block size, and of 16 for the element-wise F16 and BF16) of the whole
	// blocks at w to dst, bit-identical to decodeRow; MatMul uses it to fill
	// its weight buffer for M ≥ 2 (through rowDecoder, which finishes the
	// tails).
	decode map[tensor.DType]func(dst *float32, w *byte, n int)

	// axpy sets dst[i] += a·x[i] for n a multiple of lanes.
	axpy func(dst *float32, a float32, x *float32, n int)

	// exp sets x[i] = e^x[i] for n a multiple of lanes, computing exactly
	// what expGo computes up to fused rounding (exp.go).
	exp func(x *float32, n int)

	// qmm is MatMulQ for the block-quantized weight types this set has
	// kernels for (M, K, N > 0), bit-identical to the plain-Go version; it
	// reports false, having written nothing, for the others.
	qmm func(dst, x []float32, M int, w *Matrix) bool

	// qdot, per weight dtype, is qdotGeneric for one weight row of nb
	// blocks and one row of ActDType activation blocks, bit-identical to
	// it; MatMulQ uses it in its plain loop when qmm declines the matrix.
	qdot map[tensor.DType]func(w, a *byte, nb int) float32

	// qdotChain is dotQ4_0Chain for one Q4_0 weight row of nb blocks,
	// bit-identical to it; MatMulQ's plain loop uses it for the matrices
	// chainOrder picks.
	qdotChain func(w, a *byte, nb int) float32

	// ssdStep is one step of Mamba-2's scan over one channel's state of n
	// values (a multiple of lanes): for i < n, v = a·s[i] + dx·b[i],
	// s[i] = v; it returns Σ v·c[i] (SSDScan).
	ssdStep func(s, b, c *float32, a, dx float32, n int) float32

	// ssdRows is ssdStep over the P channels of one head, s advancing N
	// floats a channel: for p < P, y[p] = ssdStep(s[p·N:], b, c, a,
	// d·x[p], N), for N a positive multiple of lanes.
	ssdRows func(s, x, b, c, y *float32, a, d float32, P, N int)

	// quantQ8_0 writes nb blocks of x as ggml Q8_0 blocks to dst, byte for
	// byte what QuantizeActivations writes (for input without NaNs).
	quantQ8_0 func(dst *byte, x *float32, nb int)
}

// active is the implementation every kernel uses; nil means plain Go.
var active *simdSet

func init() {
	if len(simdSets) > 0 {
		active = simdSets[0]
	}
}

// Implementation names the kernels in use: "generic" (plain Go), or the
// SIMD set chosen from the CPU's features at start-up when the package was
// built without the noasm tag: "avx512", "avxvnni" or "avx2" on amd64,
// "neon-dotprod" or "neon" on arm64.
func Implementation() string {
	if active == nil {
		return "generic"
	}
	return active.name
}

func bytePtr(f *float32) *byte { return (*byte)(unsafe.Pointer(f)) }

// dotSIMD is Dot on s: whole vectors in assembly, the tail in Go.
func dotSIMD(s *simdSet, a, b []float32) float32 {
	b = b[:len(a)]
	n := len(a) &^ (s.lanes - 1)
	var sum float32
	if n > 0 {
		sum = s.dot(&a[0], bytePtr(&b[0]), n)
	}
	for i := n; i < len(a); i++ {
		sum += a[i] * b[i]
	}
	return sum
}

// axpy sets dst[i] += a·x[i] over len(dst) elements.
func axpy(dst []float32, a float32, x []float32) {
	x = x[:len(dst)]
	n := 0
	if s := active; s != nil {
		n = len(dst) &^ (s.lanes - 1)
		if n > 0 {
			s.axpy(&dst[0], a, &x[0], n)
		}
	}
	for i := n; i < len(dst); i++ {
		dst[i] += a * x[i]
	}
}
