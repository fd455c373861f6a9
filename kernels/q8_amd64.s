//go:build !noasm

#include "textflag.h"

// Q8_0 and half-precision kernels for AVX-512. A Q8_0 block is a binary16
// scale d followed by 32 int8 quants. The scale is broadcast as a word and
// converted (VPBROADCASTW, VCVTPH2PS: exact, as quant.F16ToF32). A lookup
// in a 256 KB table of every binary16's float32 was faster with one scale
// for every block, as the benchmarks then had, and a fifth slower from
// memory with a checkpoint's thousands of distinct scales, whose table
// lines the streamed weights keep evicting.

// func dotQ8_0AVX512(x *float32, q *byte, nb int) float32
//
// Σ_b d_b·(Σ_i q_bi·x_bi): the 32 products of a block are summed before
// its scale multiplies them, one multiply per block instead of two.
TEXT ·dotQ8_0AVX512(SB), NOSPLIT, $0-28
	MOVQ   x+0(FP), DI
	MOVQ   q+8(FP), SI
	MOVQ   nb+16(FP), CX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3

loop4:
	CMPQ         CX, $4
	JLT          loop1
	PREFETCHT0   4096(SI)
	PREFETCHT0   4160(SI)
	VPBROADCASTW (SI), Y12
	VPBROADCASTW 34(SI), Y13
	VPBROADCASTW 68(SI), Y14
	VPBROADCASTW 102(SI), Y15
	VPMOVSXBD    2(SI), Z4
	VPMOVSXBD    18(SI), Z5
	VPMOVSXBD    36(SI), Z6
	VPMOVSXBD    52(SI), Z7
	VPMOVSXBD    70(SI), Z8
	VPMOVSXBD    86(SI), Z9
	VPMOVSXBD    104(SI), Z10
	VPMOVSXBD    120(SI), Z11
	VCVTDQ2PS    Z4, Z4
	VCVTDQ2PS    Z5, Z5
	VCVTDQ2PS    Z6, Z6
	VCVTDQ2PS    Z7, Z7
	VCVTDQ2PS    Z8, Z8
	VCVTDQ2PS    Z9, Z9
	VCVTDQ2PS    Z10, Z10
	VCVTDQ2PS    Z11, Z11
	VMULPS       (DI), Z4, Z4
	VMULPS       128(DI), Z6, Z6
	VMULPS       256(DI), Z8, Z8
	VMULPS       384(DI), Z10, Z10
	VFMADD231PS  64(DI), Z5, Z4
	VFMADD231PS  192(DI), Z7, Z6
	VFMADD231PS  320(DI), Z9, Z8
	VFMADD231PS  448(DI), Z11, Z10
	VCVTPH2PS    Y12, Z12
	VCVTPH2PS    Y13, Z13
	VCVTPH2PS    Y14, Z14
	VCVTPH2PS    Y15, Z15
	VFMADD231PS  Z12, Z4, Z0
	VFMADD231PS  Z13, Z6, Z1
	VFMADD231PS  Z14, Z8, Z2
	VFMADD231PS  Z15, Z10, Z3
	ADDQ         $136, SI
	ADDQ         $512, DI
	SUBQ         $4, CX
	JMP          loop4

loop1:
	TESTQ        CX, CX
	JZ           reduce
	VPBROADCASTW (SI), Y12
	VPMOVSXBD    2(SI), Z4
	VPMOVSXBD    18(SI), Z5
	VCVTDQ2PS    Z4, Z4
	VCVTDQ2PS    Z5, Z5
	VMULPS       (DI), Z4, Z4
	VFMADD231PS  64(DI), Z5, Z4
	VCVTPH2PS    Y12, Z12
	VFMADD231PS  Z12, Z4, Z0
	ADDQ         $34, SI
	ADDQ         $128, DI
	DECQ         CX
	JMP          loop1

reduce:
	VADDPS        Z1, Z0, Z0
	VADDPS        Z3, Z2, Z2
	VADDPS        Z2, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS        Y1, Y0, Y0
	VEXTRACTF128  $1, Y0, X1
	VADDPS        X1, X0, X0
	VPERMILPS     $0x4e, X0, X1
	VADDPS        X1, X0, X0
	VPERMILPS     $0xb1, X0, X1
	VADDSS        X1, X0, X0
	VZEROUPPER
	MOVSS         X0, ret+24(FP)
	RET

// func decQ8_0AVX512(dst *float32, w *byte, n int); n%32 == 0
//
// dst[i] = float32(q[i])·d, one rounding, as ggml's dequantize_row_q8_0.
TEXT ·decQ8_0AVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ n+16(FP), CX
	// R9 = the bytes of n elements: MatMul decodes a row in consecutive
	// chunks of n, so (SI)(R9*1) is the same place in the next chunk,
	// fetched while this one is decoded. Rows are read a few hundred
	// bytes at a time, too short for the hardware prefetcher to follow.
	// gemmSIMD's prefetchNext has already asked for these lines into L2;
	// this brings them on into L1 (without it, Q8_0 prefill fell from a
	// median of 171.9 to 167.2 tok/s, 6 alternating rounds).
	MOVQ CX, R9
	SHRQ $5, R9
	IMULQ $34, R9

loop:
	CMPQ         CX, $32
	JLT          done
	PREFETCHT0   (SI)(R9*1)
	VPBROADCASTW (SI), Y12
	VPMOVSXBD    2(SI), Z4
	VPMOVSXBD    18(SI), Z5
	VCVTPH2PS    Y12, Z12
	VCVTDQ2PS    Z4, Z4
	VCVTDQ2PS    Z5, Z5
	VMULPS       Z12, Z4, Z4
	VMULPS       Z12, Z5, Z5
	VMOVUPS      Z4, (DI)
	VMOVUPS      Z5, 64(DI)
	ADDQ         $34, SI
	ADDQ         $128, DI
	SUBQ         $32, CX
	JMP          loop

done:
	VZEROUPPER
	RET

// func decF16AVX512(dst *float32, w *byte, n int); n%16 == 0
TEXT ·decF16AVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ n+16(FP), CX

loop:
	CMPQ      CX, $16
	JLT       done
	VCVTPH2PS (SI), Z4
	VMOVUPS   Z4, (DI)
	ADDQ      $32, SI
	ADDQ      $64, DI
	SUBQ      $16, CX
	JMP       loop

done:
	VZEROUPPER
	RET

// func decBF16AVX512(dst *float32, w *byte, n int); n%16 == 0
TEXT ·decBF16AVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ n+16(FP), CX

loop:
	CMPQ      CX, $16
	JLT       done
	VPMOVZXWD (SI), Z4
	VPSLLD    $16, Z4, Z4
	VMOVUPS   Z4, (DI)
	ADDQ      $32, SI
	ADDQ      $64, DI
	SUBQ      $16, CX
	JMP       loop

done:
	VZEROUPPER
	RET
