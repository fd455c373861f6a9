//go:build !noasm

#include "textflag.h"
#include "k4utmp_amd64.h"

// MatMulQ kernels for AVX-512 VNNI (+BW, VL); layouts and the reasoning in
// qgemm_amd64.go. Every kernel forms ggml's exact int32 lane sums with
// VPDPBUSD (unsigned × signed bytes, the lane started at the offset
// correction), converts them with VCVTDQ2PS and accumulates
// acc = fma(d, lane, acc) block after block, then adds the eight lanes as
// ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)): the float32 operations of
// qdot.go in its order.

DATA qgconst<>+0x00(SB)/4, $0x80808080 // byte offset 128
DATA qgconst<>+0x04(SB)/4, $0x0f0f0f0f // nibble mask
DATA qgconst<>+0x08(SB)/4, $0x08080808 // Q4_0 zero point
// VPSRLVW counts for [row lo | row hi | row' lo | row' hi]: 0 on the low
// nibbles' 128-bit lanes, 4 on the high ones'.
DATA qgconst<>+0x10(SB)/8, $0
DATA qgconst<>+0x18(SB)/8, $0
DATA qgconst<>+0x20(SB)/8, $0x0004000400040004
DATA qgconst<>+0x28(SB)/8, $0x0004000400040004
DATA qgconst<>+0x30(SB)/8, $0
DATA qgconst<>+0x38(SB)/8, $0
DATA qgconst<>+0x40(SB)/8, $0x0004000400040004
DATA qgconst<>+0x48(SB)/8, $0x0004000400040004
DATA qgconst<>+0x50(SB)/4, $0x42fe0000 // 127.0
DATA qgconst<>+0x54(SB)/4, $0x7fffffff // |x| mask
// 0..15: the activation rows of a panel, times ldc for the scatter.
DATA qgconst<>+0x60(SB)/8, $0x0000000100000000
DATA qgconst<>+0x68(SB)/8, $0x0000000300000002
DATA qgconst<>+0x70(SB)/8, $0x0000000500000004
DATA qgconst<>+0x78(SB)/8, $0x0000000700000006
DATA qgconst<>+0x80(SB)/8, $0x0000000900000008
DATA qgconst<>+0x88(SB)/8, $0x0000000b0000000a
DATA qgconst<>+0x90(SB)/8, $0x0000000d0000000c
DATA qgconst<>+0x98(SB)/8, $0x0000000f0000000e
GLOBL qgconst<>(SB), RODATA|NOPTR, $0xa0

// STEP adds lane l of one weight row (prepared: q at 4l, correction at
// 32+4l from R) times the 16 activation rows in Z27 to acc:
// T = corr + Σ(x+128)·q = Σx·q, acc = fma(D, float(T), acc).
#define STEP(l, R, T, D, ACC) \
	VPBROADCASTD  (32+4*l)(R), T \
	VPDPBUSD.BCST (4*l)(R), Z27, T \
	VCVTDQ2PS     T, T \
	VFMADD231PS   T, D, ACC

#define LANE3(l, A0, A1, A2) \
	VMOVDQU32 (64*l)(SI), Z27 \
	STEP(l, DI, Z28, Z24, A0) \
	STEP(l, R8, Z29, Z25, A1) \
	STEP(l, R9, Z30, Z26, A2)

// CLANE3 adds lane l of the activations times three chain-prepared weight
// rows to the int32 partial block sums A, B, C (four per row, Z3–Z6,
// Z7–Z10, Z11–Z14, so that no VPDPBUSD waits on the one before).
#define CLANE3(l, A, B, C) \
	VMOVDQU32     (64*l)(SI), Z27 \
	VPDPBUSD.BCST (4*l)(DI), Z27, A \
	VPDPBUSD.BCST (4*l)(R8), Z27, B \
	VPDPBUSD.BCST (4*l)(R9), Z27, C

// CSUM4 leaves A+B+C+D in A.
#define CSUM4(A, B, C, D) \
	VPADDD B, A, A \
	VPADDD D, C, C \
	VPADDD C, A, A

#define LANE2(l, A0, A1) \
	VMOVDQU32 (64*l)(SI), Z27 \
	STEP(l, DI, Z28, Z24, A0) \
	STEP(l, R8, Z29, Z25, A1)

// REDUCE8 leaves ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)) in OUT.
#define REDUCE8(a0, a1, a2, a3, a4, a5, a6, a7, OUT, TMP1, TMP2) \
	VADDPS a4, a0, OUT \
	VADDPS a6, a2, TMP1 \
	VADDPS TMP1, OUT, OUT \
	VADDPS a5, a1, TMP1 \
	VADDPS a7, a3, TMP2 \
	VADDPS TMP2, TMP1, TMP1 \
	VADDPS TMP1, OUT, OUT

// GEMM3START loads the arguments of the three-row tile kernels: weight
// rows DI, R8, R9, their scales R10, R11, R12, the panel SI, nb CX, the
// output DX and the prefetch cursor R13. GEMM3BLOCK starts a block: two
// lines prefetched, the three rows' dw·dx for the 16 panel rows in
// Z24–Z26. GEMM3NEXT steps the cursors a block.
#define GEMM3START \
	MOVQ w+0(FP), DI \
	MOVQ wstride+8(FP), AX \
	MOVQ doff+16(FP), BX \
	MOVQ xp+24(FP), SI \
	MOVQ nb+32(FP), CX \
	MOVQ out+40(FP), DX \
	LEAQ (DI)(AX*1), R8 \
	LEAQ (R8)(AX*1), R9 \
	LEAQ (DI)(BX*1), R10 \
	LEAQ (R8)(BX*1), R11 \
	LEAQ (R9)(BX*1), R12 \
	MOVQ pf+72(FP), R13

#define GEMM3BLOCK \
	PREFETCHT0  (R13) \
	PREFETCHT0  64(R13) \
	ADDQ        $128, R13 \
	VMOVUPS     512(SI), Z31 \
	VMULPS.BCST (R10), Z31, Z24 \
	VMULPS.BCST (R11), Z31, Z25 \
	VMULPS.BCST (R12), Z31, Z26

#define GEMM3NEXT \
	ADDQ $576, SI \
	ADDQ $64, DI \
	ADDQ $64, R8 \
	ADDQ $64, R9 \
	ADDQ $4, R10 \
	ADDQ $4, R11 \
	ADDQ $4, R12 \
	DECQ CX

// GEMMOUTSETUP loads the scatter indices j·ldc into Z30, the mask of the
// nj valid panel rows into BX and ni into R11 (the loop is done with them).
#define GEMMOUTSETUP \
	VPBROADCASTD ldc+48(FP), Z31 \
	VPMULLD      qgconst<>+0x60(SB), Z31, Z30 \
	MOVQ         nj+56(FP), CX \
	MOVL         $1, BX \
	SHLL         CX, BX \
	DECL         BX \
	MOVQ         ni+64(FP), R11

// GEMMOUT writes the 16 outputs of one weight row, out[j*ldc] for the
// valid j, from Z.
#define GEMMOUT(Z) \
	KMOVW       BX, K1 \
	VSCATTERDPS Z, K1, (DX)(Z30*4)

// PREPCORR writes the lane corrections −128·Σ4 q of the 32 signed bytes
// in Y0 to 32(DI); Y7 holds the bytes 0x80, Y6 zero.
#define PREPCORR \
	VPXORD   Y1, Y1, Y1 \
	VPDPBUSD Y0, Y7, Y1 \
	VPSUBD   Y1, Y6, Y1 \
	VMOVDQU  Y1, 32(DI)

// P4START, P4UNPACK and P4NEXT make the loop of the Q4_0 weight-row
// preparations: DI the prepared blocks, SI the Q4_0 blocks, R9 the scales after
// them; P4UNPACK writes q = nibble − 8 (low nibbles first) from Y0.
#define P4START \
	MOVQ         dst+0(FP), DI \
	MOVQ         w+8(FP), SI \
	MOVQ         nb+16(FP), CX \
	LEAQ         ·f16Table(SB), R8 \
	MOVQ         CX, R9 \
	SHLQ         $6, R9 \
	ADDQ         DI, R9 \
	VPBROADCASTD qgconst<>+0x00(SB), Y7 \
	VPBROADCASTD qgconst<>+0x04(SB), Y5 \
	VPBROADCASTD qgconst<>+0x08(SB), Y4 \
	VPXORD       Y6, Y6, Y6

#define P4UNPACK \
	VMOVDQU     (2)(SI), X0 \
	VPSRLW      $4, X0, X1 \
	VINSERTI128 $1, X1, Y0, Y0 \
	VPAND       Y5, Y0, Y0 \
	VPSUBB      Y4, Y0, Y0 \
	VMOVDQU     Y0, (DI)

#define P4NEXT \
	MOVWLZX (SI), AX \
	MOVL    (R8)(AX*4), AX \
	MOVL    AX, (R9) \
	ADDQ    $18, SI \
	ADDQ    $64, DI \
	ADDQ    $4, R9 \
	DECQ    CX

// The decode kernels (M = 1): rows r (lanes 0–7) and r+1 (lanes 8–15) of
// one zmm, unsigned weights W, the activation block X (signed) broadcast
// to both halves and the lane corrections C = −offset·Σ4 x.
//
// M1SCALE builds D = [dw_r·dx ×8 | dw_r+1·dx ×8] from the binary16 scales
// at (ROW) and (ROW)(BX*1) (R12: f16Table, R10: dx).
#define M1SCALE(ROW, D, TMP) \
	MOVWLZX       (ROW), AX \
	MOVWLZX       (ROW)(BX*1), DX \
	VBROADCASTSS  (R12)(AX*4), D \
	VBROADCASTSS  (R12)(DX*4), TMP \
	VINSERTF64X4  $1, TMP, D, D \
	VMULPS.BCST   (R10), D, D

// M1REDUCE stores the two reduced rows of ACC to (R8) and 4(R8).
#define M1REDUCE(ACC) \
	VSHUFF32X4    $0xb1, ACC, ACC, Z26 \
	VADDPS        Z26, ACC, Z26 \
	VPERMILPS     $0x4e, Z26, Z27 \
	VADDPS        Z27, Z26, Z26 \
	VPERMILPS     $0xb1, Z26, Z27 \
	VADDPS        Z27, Z26, Z26 \
	VMOVSS        X26, (R8) \
	VEXTRACTF32X4 $2, Z26, X27 \
	VMOVSS        X27, 4(R8)

// Q8_0 weights of rows ROW, ROW+rb as unsigned bytes q+128 (Z31: 0x80).
#define LOADQ8(ROW, Y, Z) \
	VMOVDQU32    2(ROW), Y \
	VINSERTI64X4 $1, 2(ROW)(BX*1), Z, Z \
	VPXORD       Z31, Z, Z

// Q4_0 weights of rows ROW, ROW+rb as their nibbles, low nibbles
// (elements 0–15) then high ones (16–31) per row (Z30: shift counts,
// Z29: 0x0f).
#define LOADQ4(ROW, X, Y, Z) \
	VMOVDQU32    2(ROW), X \
	VINSERTI32X4 $1, 2(ROW)(BX*1), Y, Y \
	VSHUFI64X2   $0x50, Z, Z, Z \
	VPSRLVW      Z30, Z, Z \
	VPANDD       Z29, Z, Z

// M1START loads the arguments common to the decode kernels.
#define M1START \
	MOVQ         w+0(FP), DI \
	MOVQ         rb+8(FP), BX \
	MOVQ         nrows+16(FP), R11 \
	MOVQ         out+56(FP), R8 \
	LEAQ         ·f16Table(SB), R12 \
	VPBROADCASTD qgconst<>+0x00(SB), Z31 \
	VMOVDQU32    qgconst<>+0x10(SB), Z30 \
	VPBROADCASTD qgconst<>+0x04(SB), Z29

// M1ROWSTART rewinds the activation cursors and zeroes the accumulators.
#define M1ROWSTART \
	MOVQ   xq+24(FP), SI \
	MOVQ   xc+32(FP), R9 \
	MOVQ   xd+40(FP), R10 \
	MOVQ   nb+48(FP), CX \
	VPXORD Z0, Z0, Z0 \
	VPXORD Z1, Z1, Z1

// M1PREFETCH walks the four rows two groups on (8 rows, about 17 KB
// ahead) front to back, their share of a block (STEP: 4 rows' block bytes)
// at a time: the four interleaved row streams are each too short for the
// hardware prefetcher to pick up, but the group is contiguous. R14 starts
// at DI + 8·rb (M1PFSTART).
#define M1PFSTART \
	LEAQ (DI)(BX*8), R14

#define M1PREFETCH(STEP) \
	PREFETCHT0 (R14) \
	PREFETCHT0 64(R14) \
	PREFETCHT0 128(R14) \
	ADDQ       $STEP, R14

// M1DOT2 finishes a block of two row pairs: the lanes of Z23 (rows DI,
// DI+rb) and Z24 (rows R13, R13+rb) with the activations.
#define M1DOT2 \
	VPDPBUSD    Z20, Z23, Z21 \
	VPDPBUSD    Z20, Z24, Z22 \
	VCVTDQ2PS   Z21, Z21 \
	VCVTDQ2PS   Z22, Z22 \
	M1SCALE(DI, Z25, Y26) \
	VFMADD231PS Z21, Z25, Z0 \
	M1SCALE(R13, Z25, Y26) \
	VFMADD231PS Z22, Z25, Z1

#define M1DOT1 \
	VPDPBUSD    Z20, Z23, Z21 \
	VCVTDQ2PS   Z21, Z21 \
	M1SCALE(DI, Z25, Y26) \
	VFMADD231PS Z21, Z25, Z0

#define M1NEXT(BLK) \
	ADDQ $BLK, DI \
	ADDQ $32, SI \
	ADDQ $32, R9 \
	ADDQ $4, R10 \
	DECQ CX

// M1REWIND moves DI from the end of the rows just done to the start of
// the row ROWS further on.
#define M1REWIND(BLK, ROWS) \
	MOVQ  nb+48(FP), CX \
	IMULQ $BLK, CX \
	SUBQ  CX, DI \
	IMUL3Q $ROWS, BX, CX \
	ADDQ  CX, DI

// The k-quant tile (qkGemmVNNI): KP adds one int16 pair of lane l, chunk
// c to both rows' lane sums, into the chains RA (row 0) and RB (row 1);
// even and odd chunks go to separate chains (Z16/Z18, Z17/Z19) so that the
// dependent VPDPWSSDs of a lane overlap. KLANE finishes lane l of both
// rows.
#define KP(xo, wo, RA, RB) \
	VMOVDQU32     (xo)(SI), Z28 \
	VPDPWSSD.BCST (wo)(DI), Z28, RA \
	VPDPWSSD.BCST (wo)(R8), Z28, RB

#define KC(l, c, RA, RB) \
	KP((((l*8+c)*2)*64), (2*(32*c+4*l)), RA, RB) \
	KP((((l*8+c)*2+1)*64), (2*(32*c+4*l+2)), RA, RB)

#define KLANE(l, A0, A1) \
	VPXORD      Z16, Z16, Z16 \
	VPXORD      Z17, Z17, Z17 \
	VPXORD      Z18, Z18, Z18 \
	VPXORD      Z19, Z19, Z19 \
	KC(l, 0, Z16, Z18) \
	KC(l, 1, Z17, Z19) \
	KC(l, 2, Z16, Z18) \
	KC(l, 3, Z17, Z19) \
	KC(l, 4, Z16, Z18) \
	KC(l, 5, Z17, Z19) \
	KC(l, 6, Z16, Z18) \
	KC(l, 7, Z17, Z19) \
	VPADDD      Z17, Z16, Z16 \
	VPADDD      Z19, Z18, Z18 \
	VCVTDQ2PS   Z16, Z16 \
	VCVTDQ2PS   Z18, Z18 \
	VFMADD231PS Z16, Z24, A0 \
	VFMADD231PS Z18, Z25, A1

// KMIN accumulates a min term pair k: the 16 rows' sums at xo times the
// two rows' mins at wo, scaled by the rows' −dmin·dx (Z26, Z27), into the
// lane registers A0, A1 (Q2_K).
#define KMIN(xo, wo, A0, A1) \
	VMOVDQU32     (xo)(SI), Z28 \
	VPXORD        Z29, Z29, Z29 \
	VPXORD        Z30, Z30, Z30 \
	VPDPWSSD.BCST (wo)(DI), Z28, Z29 \
	VPDPWSSD.BCST (wo)(R8), Z28, Z30 \
	VCVTDQ2PS     Z29, Z29 \
	VCVTDQ2PS     Z30, Z30 \
	VFMADD231PS   Z29, Z26, A0 \
	VFMADD231PS   Z30, Z27, A1

// KMINMEM is KMIN into accumulators kept in the frame at m0(SP), m1(SP)
// (Q4_K's four min lanes per row).
#define KMINMEM(xo, wo, m0, m1) \
	VMOVDQU32     (xo)(SI), Z28 \
	VPXORD        Z29, Z29, Z29 \
	VPXORD        Z30, Z30, Z30 \
	VPDPWSSD.BCST (wo)(DI), Z28, Z29 \
	VPDPWSSD.BCST (wo)(R8), Z28, Z30 \
	VCVTDQ2PS     Z29, Z29 \
	VCVTDQ2PS     Z30, Z30 \
	VMOVUPS       m0(SP), Z20 \
	VMOVUPS       m1(SP), Z21 \
	VFMADD231PS   Z29, Z26, Z20 \
	VFMADD231PS   Z30, Z27, Z21 \
	VMOVUPS       Z20, m0(SP) \
	VMOVUPS       Z21, m1(SP)

// KSUM adds min pair k of both rows to the int sums in Z29, Z30 (Q5_K).
#define KSUM(xo, wo) \
	VMOVDQU32     (xo)(SI), Z28 \
	VPDPWSSD.BCST (wo)(DI), Z28, Z29 \
	VPDPWSSD.BCST (wo)(R8), Z28, Z30

// P4KGROUP widens the 32 bytes of 64-element group j of a Q4_K block to
// int16 and multiplies the low nibbles by sc[2j], the high ones by
// sc[2j+1] (Z31: 0x000f words; the scales at 0(SP)).
#define P4KGROUP(j) \
	VPMOVZXBW    (16+32*j)(SI), Z0 \
	VPANDD       Z31, Z0, Z1 \
	VPSRLW       $4, Z0, Z2 \
	MOVBLZX      (2*j)(SP), AX \
	VPBROADCASTW AX, Z3 \
	VPMULLW      Z3, Z1, Z1 \
	VMOVDQU32    Z1, (128*j)(DI) \
	MOVBLZX      (2*j+1)(SP), AX \
	VPBROADCASTW AX, Z3 \
	VPMULLW      Z3, Z2, Z2 \
	VMOVDQU32    Z2, (128*j+64)(DI)

// P6KSTORE scales 32 signed bytes Y (elements e0..e0+31) by the int8
// scales sc[e0/16] and sc[e0/16+1] and stores them as int16.
#define P6KSTORE(Y, e0) \
	VPSUBB       Y13, Y, Y \
	VPMOVSXBW    Y, Z4 \
	MOVBQSX      (192+e0/16)(SI), AX \
	VPBROADCASTW AX, Z5 \
	MOVBQSX      (193+e0/16)(SI), AX \
	VPBROADCASTW AX, Y6 \
	VINSERTI64X4 $1, Y6, Z5, Z5 \
	VPMULLW      Z5, Z4, Z4 \
	VMOVDQU32    Z4, (2*e0)(DI)

// P6KHALF decodes the 128 elements of half n of a Q6_K block (Y15: 0x0f,
// Y14: 0x03, Y13: 0x20 bytes).
#define P6KHALF(n) \
	VMOVDQU   (64*n)(SI), Y0 \
	VMOVDQU   (64*n+32)(SI), Y1 \
	VMOVDQU   (128+32*n)(SI), Y2 \
	VPAND     Y15, Y0, Y7 \
	VPAND     Y14, Y2, Y8 \
	VPSLLW    $4, Y8, Y8 \
	VPOR      Y8, Y7, Y7 \
	P6KSTORE(Y7, (128*n)) \
	VPAND     Y15, Y1, Y7 \
	VPSRLW    $2, Y2, Y8 \
	VPAND     Y14, Y8, Y8 \
	VPSLLW    $4, Y8, Y8 \
	VPOR      Y8, Y7, Y7 \
	P6KSTORE(Y7, (128*n+32)) \
	VPSRLW    $4, Y0, Y7 \
	VPAND     Y15, Y7, Y7 \
	VPSRLW    $4, Y2, Y8 \
	VPAND     Y14, Y8, Y8 \
	VPSLLW    $4, Y8, Y8 \
	VPOR      Y8, Y7, Y7 \
	P6KSTORE(Y7, (128*n+64)) \
	VPSRLW    $4, Y1, Y7 \
	VPAND     Y15, Y7, Y7 \
	VPSRLW    $6, Y2, Y8 \
	VPAND     Y14, Y8, Y8 \
	VPSLLW    $4, Y8, Y8 \
	VPOR      Y8, Y7, Y7 \
	P6KSTORE(Y7, (128*n+96))

// The k-quant decode kernels (qkM1*): one weight row at a time, its
// integers W (scale·quant, int16) times the activations widened to int16
// (VPDPWSSD, memory operand) into 16 dword partial sums, dword k holding
// the pairs (2k, 2k+1) of every 32-element chunk; lane l is then dwords
// 2l + 2l+1.
//
// M1KLANES turns the 16 partial sums in Z8 into the 8 lane sums as
// float32 in Y8.
#define M1KLANES \
	VPSHUFD   $0xb1, Z8, Z9 \
	VPADDD    Z9, Z8, Z8 \
	VPMOVQD   Z8, Y8 \
	VCVTDQ2PS Y8, Y8

// M1K4GROUP adds 64-element group j of a Q4_K block (scales at 0(SP)) to
// Z8; R10 points at the block's activations (int16).
#define M1K4GROUP(j) \
	VPMOVZXBW    (16+32*j)(SI), Z0 \
	VPANDD       Z31, Z0, Z1 \
	VPSRLW       $4, Z0, Z2 \
	MOVBLZX      (2*j)(SP), AX \
	VPBROADCASTW AX, Z3 \
	VPMULLW      Z3, Z1, Z1 \
	MOVBLZX      (2*j+1)(SP), AX \
	VPBROADCASTW AX, Z4 \
	VPMULLW      Z4, Z2, Z2 \
	VPDPWSSD     (128*j)(R10), Z1, Z8 \
	VPDPWSSD     (128*j+64)(R10), Z2, Z8

// M1K6 adds 32 elements e0.. of a Q6_K block, as the signed bytes Y7
// (q, before −32), to Z8.
#define M1K6(Y, e0) \
	VPSUBB       Y13, Y, Y \
	VPMOVSXBW    Y, Z4 \
	MOVBQSX      (192+e0/16)(SI), AX \
	VPBROADCASTW AX, Z5 \
	MOVBQSX      (193+e0/16)(SI), AX \
	VPBROADCASTW AX, Y6 \
	VINSERTI64X4 $1, Y6, Z5, Z5 \
	VPMULLW      Z5, Z4, Z4 \
	VPDPWSSD     (2*e0)(R10), Z4, Z8

#define M1K6HALF(n) \
	VMOVDQU   (64*n)(SI), Y0 \
	VMOVDQU   (64*n+32)(SI), Y1 \
	VMOVDQU   (128+32*n)(SI), Y2 \
	VPAND     Y15, Y0, Y7 \
	VPAND     Y14, Y2, Y10 \
	VPSLLW    $4, Y10, Y10 \
	VPOR      Y10, Y7, Y7 \
	M1K6(Y7, (128*n)) \
	VPAND     Y15, Y1, Y7 \
	VPSRLW    $2, Y2, Y10 \
	VPAND     Y14, Y10, Y10 \
	VPSLLW    $4, Y10, Y10 \
	VPOR      Y10, Y7, Y7 \
	M1K6(Y7, (128*n+32)) \
	VPSRLW    $4, Y0, Y7 \
	VPAND     Y15, Y7, Y7 \
	VPSRLW    $4, Y2, Y10 \
	VPAND     Y14, Y10, Y10 \
	VPSLLW    $4, Y10, Y10 \
	VPOR      Y10, Y7, Y7 \
	M1K6(Y7, (128*n+64)) \
	VPSRLW    $4, Y1, Y7 \
	VPAND     Y15, Y7, Y7 \
	VPSRLW    $6, Y2, Y10 \
	VPAND     Y14, Y10, Y10 \
	VPSLLW    $4, Y10, Y10 \
	VPOR      Y10, Y7, Y7 \
	M1K6(Y7, (128*n+96))

// M1HSUM8 leaves hsum8 of the 8 lanes of Y in X (qdot.go's order).
#define M1HSUM8(Y, X, T) \
	VEXTRACTF128 $1, Y, T \
	VADDPS       T, X, X \
	VPERMILPS    $0x4e, X, T \
	VADDPS       T, X, X \
	VPERMILPS    $0xb1, X, T \
	VADDSS       T, X, X
// func q0GemmVNNI(w *byte, wstride, doff int, xp *byte, nb int, out *float32, ldc, nj, ni int, pf *byte)
//
// out[j*ldc+i] = ggml's dot of prepared weight row i (rows wstride bytes
// apart, block scales doff bytes after each row's start) with panel row j
// of xp over nb blocks, for i < ni ≤ 3 and j < nj ≤ 16. Two cache lines
// from pf on are prefetched per block (the raw weights the next tile will
// prepare; the loads have room to spare).
TEXT ·q0GemmVNNI(SB), NOSPLIT, $0-80
	GEMM3START
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23

g0loop:
	GEMM3BLOCK
	LANE3(0, Z0, Z8, Z16)
	LANE3(1, Z1, Z9, Z17)
	LANE3(2, Z2, Z10, Z18)
	LANE3(3, Z3, Z11, Z19)
	LANE3(4, Z4, Z12, Z20)
	LANE3(5, Z5, Z13, Z21)
	LANE3(6, Z6, Z14, Z22)
	LANE3(7, Z7, Z15, Z23)
	GEMM3NEXT
	JNZ  g0loop

	GEMMOUTSETUP
	REDUCE8(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z24, Z25, Z26)
	GEMMOUT(Z24)
	CMPQ R11, $2
	JLT  g0done
	ADDQ $4, DX
	REDUCE8(Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15, Z24, Z25, Z26)
	GEMMOUT(Z24)
	CMPQ R11, $3
	JLT  g0done
	ADDQ $4, DX
	REDUCE8(Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, Z24, Z25, Z26)
	GEMMOUT(Z24)

g0done:
	VZEROUPPER
	RET

// func q0ChainGemmVNNI(w *byte, wstride, doff int, xp *byte, nb int, out *float32, ldc, nj, ni int, pf *byte)
//
// q0GemmVNNI in chainOrder's order, for Q4_0 rows prepared with their
// block's whole correction −128·Σq in the first lane slot
// (q0PrepQ4_0ChainVNNI), four partial sums per row (CLANE3):
// per block and weight row one int32 T = corr + Σ over all eight lanes of
// (x+128)·q = Σ x·q for the 16 activation rows, then
// acc = fma(float(T), dw·dx, acc); no lanes to add at the end.
TEXT ·q0ChainGemmVNNI(SB), NOSPLIT, $0-80
	GEMM3START
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2

c0loop:
	GEMM3BLOCK
	VPBROADCASTD  32(DI), Z3
	VPBROADCASTD  32(R8), Z7
	VPBROADCASTD  32(R9), Z11
	CLANE3(0, Z3, Z7, Z11)
	VPXORD        Z4, Z4, Z4
	VPXORD        Z8, Z8, Z8
	VPXORD        Z12, Z12, Z12
	CLANE3(1, Z4, Z8, Z12)
	VPXORD        Z5, Z5, Z5
	VPXORD        Z9, Z9, Z9
	VPXORD        Z13, Z13, Z13
	CLANE3(2, Z5, Z9, Z13)
	VPXORD        Z6, Z6, Z6
	VPXORD        Z10, Z10, Z10
	VPXORD        Z14, Z14, Z14
	CLANE3(3, Z6, Z10, Z14)
	CLANE3(4, Z3, Z7, Z11)
	CLANE3(5, Z4, Z8, Z12)
	CLANE3(6, Z5, Z9, Z13)
	CLANE3(7, Z6, Z10, Z14)
	CSUM4(Z3, Z4, Z5, Z6)
	CSUM4(Z7, Z8, Z9, Z10)
	CSUM4(Z11, Z12, Z13, Z14)
	VCVTDQ2PS     Z3, Z28
	VCVTDQ2PS     Z7, Z29
	VCVTDQ2PS     Z11, Z30
	VFMADD231PS   Z28, Z24, Z0
	VFMADD231PS   Z29, Z25, Z1
	VFMADD231PS   Z30, Z26, Z2
	GEMM3NEXT
	JNZ  c0loop

	GEMMOUTSETUP
	GEMMOUT(Z0)
	CMPQ R11, $2
	JLT  c0done
	ADDQ $4, DX
	GEMMOUT(Z1)
	CMPQ R11, $3
	JLT  c0done
	ADDQ $4, DX
	GEMMOUT(Z2)

c0done:
	VZEROUPPER
	RET

// func q1GemmVNNI(w *byte, wstride, doff int, xp *byte, nb int, out *float32, ldc, nj, ni int, pf *byte)
//
// q0GemmVNNI for Q4_1/Q5_1 weights and Q8_1 panels, two weight rows: each
// row's nb mins follow its nb scales, each panel block carries s[16]
// after dx[16], and summs = fma(m, s, summs) per block is added to the
// reduced lanes.
TEXT ·q1GemmVNNI(SB), NOSPLIT, $0-80
	MOVQ w+0(FP), DI
	MOVQ wstride+8(FP), AX
	MOVQ doff+16(FP), BX
	MOVQ xp+24(FP), SI
	MOVQ nb+32(FP), CX
	MOVQ out+40(FP), DX
	LEAQ (DI)(AX*1), R8
	LEAQ (DI)(BX*1), R10
	LEAQ (R8)(BX*1), R11
	LEAQ (R10)(CX*4), R12
	LEAQ (R11)(CX*4), R13
	MOVQ pf+72(FP), AX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17

g1loop:
	PREFETCHT0       (AX)
	PREFETCHT0       64(AX)
	ADDQ             $128, AX
	VMOVUPS          512(SI), Z31
	VMULPS.BCST      (R10), Z31, Z24
	VMULPS.BCST      (R11), Z31, Z25
	VMOVUPS          576(SI), Z30
	VFMADD231PS.BCST (R12), Z30, Z16
	VFMADD231PS.BCST (R13), Z30, Z17
	LANE2(0, Z0, Z8)
	LANE2(1, Z1, Z9)
	LANE2(2, Z2, Z10)
	LANE2(3, Z3, Z11)
	LANE2(4, Z4, Z12)
	LANE2(5, Z5, Z13)
	LANE2(6, Z6, Z14)
	LANE2(7, Z7, Z15)
	ADDQ $640, SI
	ADDQ $64, DI
	ADDQ $64, R8
	ADDQ $4, R10
	ADDQ $4, R11
	ADDQ $4, R12
	ADDQ $4, R13
	DECQ CX
	JNZ  g1loop

	GEMMOUTSETUP
	REDUCE8(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z24, Z25, Z26)
	VADDPS Z16, Z24, Z24
	GEMMOUT(Z24)
	CMPQ   R11, $2
	JLT    g1done
	ADDQ   $4, DX
	REDUCE8(Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15, Z24, Z25, Z26)
	VADDPS Z17, Z24, Z24
	GEMMOUT(Z24)

g1done:
	VZEROUPPER
	RET

// func q0PrepQ8_0VNNI(dst *byte, w *byte, nb int)
//
// Prepares one Q8_0 weight row for q0GemmVNNI (see qgemm_amd64.go).
TEXT ·q0PrepQ8_0VNNI(SB), NOSPLIT, $0-24
	MOVQ         dst+0(FP), DI
	MOVQ         w+8(FP), SI
	MOVQ         nb+16(FP), CX
	LEAQ         ·f16Table(SB), R8
	MOVQ         CX, R9
	SHLQ         $6, R9
	ADDQ         DI, R9                 // the scales follow the nb 64-byte blocks
	VPBROADCASTD qgconst<>+0x00(SB), Y7
	VPXORD       Y6, Y6, Y6

p8loop:
	VMOVDQU (2)(SI), Y0
	VMOVDQU Y0, (DI)
	PREPCORR
	MOVWLZX (SI), AX
	MOVL    (R8)(AX*4), AX
	MOVL    AX, (R9)
	ADDQ    $34, SI
	ADDQ    $64, DI
	ADDQ    $4, R9
	DECQ    CX
	JNZ     p8loop
	VZEROUPPER
	RET

// func q0PrepQ4_0VNNI(dst *byte, w *byte, nb int)
//
// Prepares one Q4_0 weight row: q = nibble − 8, low nibbles first.
TEXT ·q0PrepQ4_0VNNI(SB), NOSPLIT, $0-24
	P4START

p4loop:
	P4UNPACK
	PREPCORR
	P4NEXT
	JNZ p4loop
	VZEROUPPER
	RET

// func q0PrepQ4_0ChainVNNI(dst *byte, w *byte, nb int)
//
// q0PrepQ4_0VNNI for q0ChainGemmVNNI: the block's whole correction
// −128·Σq in the first lane slot (the other seven are not read).
TEXT ·q0PrepQ4_0ChainVNNI(SB), NOSPLIT, $0-24
	P4START

pc4loop:
	P4UNPACK
	VPXORD       Y1, Y1, Y1
	VPDPBUSD     Y0, Y7, Y1
	VEXTRACTI128 $1, Y1, X2
	VPADDD       X2, X1, X1
	VPSHUFD      $0x4e, X1, X2
	VPADDD       X2, X1, X1
	VPSHUFD      $0xb1, X1, X2
	VPADDD       X2, X1, X1
	VPSUBD       X1, X6, X1
	VMOVD        X1, 32(DI)
	P4NEXT
	JNZ pc4loop
	VZEROUPPER
	RET

// func q8_0M1VNNI(w *byte, rb, nrows int, xq *byte, xc *int32, xd *float32, nb int, out *float32)
//
// out[r] = ggml's Q8_0·Q8_0 dot of weight row r (rows rb bytes apart,
// nrows even) with the activation row given as its quants xq, lane
// corrections xc = −128·Σ4 x and scales xd.
TEXT ·q8_0M1VNNI(SB), NOSPLIT, $0-64
	M1START

q8m1pairs2:
	CMPQ R11, $4
	JLT  q8m1pairs1
	M1ROWSTART
	M1PFSTART
	LEAQ (DI)(BX*2), R13

q8m1blk2:
	M1PREFETCH(136)
	VBROADCASTI64X4 (SI), Z20
	VBROADCASTI64X4 (R9), Z21
	VMOVDQA32       Z21, Z22
	LOADQ8(DI, Y23, Z23)
	LOADQ8(R13, Y24, Z24)
	M1DOT2
	ADDQ            $34, R13
	M1NEXT(34)
	JNZ             q8m1blk2
	M1REDUCE(Z0)
	ADDQ            $8, R8
	M1REDUCE(Z1)
	ADDQ            $8, R8
	M1REWIND(34, 4)
	SUBQ            $4, R11
	JMP             q8m1pairs2

q8m1pairs1:
	CMPQ R11, $2
	JLT  q8m1done
	M1ROWSTART

q8m1blk1:
	VBROADCASTI64X4 (SI), Z20
	VBROADCASTI64X4 (R9), Z21
	LOADQ8(DI, Y23, Z23)
	M1DOT1
	M1NEXT(34)
	JNZ             q8m1blk1
	M1REDUCE(Z0)

q8m1done:
	VZEROUPPER
	RET

// func q4_0M1VNNI(w *byte, rb, nrows int, xq *byte, xc *int32, xd *float32, nb int, out *float32)
//
// q8_0M1VNNI for Q4_0 weights (xc = −8·Σ4 x).
TEXT ·q4_0M1VNNI(SB), NOSPLIT, $0-64
	M1START

q4m1pairs2:
	CMPQ R11, $4
	JLT  q4m1pairs1
	M1ROWSTART
	M1PFSTART
	LEAQ (DI)(BX*2), R13

q4m1blk2:
	M1PREFETCH(72)
	VBROADCASTI64X4 (SI), Z20
	VBROADCASTI64X4 (R9), Z21
	VMOVDQA32       Z21, Z22
	LOADQ4(DI, X23, Y23, Z23)
	LOADQ4(R13, X24, Y24, Z24)
	M1DOT2
	ADDQ            $18, R13
	M1NEXT(18)
	JNZ             q4m1blk2
	M1REDUCE(Z0)
	ADDQ            $8, R8
	M1REDUCE(Z1)
	ADDQ            $8, R8
	M1REWIND(18, 4)
	SUBQ            $4, R11
	JMP             q4m1pairs2

q4m1pairs1:
	CMPQ R11, $2
	JLT  q4m1done
	M1ROWSTART

q4m1blk1:
	VBROADCASTI64X4 (SI), Z20
	VBROADCASTI64X4 (R9), Z21
	LOADQ4(DI, X23, Y23, Z23)
	M1DOT1
	M1NEXT(18)
	JNZ             q4m1blk1
	M1REDUCE(Z0)

q4m1done:
	VZEROUPPER
	RET

// func quantQ8_0AVX512(dst *byte, x *float32, nb int)
//
// quantize_row_q8_0's AVX2 code for nb blocks of 32: d = max|x|/127 stored
// as binary16 (VCVTPS2PH, nearest even), q = x·(127/max|x|) rounded to
// nearest even by VCVTPS2DQ and saturated to int8 (VPMOVSDB: the
// packs_epi32 + packs_epi16 of ggml); an all-zero block gets id = 0.
TEXT ·quantQ8_0AVX512(SB), NOSPLIT, $0-24
	MOVQ         dst+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         nb+16(FP), CX
	VBROADCASTSS qgconst<>+0x54(SB), Z31
	VMOVSS       qgconst<>+0x50(SB), X9
	VXORPS       X8, X8, X8

q8qloop:
	VMOVUPS       (SI), Z0
	VMOVUPS       64(SI), Z1
	VANDPS        Z31, Z0, Z2
	VANDPS        Z31, Z1, Z3
	VMAXPS        Z3, Z2, Z2
	VEXTRACTF64X4 $1, Z2, Y3
	VMAXPS        Y3, Y2, Y2
	VEXTRACTF128  $1, Y2, X3
	VMAXPS        X3, X2, X2
	VPERMILPS     $0x4e, X2, X3
	VMAXPS        X3, X2, X2
	VPERMILPS     $0xb1, X2, X3
	VMAXSS        X3, X2, X2           // amax
	VDIVSS        X9, X2, X4           // d = amax/127
	VDIVSS        X2, X9, X5           // 127/amax
	VCMPSS        $4, X8, X2, X6       // amax ≠ 0
	VANDPS        X6, X5, X5           // id
	VCVTPS2PH     $0, X4, X4
	VMOVD         X4, AX
	MOVW          AX, (DI)
	VBROADCASTSS  X5, Z5
	VMULPS        Z5, Z0, Z0
	VMULPS        Z5, Z1, Z1
	VCVTPS2DQ     Z0, Z0
	VCVTPS2DQ     Z1, Z1
	VPMOVSDB      Z0, 2(DI)
	VPMOVSDB      Z1, 18(DI)
	ADDQ          $128, SI
	ADDQ          $34, DI
	DECQ          CX
	JNZ           q8qloop
	VZEROUPPER
	RET

// func qkGemmVNNI(w *byte, wstride int, xp *byte, nsb int, out *float32, ldc, nj, ni int, pf *byte, mode int)
//
// out[j*ldc+i] = ggml's k-quant dot of prepared weight row i < ni ≤ 2
// (rows wstride bytes apart) with panel row j < nj ≤ 16 over nsb
// super-blocks (layouts in qgemm_amd64.go); mode 0: no min term, 1: Q2_K,
// 2: Q4_K, 3: Q5_K (qkMode). Eight cache lines from pf on are prefetched
// per super-block.
TEXT ·qkGemmVNNI(SB), NOSPLIT, $512-80
	MOVQ   w+0(FP), DI
	MOVQ   wstride+8(FP), AX
	MOVQ   xp+16(FP), SI
	MOVQ   nsb+24(FP), CX
	MOVQ   out+32(FP), DX
	MOVQ   pf+64(FP), R13
	MOVQ   mode+72(FP), R9
	LEAQ   (DI)(AX*1), R8
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	// Min accumulators in the frame: row 0 at 0..255(SP), row 1 at
	// 256..511(SP) (Q4_K: four lanes each; Q5_K: the sum in the first).
	VPXORD  Z20, Z20, Z20
	VMOVUPS Z20, 0(SP)
	VMOVUPS Z20, 64(SP)
	VMOVUPS Z20, 128(SP)
	VMOVUPS Z20, 192(SP)
	VMOVUPS Z20, 256(SP)
	VMOVUPS Z20, 320(SP)
	VMOVUPS Z20, 384(SP)
	VMOVUPS Z20, 448(SP)

kloop:
	PREFETCHT0  (R13)
	PREFETCHT0  64(R13)
	PREFETCHT0  128(R13)
	PREFETCHT0  192(R13)
	PREFETCHT0  256(R13)
	PREFETCHT0  320(R13)
	PREFETCHT0  384(R13)
	PREFETCHT0  448(R13)
	ADDQ        $512, R13
	VMOVUPS     8192(SI), Z31
	VMULPS.BCST 544(DI), Z31, Z24
	VMULPS.BCST 544(R8), Z31, Z25
	VMULPS.BCST 548(DI), Z31, Z26
	VMULPS.BCST 548(R8), Z31, Z27
	CMPQ        R9, $1
	JNE         kmain
	// Q2_K: the mins go into the lanes first.
	KMIN(8256, 512, Z0, Z8)
	KMIN(8320, 516, Z1, Z9)
	KMIN(8384, 520, Z2, Z10)
	KMIN(8448, 524, Z3, Z11)
	KMIN(8512, 528, Z4, Z12)
	KMIN(8576, 532, Z5, Z13)
	KMIN(8640, 536, Z6, Z14)
	KMIN(8704, 540, Z7, Z15)

kmain:
	KLANE(0, Z0, Z8)
	KLANE(1, Z1, Z9)
	KLANE(2, Z2, Z10)
	KLANE(3, Z3, Z11)
	KLANE(4, Z4, Z12)
	KLANE(5, Z5, Z13)
	KLANE(6, Z6, Z14)
	KLANE(7, Z7, Z15)
	CMPQ R9, $2
	JNE  kq5
	// Q4_K: four min lanes per row.
	KMINMEM(8256, 512, 0, 256)
	KMINMEM(8320, 516, 64, 320)
	KMINMEM(8384, 520, 128, 384)
	KMINMEM(8448, 524, 192, 448)
	JMP  knext

kq5:
	CMPQ        R9, $3
	JNE         knext
	// Q5_K: one min sum per row.
	VPXORD      Z29, Z29, Z29
	VPXORD      Z30, Z30, Z30
	KSUM(8256, 512)
	KSUM(8320, 516)
	KSUM(8384, 520)
	KSUM(8448, 524)
	VCVTDQ2PS   Z29, Z29
	VCVTDQ2PS   Z30, Z30
	VMOVUPS     0(SP), Z20
	VMOVUPS     256(SP), Z21
	VFMADD231PS Z29, Z26, Z20
	VFMADD231PS Z30, Z27, Z21
	VMOVUPS     Z20, 0(SP)
	VMOVUPS     Z21, 256(SP)

knext:
	ADDQ $8768, SI
	ADDQ $552, DI
	ADDQ $552, R8
	DECQ CX
	JNZ  kloop

	VPBROADCASTD ldc+40(FP), Z31
	VPMULLD      qgconst<>+0x60(SB), Z31, Z30
	MOVQ         nj+48(FP), CX
	MOVL         $1, BX
	SHLL         CX, BX
	DECL         BX
	MOVQ         ni+56(FP), R11
	// Each row: hsum8 of its lanes, plus Q4_K's ((m0+m2)+(m1+m3)) or
	// Q5_K's min sum.
	REDUCE8(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z24, Z25, Z26)
	CMPQ R9, $2
	JEQ  kf0q4
	CMPQ R9, $3
	JEQ  kf0q5
	JMP  kf0out

kf0q4:
	VMOVUPS 0(SP), Z16
	VMOVUPS 64(SP), Z17
	VMOVUPS 128(SP), Z18
	VMOVUPS 192(SP), Z19
	VADDPS  Z18, Z16, Z27
	VADDPS  Z19, Z17, Z28
	VADDPS  Z28, Z27, Z27
	VADDPS  Z27, Z24, Z24
	JMP     kf0out

kf0q5:
	VADDPS 0(SP), Z24, Z24

kf0out:
	GEMMOUT(Z24)
	CMPQ R11, $2
	JLT  kdone
	ADDQ $4, DX
	REDUCE8(Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15, Z24, Z25, Z26)
	CMPQ R9, $2
	JEQ  kf1q4
	CMPQ R9, $3
	JEQ  kf1q5
	JMP  kf1out

kf1q4:
	VMOVUPS 256(SP), Z16
	VMOVUPS 320(SP), Z17
	VMOVUPS 384(SP), Z18
	VMOVUPS 448(SP), Z19
	VADDPS  Z18, Z16, Z27
	VADDPS  Z19, Z17, Z28
	VADDPS  Z28, Z27, Z27
	VADDPS  Z27, Z24, Z24
	JMP     kf1out

kf1q5:
	VADDPS 256(SP), Z24, Z24

kf1out:
	GEMMOUT(Z24)

kdone:
	VZEROUPPER
	RET

// func qkPrepQ4_KVNNI(dst *byte, w *byte, nsb int)
//
// Prepares one Q4_K weight row for qkGemmVNNI: W = scale·nibble as int16,
// the eight mins as int16, d and −dmin as float32 (prepRowKGo's layout).
TEXT ·qkPrepQ4_KVNNI(SB), NOSPLIT, $16-24
	MOVQ         dst+0(FP), DI
	MOVQ         w+8(FP), SI
	MOVQ         nsb+16(FP), CX
	LEAQ         ·f16Table(SB), R12
	MOVL         $0x000f000f, AX
	VPBROADCASTD AX, Z31

p4kloop:
	// ggml's utmp shuffle: scales sc0..7 at 0(SP), mins mn0..7 in X0.
	MOVL 4(SI), AX                 // u0
	MOVL 8(SI), BX                 // u1
	MOVL 12(SI), DX                // u2
	MOVL DX, R8
	SHRL $4, R8
	ANDL $0x0f0f0f0f, R8
	MOVL BX, R9
	SHRL $6, R9
	ANDL $0x03030303, R9
	SHLL $4, R9
	ORL  R9, R8                    // u3
	MOVL BX, R10
	ANDL $0x3f3f3f3f, R10          // uaux
	MOVL DX, R9
	ANDL $0x0f0f0f0f, R9
	MOVL AX, R11
	SHRL $6, R11
	ANDL $0x03030303, R11
	SHLL $4, R11
	ORL  R11, R9                   // u1'
	ANDL $0x3f3f3f3f, AX           // u0'
	MOVL AX, 0(SP)
	MOVL R9, 4(SP)
	VMOVD     R10, X0
	VPINSRD   $1, R8, X0, X0
	VPMOVZXBW X0, X0
	VMOVDQU   X0, 512(DI)
	VPXORD    X1, X1, X1
	VMOVDQU   X1, 528(DI)
	P4KGROUP(0)
	P4KGROUP(1)
	P4KGROUP(2)
	P4KGROUP(3)
	MOVWLZX   (SI), AX
	MOVL      (R12)(AX*4), AX
	MOVL      AX, 544(DI)
	MOVWLZX   2(SI), AX
	MOVL      (R12)(AX*4), AX
	XORL      $0x80000000, AX
	MOVL      AX, 548(DI)
	ADDQ      $144, SI
	ADDQ      $552, DI
	DECQ      CX
	JNZ       p4kloop
	VZEROUPPER
	RET

// func qkPrepQ6_KVNNI(dst *byte, w *byte, nsb int)
//
// Prepares one Q6_K weight row: W = scale·(q − 32) as int16, d; no mins.
TEXT ·qkPrepQ6_KVNNI(SB), NOSPLIT, $0-24
	MOVQ         dst+0(FP), DI
	MOVQ         w+8(FP), SI
	MOVQ         nsb+16(FP), CX
	LEAQ         ·f16Table(SB), R12
	VPBROADCASTD qgconst<>+0x04(SB), Y15 // 0x0f bytes
	MOVL         $0x03030303, AX
	VPBROADCASTD AX, Y14
	MOVL         $0x20202020, AX
	VPBROADCASTD AX, Y13

p6kloop:
	P6KHALF(0)
	P6KHALF(1)
	VPXORD  X1, X1, X1
	VMOVDQU X1, 512(DI)
	VMOVDQU X1, 528(DI)
	MOVWLZX 208(SI), AX
	MOVL    (R12)(AX*4), AX
	MOVL    AX, 544(DI)
	MOVL    $0, 548(DI)
	ADDQ    $210, SI
	ADDQ    $552, DI
	DECQ    CX
	JNZ     p6kloop
	VZEROUPPER
	RET

// func qkM1Q4_KVNNI(w *byte, rb, nrows int, xw *int16, xd *float32, xs *int16, nsb int, out *float32)
//
// out[r] = ggml's Q4_K·Q8_K dot of weight row r (rows rb bytes apart) with
// one activation row given as its int16 values xw, per super-block scale
// xd and 32-element sums xs (8 int16 per super-block). Frame: the
// unpacked scales at 0(SP), the super-block count at 16(SP).
TEXT ·qkM1Q4_KVNNI(SB), NOSPLIT, $32-64
	MOVQ         w+0(FP), DI
	MOVQ         nrows+16(FP), R11
	MOVQ         out+56(FP), R8
	MOVL         $0x000f000f, AX
	VPBROADCASTD AX, Z31

m1k4row:
	TESTQ  R11, R11
	JZ     m1k4done
	MOVQ   DI, SI
	MOVQ   xw+24(FP), R10
	MOVQ   xd+32(FP), R9
	MOVQ   xs+40(FP), R13
	MOVQ   nsb+48(FP), CX
	MOVQ   CX, 16(SP)
	VXORPS Y11, Y11, Y11 // acc
	VXORPS X12, X12, X12 // accm

m1k4sb:
	PREFETCHT0 1024(SI)
	PREFETCHT0 1088(SI)
	// ggml's utmp shuffle: sc0..7 to 0(SP), mn0..7 to X13 (K4UTMP).
	K4UTMP(R12)
	VMOVD   BX, X13                // mn0..3
	VPINSRD $1, R12, X13, X13      // mn4..7
	MOVL    DX, 4(SP)              // sc4..7
	MOVL    AX, 0(SP)              // sc0..3
	VPXORD Z8, Z8, Z8
	M1K4GROUP(0)
	M1K4GROUP(1)
	M1K4GROUP(2)
	M1K4GROUP(3)
	M1KLANES
	// d = dx·dw, dm = −(dx·dmin)
	MOVWLZX      (SI), AX
	VMOVD        AX, X1
	VCVTPH2PS    X1, X1
	VMULSS       (R9), X1, X1
	VBROADCASTSS X1, Y1
	VFMADD231PS  Y8, Y1, Y11
	VPMOVZXBW    X13, X2
	VPMADDWD     (R13), X2, X2
	VCVTDQ2PS    X2, X2
	MOVWLZX      2(SI), AX
	VMOVD        AX, X3
	VCVTPH2PS    X3, X3
	VMULSS       (R9), X3, X3
	VXORPS       X4, X4, X4
	VSUBSS       X3, X4, X3
	VBROADCASTSS X3, X3
	VFMADD231PS  X2, X3, X12
	ADDQ         $144, SI
	ADDQ         $512, R10
	ADDQ         $4, R9
	ADDQ         $16, R13
	DECQ         16(SP)
	JNZ          m1k4sb
	// hsum8(acc) + ((m0+m2)+(m1+m3))
	VMOVAPS      X11, X5
	M1HSUM8(Y11, X5, X6)
	VPERMILPS    $0x4e, X12, X6
	VADDPS       X6, X12, X12
	VPERMILPS    $0xb1, X12, X6
	VADDSS       X6, X12, X12
	VADDSS       X12, X5, X5
	VMOVSS       X5, (R8)
	ADDQ         $4, R8
	ADDQ         rb+8(FP), DI
	DECQ         R11
	JMP          m1k4row

m1k4done:
	VZEROUPPER
	RET

// func qkM1Q6_KVNNI(w *byte, rb, nrows int, xw *int16, xd *float32, xs *int16, nsb int, out *float32)
//
// qkM1Q4_KVNNI for Q6_K (no min term; xs unused).
TEXT ·qkM1Q6_KVNNI(SB), NOSPLIT, $0-64
	MOVQ         w+0(FP), DI
	MOVQ         nrows+16(FP), R11
	MOVQ         out+56(FP), R8
	LEAQ         ·f16Table(SB), R12
	VPBROADCASTD qgconst<>+0x04(SB), Y15
	MOVL         $0x03030303, AX
	VPBROADCASTD AX, Y14
	MOVL         $0x20202020, AX
	VPBROADCASTD AX, Y13

m1k6row:
	TESTQ  R11, R11
	JZ     m1k6done
	MOVQ   DI, SI
	MOVQ   xw+24(FP), R10
	MOVQ   xd+32(FP), R9
	MOVQ   nsb+48(FP), CX
	VXORPS Y11, Y11, Y11

m1k6sb:
	PREFETCHT0   1024(SI)
	PREFETCHT0   1088(SI)
	PREFETCHT0   1152(SI)
	PREFETCHT0   1216(SI)
	VPXORD       Z8, Z8, Z8
	M1K6HALF(0)
	M1K6HALF(1)
	M1KLANES
	MOVWLZX      208(SI), AX
	VMOVSS       (R12)(AX*4), X1
	VMULSS       (R9), X1, X1
	VBROADCASTSS X1, Y1
	VFMADD231PS  Y8, Y1, Y11
	ADDQ         $210, SI
	ADDQ         $512, R10
	ADDQ         $4, R9
	DECQ         CX
	JNZ          m1k6sb
	VMOVAPS      X11, X5
	M1HSUM8(Y11, X5, X6)
	VMOVSS       X5, (R8)
	ADDQ         $4, R8
	ADDQ         rb+8(FP), DI
	DECQ         R11
	JMP          m1k6row

m1k6done:
	VZEROUPPER
	RET

// The Q8_0 products for two to eight activation rows at once
// (q8_0PackedVNNI, qgemm_amd64.go): the decode kernels' lanes (rows r and
// r+1 of one zmm) and float order, each weight block loaded once for all
// the rows. The activations are stored as x+128, so VPDPBUSD takes them
// unsigned by the signed weights, and each lane sum starts from −128·Σ4 w,
// formed once per block of the row pair: the int32 lane sums are exact for
// every weight and activation byte. Each row then costs six instructions a
// block.
//
// Packed activations of a group of T rows (q8_0Pack): the blocks' 32
// quants + 128, row t of block b at (b·T+t)·32, then their float32 scales,
// row t of block b at (b·T+t)·4.

// Each block step prefetches the row pair two pairs on (R14, from DI +
// 4·rb), 68 bytes a step: a row of a few KB is too short a stream for the
// hardware prefetcher, but the rows are contiguous.
//
// Q8PW loads block SI of rows SI and SI+rb: the quants in Z6, −128·Σ4 w in
// Z7, [dw_r ×8 | dw_r+1 ×8] in Z3.
#define Q8PW \
	VMOVDQU32     2(SI), Y6 \
	VINSERTI64X4  $1, 2(SI)(BX*1), Z6, Z6 \
	VPXORD        Z1, Z1, Z1 \
	VPDPBUSD      Z6, Z31, Z1 \
	VPSUBD        Z1, Z13, Z7 \
	MOVWLZX       (SI), AX \
	MOVWLZX       (SI)(BX*1), R13 \
	VBROADCASTSS  (R12)(AX*4), Y3 \
	VBROADCASTSS  (R12)(R13*4), Y2 \
	VINSERTF64X4  $1, Y2, Z3, Z3

// Q8PCOL adds activation block X(R9) (scale D(R10)) to ACC.
#define Q8PCOL(X, D, ACC) \
	VBROADCASTI64X4 X(R9), Z2 \
	VMOVDQA64       Z7, Z1 \
	VPDPBUSD        Z6, Z2, Z1 \
	VCVTDQ2PS       Z1, Z1 \
	VMULPS.BCST     D(R10), Z3, Z5 \
	VFMADD231PS     Z1, Z5, ACC

// Q8PSUM stores the two reduced rows of ACC at (R8) and 4(R8) (M1REDUCE)
// and moves R8 one output row on (DX bytes); AX keeps the row pair's.
#define Q8PSUM(ACC) \
	M1REDUCE(ACC) \
	ADDQ DX, R8

// func q8_0Packed2VNNI(w *byte, rb, npairs int, xp *byte, nb int, out *float32, ldo int)
TEXT ·q8_0Packed2VNNI(SB), NOSPLIT, $0-56
	MOVQ         w+0(FP), DI
	MOVQ         rb+8(FP), BX
	MOVQ         npairs+16(FP), R11
	MOVQ         out+40(FP), R8
	MOVQ         ldo+48(FP), DX
	SHLQ         $2, DX
	LEAQ         ·f16Table(SB), R12
	VPBROADCASTD qgconst<>+0x00(SB), Z31
	VPXORD       Z13, Z13, Z13

q2row:
	TESTQ R11, R11
	JZ    q2done
	MOVQ  DI, SI
	MOVQ  xp+24(FP), R9
	MOVQ  nb+32(FP), CX
	IMUL3Q $64, CX, R10
	ADDQ  R9, R10
	LEAQ  (DI)(BX*4), R14
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17

q2blk:
	PREFETCHT0 (R14)
	PREFETCHT0 64(R14)
	ADDQ       $68, R14
	Q8PW
	Q8PCOL(0, 0, Z16)
	Q8PCOL(32, 4, Z17)
	ADDQ $34, SI
	ADDQ $64, R9
	ADDQ $8, R10
	DECQ CX
	JNZ  q2blk
	MOVQ R8, AX
	Q8PSUM(Z16)
	Q8PSUM(Z17)
	MOVQ AX, R8
	LEAQ (DI)(BX*2), DI
	ADDQ $8, R8
	DECQ R11
	JMP  q2row

q2done:
	VZEROUPPER
	RET

// func q8_0Packed3VNNI(w *byte, rb, npairs int, xp *byte, nb int, out *float32, ldo int)
TEXT ·q8_0Packed3VNNI(SB), NOSPLIT, $0-56
	MOVQ         w+0(FP), DI
	MOVQ         rb+8(FP), BX
	MOVQ         npairs+16(FP), R11
	MOVQ         out+40(FP), R8
	MOVQ         ldo+48(FP), DX
	SHLQ         $2, DX
	LEAQ         ·f16Table(SB), R12
	VPBROADCASTD qgconst<>+0x00(SB), Z31
	VPXORD       Z13, Z13, Z13

q3row:
	TESTQ R11, R11
	JZ    q3done
	MOVQ  DI, SI
	MOVQ  xp+24(FP), R9
	MOVQ  nb+32(FP), CX
	IMUL3Q $96, CX, R10
	ADDQ  R9, R10
	LEAQ  (DI)(BX*4), R14
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18

q3blk:
	PREFETCHT0 (R14)
	PREFETCHT0 64(R14)
	ADDQ       $68, R14
	Q8PW
	Q8PCOL(0, 0, Z16)
	Q8PCOL(32, 4, Z17)
	Q8PCOL(64, 8, Z18)
	ADDQ $34, SI
	ADDQ $96, R9
	ADDQ $12, R10
	DECQ CX
	JNZ  q3blk
	MOVQ R8, AX
	Q8PSUM(Z16)
	Q8PSUM(Z17)
	Q8PSUM(Z18)
	MOVQ AX, R8
	LEAQ (DI)(BX*2), DI
	ADDQ $8, R8
	DECQ R11
	JMP  q3row

q3done:
	VZEROUPPER
	RET

// func q8_0Packed4VNNI(w *byte, rb, npairs int, xp *byte, nb int, out *float32, ldo int)
TEXT ·q8_0Packed4VNNI(SB), NOSPLIT, $0-56
	MOVQ         w+0(FP), DI
	MOVQ         rb+8(FP), BX
	MOVQ         npairs+16(FP), R11
	MOVQ         out+40(FP), R8
	MOVQ         ldo+48(FP), DX
	SHLQ         $2, DX
	LEAQ         ·f16Table(SB), R12
	VPBROADCASTD qgconst<>+0x00(SB), Z31
	VPXORD       Z13, Z13, Z13

q4row:
	TESTQ R11, R11
	JZ    q4done
	MOVQ  DI, SI
	MOVQ  xp+24(FP), R9
	MOVQ  nb+32(FP), CX
	IMUL3Q $128, CX, R10
	ADDQ  R9, R10
	LEAQ  (DI)(BX*4), R14
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19

q4blk:
	PREFETCHT0 (R14)
	PREFETCHT0 64(R14)
	ADDQ       $68, R14
	Q8PW
	Q8PCOL(0, 0, Z16)
	Q8PCOL(32, 4, Z17)
	Q8PCOL(64, 8, Z18)
	Q8PCOL(96, 12, Z19)
	ADDQ $34, SI
	ADDQ $128, R9
	ADDQ $16, R10
	DECQ CX
	JNZ  q4blk
	MOVQ R8, AX
	Q8PSUM(Z16)
	Q8PSUM(Z17)
	Q8PSUM(Z18)
	Q8PSUM(Z19)
	MOVQ AX, R8
	LEAQ (DI)(BX*2), DI
	ADDQ $8, R8
	DECQ R11
	JMP  q4row

q4done:
	VZEROUPPER
	RET

// func q8_0Packed5VNNI(w *byte, rb, npairs int, xp *byte, nb int, out *float32, ldo int)
TEXT ·q8_0Packed5VNNI(SB), NOSPLIT, $0-56
	MOVQ         w+0(FP), DI
	MOVQ         rb+8(FP), BX
	MOVQ         npairs+16(FP), R11
	MOVQ         out+40(FP), R8
	MOVQ         ldo+48(FP), DX
	SHLQ         $2, DX
	LEAQ         ·f16Table(SB), R12
	VPBROADCASTD qgconst<>+0x00(SB), Z31
	VPXORD       Z13, Z13, Z13

q5row:
	TESTQ R11, R11
	JZ    q5done
	MOVQ  DI, SI
	MOVQ  xp+24(FP), R9
	MOVQ  nb+32(FP), CX
	IMUL3Q $160, CX, R10
	ADDQ  R9, R10
	LEAQ  (DI)(BX*4), R14
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20

q5blk:
	PREFETCHT0 (R14)
	PREFETCHT0 64(R14)
	ADDQ       $68, R14
	Q8PW
	Q8PCOL(0, 0, Z16)
	Q8PCOL(32, 4, Z17)
	Q8PCOL(64, 8, Z18)
	Q8PCOL(96, 12, Z19)
	Q8PCOL(128, 16, Z20)
	ADDQ $34, SI
	ADDQ $160, R9
	ADDQ $20, R10
	DECQ CX
	JNZ  q5blk
	MOVQ R8, AX
	Q8PSUM(Z16)
	Q8PSUM(Z17)
	Q8PSUM(Z18)
	Q8PSUM(Z19)
	Q8PSUM(Z20)
	MOVQ AX, R8
	LEAQ (DI)(BX*2), DI
	ADDQ $8, R8
	DECQ R11
	JMP  q5row

q5done:
	VZEROUPPER
	RET

// func q8_0Packed6VNNI(w *byte, rb, npairs int, xp *byte, nb int, out *float32, ldo int)
TEXT ·q8_0Packed6VNNI(SB), NOSPLIT, $0-56
	MOVQ         w+0(FP), DI
	MOVQ         rb+8(FP), BX
	MOVQ         npairs+16(FP), R11
	MOVQ         out+40(FP), R8
	MOVQ         ldo+48(FP), DX
	SHLQ         $2, DX
	LEAQ         ·f16Table(SB), R12
	VPBROADCASTD qgconst<>+0x00(SB), Z31
	VPXORD       Z13, Z13, Z13

q6row:
	TESTQ R11, R11
	JZ    q6done
	MOVQ  DI, SI
	MOVQ  xp+24(FP), R9
	MOVQ  nb+32(FP), CX
	IMUL3Q $192, CX, R10
	ADDQ  R9, R10
	LEAQ  (DI)(BX*4), R14
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21

q6blk:
	PREFETCHT0 (R14)
	PREFETCHT0 64(R14)
	ADDQ       $68, R14
	Q8PW
	Q8PCOL(0, 0, Z16)
	Q8PCOL(32, 4, Z17)
	Q8PCOL(64, 8, Z18)
	Q8PCOL(96, 12, Z19)
	Q8PCOL(128, 16, Z20)
	Q8PCOL(160, 20, Z21)
	ADDQ $34, SI
	ADDQ $192, R9
	ADDQ $24, R10
	DECQ CX
	JNZ  q6blk
	MOVQ R8, AX
	Q8PSUM(Z16)
	Q8PSUM(Z17)
	Q8PSUM(Z18)
	Q8PSUM(Z19)
	Q8PSUM(Z20)
	Q8PSUM(Z21)
	MOVQ AX, R8
	LEAQ (DI)(BX*2), DI
	ADDQ $8, R8
	DECQ R11
	JMP  q6row

q6done:
	VZEROUPPER
	RET

// func q8_0Packed7VNNI(w *byte, rb, npairs int, xp *byte, nb int, out *float32, ldo int)
TEXT ·q8_0Packed7VNNI(SB), NOSPLIT, $0-56
	MOVQ         w+0(FP), DI
	MOVQ         rb+8(FP), BX
	MOVQ         npairs+16(FP), R11
	MOVQ         out+40(FP), R8
	MOVQ         ldo+48(FP), DX
	SHLQ         $2, DX
	LEAQ         ·f16Table(SB), R12
	VPBROADCASTD qgconst<>+0x00(SB), Z31
	VPXORD       Z13, Z13, Z13

q7row:
	TESTQ R11, R11
	JZ    q7done
	MOVQ  DI, SI
	MOVQ  xp+24(FP), R9
	MOVQ  nb+32(FP), CX
	IMUL3Q $224, CX, R10
	ADDQ  R9, R10
	LEAQ  (DI)(BX*4), R14
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22

q7blk:
	PREFETCHT0 (R14)
	PREFETCHT0 64(R14)
	ADDQ       $68, R14
	Q8PW
	Q8PCOL(0, 0, Z16)
	Q8PCOL(32, 4, Z17)
	Q8PCOL(64, 8, Z18)
	Q8PCOL(96, 12, Z19)
	Q8PCOL(128, 16, Z20)
	Q8PCOL(160, 20, Z21)
	Q8PCOL(192, 24, Z22)
	ADDQ $34, SI
	ADDQ $224, R9
	ADDQ $28, R10
	DECQ CX
	JNZ  q7blk
	MOVQ R8, AX
	Q8PSUM(Z16)
	Q8PSUM(Z17)
	Q8PSUM(Z18)
	Q8PSUM(Z19)
	Q8PSUM(Z20)
	Q8PSUM(Z21)
	Q8PSUM(Z22)
	MOVQ AX, R8
	LEAQ (DI)(BX*2), DI
	ADDQ $8, R8
	DECQ R11
	JMP  q7row

q7done:
	VZEROUPPER
	RET

// func q8_0Packed8VNNI(w *byte, rb, npairs int, xp *byte, nb int, out *float32, ldo int)
TEXT ·q8_0Packed8VNNI(SB), NOSPLIT, $0-56
	MOVQ         w+0(FP), DI
	MOVQ         rb+8(FP), BX
	MOVQ         npairs+16(FP), R11
	MOVQ         out+40(FP), R8
	MOVQ         ldo+48(FP), DX
	SHLQ         $2, DX
	LEAQ         ·f16Table(SB), R12
	VPBROADCASTD qgconst<>+0x00(SB), Z31
	VPXORD       Z13, Z13, Z13

q8row:
	TESTQ R11, R11
	JZ    q8done
	MOVQ  DI, SI
	MOVQ  xp+24(FP), R9
	MOVQ  nb+32(FP), CX
	IMUL3Q $256, CX, R10
	ADDQ  R9, R10
	LEAQ  (DI)(BX*4), R14
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23

q8blk:
	PREFETCHT0 (R14)
	PREFETCHT0 64(R14)
	ADDQ       $68, R14
	Q8PW
	Q8PCOL(0, 0, Z16)
	Q8PCOL(32, 4, Z17)
	Q8PCOL(64, 8, Z18)
	Q8PCOL(96, 12, Z19)
	Q8PCOL(128, 16, Z20)
	Q8PCOL(160, 20, Z21)
	Q8PCOL(192, 24, Z22)
	Q8PCOL(224, 28, Z23)
	ADDQ $34, SI
	ADDQ $256, R9
	ADDQ $32, R10
	DECQ CX
	JNZ  q8blk
	MOVQ R8, AX
	Q8PSUM(Z16)
	Q8PSUM(Z17)
	Q8PSUM(Z18)
	Q8PSUM(Z19)
	Q8PSUM(Z20)
	Q8PSUM(Z21)
	Q8PSUM(Z22)
	Q8PSUM(Z23)
	MOVQ AX, R8
	LEAQ (DI)(BX*2), DI
	ADDQ $8, R8
	DECQ R11
	JMP  q8row

q8done:
	VZEROUPPER
	RET
