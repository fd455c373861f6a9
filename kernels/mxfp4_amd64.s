//go:build !noasm

#include "textflag.h"

// The MXFP4 × Q8_0 dot product for AVX2 (mxfp4_amd64.go): ggml's
// ggml_vec_dot_mxfp4_q8_0 over pairs of blocks, the even blocks summed in
// Y0 and the odd ones in Y7, each block's 32 E2M1 levels looked up with
// VPSHUFB and multiplied by the activations with VPMADDUBSW's sign trick
// (|w| by x·sign(w): |w| ≤ 12, so no int16 sum saturates).

// ggml's kvalues_mxfp4: the E2M1 values doubled, by nibble.
DATA fp4values<>+0x00(SB)/8, $0x0c08060403020100
DATA fp4values<>+0x08(SB)/8, $0xf4f8fafcfdfeff00
GLOBL fp4values<>(SB), RODATA|NOPTR, $16

DATA fp4const<>+0x00(SB)/4, $0x0f0f0f0f // nibble mask
DATA fp4const<>+0x04(SB)/4, $0x00010001 // int16 ones
GLOBL fp4const<>(SB), RODATA|NOPTR, $8

// MXBLK sums one block (weights at WO(SI), 17 bytes: E8M0 scale then 16
// bytes of nibbles; activations at XO(R9), 34 bytes: f16 scale then 32
// int8) into ACC: ACC = fma(dx·dw, lanes, ACC).
#define MXBLK(WO, XO, ACC) \
	VMOVDQU      WO+1(SI), X4 \
	VPSRLW       $4, X4, X5 \
	VPAND        X15, X4, X4 \
	VPAND        X15, X5, X5 \
	VPSHUFB      X4, X8, X4 \
	VPSHUFB      X5, X8, X5 \
	VINSERTI128  $1, X5, Y4, Y4 \
	VMOVDQU      XO+2(R9), Y2 \
	VPSIGNB      Y4, Y4, Y6 \
	VPSIGNB      Y4, Y2, Y2 \
	VPMADDUBSW   Y2, Y6, Y1 \
	VPMADDWD     Y13, Y1, Y1 \
	VCVTDQ2PS    Y1, Y1 \
	MOVWLZX      XO(R9), AX \
	VMOVSS       (R12)(AX*4), X3 \
	MOVBLZX      WO(SI), AX \
	VMULSS       (R10)(AX*4), X3, X3 \
	VBROADCASTSS X3, Y3 \
	VFMADD231PS  Y1, Y3, ACC

// func mxfp4PairsAVX2(w *byte, rb, nrows int, xa *byte, pairs int, out *float32)
//
// out[r] = hsum8(acc_even + acc_odd) over the first 2·pairs blocks of
// weight row r (rows rb bytes apart) against the activation row xa.
TEXT ·mxfp4PairsAVX2(SB), NOSPLIT, $0-48
	MOVQ         w+0(FP), DI
	MOVQ         nrows+16(FP), R11
	MOVQ         out+40(FP), R8
	LEAQ         ·f16Table(SB), R12
	LEAQ         ·e8m0HalfTable(SB), R10
	VMOVDQU      fp4values<>(SB), X8
	VPBROADCASTD fp4const<>+0x00(SB), Y15
	VPBROADCASTD fp4const<>+0x04(SB), Y13

mxrow:
	TESTQ  R11, R11
	JZ     mxdone
	MOVQ   DI, SI
	MOVQ   xa+24(FP), R9
	MOVQ   pairs+32(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y7, Y7, Y7
	TESTQ  CX, CX
	JZ     mxsum

mxblk:
	MXBLK(0, 0, Y0)
	MXBLK(17, 34, Y7)
	ADDQ $34, SI
	ADDQ $68, R9
	DECQ CX
	JNZ  mxblk

mxsum:
	VADDPS       Y7, Y0, Y0
	VEXTRACTF128 $1, Y0, X3
	VADDPS       X3, X0, X0
	VPERMILPS    $0x4e, X0, X3
	VADDPS       X3, X0, X0
	VPERMILPS    $0xb1, X0, X3
	VADDSS       X3, X0, X0
	VMOVSS       X0, (R8)
	ADDQ         rb+8(FP), DI
	ADDQ         $4, R8
	DECQ         R11
	JMP          mxrow

mxdone:
	VZEROUPPER
	RET

// MXW decodes the block at WO(SI) for MXCOL: its doubled E2M1 levels in Y4
// (low nibbles in the low lane, high nibbles in the high one, as MXBLK
// orders them), their magnitudes in Y6.
#define MXW(WO) \
	VMOVDQU     WO+1(SI), X4 \
	VPSRLW      $4, X4, X1 \
	VPAND       X15, X4, X4 \
	VPAND       X15, X1, X1 \
	VPSHUFB     X4, X8, X4 \
	VPSHUFB     X1, X8, X1 \
	VINSERTI128 $1, X1, Y4, Y4 \
	VPSIGNB     Y4, Y4, Y6

// MXCOL is MXBLK's product for the activation block at XO(R) with the
// weights MXW decoded: ACC = fma(dx·dw, lanes, ACC), the same operations
// in the same order.
#define MXCOL(WO, XO, R, ACC) \
	VMOVDQU      XO+2(R), Y2 \
	VPSIGNB      Y4, Y2, Y2 \
	VPMADDUBSW   Y2, Y6, Y1 \
	VPMADDWD     Y13, Y1, Y1 \
	VCVTDQ2PS    Y1, Y1 \
	MOVWLZX      XO(R), AX \
	VMOVSS       (R12)(AX*4), X3 \
	MOVBLZX      WO(SI), AX \
	VMULSS       (R10)(AX*4), X3, X3 \
	VBROADCASTSS X3, Y3 \
	VFMADD231PS  Y1, Y3, ACC

// MXSUM leaves hsum8(EVEN + ODD) in EVEN's low float (XE), as mxsum does.
#define MXSUM(EVEN, ODD, XE) \
	VADDPS       ODD, EVEN, EVEN \
	VEXTRACTF128 $1, EVEN, X3 \
	VADDPS       X3, XE, XE \
	VPERMILPS    $0x4e, XE, X3 \
	VADDPS       X3, XE, XE \
	VPERMILPS    $0xb1, XE, X3 \
	VADDSS       X3, XE, XE

// func mxfp4Pairs4AVX2(w *byte, rb, nrows int, xa *byte, arb, pairs int, out *float32, ldo int)
//
// mxfp4PairsAVX2 for four activation rows (arb bytes apart) at once, each
// weight block decoded once for the four: out[m·ldo + r] is row r against
// activation row m, each summed in its own even and odd accumulators
// (Y0/Y10, Y5/Y11, Y7/Y12, Y9/Y14) as the one-row kernel sums it.
TEXT ·mxfp4Pairs4AVX2(SB), NOSPLIT, $0-64
	MOVQ         w+0(FP), DI
	MOVQ         nrows+16(FP), R11
	MOVQ         out+48(FP), R8
	MOVQ         ldo+56(FP), DX
	SHLQ         $2, DX
	LEAQ         ·f16Table(SB), R12
	LEAQ         ·e8m0HalfTable(SB), R10
	VMOVDQU      fp4values<>(SB), X8
	VPBROADCASTD fp4const<>+0x00(SB), Y15
	VPBROADCASTD fp4const<>+0x04(SB), Y13

mx4row:
	TESTQ  R11, R11
	JZ     mx4done
	MOVQ   DI, SI
	MOVQ   xa+24(FP), R9
	MOVQ   arb+32(FP), AX
	LEAQ   (R9)(AX*1), BX
	LEAQ   (BX)(AX*1), R13
	LEAQ   (R13)(AX*1), R14
	MOVQ   pairs+40(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y5, Y5, Y5
	VXORPS Y7, Y7, Y7
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	VXORPS Y12, Y12, Y12
	VXORPS Y14, Y14, Y14
	TESTQ  CX, CX
	JZ     mx4sum

mx4blk:
	MXW(0)
	MXCOL(0, 0, R9, Y0)
	MXCOL(0, 0, BX, Y5)
	MXCOL(0, 0, R13, Y7)
	MXCOL(0, 0, R14, Y9)
	MXW(17)
	MXCOL(17, 34, R9, Y10)
	MXCOL(17, 34, BX, Y11)
	MXCOL(17, 34, R13, Y12)
	MXCOL(17, 34, R14, Y14)
	ADDQ $34, SI
	ADDQ $68, R9
	ADDQ $68, BX
	ADDQ $68, R13
	ADDQ $68, R14
	DECQ CX
	JNZ  mx4blk

mx4sum:
	MXSUM(Y0, Y10, X0)
	VMOVSS X0, (R8)
	MXSUM(Y5, Y11, X5)
	VMOVSS X5, (R8)(DX*1)
	LEAQ   (R8)(DX*2), AX
	MXSUM(Y7, Y12, X7)
	VMOVSS X7, (AX)
	MXSUM(Y9, Y14, X9)
	VMOVSS X9, (AX)(DX*1)
	ADDQ   rb+8(FP), DI
	ADDQ   $4, R8
	DECQ   R11
	JMP    mx4row

mx4done:
	VZEROUPPER
	RET

// The AVX-512 VNNI kernels below hold a pair of blocks in one register:
// the even block in the low 256 bits, the odd one in the high 256, so
// that one accumulator's halves are mxfp4PairsAVX2's Y0 and Y7 lane for
// lane. VPDPBUSD of |w| and x·sign(w) forms the same int32 lane sums as
// VPMADDUBSW and VPMADDWD (|w| ≤ 12: nothing saturates); the sign is
// applied by a masked VPSUBB from zero, which wraps −(−128) to −128 as
// VPSIGNB does.

// MX5W decodes the pair at SI: levels in Z4 (even block's 32 then the odd
// block's, in MXBLK's element order), magnitudes in Z6, signs in K1, and
// the blocks' half scales in Z3 (eight lanes each).
#define MX5W \
	VMOVDQU        1(SI), X4 \
	VINSERTI128    $1, 18(SI), Y4, Y4 \
	VPSRLW         $4, Y4, Y1 \
	VPAND          Y15, Y4, Y4 \
	VPAND          Y15, Y1, Y1 \
	VPSHUFB        Y4, Y8, Y4 \
	VPSHUFB        Y1, Y8, Y1 \
	VINSERTI64X4   $1, Y1, Z4, Z4 \
	VSHUFI64X2     $0xd8, Z4, Z4, Z4 \
	VPABSB         Z4, Z6 \
	VPMOVB2M       Z4, K1 \
	MOVBLZX        (SI), AX \
	VBROADCASTSS   (R10)(AX*4), Y3 \
	MOVBLZX        17(SI), AX \
	VBROADCASTSS   (R10)(AX*4), Y2 \
	VINSERTF64X4   $1, Y2, Z3, Z3

// MX5COL adds the pair of activation blocks at R (68 bytes) to ACC:
// ACC = fma(dx·dw, lanes, ACC) in each half.
#define MX5COL(R, ACC) \
	VMOVDQU        2(R), Y2 \
	VINSERTI64X4   $1, 36(R), Z2, Z2 \
	VPSUBB         Z2, Z16, K1, Z2 \
	VPXORD         Z1, Z1, Z1 \
	VPDPBUSD       Z2, Z6, Z1 \
	VCVTDQ2PS      Z1, Z1 \
	VPBROADCASTW   (R), X5 \
	VPBROADCASTW   34(R), X7 \
	VINSERTI128    $1, X7, Y5, Y5 \
	VCVTPH2PS      Y5, Z5 \
	VMULPS         Z3, Z5, Z5 \
	VFMADD231PS    Z1, Z5, ACC

// MX5SUM leaves hsum8(low half + high half of ZACC) in XACC's low float.
#define MX5SUM(ZACC, YACC, XACC) \
	VEXTRACTF64X4 $1, ZACC, Y2 \
	VADDPS        Y2, YACC, YACC \
	VEXTRACTF128  $1, YACC, X2 \
	VADDPS        X2, XACC, XACC \
	VPERMILPS     $0x4e, XACC, X2 \
	VADDPS        X2, XACC, XACC \
	VPERMILPS     $0xb1, XACC, X2 \
	VADDSS        X2, XACC, XACC

#define MX5START \
	MOVQ           w+0(FP), DI \
	MOVQ           nrows+16(FP), R11 \
	LEAQ           ·e8m0HalfTable(SB), R10 \
	VBROADCASTI128 fp4values<>(SB), Y8 \
	VPBROADCASTD   fp4const<>+0x00(SB), Y15 \
	VPXORD         Z16, Z16, Z16

// func mxfp4PairsVNNI512(w *byte, rb, nrows int, xa *byte, pairs int, out *float32)
//
// mxfp4PairsAVX2's results (the same bits) on AVX-512 VNNI.
TEXT ·mxfp4PairsVNNI512(SB), NOSPLIT, $0-48
	MX5START
	MOVQ out+40(FP), R8

mx5row:
	TESTQ  R11, R11
	JZ     mx5done
	MOVQ   DI, SI
	MOVQ   xa+24(FP), R9
	MOVQ   pairs+32(FP), CX
	VPXORD Z9, Z9, Z9
	TESTQ  CX, CX
	JZ     mx5sum

mx5blk:
	MX5W
	MX5COL(R9, Z9)
	ADDQ $34, SI
	ADDQ $68, R9
	DECQ CX
	JNZ  mx5blk

mx5sum:
	MX5SUM(Z9, Y9, X9)
	VMOVSS X9, (R8)
	ADDQ   rb+8(FP), DI
	ADDQ   $4, R8
	DECQ   R11
	JMP    mx5row

mx5done:
	VZEROUPPER
	RET

// func mxfp4Pairs4VNNI512(w *byte, rb, nrows int, xa *byte, arb, pairs int, out *float32, ldo int)
//
// mxfp4Pairs4AVX2's results (the same bits) on AVX-512 VNNI.
TEXT ·mxfp4Pairs4VNNI512(SB), NOSPLIT, $0-64
	MX5START
	MOVQ out+48(FP), R8
	MOVQ ldo+56(FP), DX
	SHLQ $2, DX

mx54row:
	TESTQ  R11, R11
	JZ     mx54done
	MOVQ   DI, SI
	MOVQ   xa+24(FP), R9
	MOVQ   arb+32(FP), AX
	LEAQ   (R9)(AX*1), BX
	LEAQ   (BX)(AX*1), R13
	LEAQ   (R13)(AX*1), R14
	MOVQ   pairs+40(FP), CX
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	TESTQ  CX, CX
	JZ     mx54sum

mx54blk:
	MX5W
	MX5COL(R9, Z9)
	MX5COL(BX, Z10)
	MX5COL(R13, Z11)
	MX5COL(R14, Z12)
	ADDQ $34, SI
	ADDQ $68, R9
	ADDQ $68, BX
	ADDQ $68, R13
	ADDQ $68, R14
	DECQ CX
	JNZ  mx54blk

mx54sum:
	MX5SUM(Z9, Y9, X9)
	VMOVSS X9, (R8)
	MX5SUM(Z10, Y10, X10)
	VMOVSS X10, (R8)(DX*1)
	LEAQ   (R8)(DX*2), AX
	MX5SUM(Z11, Y11, X11)
	VMOVSS X11, (AX)
	MX5SUM(Z12, Y12, X12)
	VMOVSS X12, (AX)(DX*1)
	ADDQ   rb+8(FP), DI
	ADDQ   $4, R8
	DECQ   R11
	JMP    mx54row

mx54done:
	VZEROUPPER
	RET
