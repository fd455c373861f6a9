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
DATA fp4const<>+0x08(SB)/4, $0x80808080 // 128 (unsigned bytes)
GLOBL fp4const<>(SB), RODATA|NOPTR, $12

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

// MX5SUM leaves hsum8(low half + high half of ZACC) in XACC's low float
// (EVEX forms: ZACC may be Z16–Z31).
#define MX5SUM(ZACC, YACC, XACC) \
	VEXTRACTF64X4 $1, ZACC, Y2 \
	VADDPS        Y2, YACC, YACC \
	VEXTRACTF32X4 $1, YACC, X2 \
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

// The MXFP4 × Q8_0 products for up to eight activation rows at once on
// AVX-512 VNNI (mxfp4p_amd64.go): mxfp4PairsVNNI512's lane sums and float
// order, with the activations made unsigned instead of the weights'
// magnitudes. mxfp4Pack stores each activation as x+128, so VPDPBUSD takes
// x+128 by the signed weight levels, and each lane sum starts from
// −128·Σ4 w, formed once per pair of weight blocks for all the rows: the
// int32 lane sums equal the sign trick's whenever no activation is −128.
// A pair of weight blocks is decoded once for all the rows; each row then
// costs seven instructions.
//
// Each pair step prefetches the row eight rows on (R14), 34 bytes a step:
// a row of a few KB is too short a stream for the hardware prefetcher.
//
// A packed activation pair (mxfp4PackBytes = 96 bytes): the two blocks'
// 64 quants + 128, then the even block's binary16 scale ×8 and the odd
// block's ×8. The rows of a group of T are interleaved by pair: row t of
// pair p at ((p·T)+t)·96.

// MXPW decodes the weight pair at SI: signed levels in Z6 (the even
// block's 32 then the odd block's, in element order), −128·Σ4 w in Z7,
// the blocks' half scales in Z3 (eight lanes each). Y8: fp4values.
#define MXPW \
	VMOVDQU       1(SI), X4 \
	VINSERTI128   $1, 18(SI), Y4, Y4 \
	VPSRLW        $4, Y4, Y1 \
	VPAND         Y15, Y4, Y4 \
	VPAND         Y15, Y1, Y1 \
	VPSHUFB       Y4, Y8, Y4 \
	VPSHUFB       Y1, Y8, Y1 \
	VINSERTI64X4  $1, Y1, Z4, Z4 \
	VSHUFI64X2    $0xd8, Z4, Z4, Z6 \
	VPXORD        Z1, Z1, Z1 \
	VPDPBUSD      Z6, Z14, Z1 \
	VPSUBD        Z1, Z13, Z7 \
	MOVBLZX       (SI), AX \
	VBROADCASTSS  (R10)(AX*4), Y3 \
	MOVBLZX       17(SI), AX \
	VBROADCASTSS  (R10)(AX*4), Y2 \
	VINSERTF64X4  $1, Y2, Z3, Z3

// MXPCOL adds the packed activation pair at X(R9) (scales at D) to ACC:
// ACC = fma(dx·dw, lanes, ACC) in each half.
#define MXPCOL(X, D, ACC) \
	VMOVDQU64   X(R9), Z2 \
	VMOVDQA64   Z7, Z1 \
	VPDPBUSD    Z6, Z2, Z1 \
	VCVTDQ2PS   Z1, Z1 \
	VCVTPH2PS   D(R9), Z5 \
	VMULPS      Z3, Z5, Z5 \
	VFMADD231PS Z1, Z5, ACC

// MXPSUM stores MX5SUM of ZACC at (AX) and moves AX one output row on
// (DX bytes).
#define MXPSUM(ZACC, YACC, XACC) \
	MX5SUM(ZACC, YACC, XACC) \
	VMOVSS XACC, (AX) \
	ADDQ   DX, AX

// func mxfp4Packed1VNNI512(w *byte, rb, nrows int, xp *byte, pairs int, out *float32, ldo int)
TEXT ·mxfp4Packed1VNNI512(SB), NOSPLIT, $0-56
	MOVQ           w+0(FP), DI
	MOVQ           nrows+16(FP), R11
	MOVQ           out+40(FP), R8
	MOVQ           ldo+48(FP), DX
	SHLQ           $2, DX
	LEAQ           ·e8m0HalfTable(SB), R10
	VBROADCASTI128 fp4values<>(SB), Y8
	VPBROADCASTD   fp4const<>+0x00(SB), Y15
	VPBROADCASTD   fp4const<>+0x08(SB), Z14
	VPXORD         Z13, Z13, Z13

p1row:
	TESTQ R11, R11
	JZ    p1done
	MOVQ  DI, SI
	MOVQ  xp+24(FP), R9
	MOVQ  pairs+32(FP), CX
	MOVQ  rb+8(FP), R14
	LEAQ  (DI)(R14*8), R14
	VPXORD Z16, Z16, Z16
	TESTQ CX, CX
	JZ    p1sum

p1blk:
	PREFETCHT0 (R14)
	ADDQ       $34, R14
	MXPW
	MXPCOL(0, 64, Z16)
	ADDQ $34, SI
	ADDQ $96, R9
	DECQ CX
	JNZ  p1blk

p1sum:
	MOVQ R8, AX
	MXPSUM(Z16, Y16, X16)
	ADDQ rb+8(FP), DI
	ADDQ $4, R8
	DECQ R11
	JMP  p1row

p1done:
	VZEROUPPER
	RET

// func mxfp4Packed2VNNI512(w *byte, rb, nrows int, xp *byte, pairs int, out *float32, ldo int)
TEXT ·mxfp4Packed2VNNI512(SB), NOSPLIT, $0-56
	MOVQ           w+0(FP), DI
	MOVQ           nrows+16(FP), R11
	MOVQ           out+40(FP), R8
	MOVQ           ldo+48(FP), DX
	SHLQ           $2, DX
	LEAQ           ·e8m0HalfTable(SB), R10
	VBROADCASTI128 fp4values<>(SB), Y8
	VPBROADCASTD   fp4const<>+0x00(SB), Y15
	VPBROADCASTD   fp4const<>+0x08(SB), Z14
	VPXORD         Z13, Z13, Z13

p2row:
	TESTQ R11, R11
	JZ    p2done
	MOVQ  DI, SI
	MOVQ  xp+24(FP), R9
	MOVQ  pairs+32(FP), CX
	MOVQ  rb+8(FP), R14
	LEAQ  (DI)(R14*8), R14
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	TESTQ CX, CX
	JZ    p2sum

p2blk:
	PREFETCHT0 (R14)
	ADDQ       $34, R14
	MXPW
	MXPCOL(0, 64, Z16)
	MXPCOL(96, 160, Z17)
	ADDQ $34, SI
	ADDQ $192, R9
	DECQ CX
	JNZ  p2blk

p2sum:
	MOVQ R8, AX
	MXPSUM(Z16, Y16, X16)
	MXPSUM(Z17, Y17, X17)
	ADDQ rb+8(FP), DI
	ADDQ $4, R8
	DECQ R11
	JMP  p2row

p2done:
	VZEROUPPER
	RET

// func mxfp4Packed3VNNI512(w *byte, rb, nrows int, xp *byte, pairs int, out *float32, ldo int)
TEXT ·mxfp4Packed3VNNI512(SB), NOSPLIT, $0-56
	MOVQ           w+0(FP), DI
	MOVQ           nrows+16(FP), R11
	MOVQ           out+40(FP), R8
	MOVQ           ldo+48(FP), DX
	SHLQ           $2, DX
	LEAQ           ·e8m0HalfTable(SB), R10
	VBROADCASTI128 fp4values<>(SB), Y8
	VPBROADCASTD   fp4const<>+0x00(SB), Y15
	VPBROADCASTD   fp4const<>+0x08(SB), Z14
	VPXORD         Z13, Z13, Z13

p3row:
	TESTQ R11, R11
	JZ    p3done
	MOVQ  DI, SI
	MOVQ  xp+24(FP), R9
	MOVQ  pairs+32(FP), CX
	MOVQ  rb+8(FP), R14
	LEAQ  (DI)(R14*8), R14
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	TESTQ CX, CX
	JZ    p3sum

p3blk:
	PREFETCHT0 (R14)
	ADDQ       $34, R14
	MXPW
	MXPCOL(0, 64, Z16)
	MXPCOL(96, 160, Z17)
	MXPCOL(192, 256, Z18)
	ADDQ $34, SI
	ADDQ $288, R9
	DECQ CX
	JNZ  p3blk

p3sum:
	MOVQ R8, AX
	MXPSUM(Z16, Y16, X16)
	MXPSUM(Z17, Y17, X17)
	MXPSUM(Z18, Y18, X18)
	ADDQ rb+8(FP), DI
	ADDQ $4, R8
	DECQ R11
	JMP  p3row

p3done:
	VZEROUPPER
	RET

// func mxfp4Packed4VNNI512(w *byte, rb, nrows int, xp *byte, pairs int, out *float32, ldo int)
TEXT ·mxfp4Packed4VNNI512(SB), NOSPLIT, $0-56
	MOVQ           w+0(FP), DI
	MOVQ           nrows+16(FP), R11
	MOVQ           out+40(FP), R8
	MOVQ           ldo+48(FP), DX
	SHLQ           $2, DX
	LEAQ           ·e8m0HalfTable(SB), R10
	VBROADCASTI128 fp4values<>(SB), Y8
	VPBROADCASTD   fp4const<>+0x00(SB), Y15
	VPBROADCASTD   fp4const<>+0x08(SB), Z14
	VPXORD         Z13, Z13, Z13

p4row:
	TESTQ R11, R11
	JZ    p4done
	MOVQ  DI, SI
	MOVQ  xp+24(FP), R9
	MOVQ  pairs+32(FP), CX
	MOVQ  rb+8(FP), R14
	LEAQ  (DI)(R14*8), R14
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	TESTQ CX, CX
	JZ    p4sum

p4blk:
	PREFETCHT0 (R14)
	ADDQ       $34, R14
	MXPW
	MXPCOL(0, 64, Z16)
	MXPCOL(96, 160, Z17)
	MXPCOL(192, 256, Z18)
	MXPCOL(288, 352, Z19)
	ADDQ $34, SI
	ADDQ $384, R9
	DECQ CX
	JNZ  p4blk

p4sum:
	MOVQ R8, AX
	MXPSUM(Z16, Y16, X16)
	MXPSUM(Z17, Y17, X17)
	MXPSUM(Z18, Y18, X18)
	MXPSUM(Z19, Y19, X19)
	ADDQ rb+8(FP), DI
	ADDQ $4, R8
	DECQ R11
	JMP  p4row

p4done:
	VZEROUPPER
	RET

// func mxfp4Packed5VNNI512(w *byte, rb, nrows int, xp *byte, pairs int, out *float32, ldo int)
TEXT ·mxfp4Packed5VNNI512(SB), NOSPLIT, $0-56
	MOVQ           w+0(FP), DI
	MOVQ           nrows+16(FP), R11
	MOVQ           out+40(FP), R8
	MOVQ           ldo+48(FP), DX
	SHLQ           $2, DX
	LEAQ           ·e8m0HalfTable(SB), R10
	VBROADCASTI128 fp4values<>(SB), Y8
	VPBROADCASTD   fp4const<>+0x00(SB), Y15
	VPBROADCASTD   fp4const<>+0x08(SB), Z14
	VPXORD         Z13, Z13, Z13

p5row:
	TESTQ R11, R11
	JZ    p5done
	MOVQ  DI, SI
	MOVQ  xp+24(FP), R9
	MOVQ  pairs+32(FP), CX
	MOVQ  rb+8(FP), R14
	LEAQ  (DI)(R14*8), R14
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	TESTQ CX, CX
	JZ    p5sum

p5blk:
	PREFETCHT0 (R14)
	ADDQ       $34, R14
	MXPW
	MXPCOL(0, 64, Z16)
	MXPCOL(96, 160, Z17)
	MXPCOL(192, 256, Z18)
	MXPCOL(288, 352, Z19)
	MXPCOL(384, 448, Z20)
	ADDQ $34, SI
	ADDQ $480, R9
	DECQ CX
	JNZ  p5blk

p5sum:
	MOVQ R8, AX
	MXPSUM(Z16, Y16, X16)
	MXPSUM(Z17, Y17, X17)
	MXPSUM(Z18, Y18, X18)
	MXPSUM(Z19, Y19, X19)
	MXPSUM(Z20, Y20, X20)
	ADDQ rb+8(FP), DI
	ADDQ $4, R8
	DECQ R11
	JMP  p5row

p5done:
	VZEROUPPER
	RET

// func mxfp4Packed6VNNI512(w *byte, rb, nrows int, xp *byte, pairs int, out *float32, ldo int)
TEXT ·mxfp4Packed6VNNI512(SB), NOSPLIT, $0-56
	MOVQ           w+0(FP), DI
	MOVQ           nrows+16(FP), R11
	MOVQ           out+40(FP), R8
	MOVQ           ldo+48(FP), DX
	SHLQ           $2, DX
	LEAQ           ·e8m0HalfTable(SB), R10
	VBROADCASTI128 fp4values<>(SB), Y8
	VPBROADCASTD   fp4const<>+0x00(SB), Y15
	VPBROADCASTD   fp4const<>+0x08(SB), Z14
	VPXORD         Z13, Z13, Z13

p6row:
	TESTQ R11, R11
	JZ    p6done
	MOVQ  DI, SI
	MOVQ  xp+24(FP), R9
	MOVQ  pairs+32(FP), CX
	MOVQ  rb+8(FP), R14
	LEAQ  (DI)(R14*8), R14
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	TESTQ CX, CX
	JZ    p6sum

p6blk:
	PREFETCHT0 (R14)
	ADDQ       $34, R14
	MXPW
	MXPCOL(0, 64, Z16)
	MXPCOL(96, 160, Z17)
	MXPCOL(192, 256, Z18)
	MXPCOL(288, 352, Z19)
	MXPCOL(384, 448, Z20)
	MXPCOL(480, 544, Z21)
	ADDQ $34, SI
	ADDQ $576, R9
	DECQ CX
	JNZ  p6blk

p6sum:
	MOVQ R8, AX
	MXPSUM(Z16, Y16, X16)
	MXPSUM(Z17, Y17, X17)
	MXPSUM(Z18, Y18, X18)
	MXPSUM(Z19, Y19, X19)
	MXPSUM(Z20, Y20, X20)
	MXPSUM(Z21, Y21, X21)
	ADDQ rb+8(FP), DI
	ADDQ $4, R8
	DECQ R11
	JMP  p6row

p6done:
	VZEROUPPER
	RET

// func mxfp4Packed7VNNI512(w *byte, rb, nrows int, xp *byte, pairs int, out *float32, ldo int)
TEXT ·mxfp4Packed7VNNI512(SB), NOSPLIT, $0-56
	MOVQ           w+0(FP), DI
	MOVQ           nrows+16(FP), R11
	MOVQ           out+40(FP), R8
	MOVQ           ldo+48(FP), DX
	SHLQ           $2, DX
	LEAQ           ·e8m0HalfTable(SB), R10
	VBROADCASTI128 fp4values<>(SB), Y8
	VPBROADCASTD   fp4const<>+0x00(SB), Y15
	VPBROADCASTD   fp4const<>+0x08(SB), Z14
	VPXORD         Z13, Z13, Z13

p7row:
	TESTQ R11, R11
	JZ    p7done
	MOVQ  DI, SI
	MOVQ  xp+24(FP), R9
	MOVQ  pairs+32(FP), CX
	MOVQ  rb+8(FP), R14
	LEAQ  (DI)(R14*8), R14
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	TESTQ CX, CX
	JZ    p7sum

p7blk:
	PREFETCHT0 (R14)
	ADDQ       $34, R14
	MXPW
	MXPCOL(0, 64, Z16)
	MXPCOL(96, 160, Z17)
	MXPCOL(192, 256, Z18)
	MXPCOL(288, 352, Z19)
	MXPCOL(384, 448, Z20)
	MXPCOL(480, 544, Z21)
	MXPCOL(576, 640, Z22)
	ADDQ $34, SI
	ADDQ $672, R9
	DECQ CX
	JNZ  p7blk

p7sum:
	MOVQ R8, AX
	MXPSUM(Z16, Y16, X16)
	MXPSUM(Z17, Y17, X17)
	MXPSUM(Z18, Y18, X18)
	MXPSUM(Z19, Y19, X19)
	MXPSUM(Z20, Y20, X20)
	MXPSUM(Z21, Y21, X21)
	MXPSUM(Z22, Y22, X22)
	ADDQ rb+8(FP), DI
	ADDQ $4, R8
	DECQ R11
	JMP  p7row

p7done:
	VZEROUPPER
	RET

// func mxfp4Packed8VNNI512(w *byte, rb, nrows int, xp *byte, pairs int, out *float32, ldo int)
TEXT ·mxfp4Packed8VNNI512(SB), NOSPLIT, $0-56
	MOVQ           w+0(FP), DI
	MOVQ           nrows+16(FP), R11
	MOVQ           out+40(FP), R8
	MOVQ           ldo+48(FP), DX
	SHLQ           $2, DX
	LEAQ           ·e8m0HalfTable(SB), R10
	VBROADCASTI128 fp4values<>(SB), Y8
	VPBROADCASTD   fp4const<>+0x00(SB), Y15
	VPBROADCASTD   fp4const<>+0x08(SB), Z14
	VPXORD         Z13, Z13, Z13

p8row:
	TESTQ R11, R11
	JZ    p8done
	MOVQ  DI, SI
	MOVQ  xp+24(FP), R9
	MOVQ  pairs+32(FP), CX
	MOVQ  rb+8(FP), R14
	LEAQ  (DI)(R14*8), R14
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23
	TESTQ CX, CX
	JZ    p8sum

p8blk:
	PREFETCHT0 (R14)
	ADDQ       $34, R14
	MXPW
	MXPCOL(0, 64, Z16)
	MXPCOL(96, 160, Z17)
	MXPCOL(192, 256, Z18)
	MXPCOL(288, 352, Z19)
	MXPCOL(384, 448, Z20)
	MXPCOL(480, 544, Z21)
	MXPCOL(576, 640, Z22)
	MXPCOL(672, 736, Z23)
	ADDQ $34, SI
	ADDQ $768, R9
	DECQ CX
	JNZ  p8blk

p8sum:
	MOVQ R8, AX
	MXPSUM(Z16, Y16, X16)
	MXPSUM(Z17, Y17, X17)
	MXPSUM(Z18, Y18, X18)
	MXPSUM(Z19, Y19, X19)
	MXPSUM(Z20, Y20, X20)
	MXPSUM(Z21, Y21, X21)
	MXPSUM(Z22, Y22, X22)
	MXPSUM(Z23, Y23, X23)
	ADDQ rb+8(FP), DI
	ADDQ $4, R8
	DECQ R11
	JMP  p8row

p8done:
	VZEROUPPER
	RET
