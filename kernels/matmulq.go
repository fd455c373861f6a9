package kernels

import (
	"fmt"
	"sync"

	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/tensor"
)

// MatMulQ computes dst = x·Wᵀ (shapes as MatMul) the way llama.cpp's x86
// CPU backend does, rather than in float32: each row of x is first
// converted to ActDType(w.DType) with QuantizeActivations, then each
// output is ggml's vec_dot of that row with the weight row — integer sums
// of int8 products, scaled per block and accumulated in float32 in ggml's
// order (qdot.go; for Q4_0 matrices of 8k rows the order of ggml's
// repacked kernels, chainOrder) — so the result is the same bits on every
// implementation (plain Go, AVX2, AVX-512) and, for the block types, the
// same bits llama.cpp computes without AMX.
//
// F16 and BF16 weights: the activations are rounded to F16 / BF16 as
// llama.cpp rounds them, then multiplied in float32 by MatMul (llama.cpp's
// half-precision kernels sum in another order, so these agree with it only
// to float32 rounding). F32 and I8 weights: exactly MatMul.
//
// Quantizing the activations is what makes this the fast path on CPUs
// with int8 dot-product instructions (AVX-512 VNNI), and the slow one in
// plain Go.
func MatMulQ(dst, x []float32, M int, w *Matrix) {
	K, N := w.Cols, w.Rows
	if M < 0 || len(x) < M*K || len(dst) < M*N {
		panic(fmt.Sprintf("kernels: MatMulQ M=%d K=%d N=%d with len(x)=%d len(dst)=%d", M, K, N, len(x), len(dst)))
	}
	countStreamed(M, w)
	at := ActDType(w.DType)
	switch {
	case at == tensor.F32:
		matMulF32(dst, x, M, w)
		return
	case at == tensor.F16 || at == tensor.BF16:
		p := getBuf(M * K)
		xr := *p
		roundHalf(xr, x[:M*K], at)
		matMulF32(dst, xr, M, w)
		putBuf(p)
		return
	case M == 0 || N == 0:
		return
	case K == 0:
		clear(dst[:M*N])
		return
	}
	if s := active; s != nil && s.qmm != nil && s.qmm(dst[:M*N], x[:M*K], M, w) {
		return
	}
	qa := quantizeRows(x, M, K, at)
	rb := K / int(at.BlockSize()) * int(at.BlockBytes())
	wrb := w.RowBytes()
	t := w.DType
	nb := K / int(at.BlockSize())
	chain := chainOrder(w)
	var qdot func(w, a *byte, nb int) float32
	if s := active; s != nil {
		qdot = s.qdot[t]
		if chain {
			qdot = s.qdotChain
		}
	}
	parallelFor(N, 16, func(lo, hi int) {
		for n := lo; n < hi; n++ {
			wr := w.Data[n*wrb : (n+1)*wrb]
			for m := 0; m < M; m++ {
				a := (*qa)[m*rb : (m+1)*rb]
				switch {
				case qdot != nil:
					dst[m*N+n] = qdot(&wr[0], &a[0], nb)
				case chain:
					dst[m*N+n] = dotQ4_0Chain(wr, a, nb)
				default:
					dst[m*N+n] = qdotGeneric(t, wr, a, K)
				}
			}
		}
	})
	putBytes(qa)
}

// roundHalf sets dst[i] to src[i] rounded to F16 or BF16 as ggml's
// ggml_fp32_to_fp16_row / ggml_fp32_to_bf16_row round it.
func roundHalf(dst, src []float32, t tensor.DType) {
	dst = dst[:len(src)]
	if t == tensor.F16 {
		for i, v := range src {
			dst[i] = quant.F16ToF32(quant.F32ToF16(v))
		}
		return
	}
	for i, v := range src {
		dst[i] = quant.BF16ToF32(bf16GGML(v))
	}
}

var bytePool sync.Pool

func getBytes(n int) *[]byte {
	p, _ := bytePool.Get().(*[]byte)
	if p == nil {
		p = new([]byte)
	}
	if cap(*p) < n {
		*p = make([]byte, n)
	}
	*p = (*p)[:n]
	return p
}

func putBytes(p *[]byte) { bytePool.Put(p) }

// quantizeRows converts the M rows of x (K > 0 columns) to ggml blocks of
// at, row after row, in a pooled buffer the caller returns with putBytes.
func quantizeRows(x []float32, M, K int, at tensor.DType) *[]byte {
	rb := K / int(at.BlockSize()) * int(at.BlockBytes())
	p := getBytes(M * rb)
	qa := *p
	if s := active; s != nil && s.quantQ8_0 != nil && at == tensor.Q8_0 {
		parallelFor(M, 4, func(lo, hi int) {
			for m := lo; m < hi; m++ {
				s.quantQ8_0(&qa[m*rb], &x[m*K], K/32)
			}
		})
		return p
	}
	parallelFor(M, 1, func(lo, hi int) {
		for m := lo; m < hi; m++ {
			if err := QuantizeActivations(qa[m*rb:(m+1)*rb], x[m*K:(m+1)*K], at); err != nil {
				panic(err) // sizes follow from NewMatrix's checks
			}
		}
	})
	return p
}
