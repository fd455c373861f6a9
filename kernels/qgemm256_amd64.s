//go:build !noasm

#include "textflag.h"
#include "k4utmp_amd64.h"

// MatMulQ kernels for AVX2 (and AVX-VNNI's VEX-encoded VPDPBUSD); the
// layouts and the reasoning are in qgemm256_amd64.go. Each kernel streams
// nrows weight rows against one activation row in ggml's blocks (Q8_0 or
// Q8_K), forms the eight exact int32 lane sums of a block in one ymm,
// converts them and accumulates acc = fma(d, lane, acc), then adds the
// lanes as ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)): qdot.go's float32
// operations in its order.

DATA q2const<>+0x00(SB)/4, $0x0f0f0f0f // nibble mask
DATA q2const<>+0x04(SB)/4, $0x08080808 // Q4_0 zero point
DATA q2const<>+0x08(SB)/4, $0x00010001 // int16 ones
DATA q2const<>+0x0c(SB)/4, $0x80808080 // byte offset 128
DATA q2const<>+0x10(SB)/4, $0x30303030 // Q6_K high-bit field
DATA q2const<>+0x14(SB)/4, $0x20202020 // Q6_K zero point
DATA q2const<>+0x18(SB)/4, $0x80000000 // float32 sign
DATA q2const<>+0x1c(SB)/4, $0x42fe0000 // 127.0
DATA q2const<>+0x20(SB)/4, $0x7fffffff // |x| mask
// VPERMD order that undoes the lane interleave of VPACKSSDW+VPACKSSWB.
DATA q2const<>+0x40(SB)/8, $0x0000000400000000
DATA q2const<>+0x48(SB)/8, $0x0000000500000001
DATA q2const<>+0x50(SB)/8, $0x0000000600000002
DATA q2const<>+0x58(SB)/8, $0x0000000700000003
// VPSHUFB masks over the eight int16 Q6_K scales s0..s7 (both 128-bit
// halves): chunk c gets s(2c) in its low half (elements 0..15) and
// s(2c+1) in its high half (16..31).
DATA q2const<>+0x60(SB)/8, $0x0100010001000100
DATA q2const<>+0x68(SB)/8, $0x0100010001000100
DATA q2const<>+0x70(SB)/8, $0x0302030203020302
DATA q2const<>+0x78(SB)/8, $0x0302030203020302
DATA q2const<>+0x80(SB)/8, $0x0504050405040504
DATA q2const<>+0x88(SB)/8, $0x0504050405040504
DATA q2const<>+0x90(SB)/8, $0x0706070607060706
DATA q2const<>+0x98(SB)/8, $0x0706070607060706
DATA q2const<>+0xa0(SB)/8, $0x0908090809080908
DATA q2const<>+0xa8(SB)/8, $0x0908090809080908
DATA q2const<>+0xb0(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA q2const<>+0xb8(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA q2const<>+0xc0(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA q2const<>+0xc8(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA q2const<>+0xd0(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA q2const<>+0xd8(SB)/8, $0x0f0e0f0e0f0e0f0e
// Q5 high bits: VPSHUFB mask spreading qh byte b over bytes 8b..8b+7,
// then every bit but bit k of byte k set (ggml's bytes_from_bits_32).
DATA q2const<>+0xe0(SB)/8, $0x0000000000000000
DATA q2const<>+0xe8(SB)/8, $0x0101010101010101
DATA q2const<>+0xf0(SB)/8, $0x0202020202020202
DATA q2const<>+0xf8(SB)/8, $0x0303030303030303
DATA q2const<>+0x100(SB)/8, $0x7fbfdfeff7fbfdfe
DATA q2const<>+0x108(SB)/8, $0x7fbfdfeff7fbfdfe
DATA q2const<>+0x110(SB)/8, $0x7fbfdfeff7fbfdfe
DATA q2const<>+0x118(SB)/8, $0x7fbfdfeff7fbfdfe
DATA q2const<>+0x120(SB)/4, $0x10101010 // Q5 high bit, Q5_0 zero point
DATA q2const<>+0x124(SB)/4, $0x03030303 // 2-bit mask
DATA q2const<>+0x128(SB)/4, $0x04040404 // Q3_K high bit, zero point
DATA q2const<>+0x12c(SB)/4, $0x000f000f // Q2_K scale mask (int16)
// VPSHUFB masks that broadcast int16 word k (k = 0..7) of both 128-bit
// lanes to all of its words: the Q4_K / Q5_K sub-block scale sc(k).
DATA q2const<>+0x140(SB)/8, $0x0100010001000100
DATA q2const<>+0x148(SB)/8, $0x0100010001000100
DATA q2const<>+0x150(SB)/8, $0x0100010001000100
DATA q2const<>+0x158(SB)/8, $0x0100010001000100
DATA q2const<>+0x160(SB)/8, $0x0302030203020302
DATA q2const<>+0x168(SB)/8, $0x0302030203020302
DATA q2const<>+0x170(SB)/8, $0x0302030203020302
DATA q2const<>+0x178(SB)/8, $0x0302030203020302
DATA q2const<>+0x180(SB)/8, $0x0504050405040504
DATA q2const<>+0x188(SB)/8, $0x0504050405040504
DATA q2const<>+0x190(SB)/8, $0x0504050405040504
DATA q2const<>+0x198(SB)/8, $0x0504050405040504
DATA q2const<>+0x1a0(SB)/8, $0x0706070607060706
DATA q2const<>+0x1a8(SB)/8, $0x0706070607060706
DATA q2const<>+0x1b0(SB)/8, $0x0706070607060706
DATA q2const<>+0x1b8(SB)/8, $0x0706070607060706
DATA q2const<>+0x1c0(SB)/8, $0x0908090809080908
DATA q2const<>+0x1c8(SB)/8, $0x0908090809080908
DATA q2const<>+0x1d0(SB)/8, $0x0908090809080908
DATA q2const<>+0x1d8(SB)/8, $0x0908090809080908
DATA q2const<>+0x1e0(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA q2const<>+0x1e8(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA q2const<>+0x1f0(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA q2const<>+0x1f8(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA q2const<>+0x200(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA q2const<>+0x208(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA q2const<>+0x210(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA q2const<>+0x218(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA q2const<>+0x220(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA q2const<>+0x228(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA q2const<>+0x230(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA q2const<>+0x238(SB)/8, $0x0f0e0f0e0f0e0f0e
GLOBL q2const<>(SB), RODATA|NOPTR, $0x240

// VPDPBUSDY(s, u, d) is the VEX-encoded (AVX-VNNI) VPDPBUSD Ys, Yu, Yd:
// Yd.int32[l] += Σ_{t<4} Yu.uint8[4l+t] · Ys.int8[4l+t]. The assembler
// knows only the EVEX form, which needs AVX512VL, so the bytes are
// spelled out: C4, RXB.00010, W0.vvvv.L1.01, 50, ModRM(11, d, s).
#define VPDPBUSDY(s, u, d) BYTE $0xC4; BYTE $(0x42 | ((((d)>>3)^1)<<7) | ((((s)>>3)^1)<<5)); BYTE $(0x05 | ((15-(u))<<3)); BYTE $0x50; BYTE $(0xC0 | (((d)&7)<<3) | ((s)&7))

// HSUM8 leaves hsum8 of the eight lanes of Y in the low float of X (X is
// Y's low half), T scratch.
#define HSUM8(Y, X, T) \
	VEXTRACTF128 $1, Y, T \
	VADDPS       T, X, X \
	VPERMILPS    $0x4e, X, T \
	VADDPS       T, X, X \
	VPERMILPS    $0xb1, X, T \
	VADDSS       T, X, X

// A Q0 kernel runs, per weight row DI, Q0ROW, then per block its body
// (which leaves the block's int32 lane sums in Y1) and Q0BLK(WB), then
// Q0END: the hsum8 of acc = fma(dw·dx, lane, acc) over the nb blocks
// (weights WB bytes a block, Q8_0 activations 34) is stored to (R8). R12
// holds &f16Table.
#define Q0ROW \
	MOVQ   DI, SI \
	MOVQ   xa+24(FP), R9 \
	MOVQ   nb+32(FP), CX \
	VXORPS Y0, Y0, Y0

#define Q0BLK(WB) \
	VCVTDQ2PS    Y1, Y1 \
	MOVWLZX      (SI), AX \
	VMOVSS       (R12)(AX*4), X3 \
	MOVWLZX      (R9), AX \
	VMULSS       (R12)(AX*4), X3, X3 \
	VBROADCASTSS X3, Y3 \
	VFMADD231PS  Y1, Y3, Y0 \
	ADDQ         $WB, SI \
	ADDQ         $34, R9 \
	DECQ         CX

// Q1BLK is Q0BLK for Q4_1/Q5_1 weights (WB bytes) and Q8_1 activations
// (36 bytes: d, s, q): it also sets summs = fma(m, s, summs) in X9.
#define Q1BLK(WB) \
	MOVWLZX      2(SI), AX \
	VMOVSS       (R12)(AX*4), X6 \
	MOVWLZX      2(R9), AX \
	VMOVSS       (R12)(AX*4), X7 \
	VFMADD231SS  X7, X6, X9 \
	VCVTDQ2PS    Y1, Y1 \
	MOVWLZX      (SI), AX \
	VMOVSS       (R12)(AX*4), X3 \
	MOVWLZX      (R9), AX \
	VMULSS       (R12)(AX*4), X3, X3 \
	VBROADCASTSS X3, Y3 \
	VFMADD231PS  Y1, Y3, Y0 \
	ADDQ         $WB, SI \
	ADDQ         $36, R9 \
	DECQ         CX

// Q1END is Q0END storing hsum8(acc) + summs.
#define Q1END \
	HSUM8(Y0, X0, X3) \
	VADDSS X9, X0, X0 \
	VMOVSS X0, (R8) \
	ADDQ   rb+8(FP), DI \
	ADDQ   $4, R8 \
	DECQ   R11

#define Q0END \
	HSUM8(Y0, X0, X3) \
	VMOVSS X0, (R8) \
	ADDQ   rb+8(FP), DI \
	ADDQ   $4, R8 \
	DECQ   R11

#define Q0START \
	MOVQ         w+0(FP), DI \
	MOVQ         nrows+16(FP), R11 \
	MOVQ         out+40(FP), R8 \
	LEAQ         ·f16Table(SB), R12 \
	VPBROADCASTD q2const<>+0x00(SB), Y15 \
	VPBROADCASTD q2const<>+0x04(SB), Y14 \
	VPBROADCASTD q2const<>+0x08(SB), Y13 \
	VPBROADCASTD q2const<>+0x0c(SB), Y12 \
	VPBROADCASTD q2const<>+0x120(SB), Y11 \
	VPCMPEQB     Y10, Y10, Y10

// Q5HB leaves the 32 high bits of a Q5 block (u32 at off(SI)) as bytes
// 0x10 or 0 in Y6 (Y10 all ones, Y11 0x10 bytes).
#define Q5HB(off) \
	VPBROADCASTD off(SI), Y6 \
	VPSHUFB      q2const<>+0xe0(SB), Y6, Y6 \
	VPOR         q2const<>+0x100(SB), Y6, Y6 \
	VPCMPEQB     Y10, Y6, Y6 \
	VPAND        Y11, Y6, Y6

// Q5NIB leaves a Q5 block's 5-bit unsigned values (qh at qh(SI), qs at
// qs(SI)) in Y4.
#define Q5NIB(qh, qs) \
	VMOVDQU     qs(SI), X4 \
	VPSRLW      $4, X4, X5 \
	VINSERTI128 $1, X5, Y4, Y4 \
	VPAND       Y15, Y4, Y4 \
	Q5HB(qh) \
	VPOR        Y6, Y4, Y4

// Q5_0 × Q8_0: (u·x pairs) − (16·x pairs), u = 5-bit value, exact in int16.
#define Q50BODY \
	Q5NIB(2, 6) \
	VMOVDQU    2(R9), Y2 \
	VPMADDUBSW Y2, Y4, Y1 \
	VPMADDUBSW Y2, Y11, Y5 \
	VPSUBW     Y5, Y1, Y1 \
	VPMADDWD   Y13, Y1, Y1

#define Q50BODYVNNI \
	Q5NIB(2, 6) \
	VMOVDQU 2(R9), Y2 \
	VPXOR   Y1, Y1, Y1 \
	VPXOR   Y5, Y5, Y5 \
	VPDPBUSDY(2, 4, 1) \
	VPDPBUSDY(2, 11, 5) \
	VPSUBD  Y5, Y1, Y1

// Q4_1 × Q8_1 (nibbles at 4) and Q5_1 × Q8_1 (qh at 4, qs at 8): the
// unsigned values times x.
#define Q41BODY \
	VMOVDQU     4(SI), X4 \
	VPSRLW      $4, X4, X5 \
	VINSERTI128 $1, X5, Y4, Y4 \
	VPAND       Y15, Y4, Y4 \
	VPMADDUBSW  4(R9), Y4, Y1 \
	VPMADDWD    Y13, Y1, Y1

#define Q41BODYVNNI \
	VMOVDQU     4(SI), X4 \
	VPSRLW      $4, X4, X5 \
	VINSERTI128 $1, X5, Y4, Y4 \
	VPAND       Y15, Y4, Y4 \
	VMOVDQU     4(R9), Y2 \
	VPXOR       Y1, Y1, Y1 \
	VPDPBUSDY(2, 4, 1)

#define Q51BODY \
	Q5NIB(4, 8) \
	VPMADDUBSW 4(R9), Y4, Y1 \
	VPMADDWD   Y13, Y1, Y1

#define Q51BODYVNNI \
	Q5NIB(4, 8) \
	VMOVDQU 4(R9), Y2 \
	VPXOR   Y1, Y1, Y1 \
	VPDPBUSDY(2, 4, 1)

// Q8_0 × Q8_0 with VPMADDUBSW: |w| (unsigned, ≤ 128) times x with w's
// sign (signed; x ≠ −128, checked by the caller, so no pair saturates).
#define Q8BODY \
	VMOVDQU    2(SI), Y1 \
	VMOVDQU    2(R9), Y2 \
	VPSIGNB    Y1, Y2, Y2 \
	VPABSB     Y1, Y1 \
	VPMADDUBSW Y2, Y1, Y1 \
	VPMADDWD   Y13, Y1, Y1

// Q8_0 × Q8_0 with VPDPBUSD: Σ(w+128)·x − Σ128·x, exact for every byte.
#define Q8BODYVNNI \
	VMOVDQU 2(SI), Y4 \
	VPXOR   Y12, Y4, Y4 \
	VMOVDQU 2(R9), Y2 \
	VPXOR   Y1, Y1, Y1 \
	VPXOR   Y5, Y5, Y5 \
	VPDPBUSDY(2, 4, 1) \
	VPDPBUSDY(2, 12, 5) \
	VPSUBD  Y5, Y1, Y1

// Q4_0's nibbles (elements 0..15 low, 16..31 high) as unsigned bytes in Y4.
#define Q4NIB \
	VMOVDQU     2(SI), X4 \
	VPSRLW      $4, X4, X5 \
	VINSERTI128 $1, X5, Y4, Y4 \
	VPAND       Y15, Y4, Y4

// Q4_0 × Q8_0 with VPMADDUBSW: (nibble·x pairs) − (8·x pairs), exact in int16.
#define Q4BODY \
	Q4NIB \
	VMOVDQU    2(R9), Y2 \
	VPMADDUBSW Y2, Y4, Y1 \
	VPMADDUBSW Y2, Y14, Y5 \
	VPSUBW     Y5, Y1, Y1 \
	VPMADDWD   Y13, Y1, Y1

// Q4_0 × Q8_0 with VPDPBUSD: Σ nibble·x − Σ8·x.
#define Q4BODYVNNI \
	Q4NIB \
	VMOVDQU 2(R9), Y2 \
	VPXOR   Y1, Y1, Y1 \
	VPXOR   Y5, Y5, Y5 \
	VPDPBUSDY(2, 4, 1) \
	VPDPBUSDY(2, 14, 5) \
	VPSUBD  Y5, Y1, Y1

// The four-row kernels: one pass over nrows weight rows serves four
// activation rows (xa, xa+arb, xa+2·arb, xa+3·arb), so each weight block
// is loaded and unpacked once per four outputs; output (m, r) goes to
// out[m·ldo + r]. Registers: acc Y0..Y3, the weights' unsigned bytes Y4
// (Q8_0 AVX2: Y5 holds the signed weights for VPSIGNB), x Y6, lanes Y7,
// dw X9; activation pointers R9, R10, R13, R14.
#define Q4XSTART \
	MOVQ         w+0(FP), DI \
	MOVQ         nrows+16(FP), R11 \
	MOVQ         out+48(FP), R8 \
	MOVQ         ldo+56(FP), DX \
	SHLQ         $2, DX \
	LEAQ         ·f16Table(SB), R12 \
	VPBROADCASTD q2const<>+0x00(SB), Y15 \
	VPBROADCASTD q2const<>+0x04(SB), Y14 \
	VPBROADCASTD q2const<>+0x08(SB), Y13 \
	VPBROADCASTD q2const<>+0x0c(SB), Y12

#define Q4XROW \
	MOVQ   DI, SI \
	MOVQ   xa+24(FP), R9 \
	MOVQ   arb+32(FP), AX \
	LEAQ   (R9)(AX*1), R10 \
	LEAQ   (R10)(AX*1), R13 \
	LEAQ   (R13)(AX*1), R14 \
	MOVQ   nb+40(FP), CX \
	VXORPS Y0, Y0, Y0 \
	VXORPS Y1, Y1, Y1 \
	VXORPS Y2, Y2, Y2 \
	VXORPS Y3, Y3, Y3

// Q4XACC adds one activation row's block (at R) to ACC, its lanes made by
// LANES from Y4 (Y5) and the row's quants in Y6.
#define Q4XACC(R, ACC, LANES) \
	VMOVDQU      2(R), Y6 \
	LANES \
	VCVTDQ2PS    Y7, Y7 \
	MOVWLZX      (R), AX \
	VMULSS       (R12)(AX*4), X9, X8 \
	VBROADCASTSS X8, Y8 \
	VFMADD231PS  Y7, Y8, ACC

#define Q4XBLK(WB, LANES) \
	MOVWLZX (SI), AX \
	VMOVSS  (R12)(AX*4), X9 \
	Q4XACC(R9, Y0, LANES) \
	Q4XACC(R10, Y1, LANES) \
	Q4XACC(R13, Y2, LANES) \
	Q4XACC(R14, Y3, LANES) \
	ADDQ    $WB, SI \
	ADDQ    $34, R9 \
	ADDQ    $34, R10 \
	ADDQ    $34, R13 \
	ADDQ    $34, R14 \
	DECQ    CX

#define Q4XEND \
	HSUM8(Y0, X0, X8) \
	VMOVSS X0, (R8) \
	HSUM8(Y1, X1, X8) \
	VMOVSS X1, (R8)(DX*1) \
	LEAQ   (R8)(DX*2), AX \
	HSUM8(Y2, X2, X8) \
	VMOVSS X2, (AX) \
	HSUM8(Y3, X3, X8) \
	VMOVSS X3, (AX)(DX*1) \
	ADDQ   rb+8(FP), DI \
	ADDQ   $4, R8 \
	DECQ   R11

#define Q8XW \
	VMOVDQU 2(SI), Y5 \
	VPABSB  Y5, Y4

#define Q8XLANES \
	VPSIGNB    Y5, Y6, Y6 \
	VPMADDUBSW Y6, Y4, Y7 \
	VPMADDWD   Y13, Y7, Y7

#define Q8XWVNNI \
	VMOVDQU 2(SI), Y4 \
	VPXOR   Y12, Y4, Y4

#define Q8XLANESVNNI \
	VPXOR   Y7, Y7, Y7 \
	VPXOR   Y8, Y8, Y8 \
	VPDPBUSDY(6, 4, 7) \
	VPDPBUSDY(6, 12, 8) \
	VPSUBD  Y8, Y7, Y7

#define Q4XLANES \
	VPMADDUBSW Y6, Y4, Y7 \
	VPMADDUBSW Y6, Y14, Y8 \
	VPSUBW     Y8, Y7, Y7 \
	VPMADDWD   Y13, Y7, Y7

#define Q4XLANESVNNI \
	VPXOR   Y7, Y7, Y7 \
	VPXOR   Y8, Y8, Y8 \
	VPDPBUSDY(6, 4, 7) \
	VPDPBUSDY(6, 14, 8) \
	VPSUBD  Y8, Y7, Y7

// The Q4_0 chain kernels (chainOrder): eight weight rows against one
// activation row, every output accumulated as llama.cpp's repacked Q4_0
// kernels accumulate it, acc = fma(float32(Σ (q−8)·x), dw·dx, acc) block
// after block, with the eight rows in the eight lanes of Y0. Rows r and
// r+4 share a ymm: their 16 nibble bytes side by side, so that the low
// nibbles (elements 0–15 of both rows) meet the activations' first half
// broadcast to both 128-bit lanes (Y11) and the high ones the second half
// (Y12). Each row's lanes are exact int32 sums as in the Q4_0 dot
// kernels; two rounds of VPHADDD over the four vectors leave row r's
// whole block sum in lane r. The eight scales are gathered as binary16
// words by VPINSRW and widened by VCVTPH2PS. Rows: SI + r·rb and
// R13 = SI + 4rb (+ 0, rb, 2rb, DX = 3rb); activations R9; Y8 the block's
// offset term (AVX2: the int16 pairs of 8·x, both halves added; VNNI: the
// int32 lanes −8·Σ x), Y13 int16 ones (AVX2) or −1 (VNNI), Y14 0x08, Y15
// 0x0f. R14 prefetches the next eight rows, which are contiguous: 144
// bytes (eight rows' share) a block.

// F16ROWS8 gathers the binary16 words at A, A+rb, A+2rb, A+3rb, B, B+rb,
// B+2rb, B+3rb (BX = rb, DX = 3rb) into the eight words of X, in that
// order: the block scales of eight Q4_0 rows for the chain kernels
// (C8BLK), widened next by VCVTPH2PS.
#define F16ROWS8(A, B, X) \
	VPINSRW $0, (A), X, X \
	VPINSRW $1, (A)(BX*1), X, X \
	VPINSRW $2, (A)(BX*2), X, X \
	VPINSRW $3, (A)(DX*1), X, X \
	VPINSRW $4, (B), X, X \
	VPINSRW $5, (B)(BX*1), X, X \
	VPINSRW $6, (B)(BX*2), X, X \
	VPINSRW $7, (B)(DX*1), X, X

// C8NIB unpacks the nibbles of rows M1 and M2 to Y4 (low) and Y5 (high).
#define C8NIB(M1, M2) \
	VMOVDQU     M1, X4 \
	VINSERTI128 $1, M2, Y4, Y4 \
	VPSRLW      $4, Y4, Y5 \
	VPAND       Y15, Y4, Y4 \
	VPAND       Y15, Y5, Y5

#define C8PREAVX2 \
	VPMADDUBSW Y11, Y14, Y8 \
	VPMADDUBSW Y12, Y14, Y9 \
	VPADDW     Y9, Y8, Y8

#define C8ROWAVX2(M1, M2, L, LN) \
	C8NIB(M1, M2) \
	VPMADDUBSW Y11, Y4, L \
	VPMADDUBSW Y12, Y5, Y5 \
	VPADDW     Y5, L, L \
	VPSUBW     Y8, L, L \
	VPMADDWD   Y13, L, L

#define C8PREVNNI \
	C8PREAVX2 \
	VPMADDWD Y13, Y8, Y8

// AVX-VNNI (VEX): L = −8·Σ x + Σ u·x.
#define C8ROWAVXVNNI(M1, M2, L, LN) \
	C8NIB(M1, M2) \
	VMOVDQA Y8, L \
	VPDPBUSDY(11, 4, LN) \
	VPDPBUSDY(12, 5, LN)

// AVX-512 VNNI (EVEX, 256-bit).
#define C8ROWVNNI512(M1, M2, L, LN) \
	C8NIB(M1, M2) \
	VMOVDQA  Y8, L \
	VPDPBUSD Y11, Y4, L \
	VPDPBUSD Y12, Y5, L

#define C8BLK(ROW, PRE) \
	PREFETCHT0     (R14) \
	PREFETCHT0     64(R14) \
	PREFETCHT0     128(R14) \
	ADDQ           $144, R14 \
	VBROADCASTI128 2(R9), Y11 \
	VBROADCASTI128 18(R9), Y12 \
	PRE \
	ROW(2(SI), 2(R13), Y1, 1) \
	ROW(2(SI)(BX*1), 2(R13)(BX*1), Y3, 3) \
	VPHADDD        Y3, Y1, Y1 \
	ROW(2(SI)(BX*2), 2(R13)(BX*2), Y3, 3) \
	ROW(2(SI)(DX*1), 2(R13)(DX*1), Y6, 6) \
	VPHADDD        Y6, Y3, Y3 \
	VPHADDD        Y3, Y1, Y1 \
	VCVTDQ2PS      Y1, Y1 \
	F16ROWS8(SI, R13, X9) \
	VCVTPH2PS      X9, Y9 \
	MOVWLZX        (R9), AX \
	VBROADCASTSS   (R12)(AX*4), Y10 \
	VMULPS         Y10, Y9, Y9 \
	VFMADD231PS    Y1, Y9, Y0 \
	ADDQ           $18, SI \
	ADDQ           $18, R13 \
	ADDQ           $34, R9 \
	DECQ           CX

#define C8START \
	MOVQ         w+0(FP), DI \
	MOVQ         rb+8(FP), BX \
	MOVQ         nrows+16(FP), R11 \
	MOVQ         out+40(FP), R8 \
	LEAQ         ·f16Table(SB), R12 \
	LEAQ         (BX)(BX*2), DX \
	VPBROADCASTD q2const<>+0x00(SB), Y15 \
	VPBROADCASTD q2const<>+0x04(SB), Y14

#define C8GROUP \
	MOVQ   DI, SI \
	LEAQ   (DI)(BX*4), R13 \
	LEAQ   (DI)(BX*8), R14 \
	MOVQ   xa+24(FP), R9 \
	MOVQ   nb+32(FP), CX \
	VXORPS Y0, Y0, Y0

#define C8STORE \
	VMOVUPS Y0, (R8) \
	ADDQ    $32, R8 \
	LEAQ    (DI)(BX*8), DI \
	SUBQ    $8, R11

// K4SCY widens K4UTMP's scales (AX, DX) to eight int16 in X and copies
// them to both 128-bit lanes of Y, for VPSHUFB's per-lane broadcasts.
#define K4SCY(X, Y) \
	VMOVD       AX, X \
	VPINSRD     $1, DX, X, X \
	VPMOVZXBW   X, X \
	VINSERTI128 $1, X, Y, Y

// func q8_0DotAVX2(w *byte, rb, nrows int, xa *byte, nb int, out *float32)
//
// out[r] = ggml's Q8_0·Q8_0 dot of weight row r < nrows (rows rb bytes
// apart, nb blocks) with the Q8_0 activation row xa, which must hold no
// −128.
TEXT ·q8_0DotAVX2(SB), NOSPLIT, $0-48
	Q0START

q8row:
	TESTQ R11, R11
	JZ    q8done
	Q0ROW

q8blk:
	Q8BODY
	Q0BLK(34)
	JNZ   q8blk
	Q0END
	JMP   q8row

q8done:
	VZEROUPPER
	RET

// func q8_0DotAVXVNNI(w *byte, rb, nrows int, xa *byte, nb int, out *float32)
//
// q8_0DotAVX2 with VPDPBUSD, for any activation bytes.
TEXT ·q8_0DotAVXVNNI(SB), NOSPLIT, $0-48
	Q0START

q8vrow:
	TESTQ R11, R11
	JZ    q8vdone
	Q0ROW

q8vblk:
	Q8BODYVNNI
	Q0BLK(34)
	JNZ   q8vblk
	Q0END
	JMP   q8vrow

q8vdone:
	VZEROUPPER
	RET

// func q4_0DotAVX2(w *byte, rb, nrows int, xa *byte, nb int, out *float32)
//
// out[r] = ggml's Q4_0·Q8_0 dot of weight row r with the activation row xa.
TEXT ·q4_0DotAVX2(SB), NOSPLIT, $0-48
	Q0START

q4row:
	TESTQ R11, R11
	JZ    q4done
	Q0ROW

q4blk:
	Q4BODY
	Q0BLK(18)
	JNZ   q4blk
	Q0END
	JMP   q4row

q4done:
	VZEROUPPER
	RET

// func q4_0DotAVXVNNI(w *byte, rb, nrows int, xa *byte, nb int, out *float32)
TEXT ·q4_0DotAVXVNNI(SB), NOSPLIT, $0-48
	Q0START

q4vrow:
	TESTQ R11, R11
	JZ    q4vdone
	Q0ROW

q4vblk:
	Q4BODYVNNI
	Q0BLK(18)
	JNZ   q4vblk
	Q0END
	JMP   q4vrow

q4vdone:
	VZEROUPPER
	RET

// func q5_0DotAVX2(w *byte, rb, nrows int, xa *byte, nb int, out *float32)
TEXT ·q5_0DotAVX2(SB), NOSPLIT, $0-48
	Q0START

q50row:
	TESTQ R11, R11
	JZ    q50done
	Q0ROW

q50blk:
	Q50BODY
	Q0BLK(22)
	JNZ   q50blk
	Q0END
	JMP   q50row

q50done:
	VZEROUPPER
	RET

// func q5_0DotAVXVNNI(w *byte, rb, nrows int, xa *byte, nb int, out *float32)
TEXT ·q5_0DotAVXVNNI(SB), NOSPLIT, $0-48
	Q0START

q50vrow:
	TESTQ R11, R11
	JZ    q50vdone
	Q0ROW

q50vblk:
	Q50BODYVNNI
	Q0BLK(22)
	JNZ   q50vblk
	Q0END
	JMP   q50vrow

q50vdone:
	VZEROUPPER
	RET

// func q4_1DotAVX2(w *byte, rb, nrows int, xa *byte, nb int, out *float32)
TEXT ·q4_1DotAVX2(SB), NOSPLIT, $0-48
	Q0START

q41row:
	TESTQ R11, R11
	JZ    q41done
	Q0ROW
	VXORPS X9, X9, X9

q41blk:
	Q41BODY
	Q1BLK(20)
	JNZ   q41blk
	Q1END
	JMP   q41row

q41done:
	VZEROUPPER
	RET

// func q4_1DotAVXVNNI(w *byte, rb, nrows int, xa *byte, nb int, out *float32)
TEXT ·q4_1DotAVXVNNI(SB), NOSPLIT, $0-48
	Q0START

q41vrow:
	TESTQ R11, R11
	JZ    q41vdone
	Q0ROW
	VXORPS X9, X9, X9

q41vblk:
	Q41BODYVNNI
	Q1BLK(20)
	JNZ   q41vblk
	Q1END
	JMP   q41vrow

q41vdone:
	VZEROUPPER
	RET

// func q5_1DotAVX2(w *byte, rb, nrows int, xa *byte, nb int, out *float32)
TEXT ·q5_1DotAVX2(SB), NOSPLIT, $0-48
	Q0START

q51row:
	TESTQ R11, R11
	JZ    q51done
	Q0ROW
	VXORPS X9, X9, X9

q51blk:
	Q51BODY
	Q1BLK(24)
	JNZ   q51blk
	Q1END
	JMP   q51row

q51done:
	VZEROUPPER
	RET

// func q5_1DotAVXVNNI(w *byte, rb, nrows int, xa *byte, nb int, out *float32)
TEXT ·q5_1DotAVXVNNI(SB), NOSPLIT, $0-48
	Q0START

q51vrow:
	TESTQ R11, R11
	JZ    q51vdone
	Q0ROW
	VXORPS X9, X9, X9

q51vblk:
	Q51BODYVNNI
	Q1BLK(24)
	JNZ   q51vblk
	Q1END
	JMP   q51vrow

q51vdone:
	VZEROUPPER
	RET

// func q8_0Dot4AVX2(w *byte, rb, nrows int, xa *byte, arb, nb int, out *float32, ldo int)
TEXT ·q8_0Dot4AVX2(SB), NOSPLIT, $0-64
	Q4XSTART

q8xrow:
	TESTQ R11, R11
	JZ    q8xdone
	Q4XROW

q8xblk:
	Q8XW
	Q4XBLK(34, Q8XLANES)
	JNZ   q8xblk
	Q4XEND
	JMP   q8xrow

q8xdone:
	VZEROUPPER
	RET

// func q8_0Dot4AVXVNNI(w *byte, rb, nrows int, xa *byte, arb, nb int, out *float32, ldo int)
TEXT ·q8_0Dot4AVXVNNI(SB), NOSPLIT, $0-64
	Q4XSTART

q8xvrow:
	TESTQ R11, R11
	JZ    q8xvdone
	Q4XROW

q8xvblk:
	Q8XWVNNI
	Q4XBLK(34, Q8XLANESVNNI)
	JNZ   q8xvblk
	Q4XEND
	JMP   q8xvrow

q8xvdone:
	VZEROUPPER
	RET

// func q4_0Dot4AVX2(w *byte, rb, nrows int, xa *byte, arb, nb int, out *float32, ldo int)
TEXT ·q4_0Dot4AVX2(SB), NOSPLIT, $0-64
	Q4XSTART

q4xrow:
	TESTQ R11, R11
	JZ    q4xdone
	Q4XROW

q4xblk:
	Q4NIB
	Q4XBLK(18, Q4XLANES)
	JNZ   q4xblk
	Q4XEND
	JMP   q4xrow

q4xdone:
	VZEROUPPER
	RET

// func q4_0Dot4AVXVNNI(w *byte, rb, nrows int, xa *byte, arb, nb int, out *float32, ldo int)
TEXT ·q4_0Dot4AVXVNNI(SB), NOSPLIT, $0-64
	Q4XSTART

q4xvrow:
	TESTQ R11, R11
	JZ    q4xvdone
	Q4XROW

q4xvblk:
	Q4NIB
	Q4XBLK(18, Q4XLANESVNNI)
	JNZ   q4xvblk
	Q4XEND
	JMP   q4xvrow

q4xvdone:
	VZEROUPPER
	RET

// K4GROUP adds the lanes of Q4_K group j (32 bytes of quants: low nibbles
// are elements 64j..64j+31 with scale sc(2j), high nibbles the next 32
// with sc(2j+1)) to Y2: VPMADDUBSW of the nibbles by the Q8_K quants
// (pairs ≤ 15·128·2), then VPMADDWD by the scale, broadcast by VPSHUFB
// from the eight int16 scales in both halves of Y7.
#define K4GROUP(j) \
	VMOVDQU      (16+32*j)(SI), Y3 \
	VPSRLW       $4, Y3, Y4 \
	VPAND        Y15, Y3, Y3 \
	VPAND        Y15, Y4, Y4 \
	VPMADDUBSW   (4+64*j)(R9), Y3, Y3 \
	VPMADDUBSW   (36+64*j)(R9), Y4, Y4 \
	VPSHUFB      q2const<>+(0x140+64*j)(SB), Y7, Y5 \
	VPSHUFB      q2const<>+(0x160+64*j)(SB), Y7, Y6 \
	VPMADDWD     Y5, Y3, Y3 \
	VPMADDWD     Y6, Y4, Y4 \
	VPADDD       Y3, Y2, Y2 \
	VPADDD       Y4, Y2, Y2

// func q4_KDotAVX2(w *byte, rb, nrows int, xa *byte, nsb int, out *float32)
//
// out[r] = ggml's Q4_K·Q8_K dot of weight row r < nrows (rows rb bytes
// apart, nsb super-blocks) with the Q8_K activation row xa. The unpacked
// scales sc0..7 go to X7 (then both halves of Y7), the mins mn0..7 to X8.
TEXT ·q4_KDotAVX2(SB), NOSPLIT, $0-48
	MOVQ         w+0(FP), DI
	MOVQ         nrows+16(FP), R11
	MOVQ         out+40(FP), R8
	LEAQ         ·f16Table(SB), R12
	VPBROADCASTD q2const<>+0x00(SB), Y15
	VBROADCASTSS q2const<>+0x18(SB), X14

k4row:
	TESTQ  R11, R11
	JZ     k4done
	MOVQ   DI, SI
	MOVQ   xa+24(FP), R9
	MOVQ   nsb+32(FP), R10
	VXORPS Y0, Y0, Y0 // acc
	VXORPS X1, X1, X1 // accm

k4sb:
	// ggml's utmp shuffle of the 12 scale bytes into sc0..7, mn0..7.
	K4UTMP(R13)
	VMOVD   BX, X8                // mn0..3
	VPINSRD $1, R13, X8, X8       // mn4..7
	K4SCY(X7, Y7)
	VPXOR Y2, Y2, Y2
	K4GROUP(0)
	K4GROUP(1)
	K4GROUP(2)
	K4GROUP(3)
	// acc = fma(dx·dw, lanes, acc)
	VCVTDQ2PS    Y2, Y2
	MOVWLZX      (SI), AX
	VMOVSS       (R12)(AX*4), X3
	VMULSS       (R9), X3, X3
	VBROADCASTSS X3, Y3
	VFMADD231PS  Y2, Y3, Y0
	// accm = fma(−(dx·dmin), mn·S pairs, accm); S = pair sums of bsums
	VPMOVZXBW    X8, X4
	VMOVDQU      260(R9), X5
	VMOVDQU      276(R9), X6
	VPHADDW      X6, X5, X5
	VPMADDWD     X5, X4, X4
	VCVTDQ2PS    X4, X4
	MOVWLZX      2(SI), AX
	VMOVSS       (R12)(AX*4), X3
	VMULSS       (R9), X3, X3
	VXORPS       X14, X3, X3
	VBROADCASTSS X3, X3
	VFMADD231PS  X4, X3, X1
	ADDQ         $144, SI
	ADDQ         $292, R9
	DECQ         R10
	JNZ          k4sb
	// hsum8(acc) + ((m0+m2)+(m1+m3))
	HSUM8(Y0, X0, X3)
	VPERMILPS    $0x4e, X1, X3
	VADDPS       X3, X1, X1
	VPERMILPS    $0xb1, X1, X3
	VADDSS       X3, X1, X1
	VADDSS       X1, X0, X0
	VMOVSS       X0, (R8)
	ADDQ         $4, R8
	ADDQ         rb+8(FP), DI
	DECQ         R11
	JMP          k4row

k4done:
	VZEROUPPER
	RET

// K6CHUNK adds the lanes of one 32-element Q6_K chunk Q (unsigned 6-bit
// quants) to Y2: (q·x pairs) − (32·x pairs), exact in int16, then
// VPMADDWD by the chunk's two scales (Y4 shuffled by the mask at q2const+mask).
#define K6CHUNK(Q, xoff, mask) \
	VMOVDQU    xoff, Y7 \
	VPMADDUBSW Y7, Q, Q \
	VPMADDUBSW Y7, Y13, Y8 \
	VPSUBW     Y8, Q, Q \
	VPSHUFB    q2const<>+mask(SB), Y4, Y8 \
	VPMADDWD   Y8, Q, Q \
	VPADDD     Q, Y2, Y2

// K6HALF adds the lanes of Q6_K half n (128 elements: ql 64n.., qh
// 128+32n.., scales 192+8n..) to Y2.
#define K6HALF(n) \
	VMOVDQU     (64*n)(SI), Y9 \
	VMOVDQU     (64*n+32)(SI), Y10 \
	VMOVDQU     (128+32*n)(SI), Y11 \
	VPMOVSXBW   (192+8*n)(SI), X4 \
	VINSERTI128 $1, X4, Y4, Y4 \
	VPAND       Y15, Y9, Y5 \
	VPSLLW      $4, Y11, Y6 \
	VPAND       Y14, Y6, Y6 \
	VPOR        Y6, Y5, Y5 \
	K6CHUNK(Y5, (4+128*n)(R9), 0x60) \
	VPAND       Y15, Y10, Y5 \
	VPSLLW      $2, Y11, Y6 \
	VPAND       Y14, Y6, Y6 \
	VPOR        Y6, Y5, Y5 \
	K6CHUNK(Y5, (36+128*n)(R9), 0x80) \
	VPSRLW      $4, Y9, Y5 \
	VPAND       Y15, Y5, Y5 \
	VPAND       Y14, Y11, Y6 \
	VPOR        Y6, Y5, Y5 \
	K6CHUNK(Y5, (68+128*n)(R9), 0xa0) \
	VPSRLW      $4, Y10, Y5 \
	VPAND       Y15, Y5, Y5 \
	VPSRLW      $2, Y11, Y6 \
	VPAND       Y14, Y6, Y6 \
	VPOR        Y6, Y5, Y5 \
	K6CHUNK(Y5, (100+128*n)(R9), 0xc0)

// func q6_KDotAVX2(w *byte, rb, nrows int, xa *byte, nsb int, out *float32)
//
// out[r] = ggml's Q6_K·Q8_K dot of weight row r with the activation row xa.
TEXT ·q6_KDotAVX2(SB), NOSPLIT, $0-48
	MOVQ         w+0(FP), DI
	MOVQ         nrows+16(FP), R11
	MOVQ         out+40(FP), R8
	LEAQ         ·f16Table(SB), R12
	VPBROADCASTD q2const<>+0x00(SB), Y15
	VPBROADCASTD q2const<>+0x10(SB), Y14
	VPBROADCASTD q2const<>+0x14(SB), Y13

k6row:
	TESTQ  R11, R11
	JZ     k6done
	MOVQ   DI, SI
	MOVQ   xa+24(FP), R9
	MOVQ   nsb+32(FP), R10
	VXORPS Y0, Y0, Y0

k6sb:
	VPXOR        Y2, Y2, Y2
	K6HALF(0)
	K6HALF(1)
	VCVTDQ2PS    Y2, Y2
	MOVWLZX      208(SI), AX
	VMOVSS       (R12)(AX*4), X3
	VMULSS       (R9), X3, X3
	VBROADCASTSS X3, Y3
	VFMADD231PS  Y2, Y3, Y0
	ADDQ         $210, SI
	ADDQ         $292, R9
	DECQ         R10
	JNZ          k6sb
	HSUM8(Y0, X0, X3)
	VMOVSS       X0, (R8)
	ADDQ         $4, R8
	ADDQ         rb+8(FP), DI
	DECQ         R11
	JMP          k6row

k6done:
	VZEROUPPER
	RET

// func q5_KDotAVX2(w *byte, rb, nrows int, xa *byte, nsb int, out *float32)
//
// out[r] = ggml's Q5_K·Q8_K dot of weight row r with the activation row
// xa: q4_KDotAVX2 with each nibble's fifth bit from qh (shifted to 0x10),
// and the min term summed into one float, summs = fma(−(dx·dmin), Σ mn·S,
// summs). The scales go to Y9 (K4SCY), the mins to X8.
TEXT ·q5_KDotAVX2(SB), NOSPLIT, $0-48
	MOVQ         w+0(FP), DI
	MOVQ         nrows+16(FP), R11
	MOVQ         out+40(FP), R8
	LEAQ         ·f16Table(SB), R12
	VPBROADCASTD q2const<>+0x00(SB), Y15
	VBROADCASTSS q2const<>+0x18(SB), X14
	VPBROADCASTD q2const<>+0x120(SB), Y11

k5row:
	TESTQ  R11, R11
	JZ     k5done
	MOVQ   DI, SI
	MOVQ   xa+24(FP), R9
	MOVQ   nsb+32(FP), R10
	VXORPS Y0, Y0, Y0 // acc
	VXORPS X1, X1, X1 // summs

k5sb:
	// ggml's utmp shuffle of the 12 scale bytes into sc0..7, mn0..7.
	K4UTMP(R13)
	VMOVD   BX, X8                // mn0..3
	VPINSRD $1, R13, X8, X8       // mn4..7
	K4SCY(X9, Y9)
	VMOVDQU 16(SI), Y7            // qh
	VPXOR   Y2, Y2, Y2
	// group 0: high bits 0 and 1 of qh
	VMOVDQU      (48+32*0)(SI), Y3
	VPSRLW       $4, Y3, Y4
	VPAND        Y15, Y3, Y3
	VPAND        Y15, Y4, Y4
	VPSLLW       $4, Y7, Y5
	VPAND        Y11, Y5, Y5
	VPOR         Y5, Y3, Y3
	VPSLLW       $3, Y7, Y5
	VPAND        Y11, Y5, Y5
	VPOR         Y5, Y4, Y4
	VPMADDUBSW   (4+64*0)(R9), Y3, Y3
	VPMADDUBSW   (36+64*0)(R9), Y4, Y4
	VPSHUFB      q2const<>+(0x140+64*0)(SB), Y9, Y5
	VPSHUFB      q2const<>+(0x160+64*0)(SB), Y9, Y6
	VPMADDWD     Y5, Y3, Y3
	VPMADDWD     Y6, Y4, Y4
	VPADDD       Y3, Y2, Y2
	VPADDD       Y4, Y2, Y2
	// group 1: high bits 2 and 3 of qh
	VMOVDQU      (48+32*1)(SI), Y3
	VPSRLW       $4, Y3, Y4
	VPAND        Y15, Y3, Y3
	VPAND        Y15, Y4, Y4
	VPSLLW       $2, Y7, Y5
	VPAND        Y11, Y5, Y5
	VPOR         Y5, Y3, Y3
	VPSLLW       $1, Y7, Y5
	VPAND        Y11, Y5, Y5
	VPOR         Y5, Y4, Y4
	VPMADDUBSW   (4+64*1)(R9), Y3, Y3
	VPMADDUBSW   (36+64*1)(R9), Y4, Y4
	VPSHUFB      q2const<>+(0x140+64*1)(SB), Y9, Y5
	VPSHUFB      q2const<>+(0x160+64*1)(SB), Y9, Y6
	VPMADDWD     Y5, Y3, Y3
	VPMADDWD     Y6, Y4, Y4
	VPADDD       Y3, Y2, Y2
	VPADDD       Y4, Y2, Y2
	// group 2: high bits 4 and 5 of qh
	VMOVDQU      (48+32*2)(SI), Y3
	VPSRLW       $4, Y3, Y4
	VPAND        Y15, Y3, Y3
	VPAND        Y15, Y4, Y4
	VMOVDQU      Y7, Y5
	VPAND        Y11, Y5, Y5
	VPOR         Y5, Y3, Y3
	VPSRLW       $1, Y7, Y5
	VPAND        Y11, Y5, Y5
	VPOR         Y5, Y4, Y4
	VPMADDUBSW   (4+64*2)(R9), Y3, Y3
	VPMADDUBSW   (36+64*2)(R9), Y4, Y4
	VPSHUFB      q2const<>+(0x140+64*2)(SB), Y9, Y5
	VPSHUFB      q2const<>+(0x160+64*2)(SB), Y9, Y6
	VPMADDWD     Y5, Y3, Y3
	VPMADDWD     Y6, Y4, Y4
	VPADDD       Y3, Y2, Y2
	VPADDD       Y4, Y2, Y2
	// group 3: high bits 6 and 7 of qh
	VMOVDQU      (48+32*3)(SI), Y3
	VPSRLW       $4, Y3, Y4
	VPAND        Y15, Y3, Y3
	VPAND        Y15, Y4, Y4
	VPSRLW       $2, Y7, Y5
	VPAND        Y11, Y5, Y5
	VPOR         Y5, Y3, Y3
	VPSRLW       $3, Y7, Y5
	VPAND        Y11, Y5, Y5
	VPOR         Y5, Y4, Y4
	VPMADDUBSW   (4+64*3)(R9), Y3, Y3
	VPMADDUBSW   (36+64*3)(R9), Y4, Y4
	VPSHUFB      q2const<>+(0x140+64*3)(SB), Y9, Y5
	VPSHUFB      q2const<>+(0x160+64*3)(SB), Y9, Y6
	VPMADDWD     Y5, Y3, Y3
	VPMADDWD     Y6, Y4, Y4
	VPADDD       Y3, Y2, Y2
	VPADDD       Y4, Y2, Y2
	VCVTDQ2PS    Y2, Y2
	MOVWLZX      (SI), AX
	VMOVSS       (R12)(AX*4), X3
	VMULSS       (R9), X3, X3
	VBROADCASTSS X3, Y3
	VFMADD231PS  Y2, Y3, Y0
	VPMOVZXBW    X8, X4
	VMOVDQU      260(R9), X5
	VMOVDQU      276(R9), X6
	VPHADDW      X6, X5, X5
	VPMADDWD     X5, X4, X4
	VPHADDD      X4, X4, X4
	VPHADDD      X4, X4, X4
	VCVTDQ2PS    X4, X4
	MOVWLZX      2(SI), AX
	VMOVSS       (R12)(AX*4), X3
	VMULSS       (R9), X3, X3
	VXORPS       X14, X3, X3
	VFMADD231SS  X4, X3, X1
	ADDQ         $176, SI
	ADDQ         $292, R9
	DECQ         R10
	JNZ          k5sb
	HSUM8(Y0, X0, X3)
	VADDSS       X1, X0, X0
	VMOVSS       X0, (R8)
	ADDQ         $4, R8
	ADDQ         rb+8(FP), DI
	DECQ         R11
	JMP          k5row

k5done:
	VZEROUPPER
	RET

// func q2_KDotAVX2(w *byte, rb, nrows int, xa *byte, nsb int, out *float32)
//
// out[r] = ggml's Q2_K·Q8_K dot of weight row r with the activation row
// xa. Per super-block, first acc = fma(−(dx·dmin), mn·bsums pairs, acc),
// then acc = fma(dx·d, lanes, acc); chunk k of half n is the 2-bit field
// k of qs[32n..32n+31], with the 4-bit scales of its two 16-element halves.
TEXT ·q2_KDotAVX2(SB), NOSPLIT, $0-48
	MOVQ         w+0(FP), DI
	MOVQ         nrows+16(FP), R11
	MOVQ         out+40(FP), R8
	LEAQ         ·f16Table(SB), R12
	VPBROADCASTD q2const<>+0x124(SB), Y14
	VPBROADCASTD q2const<>+0x12c(SB), Y12
	VBROADCASTSS q2const<>+0x18(SB), X13

k2row:
	TESTQ  R11, R11
	JZ     k2done
	MOVQ   DI, SI
	MOVQ   xa+24(FP), R9
	MOVQ   nsb+32(FP), R10
	VXORPS Y0, Y0, Y0

k2sb:
	// min term
	VPMOVZXBW    (SI), Y3
	VPSRLW       $4, Y3, Y3
	VPMADDWD     260(R9), Y3, Y3
	VCVTDQ2PS    Y3, Y3
	MOVWLZX      82(SI), AX
	VMOVSS       (R12)(AX*4), X1
	VMULSS       (R9), X1, X1
	VXORPS       X13, X1, X1
	VBROADCASTSS X1, Y1
	VFMADD231PS  Y3, Y1, Y0
	VPXOR        Y2, Y2, Y2
	// half 0
	VMOVDQU     (16+32*0)(SI), Y9
	VPMOVZXBW   (8*0)(SI), X4
	VPAND       X12, X4, X4
	VINSERTI128 $1, X4, Y4, Y4
	VMOVDQU     Y9, Y5
	VPAND       Y14, Y5, Y5
	VPMADDUBSW  (4+128*0+32*0)(R9), Y5, Y5
	VPSHUFB     q2const<>+0x60(SB), Y4, Y6
	VPMADDWD    Y6, Y5, Y5
	VPADDD      Y5, Y2, Y2
	VPSRLW      $2, Y9, Y5
	VPAND       Y14, Y5, Y5
	VPMADDUBSW  (4+128*0+32*1)(R9), Y5, Y5
	VPSHUFB     q2const<>+0x80(SB), Y4, Y6
	VPMADDWD    Y6, Y5, Y5
	VPADDD      Y5, Y2, Y2
	VPSRLW      $4, Y9, Y5
	VPAND       Y14, Y5, Y5
	VPMADDUBSW  (4+128*0+32*2)(R9), Y5, Y5
	VPSHUFB     q2const<>+0xa0(SB), Y4, Y6
	VPMADDWD    Y6, Y5, Y5
	VPADDD      Y5, Y2, Y2
	VPSRLW      $6, Y9, Y5
	VPAND       Y14, Y5, Y5
	VPMADDUBSW  (4+128*0+32*3)(R9), Y5, Y5
	VPSHUFB     q2const<>+0xc0(SB), Y4, Y6
	VPMADDWD    Y6, Y5, Y5
	VPADDD      Y5, Y2, Y2
	// half 1
	VMOVDQU     (16+32*1)(SI), Y9
	VPMOVZXBW   (8*1)(SI), X4
	VPAND       X12, X4, X4
	VINSERTI128 $1, X4, Y4, Y4
	VMOVDQU     Y9, Y5
	VPAND       Y14, Y5, Y5
	VPMADDUBSW  (4+128*1+32*0)(R9), Y5, Y5
	VPSHUFB     q2const<>+0x60(SB), Y4, Y6
	VPMADDWD    Y6, Y5, Y5
	VPADDD      Y5, Y2, Y2
	VPSRLW      $2, Y9, Y5
	VPAND       Y14, Y5, Y5
	VPMADDUBSW  (4+128*1+32*1)(R9), Y5, Y5
	VPSHUFB     q2const<>+0x80(SB), Y4, Y6
	VPMADDWD    Y6, Y5, Y5
	VPADDD      Y5, Y2, Y2
	VPSRLW      $4, Y9, Y5
	VPAND       Y14, Y5, Y5
	VPMADDUBSW  (4+128*1+32*2)(R9), Y5, Y5
	VPSHUFB     q2const<>+0xa0(SB), Y4, Y6
	VPMADDWD    Y6, Y5, Y5
	VPADDD      Y5, Y2, Y2
	VPSRLW      $6, Y9, Y5
	VPAND       Y14, Y5, Y5
	VPMADDUBSW  (4+128*1+32*3)(R9), Y5, Y5
	VPSHUFB     q2const<>+0xc0(SB), Y4, Y6
	VPMADDWD    Y6, Y5, Y5
	VPADDD      Y5, Y2, Y2
	VCVTDQ2PS    Y2, Y2
	MOVWLZX      80(SI), AX
	VMOVSS       (R12)(AX*4), X3
	VMULSS       (R9), X3, X3
	VBROADCASTSS X3, Y3
	VFMADD231PS  Y2, Y3, Y0
	ADDQ         $84, SI
	ADDQ         $292, R9
	DECQ         R10
	JNZ          k2sb
	HSUM8(Y0, X0, X3)
	VMOVSS       X0, (R8)
	ADDQ         $4, R8
	ADDQ         rb+8(FP), DI
	DECQ         R11
	JMP          k2row

k2done:
	VZEROUPPER
	RET

// func q3_KDotAVX2(w *byte, rb, nrows int, xa *byte, nsb int, out *float32)
//
// out[r] = ggml's Q3_K·Q8_K dot of weight row r with the activation row
// xa. Chunk k of half n: u = 2-bit field k of qs[32n..] | (hmask bit
// 4n+k)·4, weight (u − 4)·(scale − 32); (u·x pairs) − (4·x pairs) is
// exact in int16. The 16 6-bit scales (ggml's aux shuffle) are kept in X10.
TEXT ·q3_KDotAVX2(SB), NOSPLIT, $0-48
	MOVQ         w+0(FP), DI
	MOVQ         nrows+16(FP), R11
	MOVQ         out+40(FP), R8
	LEAQ         ·f16Table(SB), R12
	VPBROADCASTD q2const<>+0x124(SB), Y14
	VPBROADCASTD q2const<>+0x128(SB), Y13
	MOVL         $0x00200020, AX
	VMOVD        AX, X12
	VPBROADCASTD X12, X12

k3row:
	TESTQ  R11, R11
	JZ     k3done
	MOVQ   DI, SI
	MOVQ   xa+24(FP), R9
	MOVQ   nsb+32(FP), R10
	VXORPS Y0, Y0, Y0

k3sb:
	MOVL 96(SI), AX                // a0
	MOVL 100(SI), BX               // a1
	MOVL 104(SI), DX               // tmp
	MOVL DX, CX
	ANDL $0x03030303, CX
	SHLL $4, CX
	MOVL AX, R13
	ANDL $0x0f0f0f0f, R13
	ORL  CX, R13
	VMOVD   R13, X10               // sc0..3
	MOVL DX, CX
	SHRL $2, CX
	ANDL $0x03030303, CX
	SHLL $4, CX
	MOVL BX, R13
	ANDL $0x0f0f0f0f, R13
	ORL  CX, R13
	VPINSRD $1, R13, X10, X10      // sc4..7
	MOVL DX, CX
	SHRL $4, CX
	ANDL $0x03030303, CX
	SHLL $4, CX
	SHRL $4, AX
	ANDL $0x0f0f0f0f, AX
	ORL  CX, AX
	VPINSRD $2, AX, X10, X10       // sc8..11
	SHRL $6, DX
	ANDL $0x03030303, DX
	SHLL $4, DX
	SHRL $4, BX
	ANDL $0x0f0f0f0f, BX
	ORL  DX, BX
	VPINSRD $3, BX, X10, X10       // sc12..15
	VMOVDQU (SI), Y8               // hmask
	VPXOR   Y2, Y2, Y2
	// half 0
	VMOVDQU     (32+32*0)(SI), Y9
	VPMOVZXBW   X10, X4
	VPSUBW      X12, X4, X4
	VINSERTI128 $1, X4, Y4, Y4
	VMOVDQU     Y9, Y5
	VPAND       Y14, Y5, Y5
	VPSLLW      $2, Y8, Y6
	VPAND       Y13, Y6, Y6
	VPOR        Y6, Y5, Y5
	VMOVDQU     (4+128*0+32*0)(R9), Y7
	VPMADDUBSW  Y7, Y5, Y5
	VPMADDUBSW  Y7, Y13, Y6
	VPSUBW      Y6, Y5, Y5
	VPSHUFB     q2const<>+0x60(SB), Y4, Y6
	VPMADDWD    Y6, Y5, Y5
	VPADDD      Y5, Y2, Y2
	VPSRLW      $2, Y9, Y5
	VPAND       Y14, Y5, Y5
	VPSLLW      $1, Y8, Y6
	VPAND       Y13, Y6, Y6
	VPOR        Y6, Y5, Y5
	VMOVDQU     (4+128*0+32*1)(R9), Y7
	VPMADDUBSW  Y7, Y5, Y5
	VPMADDUBSW  Y7, Y13, Y6
	VPSUBW      Y6, Y5, Y5
	VPSHUFB     q2const<>+0x80(SB), Y4, Y6
	VPMADDWD    Y6, Y5, Y5
	VPADDD      Y5, Y2, Y2
	VPSRLW      $4, Y9, Y5
	VPAND       Y14, Y5, Y5
	VMOVDQU     Y8, Y6
	VPAND       Y13, Y6, Y6
	VPOR        Y6, Y5, Y5
	VMOVDQU     (4+128*0+32*2)(R9), Y7
	VPMADDUBSW  Y7, Y5, Y5
	VPMADDUBSW  Y7, Y13, Y6
	VPSUBW      Y6, Y5, Y5
	VPSHUFB     q2const<>+0xa0(SB), Y4, Y6
	VPMADDWD    Y6, Y5, Y5
	VPADDD      Y5, Y2, Y2
	VPSRLW      $6, Y9, Y5
	VPAND       Y14, Y5, Y5
	VPSRLW      $1, Y8, Y6
	VPAND       Y13, Y6, Y6
	VPOR        Y6, Y5, Y5
	VMOVDQU     (4+128*0+32*3)(R9), Y7
	VPMADDUBSW  Y7, Y5, Y5
	VPMADDUBSW  Y7, Y13, Y6
	VPSUBW      Y6, Y5, Y5
	VPSHUFB     q2const<>+0xc0(SB), Y4, Y6
	VPMADDWD    Y6, Y5, Y5
	VPADDD      Y5, Y2, Y2
	// half 1
	VMOVDQU     (32+32*1)(SI), Y9
	VPUNPCKHQDQ X10, X10, X4
	VPMOVZXBW   X4, X4
	VPSUBW      X12, X4, X4
	VINSERTI128 $1, X4, Y4, Y4
	VMOVDQU     Y9, Y5
	VPAND       Y14, Y5, Y5
	VPSRLW      $2, Y8, Y6
	VPAND       Y13, Y6, Y6
	VPOR        Y6, Y5, Y5
	VMOVDQU     (4+128*1+32*0)(R9), Y7
	VPMADDUBSW  Y7, Y5, Y5
	VPMADDUBSW  Y7, Y13, Y6
	VPSUBW      Y6, Y5, Y5
	VPSHUFB     q2const<>+0x60(SB), Y4, Y6
	VPMADDWD    Y6, Y5, Y5
	VPADDD      Y5, Y2, Y2
	VPSRLW      $2, Y9, Y5
	VPAND       Y14, Y5, Y5
	VPSRLW      $3, Y8, Y6
	VPAND       Y13, Y6, Y6
	VPOR        Y6, Y5, Y5
	VMOVDQU     (4+128*1+32*1)(R9), Y7
	VPMADDUBSW  Y7, Y5, Y5
	VPMADDUBSW  Y7, Y13, Y6
	VPSUBW      Y6, Y5, Y5
	VPSHUFB     q2const<>+0x80(SB), Y4, Y6
	VPMADDWD    Y6, Y5, Y5
	VPADDD      Y5, Y2, Y2
	VPSRLW      $4, Y9, Y5
	VPAND       Y14, Y5, Y5
	VPSRLW      $4, Y8, Y6
	VPAND       Y13, Y6, Y6
	VPOR        Y6, Y5, Y5
	VMOVDQU     (4+128*1+32*2)(R9), Y7
	VPMADDUBSW  Y7, Y5, Y5
	VPMADDUBSW  Y7, Y13, Y6
	VPSUBW      Y6, Y5, Y5
	VPSHUFB     q2const<>+0xa0(SB), Y4, Y6
	VPMADDWD    Y6, Y5, Y5
	VPADDD      Y5, Y2, Y2
	VPSRLW      $6, Y9, Y5
	VPAND       Y14, Y5, Y5
	VPSRLW      $5, Y8, Y6
	VPAND       Y13, Y6, Y6
	VPOR        Y6, Y5, Y5
	VMOVDQU     (4+128*1+32*3)(R9), Y7
	VPMADDUBSW  Y7, Y5, Y5
	VPMADDUBSW  Y7, Y13, Y6
	VPSUBW      Y6, Y5, Y5
	VPSHUFB     q2const<>+0xc0(SB), Y4, Y6
	VPMADDWD    Y6, Y5, Y5
	VPADDD      Y5, Y2, Y2
	VCVTDQ2PS    Y2, Y2
	MOVWLZX      108(SI), AX
	VMOVSS       (R12)(AX*4), X3
	VMULSS       (R9), X3, X3
	VBROADCASTSS X3, Y3
	VFMADD231PS  Y2, Y3, Y0
	ADDQ         $110, SI
	ADDQ         $292, R9
	DECQ         R10
	JNZ          k3sb
	HSUM8(Y0, X0, X3)
	VMOVSS       X0, (R8)
	ADDQ         $4, R8
	ADDQ         rb+8(FP), DI
	DECQ         R11
	JMP          k3row

k3done:
	VZEROUPPER
	RET

// func q4_KDot4AVX2(w *byte, rb, nrows int, xa *byte, arb, nsb int, out *float32, ldo int)
//
// q4_KDotAVX2 for four activation rows (xa + m·arb, outputs out[m·ldo +
// r]): each group's nibbles and scales are unpacked once for the four.
// Frame: sc0..7 at 0 (the mins mn0..7 are kept in X14), the four rows'
// accm at 16+16m, the super-block count at 80.
TEXT ·q4_KDot4AVX2(SB), NOSPLIT, $88-64
	MOVQ         w+0(FP), DI
	MOVQ         nrows+16(FP), R11
	MOVQ         out+48(FP), R8
	MOVQ         ldo+56(FP), DX
	SHLQ         $2, DX
	VPBROADCASTD q2const<>+0x00(SB), Y15

k4xrow:
	TESTQ R11, R11
	JZ    k4xdone
	MOVQ   DI, SI
	MOVQ   xa+24(FP), R9
	MOVQ   arb+32(FP), AX
	LEAQ   (R9)(AX*1), R10
	LEAQ   (R10)(AX*1), R13
	LEAQ   (R13)(AX*1), R14
	MOVQ   nsb+40(FP), BX
	MOVQ   BX, 80(SP)
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS X8, X8, X8
	VMOVUPS X8, 16(SP)
	VMOVUPS X8, 32(SP)
	VMOVUPS X8, 48(SP)
	VMOVUPS X8, 64(SP)

k4xsb:
	K4UTMP(R12)
	VMOVD   BX, X14               // mn0..3
	VPINSRD $1, R12, X14, X14     // mn4..7
	MOVL    DX, 4(SP)             // sc4..7
	MOVL    AX, 0(SP)             // sc0..3
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	VMOVDQU      (16+32*0)(SI), Y8
	VPSRLW       $4, Y8, Y9
	VPAND        Y15, Y8, Y8
	VPAND        Y15, Y9, Y9
	MOVBLZX      (2*0)(SP), AX
	VMOVD        AX, X12
	VPBROADCASTW X12, Y12
	MOVBLZX      (2*0+1)(SP), AX
	VMOVD        AX, X13
	VPBROADCASTW X13, Y13
	VPMADDUBSW   (4+64*0)(R9), Y8, Y11
	VPMADDWD     Y12, Y11, Y11
	VPADDD       Y11, Y0, Y0
	VPMADDUBSW   (36+64*0)(R9), Y9, Y11
	VPMADDWD     Y13, Y11, Y11
	VPADDD       Y11, Y0, Y0
	VPMADDUBSW   (4+64*0)(R10), Y8, Y11
	VPMADDWD     Y12, Y11, Y11
	VPADDD       Y11, Y1, Y1
	VPMADDUBSW   (36+64*0)(R10), Y9, Y11
	VPMADDWD     Y13, Y11, Y11
	VPADDD       Y11, Y1, Y1
	VPMADDUBSW   (4+64*0)(R13), Y8, Y11
	VPMADDWD     Y12, Y11, Y11
	VPADDD       Y11, Y2, Y2
	VPMADDUBSW   (36+64*0)(R13), Y9, Y11
	VPMADDWD     Y13, Y11, Y11
	VPADDD       Y11, Y2, Y2
	VPMADDUBSW   (4+64*0)(R14), Y8, Y11
	VPMADDWD     Y12, Y11, Y11
	VPADDD       Y11, Y3, Y3
	VPMADDUBSW   (36+64*0)(R14), Y9, Y11
	VPMADDWD     Y13, Y11, Y11
	VPADDD       Y11, Y3, Y3
	VMOVDQU      (16+32*1)(SI), Y8
	VPSRLW       $4, Y8, Y9
	VPAND        Y15, Y8, Y8
	VPAND        Y15, Y9, Y9
	MOVBLZX      (2*1)(SP), AX
	VMOVD        AX, X12
	VPBROADCASTW X12, Y12
	MOVBLZX      (2*1+1)(SP), AX
	VMOVD        AX, X13
	VPBROADCASTW X13, Y13
	VPMADDUBSW   (4+64*1)(R9), Y8, Y11
	VPMADDWD     Y12, Y11, Y11
	VPADDD       Y11, Y0, Y0
	VPMADDUBSW   (36+64*1)(R9), Y9, Y11
	VPMADDWD     Y13, Y11, Y11
	VPADDD       Y11, Y0, Y0
	VPMADDUBSW   (4+64*1)(R10), Y8, Y11
	VPMADDWD     Y12, Y11, Y11
	VPADDD       Y11, Y1, Y1
	VPMADDUBSW   (36+64*1)(R10), Y9, Y11
	VPMADDWD     Y13, Y11, Y11
	VPADDD       Y11, Y1, Y1
	VPMADDUBSW   (4+64*1)(R13), Y8, Y11
	VPMADDWD     Y12, Y11, Y11
	VPADDD       Y11, Y2, Y2
	VPMADDUBSW   (36+64*1)(R13), Y9, Y11
	VPMADDWD     Y13, Y11, Y11
	VPADDD       Y11, Y2, Y2
	VPMADDUBSW   (4+64*1)(R14), Y8, Y11
	VPMADDWD     Y12, Y11, Y11
	VPADDD       Y11, Y3, Y3
	VPMADDUBSW   (36+64*1)(R14), Y9, Y11
	VPMADDWD     Y13, Y11, Y11
	VPADDD       Y11, Y3, Y3
	VMOVDQU      (16+32*2)(SI), Y8
	VPSRLW       $4, Y8, Y9
	VPAND        Y15, Y8, Y8
	VPAND        Y15, Y9, Y9
	MOVBLZX      (2*2)(SP), AX
	VMOVD        AX, X12
	VPBROADCASTW X12, Y12
	MOVBLZX      (2*2+1)(SP), AX
	VMOVD        AX, X13
	VPBROADCASTW X13, Y13
	VPMADDUBSW   (4+64*2)(R9), Y8, Y11
	VPMADDWD     Y12, Y11, Y11
	VPADDD       Y11, Y0, Y0
	VPMADDUBSW   (36+64*2)(R9), Y9, Y11
	VPMADDWD     Y13, Y11, Y11
	VPADDD       Y11, Y0, Y0
	VPMADDUBSW   (4+64*2)(R10), Y8, Y11
	VPMADDWD     Y12, Y11, Y11
	VPADDD       Y11, Y1, Y1
	VPMADDUBSW   (36+64*2)(R10), Y9, Y11
	VPMADDWD     Y13, Y11, Y11
	VPADDD       Y11, Y1, Y1
	VPMADDUBSW   (4+64*2)(R13), Y8, Y11
	VPMADDWD     Y12, Y11, Y11
	VPADDD       Y11, Y2, Y2
	VPMADDUBSW   (36+64*2)(R13), Y9, Y11
	VPMADDWD     Y13, Y11, Y11
	VPADDD       Y11, Y2, Y2
	VPMADDUBSW   (4+64*2)(R14), Y8, Y11
	VPMADDWD     Y12, Y11, Y11
	VPADDD       Y11, Y3, Y3
	VPMADDUBSW   (36+64*2)(R14), Y9, Y11
	VPMADDWD     Y13, Y11, Y11
	VPADDD       Y11, Y3, Y3
	VMOVDQU      (16+32*3)(SI), Y8
	VPSRLW       $4, Y8, Y9
	VPAND        Y15, Y8, Y8
	VPAND        Y15, Y9, Y9
	MOVBLZX      (2*3)(SP), AX
	VMOVD        AX, X12
	VPBROADCASTW X12, Y12
	MOVBLZX      (2*3+1)(SP), AX
	VMOVD        AX, X13
	VPBROADCASTW X13, Y13
	VPMADDUBSW   (4+64*3)(R9), Y8, Y11
	VPMADDWD     Y12, Y11, Y11
	VPADDD       Y11, Y0, Y0
	VPMADDUBSW   (36+64*3)(R9), Y9, Y11
	VPMADDWD     Y13, Y11, Y11
	VPADDD       Y11, Y0, Y0
	VPMADDUBSW   (4+64*3)(R10), Y8, Y11
	VPMADDWD     Y12, Y11, Y11
	VPADDD       Y11, Y1, Y1
	VPMADDUBSW   (36+64*3)(R10), Y9, Y11
	VPMADDWD     Y13, Y11, Y11
	VPADDD       Y11, Y1, Y1
	VPMADDUBSW   (4+64*3)(R13), Y8, Y11
	VPMADDWD     Y12, Y11, Y11
	VPADDD       Y11, Y2, Y2
	VPMADDUBSW   (36+64*3)(R13), Y9, Y11
	VPMADDWD     Y13, Y11, Y11
	VPADDD       Y11, Y2, Y2
	VPMADDUBSW   (4+64*3)(R14), Y8, Y11
	VPMADDWD     Y12, Y11, Y11
	VPADDD       Y11, Y3, Y3
	VPMADDUBSW   (36+64*3)(R14), Y9, Y11
	VPMADDWD     Y13, Y11, Y11
	VPADDD       Y11, Y3, Y3
	LEAQ         ·f16Table(SB), R12
	MOVWLZX      (SI), AX
	VMOVSS       (R12)(AX*4), X12          // dw
	MOVWLZX      2(SI), AX
	VMOVSS       (R12)(AX*4), X13          // dmin
	VPMOVZXBW    X14, X14                  // mn0..7
	VCVTDQ2PS    Y0, Y0
	VMULSS       (R9), X12, X8
	VBROADCASTSS X8, Y8
	VFMADD231PS  Y0, Y8, Y4
	VMOVDQU      260(R9), X9
	VMOVDQU      276(R9), X10
	VPHADDW      X10, X9, X9
	VPMADDWD     X9, X14, X9
	VCVTDQ2PS    X9, X9
	VMULSS       (R9), X13, X8
	VXORPS       q2const<>+0x18(SB), X8, X8
	VBROADCASTSS X8, X8
	VMOVUPS      (16+16*0)(SP), X10
	VFMADD231PS  X9, X8, X10
	VMOVUPS      X10, (16+16*0)(SP)
	ADDQ         $292, R9
	VCVTDQ2PS    Y1, Y1
	VMULSS       (R10), X12, X8
	VBROADCASTSS X8, Y8
	VFMADD231PS  Y1, Y8, Y5
	VMOVDQU      260(R10), X9
	VMOVDQU      276(R10), X10
	VPHADDW      X10, X9, X9
	VPMADDWD     X9, X14, X9
	VCVTDQ2PS    X9, X9
	VMULSS       (R10), X13, X8
	VXORPS       q2const<>+0x18(SB), X8, X8
	VBROADCASTSS X8, X8
	VMOVUPS      (16+16*1)(SP), X10
	VFMADD231PS  X9, X8, X10
	VMOVUPS      X10, (16+16*1)(SP)
	ADDQ         $292, R10
	VCVTDQ2PS    Y2, Y2
	VMULSS       (R13), X12, X8
	VBROADCASTSS X8, Y8
	VFMADD231PS  Y2, Y8, Y6
	VMOVDQU      260(R13), X9
	VMOVDQU      276(R13), X10
	VPHADDW      X10, X9, X9
	VPMADDWD     X9, X14, X9
	VCVTDQ2PS    X9, X9
	VMULSS       (R13), X13, X8
	VXORPS       q2const<>+0x18(SB), X8, X8
	VBROADCASTSS X8, X8
	VMOVUPS      (16+16*2)(SP), X10
	VFMADD231PS  X9, X8, X10
	VMOVUPS      X10, (16+16*2)(SP)
	ADDQ         $292, R13
	VCVTDQ2PS    Y3, Y3
	VMULSS       (R14), X12, X8
	VBROADCASTSS X8, Y8
	VFMADD231PS  Y3, Y8, Y7
	VMOVDQU      260(R14), X9
	VMOVDQU      276(R14), X10
	VPHADDW      X10, X9, X9
	VPMADDWD     X9, X14, X9
	VCVTDQ2PS    X9, X9
	VMULSS       (R14), X13, X8
	VXORPS       q2const<>+0x18(SB), X8, X8
	VBROADCASTSS X8, X8
	VMOVUPS      (16+16*3)(SP), X10
	VFMADD231PS  X9, X8, X10
	VMOVUPS      X10, (16+16*3)(SP)
	ADDQ         $292, R14
	ADDQ         $144, SI
	DECQ         80(SP)
	JNZ          k4xsb
	MOVQ   ldo+56(FP), DX
	SHLQ   $2, DX
	LEAQ   (R8)(DX*2), AX
	HSUM8(Y4, X4, X8)
	VMOVUPS      (16+16*0)(SP), X9
	VPERMILPS    $0x4e, X9, X10
	VADDPS       X10, X9, X9
	VPERMILPS    $0xb1, X9, X10
	VADDSS       X10, X9, X9
	VADDSS       X9, X4, X4
	VMOVSS X4, (R8)
	HSUM8(Y5, X5, X8)
	VMOVUPS      (16+16*1)(SP), X9
	VPERMILPS    $0x4e, X9, X10
	VADDPS       X10, X9, X9
	VPERMILPS    $0xb1, X9, X10
	VADDSS       X10, X9, X9
	VADDSS       X9, X5, X5
	VMOVSS X5, (R8)(DX*1)
	HSUM8(Y6, X6, X8)
	VMOVUPS      (16+16*2)(SP), X9
	VPERMILPS    $0x4e, X9, X10
	VADDPS       X10, X9, X9
	VPERMILPS    $0xb1, X9, X10
	VADDSS       X10, X9, X9
	VADDSS       X9, X6, X6
	VMOVSS X6, (AX)
	HSUM8(Y7, X7, X8)
	VMOVUPS      (16+16*3)(SP), X9
	VPERMILPS    $0x4e, X9, X10
	VADDPS       X10, X9, X9
	VPERMILPS    $0xb1, X9, X10
	VADDSS       X10, X9, X9
	VADDSS       X9, X7, X7
	VMOVSS X7, (AX)(DX*1)
	ADDQ   rb+8(FP), DI
	ADDQ   $4, R8
	DECQ   R11
	JMP    k4xrow

k4xdone:
	VZEROUPPER
	RET

// func q6_KDot4AVX2(w *byte, rb, nrows int, xa *byte, arb, nsb int, out *float32, ldo int)
//
// q6_KDotAVX2 for four activation rows: each chunk's 6-bit quants and
// scales are unpacked once for the four. Frame: the super-block count at 80.
TEXT ·q6_KDot4AVX2(SB), NOSPLIT, $88-64
	MOVQ         w+0(FP), DI
	MOVQ         nrows+16(FP), R11
	MOVQ         out+48(FP), R8
	MOVQ         ldo+56(FP), DX
	SHLQ         $2, DX
	LEAQ         ·f16Table(SB), R12
	VPBROADCASTD q2const<>+0x00(SB), Y15
	VPBROADCASTD q2const<>+0x10(SB), Y14
	VPBROADCASTD q2const<>+0x14(SB), Y13

k6xrow:
	TESTQ R11, R11
	JZ    k6xdone
	MOVQ   DI, SI
	MOVQ   xa+24(FP), R9
	MOVQ   arb+32(FP), AX
	LEAQ   (R9)(AX*1), R10
	LEAQ   (R10)(AX*1), R13
	LEAQ   (R13)(AX*1), R14
	MOVQ   nsb+40(FP), BX
	MOVQ   BX, 80(SP)
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7

k6xsb:
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	VPMOVSXBW   (192+8*0)(SI), X12
	VINSERTI128 $1, X12, Y12, Y12
	VPAND       (64*0)(SI), Y15, Y8
	VMOVDQU     (128+32*0)(SI), Y11
	VPSLLW      $4, Y11, Y11
	VPAND       Y14, Y11, Y11
	VPOR        Y11, Y8, Y8
	VPSHUFB     q2const<>+0x60(SB), Y12, Y9
	VMOVDQU     (4+128*0+32*0)(R9), Y10
	VPMADDUBSW  Y10, Y8, Y11
	VPMADDUBSW  Y10, Y13, Y10
	VPSUBW      Y10, Y11, Y11
	VPMADDWD    Y9, Y11, Y11
	VPADDD      Y11, Y0, Y0
	VMOVDQU     (4+128*0+32*0)(R10), Y10
	VPMADDUBSW  Y10, Y8, Y11
	VPMADDUBSW  Y10, Y13, Y10
	VPSUBW      Y10, Y11, Y11
	VPMADDWD    Y9, Y11, Y11
	VPADDD      Y11, Y1, Y1
	VMOVDQU     (4+128*0+32*0)(R13), Y10
	VPMADDUBSW  Y10, Y8, Y11
	VPMADDUBSW  Y10, Y13, Y10
	VPSUBW      Y10, Y11, Y11
	VPMADDWD    Y9, Y11, Y11
	VPADDD      Y11, Y2, Y2
	VMOVDQU     (4+128*0+32*0)(R14), Y10
	VPMADDUBSW  Y10, Y8, Y11
	VPMADDUBSW  Y10, Y13, Y10
	VPSUBW      Y10, Y11, Y11
	VPMADDWD    Y9, Y11, Y11
	VPADDD      Y11, Y3, Y3
	VPAND       (64*0+32)(SI), Y15, Y8
	VMOVDQU     (128+32*0)(SI), Y11
	VPSLLW      $2, Y11, Y11
	VPAND       Y14, Y11, Y11
	VPOR        Y11, Y8, Y8
	VPSHUFB     q2const<>+0x80(SB), Y12, Y9
	VMOVDQU     (4+128*0+32*1)(R9), Y10
	VPMADDUBSW  Y10, Y8, Y11
	VPMADDUBSW  Y10, Y13, Y10
	VPSUBW      Y10, Y11, Y11
	VPMADDWD    Y9, Y11, Y11
	VPADDD      Y11, Y0, Y0
	VMOVDQU     (4+128*0+32*1)(R10), Y10
	VPMADDUBSW  Y10, Y8, Y11
	VPMADDUBSW  Y10, Y13, Y10
	VPSUBW      Y10, Y11, Y11
	VPMADDWD    Y9, Y11, Y11
	VPADDD      Y11, Y1, Y1
	VMOVDQU     (4+128*0+32*1)(R13), Y10
	VPMADDUBSW  Y10, Y8, Y11
	VPMADDUBSW  Y10, Y13, Y10
	VPSUBW      Y10, Y11, Y11
	VPMADDWD    Y9, Y11, Y11
	VPADDD      Y11, Y2, Y2
	VMOVDQU     (4+128*0+32*1)(R14), Y10
	VPMADDUBSW  Y10, Y8, Y11
	VPMADDUBSW  Y10, Y13, Y10
	VPSUBW      Y10, Y11, Y11
	VPMADDWD    Y9, Y11, Y11
	VPADDD      Y11, Y3, Y3
	VMOVDQU     (64*0)(SI), Y8
	VPSRLW      $4, Y8, Y8
	VPAND       Y15, Y8, Y8
	VMOVDQU     (128+32*0)(SI), Y11

	VPAND       Y14, Y11, Y11
	VPOR        Y11, Y8, Y8
	VPSHUFB     q2const<>+0xa0(SB), Y12, Y9
	VMOVDQU     (4+128*0+32*2)(R9), Y10
	VPMADDUBSW  Y10, Y8, Y11
	VPMADDUBSW  Y10, Y13, Y10
	VPSUBW      Y10, Y11, Y11
	VPMADDWD    Y9, Y11, Y11
	VPADDD      Y11, Y0, Y0
	VMOVDQU     (4+128*0+32*2)(R10), Y10
	VPMADDUBSW  Y10, Y8, Y11
	VPMADDUBSW  Y10, Y13, Y10
	VPSUBW      Y10, Y11, Y11
	VPMADDWD    Y9, Y11, Y11
	VPADDD      Y11, Y1, Y1
	VMOVDQU     (4+128*0+32*2)(R13), Y10
	VPMADDUBSW  Y10, Y8, Y11
	VPMADDUBSW  Y10, Y13, Y10
	VPSUBW      Y10, Y11, Y11
	VPMADDWD    Y9, Y11, Y11
	VPADDD      Y11, Y2, Y2
	VMOVDQU     (4+128*0+32*2)(R14), Y10
	VPMADDUBSW  Y10, Y8, Y11
	VPMADDUBSW  Y10, Y13, Y10
	VPSUBW      Y10, Y11, Y11
	VPMADDWD    Y9, Y11, Y11
	VPADDD      Y11, Y3, Y3
	VMOVDQU     (64*0+32)(SI), Y8
	VPSRLW      $4, Y8, Y8
	VPAND       Y15, Y8, Y8
	VMOVDQU     (128+32*0)(SI), Y11
	VPSRLW      $2, Y11, Y11
	VPAND       Y14, Y11, Y11
	VPOR        Y11, Y8, Y8
	VPSHUFB     q2const<>+0xc0(SB), Y12, Y9
	VMOVDQU     (4+128*0+32*3)(R9), Y10
	VPMADDUBSW  Y10, Y8, Y11
	VPMADDUBSW  Y10, Y13, Y10
	VPSUBW      Y10, Y11, Y11
	VPMADDWD    Y9, Y11, Y11
	VPADDD      Y11, Y0, Y0
	VMOVDQU     (4+128*0+32*3)(R10), Y10
	VPMADDUBSW  Y10, Y8, Y11
	VPMADDUBSW  Y10, Y13, Y10
	VPSUBW      Y10, Y11, Y11
	VPMADDWD    Y9, Y11, Y11
	VPADDD      Y11, Y1, Y1
	VMOVDQU     (4+128*0+32*3)(R13), Y10
	VPMADDUBSW  Y10, Y8, Y11
	VPMADDUBSW  Y10, Y13, Y10
	VPSUBW      Y10, Y11, Y11
	VPMADDWD    Y9, Y11, Y11
	VPADDD      Y11, Y2, Y2
	VMOVDQU     (4+128*0+32*3)(R14), Y10
	VPMADDUBSW  Y10, Y8, Y11
	VPMADDUBSW  Y10, Y13, Y10
	VPSUBW      Y10, Y11, Y11
	VPMADDWD    Y9, Y11, Y11
	VPADDD      Y11, Y3, Y3
	VPMOVSXBW   (192+8*1)(SI), X12
	VINSERTI128 $1, X12, Y12, Y12
	VPAND       (64*1)(SI), Y15, Y8
	VMOVDQU     (128+32*1)(SI), Y11
	VPSLLW      $4, Y11, Y11
	VPAND       Y14, Y11, Y11
	VPOR        Y11, Y8, Y8
	VPSHUFB     q2const<>+0x60(SB), Y12, Y9
	VMOVDQU     (4+128*1+32*0)(R9), Y10
	VPMADDUBSW  Y10, Y8, Y11
	VPMADDUBSW  Y10, Y13, Y10
	VPSUBW      Y10, Y11, Y11
	VPMADDWD    Y9, Y11, Y11
	VPADDD      Y11, Y0, Y0
	VMOVDQU     (4+128*1+32*0)(R10), Y10
	VPMADDUBSW  Y10, Y8, Y11
	VPMADDUBSW  Y10, Y13, Y10
	VPSUBW      Y10, Y11, Y11
	VPMADDWD    Y9, Y11, Y11
	VPADDD      Y11, Y1, Y1
	VMOVDQU     (4+128*1+32*0)(R13), Y10
	VPMADDUBSW  Y10, Y8, Y11
	VPMADDUBSW  Y10, Y13, Y10
	VPSUBW      Y10, Y11, Y11
	VPMADDWD    Y9, Y11, Y11
	VPADDD      Y11, Y2, Y2
	VMOVDQU     (4+128*1+32*0)(R14), Y10
	VPMADDUBSW  Y10, Y8, Y11
	VPMADDUBSW  Y10, Y13, Y10
	VPSUBW      Y10, Y11, Y11
	VPMADDWD    Y9, Y11, Y11
	VPADDD      Y11, Y3, Y3
	VPAND       (64*1+32)(SI), Y15, Y8
	VMOVDQU     (128+32*1)(SI), Y11
	VPSLLW      $2, Y11, Y11
	VPAND       Y14, Y11, Y11
	VPOR        Y11, Y8, Y8
	VPSHUFB     q2const<>+0x80(SB), Y12, Y9
	VMOVDQU     (4+128*1+32*1)(R9), Y10
	VPMADDUBSW  Y10, Y8, Y11
	VPMADDUBSW  Y10, Y13, Y10
	VPSUBW      Y10, Y11, Y11
	VPMADDWD    Y9, Y11, Y11
	VPADDD      Y11, Y0, Y0
	VMOVDQU     (4+128*1+32*1)(R10), Y10
	VPMADDUBSW  Y10, Y8, Y11
	VPMADDUBSW  Y10, Y13, Y10
	VPSUBW      Y10, Y11, Y11
	VPMADDWD    Y9, Y11, Y11
	VPADDD      Y11, Y1, Y1
	VMOVDQU     (4+128*1+32*1)(R13), Y10
	VPMADDUBSW  Y10, Y8, Y11
	VPMADDUBSW  Y10, Y13, Y10
	VPSUBW      Y10, Y11, Y11
	VPMADDWD    Y9, Y11, Y11
	VPADDD      Y11, Y2, Y2
	VMOVDQU     (4+128*1+32*1)(R14), Y10
	VPMADDUBSW  Y10, Y8, Y11
	VPMADDUBSW  Y10, Y13, Y10
	VPSUBW      Y10, Y11, Y11
	VPMADDWD    Y9, Y11, Y11
	VPADDD      Y11, Y3, Y3
	VMOVDQU     (64*1)(SI), Y8
	VPSRLW      $4, Y8, Y8
	VPAND       Y15, Y8, Y8
	VMOVDQU     (128+32*1)(SI), Y11

	VPAND       Y14, Y11, Y11
	VPOR        Y11, Y8, Y8
	VPSHUFB     q2const<>+0xa0(SB), Y12, Y9
	VMOVDQU     (4+128*1+32*2)(R9), Y10
	VPMADDUBSW  Y10, Y8, Y11
	VPMADDUBSW  Y10, Y13, Y10
	VPSUBW      Y10, Y11, Y11
	VPMADDWD    Y9, Y11, Y11
	VPADDD      Y11, Y0, Y0
	VMOVDQU     (4+128*1+32*2)(R10), Y10
	VPMADDUBSW  Y10, Y8, Y11
	VPMADDUBSW  Y10, Y13, Y10
	VPSUBW      Y10, Y11, Y11
	VPMADDWD    Y9, Y11, Y11
	VPADDD      Y11, Y1, Y1
	VMOVDQU     (4+128*1+32*2)(R13), Y10
	VPMADDUBSW  Y10, Y8, Y11
	VPMADDUBSW  Y10, Y13, Y10
	VPSUBW      Y10, Y11, Y11
	VPMADDWD    Y9, Y11, Y11
	VPADDD      Y11, Y2, Y2
	VMOVDQU     (4+128*1+32*2)(R14), Y10
	VPMADDUBSW  Y10, Y8, Y11
	VPMADDUBSW  Y10, Y13, Y10
	VPSUBW      Y10, Y11, Y11
	VPMADDWD    Y9, Y11, Y11
	VPADDD      Y11, Y3, Y3
	VMOVDQU     (64*1+32)(SI), Y8
	VPSRLW      $4, Y8, Y8
	VPAND       Y15, Y8, Y8
	VMOVDQU     (128+32*1)(SI), Y11
	VPSRLW      $2, Y11, Y11
	VPAND       Y14, Y11, Y11
	VPOR        Y11, Y8, Y8
	VPSHUFB     q2const<>+0xc0(SB), Y12, Y9
	VMOVDQU     (4+128*1+32*3)(R9), Y10
	VPMADDUBSW  Y10, Y8, Y11
	VPMADDUBSW  Y10, Y13, Y10
	VPSUBW      Y10, Y11, Y11
	VPMADDWD    Y9, Y11, Y11
	VPADDD      Y11, Y0, Y0
	VMOVDQU     (4+128*1+32*3)(R10), Y10
	VPMADDUBSW  Y10, Y8, Y11
	VPMADDUBSW  Y10, Y13, Y10
	VPSUBW      Y10, Y11, Y11
	VPMADDWD    Y9, Y11, Y11
	VPADDD      Y11, Y1, Y1
	VMOVDQU     (4+128*1+32*3)(R13), Y10
	VPMADDUBSW  Y10, Y8, Y11
	VPMADDUBSW  Y10, Y13, Y10
	VPSUBW      Y10, Y11, Y11
	VPMADDWD    Y9, Y11, Y11
	VPADDD      Y11, Y2, Y2
	VMOVDQU     (4+128*1+32*3)(R14), Y10
	VPMADDUBSW  Y10, Y8, Y11
	VPMADDUBSW  Y10, Y13, Y10
	VPSUBW      Y10, Y11, Y11
	VPMADDWD    Y9, Y11, Y11
	VPADDD      Y11, Y3, Y3
	MOVWLZX      208(SI), AX
	VMOVSS       (R12)(AX*4), X12          // dw
	VCVTDQ2PS    Y0, Y0
	VMULSS       (R9), X12, X8
	VBROADCASTSS X8, Y8
	VFMADD231PS  Y0, Y8, Y4
	ADDQ         $292, R9
	VCVTDQ2PS    Y1, Y1
	VMULSS       (R10), X12, X8
	VBROADCASTSS X8, Y8
	VFMADD231PS  Y1, Y8, Y5
	ADDQ         $292, R10
	VCVTDQ2PS    Y2, Y2
	VMULSS       (R13), X12, X8
	VBROADCASTSS X8, Y8
	VFMADD231PS  Y2, Y8, Y6
	ADDQ         $292, R13
	VCVTDQ2PS    Y3, Y3
	VMULSS       (R14), X12, X8
	VBROADCASTSS X8, Y8
	VFMADD231PS  Y3, Y8, Y7
	ADDQ         $292, R14
	ADDQ         $210, SI
	DECQ         80(SP)
	JNZ          k6xsb
	LEAQ   (R8)(DX*2), AX
	HSUM8(Y4, X4, X8)
	VMOVSS X4, (R8)
	HSUM8(Y5, X5, X8)
	VMOVSS X5, (R8)(DX*1)
	HSUM8(Y6, X6, X8)
	VMOVSS X6, (AX)
	HSUM8(Y7, X7, X8)
	VMOVSS X7, (AX)(DX*1)
	ADDQ   rb+8(FP), DI
	ADDQ   $4, R8
	DECQ   R11
	JMP    k6xrow

k6xdone:
	VZEROUPPER
	RET

// func quantQ8_0AVX2(dst *byte, x *float32, nb int)
//
// quantize_row_q8_0's AVX2 code for nb blocks of 32 (as quantQ8_0AVX512):
// d = max|x|/127 as binary16, q = x·(127/max|x|) rounded to nearest even
// and saturated to int8 by VPACKSSDW + VPACKSSWB, whose 128-bit lane
// interleave VPERMD undoes.
TEXT ·quantQ8_0AVX2(SB), NOSPLIT, $0-24
	MOVQ         dst+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         nb+16(FP), CX
	VBROADCASTSS q2const<>+0x20(SB), Y15
	VMOVSS       q2const<>+0x1c(SB), X9
	VMOVDQU      q2const<>+0x40(SB), Y14
	VXORPS       X8, X8, X8

q2qloop:
	VMOVUPS      (SI), Y0
	VMOVUPS      32(SI), Y1
	VMOVUPS      64(SI), Y2
	VMOVUPS      96(SI), Y3
	VANDPS       Y15, Y0, Y4
	VANDPS       Y15, Y1, Y5
	VMAXPS       Y5, Y4, Y4
	VANDPS       Y15, Y2, Y5
	VANDPS       Y15, Y3, Y6
	VMAXPS       Y6, Y5, Y5
	VMAXPS       Y5, Y4, Y4
	VEXTRACTF128 $1, Y4, X5
	VMAXPS       X5, X4, X4
	VPERMILPS    $0x4e, X4, X5
	VMAXPS       X5, X4, X4
	VPERMILPS    $0xb1, X4, X5
	VMAXSS       X5, X4, X4           // amax
	VDIVSS       X9, X4, X5           // d = amax/127
	VDIVSS       X4, X9, X6           // 127/amax
	VCMPSS       $4, X8, X4, X7       // amax ≠ 0
	VANDPS       X7, X6, X6           // id
	VCVTPS2PH    $0, X5, X5
	VMOVD        X5, AX
	MOVW         AX, (DI)
	VBROADCASTSS X6, Y6
	VMULPS       Y6, Y0, Y0
	VMULPS       Y6, Y1, Y1
	VMULPS       Y6, Y2, Y2
	VMULPS       Y6, Y3, Y3
	VCVTPS2DQ    Y0, Y0
	VCVTPS2DQ    Y1, Y1
	VCVTPS2DQ    Y2, Y2
	VCVTPS2DQ    Y3, Y3
	VPACKSSDW    Y1, Y0, Y0
	VPACKSSDW    Y3, Y2, Y2
	VPACKSSWB    Y2, Y0, Y0
	VPERMD       Y0, Y14, Y0
	VMOVDQU      Y0, 2(DI)
	ADDQ         $128, SI
	ADDQ         $34, DI
	DECQ         CX
	JNZ          q2qloop
	VZEROUPPER
	RET

// func q4_0x8DotAVX2(w *byte, rb, nrows int, xa *byte, nb int, out *float32)
//
// out[r] = dotQ4_0Chain of weight row r < nrows (a multiple of 8; rows rb
// bytes apart, nb ≥ 1 blocks) with the Q8_0 activation row xa.
TEXT ·q4_0x8DotAVX2(SB), NOSPLIT, $0-48
	C8START
	VPBROADCASTD q2const<>+0x08(SB), Y13

c8agroup:
	CMPQ R11, $8
	JLT  c8adone
	C8GROUP

c8ablk:
	C8BLK(C8ROWAVX2, C8PREAVX2)
	JNZ c8ablk
	C8STORE
	JMP c8agroup

c8adone:
	VZEROUPPER
	RET

// func q4_0x8DotAVXVNNI(w *byte, rb, nrows int, xa *byte, nb int, out *float32)
TEXT ·q4_0x8DotAVXVNNI(SB), NOSPLIT, $0-48
	C8START
	VPCMPEQB Y13, Y13, Y13

c8vgroup:
	CMPQ R11, $8
	JLT  c8vdone
	C8GROUP

c8vblk:
	C8BLK(C8ROWAVXVNNI, C8PREVNNI)
	JNZ c8vblk
	C8STORE
	JMP c8vgroup

c8vdone:
	VZEROUPPER
	RET

// func q4_0x8DotVNNI512(w *byte, rb, nrows int, xa *byte, nb int, out *float32)
//
// The same with AVX-512 VNNI's EVEX VPDPBUSD on 256-bit registers.
TEXT ·q4_0x8DotVNNI512(SB), NOSPLIT, $0-48
	C8START
	VPCMPEQB Y13, Y13, Y13

c8zgroup:
	CMPQ R11, $8
	JLT  c8zdone
	C8GROUP

c8zblk:
	C8BLK(C8ROWVNNI512, C8PREVNNI)
	JNZ c8zblk
	C8STORE
	JMP c8zgroup

c8zdone:
	VZEROUPPER
	RET
