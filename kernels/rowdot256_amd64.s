//go:build !noasm

#include "textflag.h"

// The AVX2 set's fused decode-and-dot kernels for Q4_1, Q5_0 and Q5_1
// (layouts and weight formulas as in kquant_amd64.s: weight =
// float32(q·d) + m, or (q − 16)·d for Q5_0, never fused), eight elements
// per ymm, and its block decoders for Q8_0, F16 and BF16 (as q8_amd64.s).
// The fifth bits come from qh broadcast and shifted right by 0..7 per lane.

DATA r2const<>+0x00(SB)/4, $0x0000000f // nibble mask
DATA r2const<>+0x04(SB)/4, $0x00000010 // Q5_0 zero point
DATA r2const<>+0x08(SB)/4, $0x00000001 // bit mask
DATA r2const<>+0x20(SB)/8, $0x0000000100000000 // VPSRLVD counts 0..7
DATA r2const<>+0x28(SB)/8, $0x0000000300000002
DATA r2const<>+0x30(SB)/8, $0x0000000500000004
DATA r2const<>+0x38(SB)/8, $0x0000000700000006
GLOBL r2const<>(SB), RODATA|NOPTR, $0x40

// R2REDUCE sums Y0..Y3 into X0.
#define R2REDUCE \
	VADDPS       Y1, Y0, Y0 \
	VADDPS       Y3, Y2, Y2 \
	VADDPS       Y2, Y0, Y0 \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS       X1, X0, X0 \
	VPERMILPS    $0x4e, X0, X1 \
	VADDPS       X1, X0, X0 \
	VPERMILPS    $0xb1, X0, X1 \
	VADDSS       X1, X0, X0

// func dotQ4_1AVX2(x *float32, w *byte, n int) float32; n%32 == 0
//
// Q4_1 (20 bytes: d, m, qs[16]).
TEXT ·dotQ4_1AVX2(SB), NOSPLIT, $0-28
	MOVQ         x+0(FP), SI
	MOVQ         w+8(FP), DI
	MOVQ         n+16(FP), CX
	VPBROADCASTD r2const<>+0x00(SB), Y15
	VPBROADCASTD r2const<>+0x04(SB), Y14
	VPBROADCASTD r2const<>+0x08(SB), Y4
	VMOVDQU      r2const<>+0x20(SB), Y13
	VXORPS       Y0, Y0, Y0
	VXORPS       Y1, Y1, Y1
	VXORPS       Y2, Y2, Y2
	VXORPS       Y3, Y3, Y3

loop:
	CMPQ         CX, $32
	JLT          reduce
	VPBROADCASTW (DI), X8
	VCVTPH2PS    X8, Y8
	VPBROADCASTW 2(DI), X7
	VCVTPH2PS    X7, Y7
	VPMOVZXBD    4(DI), Y9
	VPMOVZXBD    12(DI), Y10
	VPSRLD       $4, Y9, Y11
	VPSRLD       $4, Y10, Y12
	VPAND        Y15, Y9, Y9
	VPAND        Y15, Y10, Y10
	VCVTDQ2PS    Y9, Y9
	VMULPS       Y8, Y9, Y9
	VADDPS       Y7, Y9, Y9
	VCVTDQ2PS    Y10, Y10
	VMULPS       Y8, Y10, Y10
	VADDPS       Y7, Y10, Y10
	VCVTDQ2PS    Y11, Y11
	VMULPS       Y8, Y11, Y11
	VADDPS       Y7, Y11, Y11
	VCVTDQ2PS    Y12, Y12
	VMULPS       Y8, Y12, Y12
	VADDPS       Y7, Y12, Y12
	VFMADD231PS  (SI), Y9, Y0
	VFMADD231PS  32(SI), Y10, Y1
	VFMADD231PS  64(SI), Y11, Y2
	VFMADD231PS  96(SI), Y12, Y3
	ADDQ         $20, DI
	ADDQ         $128, SI
	SUBQ         $32, CX
	JMP          loop

reduce:
	R2REDUCE
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func dotQ5_0AVX2(x *float32, w *byte, n int) float32; n%32 == 0
//
// Q5_0 (22 bytes: d, qh, qs[16]).
TEXT ·dotQ5_0AVX2(SB), NOSPLIT, $0-28
	MOVQ         x+0(FP), SI
	MOVQ         w+8(FP), DI
	MOVQ         n+16(FP), CX
	VPBROADCASTD r2const<>+0x00(SB), Y15
	VPBROADCASTD r2const<>+0x04(SB), Y14
	VPBROADCASTD r2const<>+0x08(SB), Y4
	VMOVDQU      r2const<>+0x20(SB), Y13
	VXORPS       Y0, Y0, Y0
	VXORPS       Y1, Y1, Y1
	VXORPS       Y2, Y2, Y2
	VXORPS       Y3, Y3, Y3

loop:
	CMPQ         CX, $32
	JLT          reduce
	VPBROADCASTW (DI), X8
	VCVTPH2PS    X8, Y8
	VPMOVZXBD    6(DI), Y9
	VPMOVZXBD    14(DI), Y10
	VPSRLD       $4, Y9, Y11
	VPSRLD       $4, Y10, Y12
	VPAND        Y15, Y9, Y9
	VPAND        Y15, Y10, Y10
	VPBROADCASTD 2(DI), Y6
	VPSRLVD      Y13, Y6, Y5
	VPAND        Y4, Y5, Y5
	VPSLLD       $4, Y5, Y5
	VPOR         Y5, Y9, Y9
	VPSRLD       $8, Y6, Y6
	VPSRLVD      Y13, Y6, Y5
	VPAND        Y4, Y5, Y5
	VPSLLD       $4, Y5, Y5
	VPOR         Y5, Y10, Y10
	VPSRLD       $8, Y6, Y6
	VPSRLVD      Y13, Y6, Y5
	VPAND        Y4, Y5, Y5
	VPSLLD       $4, Y5, Y5
	VPOR         Y5, Y11, Y11
	VPSRLD       $8, Y6, Y6
	VPSRLVD      Y13, Y6, Y5
	VPAND        Y4, Y5, Y5
	VPSLLD       $4, Y5, Y5
	VPOR         Y5, Y12, Y12
	VPSUBD       Y14, Y9, Y9
	VCVTDQ2PS    Y9, Y9
	VMULPS       Y8, Y9, Y9
	VPSUBD       Y14, Y10, Y10
	VCVTDQ2PS    Y10, Y10
	VMULPS       Y8, Y10, Y10
	VPSUBD       Y14, Y11, Y11
	VCVTDQ2PS    Y11, Y11
	VMULPS       Y8, Y11, Y11
	VPSUBD       Y14, Y12, Y12
	VCVTDQ2PS    Y12, Y12
	VMULPS       Y8, Y12, Y12
	VFMADD231PS  (SI), Y9, Y0
	VFMADD231PS  32(SI), Y10, Y1
	VFMADD231PS  64(SI), Y11, Y2
	VFMADD231PS  96(SI), Y12, Y3
	ADDQ         $22, DI
	ADDQ         $128, SI
	SUBQ         $32, CX
	JMP          loop

reduce:
	R2REDUCE
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func dotQ5_1AVX2(x *float32, w *byte, n int) float32; n%32 == 0
//
// Q5_1 (24 bytes: d, m, qh, qs[16]).
TEXT ·dotQ5_1AVX2(SB), NOSPLIT, $0-28
	MOVQ         x+0(FP), SI
	MOVQ         w+8(FP), DI
	MOVQ         n+16(FP), CX
	VPBROADCASTD r2const<>+0x00(SB), Y15
	VPBROADCASTD r2const<>+0x04(SB), Y14
	VPBROADCASTD r2const<>+0x08(SB), Y4
	VMOVDQU      r2const<>+0x20(SB), Y13
	VXORPS       Y0, Y0, Y0
	VXORPS       Y1, Y1, Y1
	VXORPS       Y2, Y2, Y2
	VXORPS       Y3, Y3, Y3

loop:
	CMPQ         CX, $32
	JLT          reduce
	VPBROADCASTW (DI), X8
	VCVTPH2PS    X8, Y8
	VPBROADCASTW 2(DI), X7
	VCVTPH2PS    X7, Y7
	VPMOVZXBD    8(DI), Y9
	VPMOVZXBD    16(DI), Y10
	VPSRLD       $4, Y9, Y11
	VPSRLD       $4, Y10, Y12
	VPAND        Y15, Y9, Y9
	VPAND        Y15, Y10, Y10
	VPBROADCASTD 4(DI), Y6
	VPSRLVD      Y13, Y6, Y5
	VPAND        Y4, Y5, Y5
	VPSLLD       $4, Y5, Y5
	VPOR         Y5, Y9, Y9
	VPSRLD       $8, Y6, Y6
	VPSRLVD      Y13, Y6, Y5
	VPAND        Y4, Y5, Y5
	VPSLLD       $4, Y5, Y5
	VPOR         Y5, Y10, Y10
	VPSRLD       $8, Y6, Y6
	VPSRLVD      Y13, Y6, Y5
	VPAND        Y4, Y5, Y5
	VPSLLD       $4, Y5, Y5
	VPOR         Y5, Y11, Y11
	VPSRLD       $8, Y6, Y6
	VPSRLVD      Y13, Y6, Y5
	VPAND        Y4, Y5, Y5
	VPSLLD       $4, Y5, Y5
	VPOR         Y5, Y12, Y12
	VCVTDQ2PS    Y9, Y9
	VMULPS       Y8, Y9, Y9
	VADDPS       Y7, Y9, Y9
	VCVTDQ2PS    Y10, Y10
	VMULPS       Y8, Y10, Y10
	VADDPS       Y7, Y10, Y10
	VCVTDQ2PS    Y11, Y11
	VMULPS       Y8, Y11, Y11
	VADDPS       Y7, Y11, Y11
	VCVTDQ2PS    Y12, Y12
	VMULPS       Y8, Y12, Y12
	VADDPS       Y7, Y12, Y12
	VFMADD231PS  (SI), Y9, Y0
	VFMADD231PS  32(SI), Y10, Y1
	VFMADD231PS  64(SI), Y11, Y2
	VFMADD231PS  96(SI), Y12, Y3
	ADDQ         $24, DI
	ADDQ         $128, SI
	SUBQ         $32, CX
	JMP          loop

reduce:
	R2REDUCE
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func decQ8_0AVX2(dst *float32, w *byte, n int); n%32 == 0
//
// dst[i] = float32(q[i])·d, one rounding, as ggml's dequantize_row_q8_0.
TEXT ·decQ8_0AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ n+16(FP), CX

q8loop:
	CMPQ         CX, $32
	JLT          q8done
	VPBROADCASTW (SI), X12
	VCVTPH2PS    X12, Y12
	VPMOVSXBD    2(SI), Y4
	VPMOVSXBD    10(SI), Y5
	VPMOVSXBD    18(SI), Y6
	VPMOVSXBD    26(SI), Y7
	VCVTDQ2PS    Y4, Y4
	VCVTDQ2PS    Y5, Y5
	VCVTDQ2PS    Y6, Y6
	VCVTDQ2PS    Y7, Y7
	VMULPS       Y12, Y4, Y4
	VMULPS       Y12, Y5, Y5
	VMULPS       Y12, Y6, Y6
	VMULPS       Y12, Y7, Y7
	VMOVUPS      Y4, (DI)
	VMOVUPS      Y5, 32(DI)
	VMOVUPS      Y6, 64(DI)
	VMOVUPS      Y7, 96(DI)
	ADDQ         $34, SI
	ADDQ         $128, DI
	SUBQ         $32, CX
	JMP          q8loop

q8done:
	VZEROUPPER
	RET

// func decF16AVX2(dst *float32, w *byte, n int); n%16 == 0
TEXT ·decF16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ n+16(FP), CX

f16loop:
	CMPQ      CX, $16
	JLT       f16done
	VCVTPH2PS (SI), Y4
	VCVTPH2PS 16(SI), Y5
	VMOVUPS   Y4, (DI)
	VMOVUPS   Y5, 32(DI)
	ADDQ      $32, SI
	ADDQ      $64, DI
	SUBQ      $16, CX
	JMP       f16loop

f16done:
	VZEROUPPER
	RET

// func decBF16AVX2(dst *float32, w *byte, n int); n%16 == 0
TEXT ·decBF16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ n+16(FP), CX

bf16loop:
	CMPQ      CX, $16
	JLT       bf16done
	VPMOVZXWD (SI), Y4
	VPMOVZXWD 16(SI), Y5
	VPSLLD    $16, Y4, Y4
	VPSLLD    $16, Y5, Y5
	VMOVUPS   Y4, (DI)
	VMOVUPS   Y5, 32(DI)
	ADDQ      $32, SI
	ADDQ      $64, DI
	SUBQ      $16, CX
	JMP       bf16loop

bf16done:
	VZEROUPPER
	RET
