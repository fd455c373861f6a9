//go:build !noasm

#include "textflag.h"
#include "k4utmp_amd64.h"

// Fused decode-and-dot for the k-quants (256-element super-blocks): each
// block's sub-block scales are computed once into the stack frame with the
// float32 operations ggml's dequantize_row_* uses, the quants are widened
// to float32 in registers, scaled (and offset) exactly as ggml does — so the
// weight is the dequantized float32 value bit for bit — and FMA'd with the
// activations. REDUCE512/REDUCE256 are in rowdot_amd64.s's style but local
// to this file.

DATA kqconst<>+0x00(SB)/4, $0x0000000f // Q4_K nibble mask (dword)
DATA kqconst<>+0x04(SB)/4, $0x0f0f0f0f // Q6_K low-nibble mask (bytes)
DATA kqconst<>+0x08(SB)/4, $0x30303030 // Q6_K high-bits mask (bytes)
DATA kqconst<>+0x0c(SB)/4, $0x20202020 // Q6_K zero point 32 (bytes)
DATA kqconst<>+0x10(SB)/4, $0x00000010 // Q5 fifth bit (dword)
DATA kqconst<>+0x14(SB)/4, $0x00000003 // 2-bit mask (dword)
DATA kqconst<>+0x18(SB)/4, $0x00000004 // Q3_K high bit / zero point (dword)
DATA kqconst<>+0x1c(SB)/4, $0x00000020 // Q3_K scale offset 32 (dword)
GLOBL kqconst<>(SB), RODATA|NOPTR, $32

// q4ktab[i] = float32(i): VPERMPS turns a 4-bit quant (the low four bits
// of a dword index) into its float32 value in one step.
DATA q4ktab<>+0x00(SB)/4, $0.0
DATA q4ktab<>+0x04(SB)/4, $1.0
DATA q4ktab<>+0x08(SB)/4, $2.0
DATA q4ktab<>+0x0c(SB)/4, $3.0
DATA q4ktab<>+0x10(SB)/4, $4.0
DATA q4ktab<>+0x14(SB)/4, $5.0
DATA q4ktab<>+0x18(SB)/4, $6.0
DATA q4ktab<>+0x1c(SB)/4, $7.0
DATA q4ktab<>+0x20(SB)/4, $8.0
DATA q4ktab<>+0x24(SB)/4, $9.0
DATA q4ktab<>+0x28(SB)/4, $10.0
DATA q4ktab<>+0x2c(SB)/4, $11.0
DATA q4ktab<>+0x30(SB)/4, $12.0
DATA q4ktab<>+0x34(SB)/4, $13.0
DATA q4ktab<>+0x38(SB)/4, $14.0
DATA q4ktab<>+0x3c(SB)/4, $15.0
GLOBL q4ktab<>(SB), RODATA|NOPTR, $64

// The AVX-512 group macros end in SINK(mem, z, acc): FMASINK accumulates
// the weights z times the activations at mem into acc (the dot kernels),
// STORESINK writes the weights to mem (the decoders MatMul uses for M ≥ 2,
// where SI is the destination).
#define FMASINK(mem, z, acc) VFMADD231PS mem, z, acc
#define STORESINK(mem, z, acc) VMOVUPS z, mem

#define KREDUCE512 \
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

#define KREDUCE256 \
	VADDPS       Y1, Y0, Y0 \
	VADDPS       Y3, Y2, Y2 \
	VADDPS       Y2, Y0, Y0 \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS       X1, X0, X0 \
	VPERMILPS    $0x4e, X0, X1 \
	VADDPS       X1, X0, X0 \
	VPERMILPS    $0xb1, X0, X1 \
	VADDSS       X1, X0, X0

// Q4_K block (144 bytes): f16 d, f16 dmin, 12 bytes of 6-bit scales and
// mins (ggml's get_scale_min_k4), 128 bytes of nibbles; 64-element group j
// takes the low nibbles of qs[32j:32j+32] as elements 0..31 (scale 2j) and
// the high ones as 32..63 (scale 2j+1); weight = float32(d·sc)·q − dmin·mn.
//
// Q4KSCALES leaves the bytes sc0..sc7, mn0..mn7 in X4 (K4UTMPR).
#define Q4KSCALES \
	K4UTMPR(DI, R8, R9)          \
	VMOVD   AX, X4               \
	VPINSRD $1, DX, X4, X4       \
	VPINSRD $2, BX, X4, X4       \
	VPINSRD $3, R8, X4, X4

// Q4KDM512 unpacks the scales of the Q4_K / Q5_K super-block at DI as
// float32: d·sc0..7 then dmin·mn0..7 in Z4, also stored at 0(SP).
#define Q4KDM512 \
	Q4KSCALES \
	VPMOVZXBD    X4, Z4 \
	VCVTDQ2PS    Z4, Z4 \
	VPBROADCASTW (DI), Y5 \
	VPBROADCASTW 2(DI), Y6 \
	VINSERTI128  $1, X6, Y5, Y5 \
	VCVTPH2PS    Y5, Z5 \
	VMULPS       Z5, Z4, Z4 \
	VMOVUPS      Z4, 0(SP)

// Q4KDM256 is Q4KDM512 on 8-lane vectors: d·sc0..7 in Y5 (also stored at
// 0(SP)), dmin·mn0..7 in Y6.
#define Q4KDM256 \
	Q4KSCALES \
	VPMOVZXBD    X4, Y5 \
	VPSRLDQ      $8, X4, X4 \
	VPMOVZXBD    X4, Y6 \
	VCVTDQ2PS    Y5, Y5 \
	VCVTDQ2PS    Y6, Y6 \
	VPBROADCASTW (DI), X7 \
	VCVTPH2PS    X7, Y7 \
	VMULPS       Y7, Y5, Y5 \
	VPBROADCASTW 2(DI), X7 \
	VCVTPH2PS    X7, Y7 \
	VMULPS       Y7, Y6, Y6 \
	VMOVUPS      Y5, 0(SP)

// Q4KGROUP512 is 64-element group j: qo = 16+32j, xo = 256j, so = 8j.
#define Q4KGROUP512(SINK, qo, xo, so) \
	VPMOVZXBD    qo(DI), Z8         \
	VPMOVZXBD    qo+16(DI), Z9      \
	VPSRLD       $4, Z8, Z10        \
	VPSRLD       $4, Z9, Z11        \
	VPANDD       Z15, Z8, Z8        \
	VPANDD       Z15, Z9, Z9        \
	VCVTDQ2PS    Z8, Z8             \
	VCVTDQ2PS    Z9, Z9             \
	VCVTDQ2PS    Z10, Z10           \
	VCVTDQ2PS    Z11, Z11           \
	VBROADCASTSS so(SP), Z12        \
	VBROADCASTSS so+4(SP), Z13      \
	VBROADCASTSS so+32(SP), Z14     \
	VBROADCASTSS so+36(SP), Z16     \
	VMULPS       Z12, Z8, Z8        \
	VMULPS       Z12, Z9, Z9        \
	VMULPS       Z13, Z10, Z10      \
	VMULPS       Z13, Z11, Z11      \
	VSUBPS       Z14, Z8, Z8        \
	VSUBPS       Z14, Z9, Z9        \
	VSUBPS       Z16, Z10, Z10      \
	VSUBPS       Z16, Z11, Z11      \
	SINK(xo(SI), Z8, Z0)     \
	SINK(xo+64(SI), Z9, Z1)  \
	SINK(xo+128(SI), Z10, Z2) \
	SINK(xo+192(SI), Z11, Z3)

// BLOCKQ4K512 is one Q4_K block with its weights sent to SINK.
#define BLOCKQ4K512(SINK) \
	Q4KDM512 \
	Q4KGROUP512(SINK, 16, 0, 0) \
	Q4KGROUP512(SINK, 48, 256, 8) \
	Q4KGROUP512(SINK, 80, 512, 16) \
	Q4KGROUP512(SINK, 112, 768, 24)

// Q6_K block (210 bytes): ql[128], qh[64], int8 scales[16], f16 d. Half n
// (128 elements) uses ql[64n:], qh[32n:], scales[8n:]; for l < 32:
//
//	q1 = ql[l]&15    | (qh[l]>>0&3)<<4  element l,     scale l/16
//	q2 = ql[l+32]&15 | (qh[l]>>2&3)<<4  element l+32,  scale 2+l/16
//	q3 = ql[l]>>4    | (qh[l]>>4&3)<<4  element l+64,  scale 4+l/16
//	q4 = ql[l+32]>>4 | (qh[l]>>6&3)<<4  element l+96,  scale 6+l/16
//
// weight = float32(d·scale)·(q−32). The 6-bit quants are assembled 16 at a
// time as bytes (X13 = 0x0f, X14 = 0x30, X12 = 32 in every byte).
//
// Q6KBYTES(lo, ho) leaves q1..q4 − 32 for l = c..c+15 in X8, X9, X10, X11,
// given ql[l] at lo(DI) and qh[l] at ho(DI).
// Q6KBYTESR is Q6KBYTES on the registers given: X registers for 16
// quants (l = c..c+15), Y registers for 32 (l = 0..31 of a half).
#define Q6KBYTESR(lo, ho, q1, q2, q3, q4, t5, t6, t7, c32, c0f, c30) \
	VMOVDQU lo(DI), q1             \
	VMOVDQU lo+32(DI), q2          \
	VMOVDQU ho(DI), t7             \
	VPSRLW  $4, q1, q3             \
	VPSRLW  $4, q2, q4             \
	VPAND   c0f, q1, q1            \
	VPAND   c0f, q2, q2            \
	VPAND   c0f, q3, q3            \
	VPAND   c0f, q4, q4            \
	VPSLLW  $4, t7, t5             \
	VPSLLW  $2, t7, t6             \
	VPAND   c30, t5, t5            \
	VPAND   c30, t6, t6            \
	VPOR    t5, q1, q1             \
	VPOR    t6, q2, q2             \
	VPAND   c30, t7, t5            \
	VPSRLW  $2, t7, t6             \
	VPAND   c30, t6, t6            \
	VPOR    t5, q3, q3             \
	VPOR    t6, q4, q4             \
	VPSUBB  c32, q1, q1            \
	VPSUBB  c32, q2, q2            \
	VPSUBB  c32, q3, q3            \
	VPSUBB  c32, q4, q4

#define Q6KBYTES(lo, ho) Q6KBYTESR(lo, ho, X8, X9, X10, X11, X5, X6, X7, X12, X13, X14)

// Q6KCHUNK512 is l = 16c..16c+15 of half n: lo = 64n+16c, ho = 128+32n+16c,
// xo = 512n+64c, so = 4·(8n+c).
#define Q6KCHUNK512(SINK, lo, ho, xo, so) \
	Q6KBYTES(lo, ho)                 \
	VPMOVSXBD    X8, Z8              \
	VPMOVSXBD    X9, Z9              \
	VPMOVSXBD    X10, Z10            \
	VPMOVSXBD    X11, Z11            \
	VCVTDQ2PS    Z8, Z8              \
	VCVTDQ2PS    Z9, Z9              \
	VCVTDQ2PS    Z10, Z10            \
	VCVTDQ2PS    Z11, Z11            \
	VBROADCASTSS so(SP), Z16         \
	VBROADCASTSS so+8(SP), Z17       \
	VBROADCASTSS so+16(SP), Z18      \
	VBROADCASTSS so+24(SP), Z19      \
	VMULPS       Z16, Z8, Z8         \
	VMULPS       Z17, Z9, Z9         \
	VMULPS       Z18, Z10, Z10       \
	VMULPS       Z19, Z11, Z11       \
	SINK(xo(SI), Z8, Z0)      \
	SINK(xo+128(SI), Z9, Z1)  \
	SINK(xo+256(SI), Z10, Z2) \
	SINK(xo+384(SI), Z11, Z3)

// BLOCKQ6K512 is one Q6_K block with its weights sent to SINK.
#define BLOCKQ6K512(SINK) \
	VPMOVSXBD    192(DI), Z4 \
	VCVTDQ2PS    Z4, Z4 \
	VPBROADCASTW 208(DI), Y5 \
	VCVTPH2PS    Y5, Z5 \
	VMULPS       Z5, Z4, Z4 \
	VMOVUPS      Z4, 0(SP) \
	Q6KCHUNK512(SINK, 0, 128, 0, 0) \
	Q6KCHUNK512(SINK, 16, 144, 64, 4) \
	Q6KCHUNK512(SINK, 64, 160, 512, 32) \
	Q6KCHUNK512(SINK, 80, 176, 576, 36)

// Q5_K block (176 bytes): as Q4_K with qh[32] at 16 and the nibbles at 48;
// group j's fifth bits are bit 2j (low nibbles) and 2j+1 (high nibbles) of
// qh[l]. Z20/Z21 hold qh[0:16]/qh[16:32] widened, shifted right by 2j.
#define Q5KGROUP512(SINK, qo, xo, so) \
	VPMOVZXBD    qo(DI), Z8          \
	VPMOVZXBD    qo+16(DI), Z9       \
	VPSRLD       $4, Z8, Z10         \
	VPSRLD       $4, Z9, Z11         \
	VPANDD       Z15, Z8, Z8         \
	VPANDD       Z15, Z9, Z9         \
	VPSLLD       $4, Z20, Z22        \
	VPSLLD       $4, Z21, Z23        \
	VPANDD       Z24, Z22, Z22       \
	VPANDD       Z24, Z23, Z23       \
	VPORD        Z22, Z8, Z8         \
	VPORD        Z23, Z9, Z9         \
	VPSLLD       $3, Z20, Z22        \
	VPSLLD       $3, Z21, Z23        \
	VPANDD       Z24, Z22, Z22       \
	VPANDD       Z24, Z23, Z23       \
	VPORD        Z22, Z10, Z10       \
	VPORD        Z23, Z11, Z11       \
	VPSRLD       $2, Z20, Z20        \
	VPSRLD       $2, Z21, Z21        \
	VCVTDQ2PS    Z8, Z8              \
	VCVTDQ2PS    Z9, Z9              \
	VCVTDQ2PS    Z10, Z10            \
	VCVTDQ2PS    Z11, Z11            \
	VBROADCASTSS so(SP), Z12         \
	VBROADCASTSS so+4(SP), Z13       \
	VBROADCASTSS so+32(SP), Z14      \
	VBROADCASTSS so+36(SP), Z16      \
	VMULPS       Z12, Z8, Z8         \
	VMULPS       Z12, Z9, Z9         \
	VMULPS       Z13, Z10, Z10       \
	VMULPS       Z13, Z11, Z11       \
	VSUBPS       Z14, Z8, Z8         \
	VSUBPS       Z14, Z9, Z9         \
	VSUBPS       Z16, Z10, Z10       \
	VSUBPS       Z16, Z11, Z11       \
	SINK(xo(SI), Z8, Z0)      \
	SINK(xo+64(SI), Z9, Z1)   \
	SINK(xo+128(SI), Z10, Z2) \
	SINK(xo+192(SI), Z11, Z3)

// BLOCKQ5K512 is one Q5_K block with its weights sent to SINK.
#define BLOCKQ5K512(SINK) \
	Q4KDM512 \
	VPMOVZXBD    16(DI), Z20 \
	VPMOVZXBD    32(DI), Z21 \
	Q5KGROUP512(SINK, 48, 0, 0) \
	Q5KGROUP512(SINK, 80, 256, 8) \
	Q5KGROUP512(SINK, 112, 512, 16) \
	Q5KGROUP512(SINK, 144, 768, 24)

// Q2_K block (84 bytes): scales[16] (low nibble sc, high nibble mn), qs[64],
// f16 d, f16 dmin. Half n uses qs[32n:32n+32]; its 16-element group g takes
// qs[32n+16(g&1)+l] >> 2(g>>1) & 3 with scale byte 8n+g, weight =
// float32((d·sc)·q) − dmin·mn. The stack holds d·sc at 0 and dmin·mn at 64.
#define Q2KGROUP512(SINK, zq, shift, xo, so, acc) \
	VPSRLD       $shift, zq, Z8    \
	VPANDD       Z15, Z8, Z8       \
	VCVTDQ2PS    Z8, Z8            \
	VBROADCASTSS so(SP), Z12       \
	VBROADCASTSS so+64(SP), Z13    \
	VMULPS       Z12, Z8, Z8       \
	VSUBPS       Z13, Z8, Z8       \
	SINK(xo(SI), Z8, acc)

// BLOCKQ2K512 is one Q2_K block with its weights sent to SINK.
#define BLOCKQ2K512(SINK) \
	VPMOVZXBD    (DI), Z4 \
	VPSRLD       $4, Z4, Z5 \
	VPANDD       Z14, Z4, Z4 \
	VCVTDQ2PS    Z4, Z4 \
	VCVTDQ2PS    Z5, Z5 \
	VPBROADCASTW 80(DI), Y6 \
	VCVTPH2PS    Y6, Z6 \
	VPBROADCASTW 82(DI), Y7 \
	VCVTPH2PS    Y7, Z7 \
	VMULPS       Z6, Z4, Z4 \
	VMULPS       Z7, Z5, Z5 \
	VMOVUPS      Z4, 0(SP) \
	VMOVUPS      Z5, 64(SP) \
	VPMOVZXBD    16(DI), Z20 \
	VPMOVZXBD    32(DI), Z21 \
	VPMOVZXBD    48(DI), Z22 \
	VPMOVZXBD    64(DI), Z23 \
	Q2KGROUP512(SINK, Z20, 0, 0, 0, Z0) \
	Q2KGROUP512(SINK, Z21, 0, 64, 4, Z1) \
	Q2KGROUP512(SINK, Z20, 2, 128, 8, Z2) \
	Q2KGROUP512(SINK, Z21, 2, 192, 12, Z3) \
	Q2KGROUP512(SINK, Z20, 4, 256, 16, Z0) \
	Q2KGROUP512(SINK, Z21, 4, 320, 20, Z1) \
	Q2KGROUP512(SINK, Z20, 6, 384, 24, Z2) \
	Q2KGROUP512(SINK, Z21, 6, 448, 28, Z3) \
	Q2KGROUP512(SINK, Z22, 0, 512, 32, Z0) \
	Q2KGROUP512(SINK, Z23, 0, 576, 36, Z1) \
	Q2KGROUP512(SINK, Z22, 2, 640, 40, Z2) \
	Q2KGROUP512(SINK, Z23, 2, 704, 44, Z3) \
	Q2KGROUP512(SINK, Z22, 4, 768, 48, Z0) \
	Q2KGROUP512(SINK, Z23, 4, 832, 52, Z1) \
	Q2KGROUP512(SINK, Z22, 6, 896, 56, Z2) \
	Q2KGROUP512(SINK, Z23, 6, 960, 60, Z3)

// Q3_K block (110 bytes): hmask[32], qs[64], 12 bytes of 6-bit scales
// (offset by 32), f16 d. As Q2_K, group g of half n takes 2 bits of
// qs[32+32n+16(g&1)+l] at shift 2(g>>1) and scale 8n+g; its high bit is bit
// 4n+(g>>1) of hmask[16(g&1)+l], and weight = (d·(sc−32))·(q − 4·!h). Z24/Z25
// hold hmask[0:16]/hmask[16:32] widened and shifted right once per shift
// step, so the bit in use is always bit 0; v = q | h<<2, minus 4.
#define Q3KGROUP512(SINK, zq, zh, shift, xo, so, acc) \
	VPSRLD       $shift, zq, Z8    \
	VPANDD       Z15, Z8, Z8       \
	VPSLLD       $2, zh, Z9        \
	VPANDD       Z14, Z9, Z9       \
	VPORD        Z9, Z8, Z8        \
	VPSUBD       Z14, Z8, Z8       \
	VCVTDQ2PS    Z8, Z8            \
	VBROADCASTSS so(SP), Z12       \
	VMULPS       Z12, Z8, Z8       \
	SINK(xo(SI), Z8, acc)

#define Q3KSTEP \
	VPSRLD $1, Z24, Z24 \
	VPSRLD $1, Z25, Z25

// BLOCKQ3K512 is one Q3_K block with its weights sent to SINK.
#define BLOCKQ3K512(SINK) \
	MOVL         96(DI), AX \
	MOVL         100(DI), BX \
	MOVL         104(DI), DX \
	MOVL         AX, R8 \
	ANDL         $0x0f0f0f0f, R8 \
	MOVL         DX, R9 \
	ANDL         $0x03030303, R9 \
	SHLL         $4, R9 \
	ORL          R9, R8 \
	MOVL         BX, R10 \
	ANDL         $0x0f0f0f0f, R10 \
	MOVL         DX, R9 \
	SHRL         $2, R9 \
	ANDL         $0x03030303, R9 \
	SHLL         $4, R9 \
	ORL          R9, R10 \
	SHRL         $4, AX \
	ANDL         $0x0f0f0f0f, AX \
	MOVL         DX, R9 \
	SHRL         $4, R9 \
	ANDL         $0x03030303, R9 \
	SHLL         $4, R9 \
	ORL          R9, AX \
	SHRL         $4, BX \
	ANDL         $0x0f0f0f0f, BX \
	SHRL         $6, DX \
	ANDL         $0x03030303, DX \
	SHLL         $4, DX \
	ORL          DX, BX \
	VMOVD        R8, X4 \
	VPINSRD      $1, R10, X4, X4 \
	VPINSRD      $2, AX, X4, X4 \
	VPINSRD      $3, BX, X4, X4 \
	VPMOVZXBD    X4, Z4 \
	VPSUBD       Z13, Z4, Z4 \
	VCVTDQ2PS    Z4, Z4 \
	VPBROADCASTW 108(DI), Y6 \
	VCVTPH2PS    Y6, Z6 \
	VMULPS       Z6, Z4, Z4 \
	VMOVUPS      Z4, 0(SP) \
	VPMOVZXBD    (DI), Z24 \
	VPMOVZXBD    16(DI), Z25 \
	VPMOVZXBD    32(DI), Z20 \
	VPMOVZXBD    48(DI), Z21 \
	VPMOVZXBD    64(DI), Z22 \
	VPMOVZXBD    80(DI), Z23 \
	Q3KGROUP512(SINK, Z20, Z24, 0, 0, 0, Z0) \
	Q3KGROUP512(SINK, Z21, Z25, 0, 64, 4, Z1) \
	Q3KSTEP \
	Q3KGROUP512(SINK, Z20, Z24, 2, 128, 8, Z2) \
	Q3KGROUP512(SINK, Z21, Z25, 2, 192, 12, Z3) \
	Q3KSTEP \
	Q3KGROUP512(SINK, Z20, Z24, 4, 256, 16, Z0) \
	Q3KGROUP512(SINK, Z21, Z25, 4, 320, 20, Z1) \
	Q3KSTEP \
	Q3KGROUP512(SINK, Z20, Z24, 6, 384, 24, Z2) \
	Q3KGROUP512(SINK, Z21, Z25, 6, 448, 28, Z3) \
	Q3KSTEP \
	Q3KGROUP512(SINK, Z22, Z24, 0, 512, 32, Z0) \
	Q3KGROUP512(SINK, Z23, Z25, 0, 576, 36, Z1) \
	Q3KSTEP \
	Q3KGROUP512(SINK, Z22, Z24, 2, 640, 40, Z2) \
	Q3KGROUP512(SINK, Z23, Z25, 2, 704, 44, Z3) \
	Q3KSTEP \
	Q3KGROUP512(SINK, Z22, Z24, 4, 768, 48, Z0) \
	Q3KGROUP512(SINK, Z23, Z25, 4, 832, 52, Z1) \
	Q3KSTEP \
	Q3KGROUP512(SINK, Z22, Z24, 6, 896, 56, Z2) \
	Q3KGROUP512(SINK, Z23, Z25, 6, 960, 60, Z3)

#define Q4KLOW(y) VPAND Y15, y, y
#define Q4KHIGH(y) VPSRLD $4, y, y

// Q4KHALF256 is one nibble half (OP) of a 64-element group: 32 weights from
// the 32 bytes at qo(DI), scale at so(SP), min at mo(SP), x (or, with
// STORESINK, the destination) at xo(SI).
#define Q4KHALF256(SINK, OP, qo, xo, so, mo) \
	VPMOVZXBD    qo(DI), Y8        \
	VPMOVZXBD    qo+8(DI), Y9      \
	VPMOVZXBD    qo+16(DI), Y10    \
	VPMOVZXBD    qo+24(DI), Y11    \
	OP(Y8)                         \
	OP(Y9)                         \
	OP(Y10)                        \
	OP(Y11)                        \
	VCVTDQ2PS    Y8, Y8            \
	VCVTDQ2PS    Y9, Y9            \
	VCVTDQ2PS    Y10, Y10          \
	VCVTDQ2PS    Y11, Y11          \
	VBROADCASTSS so(SP), Y12       \
	VBROADCASTSS mo(SP), Y13       \
	VMULPS       Y12, Y8, Y8       \
	VMULPS       Y12, Y9, Y9       \
	VMULPS       Y12, Y10, Y10     \
	VMULPS       Y12, Y11, Y11     \
	VSUBPS       Y13, Y8, Y8       \
	VSUBPS       Y13, Y9, Y9       \
	VSUBPS       Y13, Y10, Y10     \
	VSUBPS       Y13, Y11, Y11     \
	SINK(xo(SI), Y8, Y0)           \
	SINK(xo+32(SI), Y9, Y1)        \
	SINK(xo+64(SI), Y10, Y2)       \
	SINK(xo+96(SI), Y11, Y3)

// Q6KVEC256 widens the 16 quants in xq (l = c..c+15, minus 32), scales them
// by so(SP) and sinks them with x (or the destination) at xo(SI).
#define Q6KVEC256(SINK, xq, xo, so, acc1, acc2) \
	VPMOVSXBD    xq, Y5              \
	VPSRLDQ      $8, xq, X6          \
	VPMOVSXBD    X6, Y6              \
	VCVTDQ2PS    Y5, Y5              \
	VCVTDQ2PS    Y6, Y6              \
	VBROADCASTSS so(SP), Y7          \
	VMULPS       Y7, Y5, Y5          \
	VMULPS       Y7, Y6, Y6          \
	SINK(xo(SI), Y5, acc1)           \
	SINK(xo+32(SI), Y6, acc2)

#define Q6KCHUNK256(SINK, lo, ho, xo, so) \
	Q6KBYTES(lo, ho)                                \
	Q6KVEC256(SINK, X8, xo, so, Y0, Y1)             \
	Q6KVEC256(SINK, X9, xo+128, so+8, Y2, Y3)       \
	Q6KVEC256(SINK, X10, xo+256, so+16, Y0, Y1)     \
	Q6KVEC256(SINK, X11, xo+384, so+24, Y2, Y3)

// BLOCKQ4K256 is one Q4_K super-block at DI on 8-lane vectors (frame: the
// 8 scales and 8 mins at 0(SP) and 32(SP)), x or the destination at SI.
#define BLOCKQ4K256(SINK) \
	Q4KDM256 \
	VMOVUPS      Y6, 32(SP) \
	Q4KHALF256(SINK, Q4KLOW, 16, 0, 0, 32) \
	Q4KHALF256(SINK, Q4KHIGH, 16, 128, 4, 36) \
	Q4KHALF256(SINK, Q4KLOW, 48, 256, 8, 40) \
	Q4KHALF256(SINK, Q4KHIGH, 48, 384, 12, 44) \
	Q4KHALF256(SINK, Q4KLOW, 80, 512, 16, 48) \
	Q4KHALF256(SINK, Q4KHIGH, 80, 640, 20, 52) \
	Q4KHALF256(SINK, Q4KLOW, 112, 768, 24, 56) \
	Q4KHALF256(SINK, Q4KHIGH, 112, 896, 28, 60)

// BLOCKQ6K256 is one Q6_K super-block at DI on 8-lane vectors (frame: the
// 16 scales at 0(SP)), x or the destination at SI.
#define BLOCKQ6K256(SINK) \
	VPMOVSXBD    192(DI), Y4 \
	VPMOVSXBD    200(DI), Y5 \
	VCVTDQ2PS    Y4, Y4 \
	VCVTDQ2PS    Y5, Y5 \
	VPBROADCASTW 208(DI), X6 \
	VCVTPH2PS    X6, Y6 \
	VMULPS       Y6, Y4, Y4 \
	VMULPS       Y6, Y5, Y5 \
	VMOVUPS      Y4, 0(SP) \
	VMOVUPS      Y5, 32(SP) \
	Q6KCHUNK256(SINK, 0, 128, 0, 0) \
	Q6KCHUNK256(SINK, 16, 144, 64, 4) \
	Q6KCHUNK256(SINK, 64, 160, 512, 32) \
	Q6KCHUNK256(SINK, 80, 176, 576, 36)

// Q5KQ256 is quarter q (elements 8q..8q+7 of both nibble halves) of Q5_K
// group j on 8-lane vectors: nibbles from qs[32j+8q..], fifth bits from
// qh[8q..] (bit 2j for the low nibbles, 2j+1 for the high ones), scales
// and mins as BLOCKQ4K256 leaves them at 0(SP) and 32(SP).
#define Q5KQ256(SINK, j, q, acc1, acc2) \
	VPMOVZXBD    (48+32*j+8*q)(DI), Y8   \
	VPSRLD       $4, Y8, Y9              \
	VPAND        Y15, Y8, Y8             \
	VPMOVZXBD    (16+8*q)(DI), Y10       \
	VPSLLD       $4, Y10, Y10            \
	VPSRLD       $(2*j), Y10, Y11        \
	VPAND        Y14, Y11, Y11           \
	VPOR         Y11, Y8, Y8             \
	VPSRLD       $(2*j+1), Y10, Y11      \
	VPAND        Y14, Y11, Y11           \
	VPOR         Y11, Y9, Y9             \
	VCVTDQ2PS    Y8, Y8                  \
	VCVTDQ2PS    Y9, Y9                  \
	VBROADCASTSS (8*j)(SP), Y12          \
	VBROADCASTSS (32+8*j)(SP), Y13       \
	VMULPS       Y12, Y8, Y8             \
	VSUBPS       Y13, Y8, Y8             \
	VBROADCASTSS (8*j+4)(SP), Y12        \
	VBROADCASTSS (36+8*j)(SP), Y13       \
	VMULPS       Y12, Y9, Y9             \
	VSUBPS       Y13, Y9, Y9             \
	SINK((256*j+32*q)(SI), Y8, acc1)     \
	SINK((256*j+128+32*q)(SI), Y9, acc2)

#define Q5KGROUP256(SINK, j) \
	Q5KQ256(SINK, j, 0, Y0, Y1) \
	Q5KQ256(SINK, j, 1, Y2, Y3) \
	Q5KQ256(SINK, j, 2, Y0, Y1) \
	Q5KQ256(SINK, j, 3, Y2, Y3)

// BLOCKQ5K256 is one Q5_K super-block at DI on 8-lane vectors, x or the
// destination at SI (weight = float32(d·sc)·q − dmin·mn as Q4_K, q with
// its fifth bit).
#define BLOCKQ5K256(SINK) \
	Q4KDM256 \
	VMOVUPS      Y6, 32(SP) \
	Q5KGROUP256(SINK, 0) \
	Q5KGROUP256(SINK, 1) \
	Q5KGROUP256(SINK, 2) \
	Q5KGROUP256(SINK, 3)

// Q2KG256 is one 16-element Q2_K group on 8-lane vectors (layout at
// BLOCKQ2K512): 2 bits at shift of the 16 bytes at qo(DI), d·sc at so(SP),
// dmin·mn at so+64(SP), x or the destination at xo(SI).
#define Q2KG256(SINK, qo, shift, xo, so, acc1, acc2) \
	VPMOVZXBD    qo(DI), Y8         \
	VPMOVZXBD    qo+8(DI), Y9       \
	VPSRLD       $shift, Y8, Y8     \
	VPSRLD       $shift, Y9, Y9     \
	VPAND        Y15, Y8, Y8        \
	VPAND        Y15, Y9, Y9        \
	VCVTDQ2PS    Y8, Y8             \
	VCVTDQ2PS    Y9, Y9             \
	VBROADCASTSS so(SP), Y12        \
	VBROADCASTSS so+64(SP), Y13     \
	VMULPS       Y12, Y8, Y8        \
	VMULPS       Y12, Y9, Y9        \
	VSUBPS       Y13, Y8, Y8        \
	VSUBPS       Y13, Y9, Y9        \
	SINK(xo(SI), Y8, acc1)          \
	SINK(xo+32(SI), Y9, acc2)

// BLOCKQ2K256 is one Q2_K super-block on 8-lane vectors (frame: d·sc at
// 0(SP), dmin·mn at 64(SP)).
#define BLOCKQ2K256(SINK) \
	VPMOVZXBD    (DI), Y4 \
	VPMOVZXBD    8(DI), Y5 \
	VPSRLD       $4, Y4, Y6 \
	VPSRLD       $4, Y5, Y7 \
	VPAND        Y14, Y4, Y4 \
	VPAND        Y14, Y5, Y5 \
	VCVTDQ2PS    Y4, Y4 \
	VCVTDQ2PS    Y5, Y5 \
	VCVTDQ2PS    Y6, Y6 \
	VCVTDQ2PS    Y7, Y7 \
	VPBROADCASTW 80(DI), X10 \
	VCVTPH2PS    X10, Y10 \
	VPBROADCASTW 82(DI), X11 \
	VCVTPH2PS    X11, Y11 \
	VMULPS       Y10, Y4, Y4 \
	VMULPS       Y10, Y5, Y5 \
	VMULPS       Y11, Y6, Y6 \
	VMULPS       Y11, Y7, Y7 \
	VMOVUPS      Y4, 0(SP) \
	VMOVUPS      Y5, 32(SP) \
	VMOVUPS      Y6, 64(SP) \
	VMOVUPS      Y7, 96(SP) \
	Q2KG256(SINK, 16, 0, 0, 0, Y0, Y1) \
	Q2KG256(SINK, 32, 0, 64, 4, Y2, Y3) \
	Q2KG256(SINK, 16, 2, 128, 8, Y0, Y1) \
	Q2KG256(SINK, 32, 2, 192, 12, Y2, Y3) \
	Q2KG256(SINK, 16, 4, 256, 16, Y0, Y1) \
	Q2KG256(SINK, 32, 4, 320, 20, Y2, Y3) \
	Q2KG256(SINK, 16, 6, 384, 24, Y0, Y1) \
	Q2KG256(SINK, 32, 6, 448, 28, Y2, Y3) \
	Q2KG256(SINK, 48, 0, 512, 32, Y0, Y1) \
	Q2KG256(SINK, 64, 0, 576, 36, Y2, Y3) \
	Q2KG256(SINK, 48, 2, 640, 40, Y0, Y1) \
	Q2KG256(SINK, 64, 2, 704, 44, Y2, Y3) \
	Q2KG256(SINK, 48, 4, 768, 48, Y0, Y1) \
	Q2KG256(SINK, 64, 4, 832, 52, Y2, Y3) \
	Q2KG256(SINK, 48, 6, 896, 56, Y0, Y1) \
	Q2KG256(SINK, 64, 6, 960, 60, Y2, Y3)

// Q3KG256 is one 16-element Q3_K group on 8-lane vectors (layout at
// BLOCKQ3K512): 2 bits at shift of the 16 bytes at qo(DI), high bit hb of
// the 16 hmask bytes at ho(DI), v = (q | h<<2) − 4, weight
// (d·(sc−32))·v with d·(sc−32) at so(SP).
#define Q3KG256(SINK, qo, shift, ho, hb, xo, so, acc1, acc2) \
	VPMOVZXBD    qo(DI), Y8         \
	VPMOVZXBD    qo+8(DI), Y9       \
	VPSRLD       $shift, Y8, Y8     \
	VPSRLD       $shift, Y9, Y9     \
	VPAND        Y15, Y8, Y8        \
	VPAND        Y15, Y9, Y9        \
	VPMOVZXBD    ho(DI), Y10        \
	VPMOVZXBD    ho+8(DI), Y11      \
	VPSRLD       $hb, Y10, Y10      \
	VPSRLD       $hb, Y11, Y11      \
	VPSLLD       $2, Y10, Y10       \
	VPSLLD       $2, Y11, Y11       \
	VPAND        Y14, Y10, Y10      \
	VPAND        Y14, Y11, Y11      \
	VPOR         Y10, Y8, Y8        \
	VPOR         Y11, Y9, Y9        \
	VPSUBD       Y14, Y8, Y8        \
	VPSUBD       Y14, Y9, Y9        \
	VCVTDQ2PS    Y8, Y8             \
	VCVTDQ2PS    Y9, Y9             \
	VBROADCASTSS so(SP), Y12        \
	VMULPS       Y12, Y8, Y8        \
	VMULPS       Y12, Y9, Y9        \
	SINK(xo(SI), Y8, acc1)          \
	SINK(xo+32(SI), Y9, acc2)

// BLOCKQ3K256 is one Q3_K super-block on 8-lane vectors (frame: the 16
// d·(sc−32) at 0(SP); the scale unpacking is BLOCKQ3K512's).
#define BLOCKQ3K256(SINK) \
	MOVL         96(DI), AX \
	MOVL         100(DI), BX \
	MOVL         104(DI), DX \
	MOVL         AX, R8 \
	ANDL         $0x0f0f0f0f, R8 \
	MOVL         DX, R9 \
	ANDL         $0x03030303, R9 \
	SHLL         $4, R9 \
	ORL          R9, R8 \
	MOVL         BX, R10 \
	ANDL         $0x0f0f0f0f, R10 \
	MOVL         DX, R9 \
	SHRL         $2, R9 \
	ANDL         $0x03030303, R9 \
	SHLL         $4, R9 \
	ORL          R9, R10 \
	SHRL         $4, AX \
	ANDL         $0x0f0f0f0f, AX \
	MOVL         DX, R9 \
	SHRL         $4, R9 \
	ANDL         $0x03030303, R9 \
	SHLL         $4, R9 \
	ORL          R9, AX \
	SHRL         $4, BX \
	ANDL         $0x0f0f0f0f, BX \
	SHRL         $6, DX \
	ANDL         $0x03030303, DX \
	SHLL         $4, DX \
	ORL          DX, BX \
	VMOVD        R8, X4 \
	VPINSRD      $1, R10, X4, X4 \
	VPINSRD      $2, AX, X4, X4 \
	VPINSRD      $3, BX, X4, X4 \
	VPMOVZXBD    X4, Y5 \
	VPSRLDQ      $8, X4, X4 \
	VPMOVZXBD    X4, Y6 \
	VPSUBD       Y13, Y5, Y5 \
	VPSUBD       Y13, Y6, Y6 \
	VCVTDQ2PS    Y5, Y5 \
	VCVTDQ2PS    Y6, Y6 \
	VPBROADCASTW 108(DI), X7 \
	VCVTPH2PS    X7, Y7 \
	VMULPS       Y7, Y5, Y5 \
	VMULPS       Y7, Y6, Y6 \
	VMOVUPS      Y5, 0(SP) \
	VMOVUPS      Y6, 32(SP) \
	Q3KG256(SINK, 32, 0, 0, 0, 0, 0, Y0, Y1) \
	Q3KG256(SINK, 48, 0, 16, 0, 64, 4, Y2, Y3) \
	Q3KG256(SINK, 32, 2, 0, 1, 128, 8, Y0, Y1) \
	Q3KG256(SINK, 48, 2, 16, 1, 192, 12, Y2, Y3) \
	Q3KG256(SINK, 32, 4, 0, 2, 256, 16, Y0, Y1) \
	Q3KG256(SINK, 48, 4, 16, 2, 320, 20, Y2, Y3) \
	Q3KG256(SINK, 32, 6, 0, 3, 384, 24, Y0, Y1) \
	Q3KG256(SINK, 48, 6, 16, 3, 448, 28, Y2, Y3) \
	Q3KG256(SINK, 64, 0, 0, 4, 512, 32, Y0, Y1) \
	Q3KG256(SINK, 80, 0, 16, 4, 576, 36, Y2, Y3) \
	Q3KG256(SINK, 64, 2, 0, 5, 640, 40, Y0, Y1) \
	Q3KG256(SINK, 80, 2, 16, 5, 704, 44, Y2, Y3) \
	Q3KG256(SINK, 64, 4, 0, 6, 768, 48, Y0, Y1) \
	Q3KG256(SINK, 80, 4, 16, 6, 832, 52, Y2, Y3) \
	Q3KG256(SINK, 64, 6, 0, 7, 896, 56, Y0, Y1) \
	Q3KG256(SINK, 80, 6, 16, 7, 960, 60, Y2, Y3)

// func dotQ6_KAVX512(x *float32, w *byte, n int) float32; n%256 == 0
TEXT ·dotQ6_KAVX512(SB), NOSPLIT, $64-28
	MOVQ         x+0(FP), SI
	MOVQ         w+8(FP), DI
	MOVQ         n+16(FP), CX
	VPBROADCASTD kqconst<>+0x04(SB), X13
	VPBROADCASTD kqconst<>+0x08(SB), X14
	VPBROADCASTD kqconst<>+0x0c(SB), X12
	VPXORD       Z0, Z0, Z0
	VPXORD       Z1, Z1, Z1
	VPXORD       Z2, Z2, Z2
	VPXORD       Z3, Z3, Z3

loop:
	CMPQ         CX, $256
	JLT          reduce
	BLOCKQ6K512(FMASINK)
	ADDQ         $210, DI
	ADDQ         $1024, SI
	SUBQ         $256, CX
	JMP          loop

reduce:
	KREDUCE512
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func dotQ5_KAVX512(x *float32, w *byte, n int) float32; n%256 == 0
TEXT ·dotQ5_KAVX512(SB), NOSPLIT, $64-28
	MOVQ         x+0(FP), SI
	MOVQ         w+8(FP), DI
	MOVQ         n+16(FP), CX
	VPBROADCASTD kqconst<>+0x00(SB), Z15
	VPBROADCASTD kqconst<>+0x10(SB), Z24
	VPXORD       Z0, Z0, Z0
	VPXORD       Z1, Z1, Z1
	VPXORD       Z2, Z2, Z2
	VPXORD       Z3, Z3, Z3

loop:
	CMPQ         CX, $256
	JLT          reduce
	BLOCKQ5K512(FMASINK)
	ADDQ         $176, DI
	ADDQ         $1024, SI
	SUBQ         $256, CX
	JMP          loop

reduce:
	KREDUCE512
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// The 32-element types with an offset or a fifth bit. Q4_1 (20 bytes): f16
// d, f16 m, qs[16]; Q5_0 (22 bytes): f16 d, u32 qh, qs[16]; Q5_1 (24
// bytes): f16 d, f16 m, u32 qh, qs[16]. Element j < 16 is the low nibble of
// qs[j] (fifth bit: qh bit j), element j+16 the high nibble (qh bit j+16);
// weight = float32(q·d) + m, or (q − 16)·d for Q5_0. The fifth bits are
// OR-ed in under a mask register (K1, K2) made from qh.

// func dotQ4_1AVX512(x *float32, w *byte, n int) float32; n%32 == 0
TEXT ·dotQ4_1AVX512(SB), NOSPLIT, $0-28
	MOVQ         x+0(FP), SI
	MOVQ         w+8(FP), DI
	MOVQ         n+16(FP), CX
	VPBROADCASTD kqconst<>+0x00(SB), Z15
	VPXORD       Z0, Z0, Z0
	VPXORD       Z1, Z1, Z1
	VPXORD       Z2, Z2, Z2
	VPXORD       Z3, Z3, Z3

loop:
	CMPQ         CX, $32
	JLT          reduce
	VPBROADCASTW (DI), Y6
	VCVTPH2PS    Y6, Z6
	VPBROADCASTW 2(DI), Y7
	VCVTPH2PS    Y7, Z7
	VPMOVZXBD    4(DI), Z8
	VPSRLD       $4, Z8, Z9
	VPANDD       Z15, Z8, Z8
	VCVTDQ2PS    Z8, Z8
	VCVTDQ2PS    Z9, Z9
	VMULPS       Z6, Z8, Z8
	VMULPS       Z6, Z9, Z9
	VADDPS       Z7, Z8, Z8
	VADDPS       Z7, Z9, Z9
	VFMADD231PS  (SI), Z8, Z0
	VFMADD231PS  64(SI), Z9, Z1
	ADDQ         $20, DI
	ADDQ         $128, SI
	SUBQ         $32, CX
	JMP          loop

reduce:
	KREDUCE512
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func dotQ5_0AVX512(x *float32, w *byte, n int) float32; n%32 == 0
TEXT ·dotQ5_0AVX512(SB), NOSPLIT, $0-28
	MOVQ         x+0(FP), SI
	MOVQ         w+8(FP), DI
	MOVQ         n+16(FP), CX
	VPBROADCASTD kqconst<>+0x00(SB), Z15
	VPBROADCASTD kqconst<>+0x10(SB), Z14
	VPXORD       Z0, Z0, Z0
	VPXORD       Z1, Z1, Z1
	VPXORD       Z2, Z2, Z2
	VPXORD       Z3, Z3, Z3

loop:
	CMPQ         CX, $32
	JLT          reduce
	VPBROADCASTW (DI), Y6
	VCVTPH2PS    Y6, Z6
	MOVL         2(DI), AX
	KMOVW        AX, K1
	SHRL         $16, AX
	KMOVW        AX, K2
	VPMOVZXBD    6(DI), Z8
	VPSRLD       $4, Z8, Z9
	VPANDD       Z15, Z8, Z8
	VPORD        Z14, Z8, K1, Z8
	VPORD        Z14, Z9, K2, Z9
	VPSUBD       Z14, Z8, Z8
	VPSUBD       Z14, Z9, Z9
	VCVTDQ2PS    Z8, Z8
	VCVTDQ2PS    Z9, Z9
	VMULPS       Z6, Z8, Z8
	VMULPS       Z6, Z9, Z9
	VFMADD231PS  (SI), Z8, Z0
	VFMADD231PS  64(SI), Z9, Z1
	ADDQ         $22, DI
	ADDQ         $128, SI
	SUBQ         $32, CX
	JMP          loop

reduce:
	KREDUCE512
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func dotQ5_1AVX512(x *float32, w *byte, n int) float32; n%32 == 0
TEXT ·dotQ5_1AVX512(SB), NOSPLIT, $0-28
	MOVQ         x+0(FP), SI
	MOVQ         w+8(FP), DI
	MOVQ         n+16(FP), CX
	VPBROADCASTD kqconst<>+0x00(SB), Z15
	VPBROADCASTD kqconst<>+0x10(SB), Z14
	VPXORD       Z0, Z0, Z0
	VPXORD       Z1, Z1, Z1
	VPXORD       Z2, Z2, Z2
	VPXORD       Z3, Z3, Z3

loop:
	CMPQ         CX, $32
	JLT          reduce
	VPBROADCASTW (DI), Y6
	VCVTPH2PS    Y6, Z6
	VPBROADCASTW 2(DI), Y7
	VCVTPH2PS    Y7, Z7
	MOVL         4(DI), AX
	KMOVW        AX, K1
	SHRL         $16, AX
	KMOVW        AX, K2
	VPMOVZXBD    8(DI), Z8
	VPSRLD       $4, Z8, Z9
	VPANDD       Z15, Z8, Z8
	VPORD        Z14, Z8, K1, Z8
	VPORD        Z14, Z9, K2, Z9
	VCVTDQ2PS    Z8, Z8
	VCVTDQ2PS    Z9, Z9
	VMULPS       Z6, Z8, Z8
	VMULPS       Z6, Z9, Z9
	VADDPS       Z7, Z8, Z8
	VADDPS       Z7, Z9, Z9
	VFMADD231PS  (SI), Z8, Z0
	VFMADD231PS  64(SI), Z9, Z1
	ADDQ         $24, DI
	ADDQ         $128, SI
	SUBQ         $32, CX
	JMP          loop

reduce:
	KREDUCE512
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func dotQ2_KAVX512(x *float32, w *byte, n int) float32; n%256 == 0
TEXT ·dotQ2_KAVX512(SB), NOSPLIT, $128-28
	MOVQ         x+0(FP), SI
	MOVQ         w+8(FP), DI
	MOVQ         n+16(FP), CX
	VPBROADCASTD kqconst<>+0x14(SB), Z15
	VPBROADCASTD kqconst<>+0x00(SB), Z14
	VPXORD       Z0, Z0, Z0
	VPXORD       Z1, Z1, Z1
	VPXORD       Z2, Z2, Z2
	VPXORD       Z3, Z3, Z3

loop:
	CMPQ         CX, $256
	JLT          reduce
	BLOCKQ2K512(FMASINK)
	ADDQ         $84, DI
	ADDQ         $1024, SI
	SUBQ         $256, CX
	JMP          loop

reduce:
	KREDUCE512
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func dotQ3_KAVX512(x *float32, w *byte, n int) float32; n%256 == 0
TEXT ·dotQ3_KAVX512(SB), NOSPLIT, $64-28
	MOVQ         x+0(FP), SI
	MOVQ         w+8(FP), DI
	MOVQ         n+16(FP), CX
	VPBROADCASTD kqconst<>+0x14(SB), Z15
	VPBROADCASTD kqconst<>+0x18(SB), Z14
	VPBROADCASTD kqconst<>+0x1c(SB), Z13
	VPXORD       Z0, Z0, Z0
	VPXORD       Z1, Z1, Z1
	VPXORD       Z2, Z2, Z2
	VPXORD       Z3, Z3, Z3

loop:
	CMPQ         CX, $256
	JLT          reduce
	BLOCKQ3K512(FMASINK)
	ADDQ         $110, DI
	ADDQ         $1024, SI
	SUBQ         $256, CX
	JMP          loop

reduce:
	KREDUCE512
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// AVX2 versions of the Q4_K and Q6_K kernels: the same arithmetic on
// 8-lane vectors (see the AVX-512 versions above for the layouts).

// dotQ6_KAVX2 assembles the 6-bit quants 32 at a time (l = 0..31 of a half,
// Q6KBYTES on 32-byte vectors) and applies each 16-element sub-block's
// scale once: Σ_i s·(q−32)·x = s·Σ_i (q−32)·x. The weights are the same
// exact values as the decoder's; only the order of the float32 roundings
// differs.

// Q6KBYTES32(lo, ho) is Q6KBYTES for l = 0..31 of a half: Y8..Y11.
#define Q6KBYTES32(lo, ho) Q6KBYTESR(lo, ho, Y8, Y9, Y10, Y11, Y5, Y6, Y7, Y12, Y13, Y14)

// Q6KSUBS256 takes the 32 quants (minus 32) in yv (xv its low half): the
// sub-block l = 0..15 with x at xo(SI) and scale so(SP) into acc1, l =
// 16..31 with x at xo+64(SI) and scale so+4(SP) into acc2.
#define Q6KSUBS256(xv, yv, xo, so, acc1, acc2) \
	VPMOVSXBD    xv, Y4              \
	VPSRLDQ      $8, xv, X5          \
	VPMOVSXBD    X5, Y5              \
	VCVTDQ2PS    Y4, Y4              \
	VCVTDQ2PS    Y5, Y5              \
	VMULPS       xo(SI), Y4, Y4      \
	VFMADD231PS  xo+32(SI), Y5, Y4   \
	VBROADCASTSS so(SP), Y5          \
	VFMADD231PS  Y4, Y5, acc1        \
	VEXTRACTI128 $1, yv, xv          \
	VPMOVSXBD    xv, Y6              \
	VPSRLDQ      $8, xv, X15         \
	VPMOVSXBD    X15, Y15            \
	VCVTDQ2PS    Y6, Y6              \
	VCVTDQ2PS    Y15, Y15            \
	VMULPS       xo+64(SI), Y6, Y6   \
	VFMADD231PS  xo+96(SI), Y15, Y6  \
	VBROADCASTSS so+4(SP), Y15       \
	VFMADD231PS  Y6, Y15, acc2

// Q6KHALFS256 is half n of a block: lo = 64n, ho = 128+32n, xo = 512n,
// so = 32n.
#define Q6KHALFS256(lo, ho, xo, so) \
	Q6KBYTES32(lo, ho)                              \
	Q6KSUBS256(X8, Y8, xo, so, Y0, Y1)              \
	Q6KSUBS256(X9, Y9, xo+128, so+8, Y2, Y3)        \
	Q6KSUBS256(X10, Y10, xo+256, so+16, Y0, Y1)     \
	Q6KSUBS256(X11, Y11, xo+384, so+24, Y2, Y3)

// func dotQ6_KAVX2(x *float32, w *byte, n int) float32; n%256 == 0
TEXT ·dotQ6_KAVX2(SB), NOSPLIT, $64-28
	MOVQ         x+0(FP), SI
	MOVQ         w+8(FP), DI
	MOVQ         n+16(FP), CX
	VPBROADCASTD kqconst<>+0x04(SB), Y13
	VPBROADCASTD kqconst<>+0x08(SB), Y14
	VPBROADCASTD kqconst<>+0x0c(SB), Y12
	VXORPS       Y0, Y0, Y0
	VXORPS       Y1, Y1, Y1
	VXORPS       Y2, Y2, Y2
	VXORPS       Y3, Y3, Y3

loop:
	CMPQ         CX, $256
	JLT          reduce
	VPMOVSXBD    192(DI), Y4
	VPMOVSXBD    200(DI), Y5
	VCVTDQ2PS    Y4, Y4
	VCVTDQ2PS    Y5, Y5
	VPBROADCASTW 208(DI), X6
	VCVTPH2PS    X6, Y6
	VMULPS       Y6, Y4, Y4
	VMULPS       Y6, Y5, Y5
	VMOVUPS      Y4, 0(SP)
	VMOVUPS      Y5, 32(SP)
	Q6KHALFS256(0, 128, 0, 0)
	Q6KHALFS256(64, 160, 512, 32)
	ADDQ         $210, DI
	ADDQ         $1024, SI
	SUBQ         $256, CX
	JMP          loop

reduce:
	KREDUCE256
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// Decoders into a float32 buffer for MatMul with M ≥ 2 (fillBlock): the
// dot kernels' block bodies with the weights stored instead of FMA'd.

// func decQ4_KAVX512(dst *float32, w *byte, n int); n%256 == 0
TEXT ·decQ4_KAVX512(SB), NOSPLIT, $64-24
	MOVQ         dst+0(FP), SI
	MOVQ         w+8(FP), DI
	MOVQ         n+16(FP), CX
	VPBROADCASTD kqconst<>+0x00(SB), Z15

loop:
	CMPQ         CX, $256
	JLT          reduce
	BLOCKQ4K512(STORESINK)
	ADDQ         $144, DI
	ADDQ         $1024, SI
	SUBQ         $256, CX
	JMP          loop

reduce:
	VZEROUPPER
	RET

// func decQ5_KAVX512(dst *float32, w *byte, n int); n%256 == 0
TEXT ·decQ5_KAVX512(SB), NOSPLIT, $64-24
	MOVQ         dst+0(FP), SI
	MOVQ         w+8(FP), DI
	MOVQ         n+16(FP), CX
	VPBROADCASTD kqconst<>+0x00(SB), Z15
	VPBROADCASTD kqconst<>+0x10(SB), Z24

loop:
	CMPQ         CX, $256
	JLT          reduce
	BLOCKQ5K512(STORESINK)
	ADDQ         $176, DI
	ADDQ         $1024, SI
	SUBQ         $256, CX
	JMP          loop

reduce:
	VZEROUPPER
	RET

// func decQ6_KAVX512(dst *float32, w *byte, n int); n%256 == 0
TEXT ·decQ6_KAVX512(SB), NOSPLIT, $64-24
	MOVQ         dst+0(FP), SI
	MOVQ         w+8(FP), DI
	MOVQ         n+16(FP), CX
	VPBROADCASTD kqconst<>+0x04(SB), X13
	VPBROADCASTD kqconst<>+0x08(SB), X14
	VPBROADCASTD kqconst<>+0x0c(SB), X12

loop:
	CMPQ         CX, $256
	JLT          reduce
	BLOCKQ6K512(STORESINK)
	ADDQ         $210, DI
	ADDQ         $1024, SI
	SUBQ         $256, CX
	JMP          loop

reduce:
	VZEROUPPER
	RET

// func decQ2_KAVX512(dst *float32, w *byte, n int); n%256 == 0
TEXT ·decQ2_KAVX512(SB), NOSPLIT, $128-24
	MOVQ         dst+0(FP), SI
	MOVQ         w+8(FP), DI
	MOVQ         n+16(FP), CX
	VPBROADCASTD kqconst<>+0x14(SB), Z15
	VPBROADCASTD kqconst<>+0x00(SB), Z14

loop:
	CMPQ         CX, $256
	JLT          reduce
	BLOCKQ2K512(STORESINK)
	ADDQ         $84, DI
	ADDQ         $1024, SI
	SUBQ         $256, CX
	JMP          loop

reduce:
	VZEROUPPER
	RET

// func decQ3_KAVX512(dst *float32, w *byte, n int); n%256 == 0
TEXT ·decQ3_KAVX512(SB), NOSPLIT, $64-24
	MOVQ         dst+0(FP), SI
	MOVQ         w+8(FP), DI
	MOVQ         n+16(FP), CX
	VPBROADCASTD kqconst<>+0x14(SB), Z15
	VPBROADCASTD kqconst<>+0x18(SB), Z14
	VPBROADCASTD kqconst<>+0x1c(SB), Z13

loop:
	CMPQ         CX, $256
	JLT          reduce
	BLOCKQ3K512(STORESINK)
	ADDQ         $110, DI
	ADDQ         $1024, SI
	SUBQ         $256, CX
	JMP          loop

reduce:
	VZEROUPPER
	RET

// func decQ4_KAVX2(dst *float32, w *byte, n int); n%256 == 0
TEXT ·decQ4_KAVX2(SB), NOSPLIT, $64-24
	MOVQ         dst+0(FP), SI
	MOVQ         w+8(FP), DI
	MOVQ         n+16(FP), CX
	VPBROADCASTD kqconst<>+0x00(SB), Y15

loop:
	CMPQ         CX, $256
	JLT          done
	BLOCKQ4K256(STORESINK)
	ADDQ         $144, DI
	ADDQ         $1024, SI
	SUBQ         $256, CX
	JMP          loop

done:
	VZEROUPPER
	RET

// func decQ6_KAVX2(dst *float32, w *byte, n int); n%256 == 0
TEXT ·decQ6_KAVX2(SB), NOSPLIT, $64-24
	MOVQ         dst+0(FP), SI
	MOVQ         w+8(FP), DI
	MOVQ         n+16(FP), CX
	VPBROADCASTD kqconst<>+0x04(SB), X13
	VPBROADCASTD kqconst<>+0x08(SB), X14
	VPBROADCASTD kqconst<>+0x0c(SB), X12

loop:
	CMPQ         CX, $256
	JLT          done
	BLOCKQ6K256(STORESINK)
	ADDQ         $210, DI
	ADDQ         $1024, SI
	SUBQ         $256, CX
	JMP          loop

done:
	VZEROUPPER
	RET

// func dotQ5_KAVX2(x *float32, w *byte, n int) float32; n%256 == 0
TEXT ·dotQ5_KAVX2(SB), NOSPLIT, $64-28
	MOVQ         x+0(FP), SI
	MOVQ         w+8(FP), DI
	MOVQ         n+16(FP), CX
	VPBROADCASTD kqconst<>+0x00(SB), Y15
	VPBROADCASTD kqconst<>+0x10(SB), Y14
	VXORPS       Y0, Y0, Y0
	VXORPS       Y1, Y1, Y1
	VXORPS       Y2, Y2, Y2
	VXORPS       Y3, Y3, Y3

loop:
	CMPQ         CX, $256
	JLT          reduce
	BLOCKQ5K256(FMASINK)
	ADDQ         $176, DI
	ADDQ         $1024, SI
	SUBQ         $256, CX
	JMP          loop

reduce:
	KREDUCE256
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func decQ5_KAVX2(dst *float32, w *byte, n int); n%256 == 0
TEXT ·decQ5_KAVX2(SB), NOSPLIT, $64-24
	MOVQ         dst+0(FP), SI
	MOVQ         w+8(FP), DI
	MOVQ         n+16(FP), CX
	VPBROADCASTD kqconst<>+0x00(SB), Y15
	VPBROADCASTD kqconst<>+0x10(SB), Y14

loop:
	CMPQ         CX, $256
	JLT          done
	BLOCKQ5K256(STORESINK)
	ADDQ         $176, DI
	ADDQ         $1024, SI
	SUBQ         $256, CX
	JMP          loop

done:
	VZEROUPPER
	RET

// func dotQ2_KAVX2(x *float32, w *byte, n int) float32; n%256 == 0
TEXT ·dotQ2_KAVX2(SB), NOSPLIT, $128-28
	MOVQ         x+0(FP), SI
	MOVQ         w+8(FP), DI
	MOVQ         n+16(FP), CX
	VPBROADCASTD kqconst<>+0x14(SB), Y15
	VPBROADCASTD kqconst<>+0x00(SB), Y14
	VXORPS       Y0, Y0, Y0
	VXORPS       Y1, Y1, Y1
	VXORPS       Y2, Y2, Y2
	VXORPS       Y3, Y3, Y3

loop:
	CMPQ         CX, $256
	JLT          reduce
	BLOCKQ2K256(FMASINK)
	ADDQ         $84, DI
	ADDQ         $1024, SI
	SUBQ         $256, CX
	JMP          loop

reduce:
	KREDUCE256
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func decQ2_KAVX2(dst *float32, w *byte, n int); n%256 == 0
TEXT ·decQ2_KAVX2(SB), NOSPLIT, $128-24
	MOVQ         dst+0(FP), SI
	MOVQ         w+8(FP), DI
	MOVQ         n+16(FP), CX
	VPBROADCASTD kqconst<>+0x14(SB), Y15
	VPBROADCASTD kqconst<>+0x00(SB), Y14

loop:
	CMPQ         CX, $256
	JLT          done
	BLOCKQ2K256(STORESINK)
	ADDQ         $84, DI
	ADDQ         $1024, SI
	SUBQ         $256, CX
	JMP          loop

done:
	VZEROUPPER
	RET

// func dotQ3_KAVX2(x *float32, w *byte, n int) float32; n%256 == 0
TEXT ·dotQ3_KAVX2(SB), NOSPLIT, $64-28
	MOVQ         x+0(FP), SI
	MOVQ         w+8(FP), DI
	MOVQ         n+16(FP), CX
	VPBROADCASTD kqconst<>+0x14(SB), Y15
	VPBROADCASTD kqconst<>+0x18(SB), Y14
	VPBROADCASTD kqconst<>+0x1c(SB), Y13
	VXORPS       Y0, Y0, Y0
	VXORPS       Y1, Y1, Y1
	VXORPS       Y2, Y2, Y2
	VXORPS       Y3, Y3, Y3

loop:
	CMPQ         CX, $256
	JLT          reduce
	BLOCKQ3K256(FMASINK)
	ADDQ         $110, DI
	ADDQ         $1024, SI
	SUBQ         $256, CX
	JMP          loop

reduce:
	KREDUCE256
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func decQ3_KAVX2(dst *float32, w *byte, n int); n%256 == 0
TEXT ·decQ3_KAVX2(SB), NOSPLIT, $64-24
	MOVQ         dst+0(FP), SI
	MOVQ         w+8(FP), DI
	MOVQ         n+16(FP), CX
	VPBROADCASTD kqconst<>+0x14(SB), Y15
	VPBROADCASTD kqconst<>+0x18(SB), Y14
	VPBROADCASTD kqconst<>+0x1c(SB), Y13

loop:
	CMPQ         CX, $256
	JLT          done
	BLOCKQ3K256(STORESINK)
	ADDQ         $110, DI
	ADDQ         $1024, SI
	SUBQ         $256, CX
	JMP          loop

done:
	VZEROUPPER
	RET

// Q4_K dots with the sub-block offset applied once per sub-block. ggml's
// weight is w = s·q − m (s = float32(d·sc), m = float32(dmin·mn), one pair
// per 32-element sub-block), so a row's dot is
//
//	Σ_j s_j·Σ_i q·x  −  Σ_j m_j·xs_j,   xs_j = Σ_i x[32j+i]
//
// where xs, the activations' sub-block sums, are the same for every row of
// the matrix and computed once per MatMul (gemvSIMD). Per weight this is one
// widening and one FMA instead of a multiply, a subtract and an FMA: the
// rounding differs from the fused-dequantization kernels above (within the
// bound doc.go gives for this kernel), not the weights.

// MACCSUB subtracts the 8 lanes of Y14 (the Σ m_j·xs_j partial sums) from X0.
#define MACCSUB \
	VEXTRACTF128 $1, Y14, X1 \
	VADDPS       X1, X14, X1 \
	VPERMILPS    $0x4e, X1, X2 \
	VADDPS       X2, X1, X1 \
	VPERMILPS    $0xb1, X1, X2 \
	VADDSS       X2, X1, X1 \
	VSUBSS       X1, X0, X0

// Q4KSGROUP512 is 64-element group j (qo = 16+32j, xo = 256j, so = 8j):
// Σq·x over its two sub-blocks, each times its scale into acclo / acchi.
#define Q4KSGROUP512(qo, xo, so, acclo, acchi) \
	VPMOVZXBD    qo(DI), Z8               \
	VPMOVZXBD    qo+16(DI), Z9            \
	VPSRLD       $4, Z8, Z10              \
	VPSRLD       $4, Z9, Z11              \
	VPERMPS      Z15, Z8, Z8              \
	VPERMPS      Z15, Z9, Z9              \
	VPERMPS      Z15, Z10, Z10            \
	VPERMPS      Z15, Z11, Z11            \
	VMULPS       xo(SI), Z8, Z8           \
	VFMADD231PS  xo+64(SI), Z9, Z8        \
	VMULPS       xo+128(SI), Z10, Z10     \
	VFMADD231PS  xo+192(SI), Z11, Z10     \
	VBROADCASTSS so(SP), Z12              \
	VBROADCASTSS so+4(SP), Z13            \
	VFMADD231PS  Z8, Z12, acclo           \
	VFMADD231PS  Z10, Z13, acchi

// func dotQ4_KSumsAVX512(x, xs *float32, w *byte, n int) float32; n%256 == 0
TEXT ·dotQ4_KSumsAVX512(SB), NOSPLIT, $64-36
	MOVQ    x+0(FP), SI
	MOVQ    xs+8(FP), R11
	MOVQ    w+16(FP), DI
	MOVQ    n+24(FP), CX
	VMOVUPS q4ktab<>(SB), Z15
	VPXORD  Z0, Z0, Z0
	VPXORD  Z1, Z1, Z1
	VPXORD  Z2, Z2, Z2
	VPXORD  Z3, Z3, Z3
	VPXORD  Z14, Z14, Z14

loop:
	CMPQ          CX, $256
	JLT           reduce
	Q4KDM512
	VEXTRACTF32X8 $1, Z4, Y5
	VFMADD231PS   (R11), Y5, Y14
	Q4KSGROUP512(16, 0, 0, Z0, Z1)
	Q4KSGROUP512(48, 256, 8, Z2, Z3)
	Q4KSGROUP512(80, 512, 16, Z0, Z1)
	Q4KSGROUP512(112, 768, 24, Z2, Z3)
	ADDQ          $144, DI
	ADDQ          $1024, SI
	ADDQ          $32, R11
	SUBQ          $256, CX
	JMP           loop

reduce:
	KREDUCE512
	MACCSUB
	VMOVSS X0, ret+32(FP)
	VZEROUPPER
	RET

// Q4KSGROUP256 is Q4KSGROUP512 on 8-lane vectors (Y15 = the nibble mask).
#define Q4KSGROUP256(qo, xo, so, acclo, acchi) \
	VPMOVZXBD    qo(DI), Y4               \
	VPMOVZXBD    qo+8(DI), Y5             \
	VPMOVZXBD    qo+16(DI), Y6            \
	VPMOVZXBD    qo+24(DI), Y7            \
	VPSRLD       $4, Y4, Y8               \
	VPSRLD       $4, Y5, Y9               \
	VPSRLD       $4, Y6, Y10              \
	VPSRLD       $4, Y7, Y11              \
	VPAND        Y15, Y4, Y4              \
	VPAND        Y15, Y5, Y5              \
	VPAND        Y15, Y6, Y6              \
	VPAND        Y15, Y7, Y7              \
	VCVTDQ2PS    Y4, Y4                   \
	VCVTDQ2PS    Y5, Y5                   \
	VCVTDQ2PS    Y6, Y6                   \
	VCVTDQ2PS    Y7, Y7                   \
	VCVTDQ2PS    Y8, Y8                   \
	VCVTDQ2PS    Y9, Y9                   \
	VCVTDQ2PS    Y10, Y10                 \
	VCVTDQ2PS    Y11, Y11                 \
	VMULPS       xo(SI), Y4, Y4           \
	VFMADD231PS  xo+32(SI), Y5, Y4        \
	VFMADD231PS  xo+64(SI), Y6, Y4        \
	VFMADD231PS  xo+96(SI), Y7, Y4        \
	VMULPS       xo+128(SI), Y8, Y8       \
	VFMADD231PS  xo+160(SI), Y9, Y8       \
	VFMADD231PS  xo+192(SI), Y10, Y8      \
	VFMADD231PS  xo+224(SI), Y11, Y8      \
	VBROADCASTSS so(SP), Y12              \
	VBROADCASTSS so+4(SP), Y13            \
	VFMADD231PS  Y4, Y12, acclo           \
	VFMADD231PS  Y8, Y13, acchi

// func dotQ4_KSumsAVX2(x, xs *float32, w *byte, n int) float32; n%256 == 0
TEXT ·dotQ4_KSumsAVX2(SB), NOSPLIT, $64-36
	MOVQ         x+0(FP), SI
	MOVQ         xs+8(FP), R11
	MOVQ         w+16(FP), DI
	MOVQ         n+24(FP), CX
	VPBROADCASTD kqconst<>+0x00(SB), Y15
	VXORPS       Y0, Y0, Y0
	VXORPS       Y1, Y1, Y1
	VXORPS       Y2, Y2, Y2
	VXORPS       Y3, Y3, Y3
	VXORPS       Y14, Y14, Y14

loop:
	CMPQ         CX, $256
	JLT          reduce
	Q4KDM256
	VFMADD231PS  (R11), Y6, Y14
	Q4KSGROUP256(16, 0, 0, Y0, Y1)
	Q4KSGROUP256(48, 256, 8, Y2, Y3)
	Q4KSGROUP256(80, 512, 16, Y0, Y1)
	Q4KSGROUP256(112, 768, 24, Y2, Y3)
	ADDQ         $144, DI
	ADDQ         $1024, SI
	ADDQ         $32, R11
	SUBQ         $256, CX
	JMP          loop

reduce:
	KREDUCE256
	MACCSUB
	VMOVSS X0, ret+32(FP)
	VZEROUPPER
	RET
