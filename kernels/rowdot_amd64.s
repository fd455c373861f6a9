//go:build !noasm

#include "textflag.h"

// Fused decode-and-dot of one activation row with one weight row stored as
// f16, bf16, int8 or Q4_0: the weights are widened to float32 in registers
// (exactly: every format here is a subset of float32 once its scale is
// applied) and FMA'd with the activations, so M=1 matrix products stream
// the weights once at their stored size.

DATA rdconst<>+0x00(SB)/4, $0x0000000f // nibble mask
DATA rdconst<>+0x04(SB)/4, $0x00000008 // Q4_0 zero point
GLOBL rdconst<>(SB), RODATA|NOPTR, $8

// q40tab is float32(q-8) for the sixteen Q4_0 nibbles q.
DATA q40tab<>+0x00(SB)/4, $-8.0
DATA q40tab<>+0x04(SB)/4, $-7.0
DATA q40tab<>+0x08(SB)/4, $-6.0
DATA q40tab<>+0x0c(SB)/4, $-5.0
DATA q40tab<>+0x10(SB)/4, $-4.0
DATA q40tab<>+0x14(SB)/4, $-3.0
DATA q40tab<>+0x18(SB)/4, $-2.0
DATA q40tab<>+0x1c(SB)/4, $-1.0
DATA q40tab<>+0x20(SB)/4, $0.0
DATA q40tab<>+0x24(SB)/4, $1.0
DATA q40tab<>+0x28(SB)/4, $2.0
DATA q40tab<>+0x2c(SB)/4, $3.0
DATA q40tab<>+0x30(SB)/4, $4.0
DATA q40tab<>+0x34(SB)/4, $5.0
DATA q40tab<>+0x38(SB)/4, $6.0
DATA q40tab<>+0x3c(SB)/4, $7.0
GLOBL q40tab<>(SB), RODATA|NOPTR, $64

// REDUCE512 sums Z0..Z3 into X0.
#define REDUCE512 \
	VADDPS        Z1, Z0, Z0 \
	VADDPS        Z3, Z2, Z2 \
	VADDPS        Z2, Z0, Z0 \
	VEXTRACTF64X4 $1, Z0, Y1 \
	VADDPS        Y1, Y0, Y0 \
	VEXTRACTF128  $1, Y0, X1 \
	VADDPS        X1, X0, X0 \
	VPERMILPS     $0x4e, X0, X1 \
	VADDPS        X1, X0, X0 \
	VPERMILPS     $0xb1, X0, X1 \
	VADDSS        X1, X0, X0

#define REDUCE256 \
	VADDPS       Y1, Y0, Y0 \
	VADDPS       Y3, Y2, Y2 \
	VADDPS       Y2, Y0, Y0 \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS       X1, X0, X0 \
	VPERMILPS    $0x4e, X0, X1 \
	VADDPS       X1, X0, X0 \
	VPERMILPS    $0xb1, X0, X1 \
	VADDSS       X1, X0, X0

// ROWDOT512 is the body of a 16-lane row dot: CONV(wo, z) loads 16 weights
// at byte offset wo of DI as floats into z; wstep is the byte size of 64
// weights.
#define ROWDOT512(CONV, wstep) \
	MOVQ   x+0(FP), SI          \
	MOVQ   w+8(FP), DI          \
	MOVQ   n+16(FP), CX         \
	VPXORD Z0, Z0, Z0           \
	VPXORD Z1, Z1, Z1           \
	VPXORD Z2, Z2, Z2           \
	VPXORD Z3, Z3, Z3           \
loop64:                         \
	CMPQ CX, $64                \
	JLT  loop16                 \
	CONV(0, Z4)                 \
	CONV(wstep/4, Z5)           \
	CONV(2*wstep/4, Z6)         \
	CONV(3*wstep/4, Z7)         \
	VFMADD231PS (SI), Z4, Z0    \
	VFMADD231PS 64(SI), Z5, Z1  \
	VFMADD231PS 128(SI), Z6, Z2 \
	VFMADD231PS 192(SI), Z7, Z3 \
	ADDQ $256, SI               \
	ADDQ $wstep, DI             \
	SUBQ $64, CX                \
	JMP  loop64                 \
loop16:                         \
	CMPQ CX, $16                \
	JLT  reduce                 \
	CONV(0, Z4)                 \
	VFMADD231PS (SI), Z4, Z0    \
	ADDQ $64, SI                \
	ADDQ $wstep/4, DI           \
	SUBQ $16, CX                \
	JMP  loop16                 \
reduce:                         \
	REDUCE512                   \
	VMOVSS X0, ret+24(FP)       \
	VZEROUPPER                  \
	RET

#define ROWDOT256(CONV, wstep) \
	MOVQ   x+0(FP), SI          \
	MOVQ   w+8(FP), DI          \
	MOVQ   n+16(FP), CX         \
	VXORPS Y0, Y0, Y0           \
	VXORPS Y1, Y1, Y1           \
	VXORPS Y2, Y2, Y2           \
	VXORPS Y3, Y3, Y3           \
loop32:                         \
	CMPQ CX, $32                \
	JLT  loop8                  \
	CONV(0, Y4)                 \
	CONV(wstep/4, Y5)           \
	CONV(2*wstep/4, Y6)         \
	CONV(3*wstep/4, Y7)         \
	VFMADD231PS (SI), Y4, Y0    \
	VFMADD231PS 32(SI), Y5, Y1  \
	VFMADD231PS 64(SI), Y6, Y2  \
	VFMADD231PS 96(SI), Y7, Y3  \
	ADDQ $128, SI               \
	ADDQ $wstep, DI             \
	SUBQ $32, CX                \
	JMP  loop32                 \
loop8:                          \
	CMPQ CX, $8                 \
	JLT  reduce                 \
	CONV(0, Y4)                 \
	VFMADD231PS (SI), Y4, Y0    \
	ADDQ $32, SI                \
	ADDQ $wstep/4, DI           \
	SUBQ $8, CX                 \
	JMP  loop8                  \
reduce:                         \
	REDUCE256                   \
	VMOVSS X0, ret+24(FP)       \
	VZEROUPPER                  \
	RET

#define CONVF16(o, z) VCVTPH2PS o(DI), z
#define CONVBF16(o, z) VPMOVZXWD o(DI), z; VPSLLD $16, z, z
#define CONVI8(o, z) VPMOVSXBD o(DI), z; VCVTDQ2PS z, z

// func dotF16AVX512(x *float32, w *byte, n int) float32; n%16 == 0
TEXT ·dotF16AVX512(SB), NOSPLIT, $0-28
	ROWDOT512(CONVF16, 128)

// func dotBF16AVX512(x *float32, w *byte, n int) float32; n%16 == 0
TEXT ·dotBF16AVX512(SB), NOSPLIT, $0-28
	ROWDOT512(CONVBF16, 128)

// func dotI8AVX512(x *float32, w *byte, n int) float32; n%16 == 0
TEXT ·dotI8AVX512(SB), NOSPLIT, $0-28
	ROWDOT512(CONVI8, 64)

// func dotF16AVX2(x *float32, w *byte, n int) float32; n%8 == 0
TEXT ·dotF16AVX2(SB), NOSPLIT, $0-28
	ROWDOT256(CONVF16, 64)

// func dotBF16AVX2(x *float32, w *byte, n int) float32; n%8 == 0
TEXT ·dotBF16AVX2(SB), NOSPLIT, $0-28
	ROWDOT256(CONVBF16, 64)

// func dotI8AVX2(x *float32, w *byte, n int) float32; n%8 == 0
TEXT ·dotI8AVX2(SB), NOSPLIT, $0-28
	ROWDOT256(CONVI8, 32)

// Q4_0 block (18 bytes): f16 scale d, then 16 bytes whose low nibbles are
// elements 0..15 and high nibbles elements 16..31; weight = (nibble−8)·d,
// exact in float32.

// Q40NIB512(w, lo, hi) leaves the 32 quants of the Q4_0 block at w as
// float32(q−8): elements 0..15 (low nibbles) in lo, 16..31 in hi (Z15 =
// q40tab; VPERMPS reads an index's low four bits, so the low nibble needs
// no mask).
#define Q40NIB512(w, lo, hi) \
	VPMOVZXBD 2(w), lo     \
	VPSRLD    $4, lo, hi   \
	VPERMPS   Z15, lo, lo  \
	VPERMPS   Z15, hi, hi

// Q40BLK512(yd, zd, lo, hi, acc) adds d·Σ(q−8)·x of the block at DI (x at
// SI) to acc and steps DI, SI and CX past it (yd: the Y register of zd).
#define Q40BLK512(yd, zd, lo, hi, acc) \
	VPBROADCASTW (DI), yd          \
	VCVTPH2PS    yd, zd            \
	Q40NIB512(DI, lo, hi)          \
	VMULPS       (SI), lo, lo      \
	VFMADD231PS  64(SI), hi, lo    \
	VFMADD231PS  lo, zd, acc       \
	ADDQ         $18, DI           \
	ADDQ         $128, SI          \
	SUBQ         $32, CX

// func dotQ4_0AVX512(x *float32, w *byte, n int) float32; n%32 == 0
TEXT ·dotQ4_0AVX512(SB), NOSPLIT, $0-28
	MOVQ    x+0(FP), SI
	MOVQ    w+8(FP), DI
	MOVQ    n+16(FP), CX
	VMOVUPS q40tab<>(SB), Z15
	VPXORD  Z0, Z0, Z0
	VPXORD  Z1, Z1, Z1
	VPXORD  Z2, Z2, Z2
	VPXORD  Z3, Z3, Z3

	// Per block: the 32 nibbles widened to dwords, each looked up as
	// float32(q-8) in q40tab, dotted with x, and the block's sum times d
	// added to the accumulator: d·Σ(q-8)x, one multiply by d a block
	// instead of one per element. Two blocks a step, into Z0 and Z2.
loop:
	CMPQ         CX, $32
	JLT          reduce
	Q40BLK512(Y8, Z8, Z9, Z10, Z0)
	CMPQ         CX, $32
	JLT          reduce
	Q40BLK512(Y11, Z11, Z12, Z13, Z2)
	JMP          loop

reduce:
	REDUCE512
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// Q40NIB256(w) widens the 32 quants of the Q4_0 block at w to dwords:
// elements 0..7, 8..15 (low nibbles) in Y9, Y10, 16..23, 24..31 (high
// nibbles) in Y11, Y12 (Y15 = the nibble mask).
#define Q40NIB256(w) \
	VPMOVZXBD 2(w), Y9      \
	VPMOVZXBD 10(w), Y10    \
	VPSRLD    $4, Y9, Y11   \
	VPSRLD    $4, Y10, Y12  \
	VPAND     Y15, Y9, Y9   \
	VPAND     Y15, Y10, Y10

// func dotQ4_0SumsAVX2(x, xs *float32, w *byte, n int) float32; n%32 == 0
//
// With xs[b] = Σ x over block b (simdSet.rowDotSums), a block's Σ(q−8)·x is
// Σq·x − 8·xs[b]: the quants need no subtraction, and the row's offsets
// are one scalar FMA a block, d·xs[b] into X7, times 8 at the end.
TEXT ·dotQ4_0SumsAVX2(SB), NOSPLIT, $0-36
	MOVQ         x+0(FP), SI
	MOVQ         xs+8(FP), R11
	MOVQ         w+16(FP), DI
	MOVQ         n+24(FP), CX
	VPBROADCASTD rdconst<>+0x00(SB), Y15
	VXORPS       Y0, Y0, Y0
	VXORPS       Y1, Y1, Y1
	VXORPS       Y2, Y2, Y2
	VXORPS       Y3, Y3, Y3
	VXORPS       X7, X7, X7

loop:
	CMPQ         CX, $32
	JLT          reduce
	VPBROADCASTW (DI), X8
	VCVTPH2PS    X8, Y8
	Q40NIB256(DI)
	VCVTDQ2PS    Y9, Y9
	VCVTDQ2PS    Y10, Y10
	VCVTDQ2PS    Y11, Y11
	VCVTDQ2PS    Y12, Y12
	VMULPS       (SI), Y9, Y9
	VFMADD231PS  32(SI), Y10, Y9
	VFMADD231PS  64(SI), Y11, Y9
	VFMADD231PS  96(SI), Y12, Y9
	VFMADD231PS  Y9, Y8, Y0
	VFMADD231SS  (R11), X8, X7
	ADDQ         $18, DI
	ADDQ         $128, SI
	ADDQ         $4, R11
	SUBQ         $32, CX
	JMP          loop

reduce:
	REDUCE256
	VADDSS X7, X7, X7
	VADDSS X7, X7, X7
	VADDSS X7, X7, X7
	VSUBSS X7, X0, X0
	VMOVSS X0, ret+32(FP)
	VZEROUPPER
	RET

// Q4_0 decoders for MatMul with M ≥ 2 (fillBlock): dst[i] = (q−8)·d, exact
// in float32, with d converted exactly (VCVTPH2PS), as quant.Dequantize
// converts it.

// func decQ4_0AVX512(dst *float32, w *byte, n int); n%32 == 0
TEXT ·decQ4_0AVX512(SB), NOSPLIT, $0-24
	MOVQ    dst+0(FP), DI
	MOVQ    w+8(FP), SI
	MOVQ    n+16(FP), CX
	VMOVUPS q40tab<>(SB), Z15

decloop:
	CMPQ         CX, $32
	JLT          decdone
	VPBROADCASTW (SI), Y8
	VCVTPH2PS    Y8, Z8
	Q40NIB512(SI, Z4, Z5)
	VMULPS       Z8, Z4, Z4
	VMULPS       Z8, Z5, Z5
	VMOVUPS      Z4, (DI)
	VMOVUPS      Z5, 64(DI)
	ADDQ         $18, SI
	ADDQ         $128, DI
	SUBQ         $32, CX
	JMP          decloop

decdone:
	VZEROUPPER
	RET

// func decQ4_0AVX2(dst *float32, w *byte, n int); n%32 == 0
TEXT ·decQ4_0AVX2(SB), NOSPLIT, $0-24
	MOVQ         dst+0(FP), DI
	MOVQ         w+8(FP), SI
	MOVQ         n+16(FP), CX
	VPBROADCASTD rdconst<>+0x00(SB), Y15
	VPBROADCASTD rdconst<>+0x04(SB), Y14

decloop:
	CMPQ         CX, $32
	JLT          decdone
	VPBROADCASTW (SI), X8
	VCVTPH2PS    X8, Y8
	Q40NIB256(SI)
	VPSUBD       Y14, Y9, Y9
	VPSUBD       Y14, Y10, Y10
	VPSUBD       Y14, Y11, Y11
	VPSUBD       Y14, Y12, Y12
	VCVTDQ2PS    Y9, Y9
	VCVTDQ2PS    Y10, Y10
	VCVTDQ2PS    Y11, Y11
	VCVTDQ2PS    Y12, Y12
	VMULPS       Y8, Y9, Y9
	VMULPS       Y8, Y10, Y10
	VMULPS       Y8, Y11, Y11
	VMULPS       Y8, Y12, Y12
	VMOVUPS      Y9, (DI)
	VMOVUPS      Y10, 32(DI)
	VMOVUPS      Y11, 64(DI)
	VMOVUPS      Y12, 96(DI)
	ADDQ         $18, SI
	ADDQ         $128, DI
	SUBQ         $32, CX
	JMP          decloop

decdone:
	VZEROUPPER
	RET
