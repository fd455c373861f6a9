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
