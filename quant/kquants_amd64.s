//go:build !noasm

#include "textflag.h"

// The k-quant scale searches, one sub-block per vector lane. Each lane runs
// the exact float32 sequence of the scalar search in kquants.go
// (makeQKX2Quants as quantQ45K calls it, makeQXQuants): the same operations
// on the same operands in the same order, no FMA, every sum accumulated
// element by element in its own lane. The lanes are independent sub-blocks,
// so the result is the scalar one bit for bit; where the scalar code leaves
// a loop early or skips an update, the lanes compute on and the update is
// blended in only where the scalar condition holds.
//
// Operand order follows the Go source where IEEE results could differ (the
// NaN a min, max or add keeps): MINPS/MAXPS return their second source
// unless the first compares less/greater, which is `if x < mn { mn = x }`.
// Go's assembler writes sources in reverse: VSUBPS B, A, D is D = A - B.
//
// nearestInt(f) is ggml's nearest_int: bits(f + 1.5·2^23) & 0x7fffff -
// 0x400000, integer operations on the float's bits.

DATA kq<>+0x00(SB)/4, $0x4b400000 // 1.5·2^23
DATA kq<>+0x04(SB)/4, $0x4b400000
DATA kq<>+0x08(SB)/4, $0x4b400000
DATA kq<>+0x0c(SB)/4, $0x4b400000
DATA kq<>+0x10(SB)/4, $0x4b400000
DATA kq<>+0x14(SB)/4, $0x4b400000
DATA kq<>+0x18(SB)/4, $0x4b400000
DATA kq<>+0x1c(SB)/4, $0x4b400000
DATA kq<>+0x20(SB)/4, $0x007fffff // mantissa mask
DATA kq<>+0x24(SB)/4, $0x007fffff
DATA kq<>+0x28(SB)/4, $0x007fffff
DATA kq<>+0x2c(SB)/4, $0x007fffff
DATA kq<>+0x30(SB)/4, $0x007fffff
DATA kq<>+0x34(SB)/4, $0x007fffff
DATA kq<>+0x38(SB)/4, $0x007fffff
DATA kq<>+0x3c(SB)/4, $0x007fffff
DATA kq<>+0x40(SB)/4, $0x00400000 // 2^22
DATA kq<>+0x44(SB)/4, $0x00400000
DATA kq<>+0x48(SB)/4, $0x00400000
DATA kq<>+0x4c(SB)/4, $0x00400000
DATA kq<>+0x50(SB)/4, $0x00400000
DATA kq<>+0x54(SB)/4, $0x00400000
DATA kq<>+0x58(SB)/4, $0x00400000
DATA kq<>+0x5c(SB)/4, $0x00400000
DATA kq<>+0x60(SB)/4, $0 // lane numbers
DATA kq<>+0x64(SB)/4, $1
DATA kq<>+0x68(SB)/4, $2
DATA kq<>+0x6c(SB)/4, $3
DATA kq<>+0x70(SB)/4, $4
DATA kq<>+0x74(SB)/4, $5
DATA kq<>+0x78(SB)/4, $6
DATA kq<>+0x7c(SB)/4, $7
DATA kq<>+0x80(SB)/4, $8
DATA kq<>+0x84(SB)/4, $9
DATA kq<>+0x88(SB)/4, $10
DATA kq<>+0x8c(SB)/4, $11
DATA kq<>+0x90(SB)/4, $12
DATA kq<>+0x94(SB)/4, $13
DATA kq<>+0x98(SB)/4, $14
DATA kq<>+0x9c(SB)/4, $15
DATA kq<>+0xa0(SB)/4, $0x7fffffff // |x| mask
DATA kq<>+0xa4(SB)/4, $0x80000000 // sign
DATA kq<>+0xa8(SB)/4, $0x3f800000 // 1
DATA kq<>+0xac(SB)/4, $0x42000000 // 32
DATA kq<>+0xb0(SB)/4, $0x26901d7d // 1e-15 as float32 (groupMaxEps)
GLOBL kq<>(SB), RODATA|NOPTR, $0xb4

#define MAGIC kq<>+0x00(SB)
#define MANT kq<>+0x20(SB)
#define HALF22 kq<>+0x40(SB)

// Scratch layout of searchQ45KAVX2 (bytes from the frame's bottom): x transposed, weights
// transposed, the trial levels as floats, and spilled per-lane state.
#define Q_XT 0
#define Q_WT 1024
#define Q_LT 2048
#define Q_MX 3072
#define Q_SUMW 3104
#define Q_SUMX 3136
#define Q_EQ 3168
#define Q_MN0 3200

// func searchQ45KAVX2(x, w *float32, n, mode int, num *float32, nnum int, nmax int, scales, mins *float32) bool
//
// Eight makeQKX2Quants calls on the sub-blocks x[n·j : n·j+n] (lane j, n
// at most 32): as quantQ45K calls it (n = 32, mode 0, weights avX + |x|),
// as quantQ2_K does (n = 16, mode 3: weights |x|, absolute errors), or,
// with w not nil, the makeQKX3Quants calls of quantQ45KW with weights
// w[n·j : n·j+n]; mode bit 0 asks for absolute instead of squared errors,
// bit 1 for weights |x| instead of avX + |x|. rmin and rdelta are folded
// into num: trial is uses iscale = num[is] / (mx - mn).
// Writes scales[0:8] and the mins (-mn) to mins[0:8]; the levels are left
// to the caller. Returns false, having written nothing, when x or w holds a
// NaN: which NaN an operation keeps when both operands are NaNs is the one
// thing the order of commutative operands decides, and compilers choose
// that order freely.
//
// make_qkx2_quants returns early when max == min, make_qkx3_quants when
// max <= min; without NaNs they are the same lanes (min is at most the
// smallest x, max the largest), and the kernel tests max <= min.
TEXT ·searchQ45KAVX2(SB), $3232-73
	MOVQ x+0(FP), SI
	MOVQ w+8(FP), R12
	MOVQ R12, R11 // weights given
	MOVQ mode+24(FP), R10
	MOVQ num+32(FP), R8
	MOVQ nnum+40(FP), R9
	MOVQ nmax+48(FP), AX
	MOVQ SP, DI // the frame is the scratch

	// Y15: lane j's offset n·j (elements) for the gathers.
	VPBROADCASTD n+16(FP), Y15
	VPMULLD      kq<>+0x60(SB), Y15, Y15

	// Pass 1: transpose x, Σx², min and max, as the scalar loops do.
	VPCMPEQD     Y14, Y14, Y14
	VGATHERDPS   Y14, (SI)(Y15*4), Y0
	VMOVAPS      Y0, Y12 // mn
	VMOVAPS      Y0, Y13 // mx
	VXORPS       Y11, Y11, Y11 // sumX2
	VXORPS       Y10, Y10, Y10 // any NaN
	MOVQ         SI, BX
	LEAQ         Q_XT(DI), DX
	MOVQ         n+16(FP), CX

pass1:
	VPCMPEQD     Y14, Y14, Y14
	VGATHERDPS   Y14, (BX)(Y15*4), Y0
	VMOVUPS      Y0, (DX)
	VMULPS       Y0, Y0, Y1
	VADDPS       Y1, Y11, Y11 // sumX2 += v*v
	VMINPS       Y12, Y0, Y12 // if x < mn { mn = x }
	VMAXPS       Y13, Y0, Y13 // if x > mx { mx = x }
	VCMPPS       $3, Y0, Y0, Y1
	VORPS        Y1, Y10, Y10
	TESTQ        R12, R12
	JZ           pass1x
	VPCMPEQD     Y14, Y14, Y14
	VGATHERDPS   Y14, (R12)(Y15*4), Y2
	VMOVUPS      Y2, Q_WT(DX)
	VCMPPS       $3, Y2, Y2, Y1
	VORPS        Y1, Y10, Y10
	ADDQ         $4, R12

pass1x:
	ADDQ         $4, BX
	ADDQ         $32, DX
	DECQ         CX
	JNZ          pass1
	VMOVMSKPS    Y10, R13
	TESTL        R13, R13
	JNZ          q45nan

	// Without w: avX = sqrt(Σx²/n), weights avX + |x|, or |x| = 0 + |x|
	// (mode bit 1). Then sumW = Σw, sumX = Σw·x (the first terms taken as
	// they are, not added to zero).
	VPBROADCASTD n+16(FP), Y1
	VCVTDQ2PS    Y1, Y1
	VDIVPS       Y1, Y11, Y11
	VSQRTPS      Y11, Y11 // avX
	TESTQ        $2, R10
	JZ           pass2avx
	VXORPS       Y11, Y11, Y11

pass2avx:
	VBROADCASTSS kq<>+0xa0(SB), Y10 // |x| mask
	LEAQ         Q_XT(DI), DX
	MOVQ         n+16(FP), CX

pass2:
	VMOVUPS      (DX), Y0
	TESTQ        R11, R11
	JNZ          pass2w
	VANDPS       Y10, Y0, Y1
	VADDPS       Y1, Y11, Y1 // w = avX + |x|
	VMOVUPS      Y1, Q_WT(DX)
	JMP          pass2s

pass2w:
	VMOVUPS      Q_WT(DX), Y1

pass2s:
	CMPQ         CX, n+16(FP)
	JNE          pass2a
	VMOVAPS      Y1, Y8 // sumW = w[0]
	VMULPS       Y0, Y1, Y9 // sumX = sumW·x[0]
	JMP          pass2n

pass2a:
	VADDPS       Y1, Y8, Y8 // sumW += w
	VMULPS       Y0, Y1, Y2
	VADDPS       Y2, Y9, Y9 // sumX += w·x

pass2n:
	ADDQ         $32, DX
	DECQ         CX
	JNZ          pass2

	VMOVUPS      Y8, Q_SUMW(DI)
	VMOVUPS      Y9, Q_SUMX(DI)

	// if mn > 0 { mn = 0 }: MINPS(0, mn) keeps mn unless 0 < mn.
	VXORPS       Y0, Y0, Y0
	VMINPS       Y12, Y0, Y12
	VCMPPS       $2, Y12, Y13, Y1 // mx <= mn: all levels 0, scale 0
	VMOVUPS      Y1, Q_EQ(DI)
	VMOVUPS      Y12, Q_MN0(DI)
	VMOVUPS      Y13, Q_MX(DI)

	// Registers from here: Y15 mn, Y14 scale, Y13 bestErr, Y12 zero,
	// Y7 nmax (int), Y6 1.5·2^23.
	VMOVAPS      Y12, Y15
	VMOVQ        AX, X7
	VPBROADCASTD X7, Y7
	VMOVUPS      MAGIC, Y6
	VXORPS       Y12, Y12, Y12

	// iscale = nmax/(mx - mn), scale = 1/iscale, and the error of the
	// levels nearest to iscale·(x - mn).
	VSUBPS       Y15, Y13, Y0
	VCVTDQ2PS    Y7, Y1
	VDIVPS       Y0, Y1, Y11 // iscale
	VBROADCASTSS kq<>+0xa8(SB), Y1
	VDIVPS       Y11, Y1, Y14 // scale
	VXORPS       Y13, Y13, Y13
	LEAQ         Q_XT(DI), DX
	MOVQ         n+16(FP), CX

err0:
	VMOVUPS      (DX), Y0
	VSUBPS       Y15, Y0, Y1
	VMULPS       Y1, Y11, Y1
	VADDPS       Y6, Y1, Y1
	VPAND        MANT, Y1, Y1
	VPSUBD       HALF22, Y1, Y1
	VPMINSD      Y7, Y1, Y1
	VPMAXSD      Y12, Y1, Y1
	VCVTDQ2PS    Y1, Y1 // L
	VMULPS       Y1, Y14, Y1 // scale·L
	VADDPS       Y15, Y1, Y1 // + mn
	VSUBPS       Y0, Y1, Y1 // - x
	TESTQ        $1, R10
	JNZ          err0mad
	VMULPS       Y1, Y1, Y1
	JMP          err0w

err0mad:
	VANDPS       Y10, Y1, Y1 // |diff|

err0w:
	VMULPS       Q_WT(DX), Y1, Y1 // w·diff²
	VADDPS       Y1, Y13, Y13
	ADDQ         $32, DX
	DECQ         CX
	JNZ          err0

	TESTQ        R9, R9
	JZ           finish

trial:
	// iscale = num[is] / (mx - mn), mn as the previous trials left it.
	VMOVUPS      Q_MX(DI), Y0
	VSUBPS       Y15, Y0, Y0
	VBROADCASTSS (R8), Y1
	VDIVPS       Y0, Y1, Y11
	VXORPS       Y8, Y8, Y8 // sumL
	VXORPS       Y9, Y9, Y9 // sumL2
	VXORPS       Y10, Y10, Y10 // sumXL
	LEAQ         Q_XT(DI), DX
	MOVQ         n+16(FP), CX

sums:
	VMOVUPS      (DX), Y0
	VSUBPS       Y15, Y0, Y1
	VMULPS       Y1, Y11, Y1
	VADDPS       Y6, Y1, Y1
	VPAND        MANT, Y1, Y1
	VPSUBD       HALF22, Y1, Y1
	VPMINSD      Y7, Y1, Y1
	VPMAXSD      Y12, Y1, Y1
	VCVTDQ2PS    Y1, Y1 // l
	VMOVUPS      Y1, Q_LT(DX)
	VMOVUPS      Q_WT(DX), Y2
	VMULPS       Y1, Y2, Y2 // w·l
	VADDPS       Y2, Y8, Y8 // sumL += w·l
	VMULPS       Y1, Y2, Y3
	VADDPS       Y3, Y9, Y9 // sumL2 += w·l·l
	VMULPS       Y0, Y2, Y3
	VADDPS       Y3, Y10, Y10 // sumXL += w·l·x
	ADDQ         $32, DX
	DECQ         CX
	JNZ          sums

	// D = sumW·sumL2 - sumL·sumL
	VMOVUPS      Q_SUMW(DI), Y4
	VMOVUPS      Q_SUMX(DI), Y5
	VMULPS       Y9, Y4, Y0
	VMULPS       Y8, Y8, Y1
	VSUBPS       Y1, Y0, Y0 // D
	VCMPPS       $1, Y0, Y12, Y3 // 0 < D
	VMOVMSKPS    Y3, AX
	TESTL        AX, AX
	JZ           next

	// thisScale = (sumW·sumXL - sumX·sumL)/D, thisMin = (sumL2·sumX - sumL·sumXL)/D
	VMULPS       Y10, Y4, Y1
	VMULPS       Y8, Y5, Y2
	VSUBPS       Y2, Y1, Y1
	VDIVPS       Y0, Y1, Y1 // thisScale
	VMULPS       Y5, Y9, Y2
	VMULPS       Y10, Y8, Y4
	VSUBPS       Y4, Y2, Y2
	VDIVPS       Y0, Y2, Y2 // thisMin
	// if thisMin > 0 { thisMin = 0; thisScale = sumXL/sumL2 }
	VCMPPS       $1, Y2, Y12, Y4 // 0 < thisMin
	VDIVPS       Y9, Y10, Y5
	VBLENDVPS    Y4, Y5, Y1, Y1
	VANDNPS      Y2, Y4, Y2
	VMOVAPS      Y1, Y8 // thisScale
	VMOVAPS      Y2, Y9 // thisMin
	VMOVAPS      Y3, Y10 // D > 0

	VXORPS       Y5, Y5, Y5 // cur
	VBROADCASTSS kq<>+0xa0(SB), Y4 // |x| mask
	LEAQ         Q_XT(DI), DX
	MOVQ         n+16(FP), CX

cur:
	VMULPS       Q_LT(DX), Y8, Y1 // thisScale·l
	VADDPS       Y9, Y1, Y1 // + thisMin
	VSUBPS       (DX), Y1, Y1 // - x
	TESTQ        $1, R10
	JNZ          curmad
	VMULPS       Y1, Y1, Y1
	JMP          curw

curmad:
	VANDPS       Y4, Y1, Y1

curw:
	VMULPS       Q_WT(DX), Y1, Y1
	VADDPS       Y1, Y5, Y5
	ADDQ         $32, DX
	DECQ         CX
	JNZ          cur

	// if D > 0 && cur < bestErr { bestErr, scale, mn = cur, thisScale, thisMin }
	VCMPPS       $1, Y13, Y5, Y0 // cur < bestErr
	VANDPS       Y10, Y0, Y0
	VBLENDVPS    Y0, Y5, Y13, Y13
	VBLENDVPS    Y0, Y8, Y14, Y14
	VBLENDVPS    Y0, Y9, Y15, Y15

next:
	ADDQ         $4, R8
	DECQ         R9
	JNZ          trial

finish:
	// mx == mn lanes return scale 0 and -mn of the first pass.
	VMOVUPS      Q_EQ(DI), Y0
	VANDNPS      Y14, Y0, Y14
	VBLENDVPS    Y0, Q_MN0(DI), Y15, Y15
	VBROADCASTSS kq<>+0xa4(SB), Y1
	VXORPS       Y1, Y15, Y15
	MOVQ         scales+56(FP), R10
	MOVQ         mins+64(FP), R11
	VMOVUPS      Y14, (R10)
	VMOVUPS      Y15, (R11)
	VZEROUPPER
	MOVB         $1, ret+72(FP)
	RET

q45nan:
	VZEROUPPER
	MOVB         $0, ret+72(FP)
	RET

// Scratch layout of searchQXAVX2 (bytes, n ≤ 32): x, w and w·x transposed.
#define X_XT 0
#define X_WT 1024
#define X_WXT 2048

// func searchQXAVX2(x, w *float32, n int, nmax int, num *float32, nnum int, scales *float32) bool
//
// makeQXQuants(nmax, x[n·j : n·j+n], ., w[n·j : n·j+n]) for j = 0..7 (lane
// j), weights x² when w is nil; trial k uses iscale = num[k]/mx. Writes
// the eight scales; the levels are left to the caller. Returns false,
// having written nothing, when x or w holds a NaN (see searchQ45KAVX2).
TEXT ·searchQXAVX2(SB), $3072-57
	MOVQ x+0(FP), SI
	MOVQ w+8(FP), BX
	MOVQ n+16(FP), CX
	MOVQ nmax+24(FP), AX
	MOVQ num+32(FP), R8
	MOVQ nnum+40(FP), R9
	MOVQ SP, DI // the frame is the scratch

	VMOVQ        CX, X0
	VPBROADCASTD X0, Y0
	VPMULLD      kq<>+0x60(SB), Y0, Y15 // lane j's offset n·j
	VBROADCASTSS kq<>+0xa0(SB), Y11 // |x| mask
	VXORPS       Y13, Y13, Y13 // amax
	VXORPS       Y12, Y12, Y12 // mx
	VXORPS       Y10, Y10, Y10 // any NaN
	MOVQ         CX, R10
	LEAQ         X_XT(DI), DX

	// Pass 1: transpose x (and w, or w = x²), w·x, and the element of
	// largest magnitude (the first of equals, as `if ax > amax`).
load:
	VPCMPEQD     Y14, Y14, Y14
	VGATHERDPS   Y14, (SI)(Y15*4), Y0
	VCMPPS       $3, Y0, Y0, Y1
	VORPS        Y1, Y10, Y10
	TESTQ        BX, BX
	JZ           square
	VPCMPEQD     Y14, Y14, Y14
	VGATHERDPS   Y14, (BX)(Y15*4), Y1
	VCMPPS       $3, Y1, Y1, Y2
	VORPS        Y2, Y10, Y10
	ADDQ         $4, BX
	JMP          loaded

square:
	VMULPS       Y0, Y0, Y1

loaded:
	VMOVUPS      Y0, (DX)
	VMOVUPS      Y1, X_WT(DX)
	VMULPS       Y0, Y1, Y2 // w·x
	VMOVUPS      Y2, X_WXT(DX)
	VANDPS       Y11, Y0, Y2 // ax
	VCMPPS       $1, Y2, Y13, Y3 // amax < ax
	VBLENDVPS    Y3, Y2, Y13, Y13
	VBLENDVPS    Y3, Y0, Y12, Y12
	ADDQ         $4, SI
	ADDQ         $32, DX
	DECQ         R10
	JNZ          load
	VMOVMSKPS    Y10, R13
	TESTL        R13, R13
	JNZ          qxnan

	// Registers from here: Y15 amax < eps (all zero), Y14 scale, Y13 best,
	// Y12 mx, Y11 nmax-1, Y10 -nmax (ints), Y9 zero, Y8 iscale, Y6
	// 1.5·2^23; the sums in Y5 (sumlx) and Y4 (suml2).
	VBROADCASTSS kq<>+0xb0(SB), Y0
	VCMPPS       $1, Y0, Y13, Y15
	VMOVQ        AX, X0
	VPBROADCASTD X0, Y0
	VCVTDQ2PS    Y0, Y1
	VPCMPEQD     Y2, Y2, Y2
	VPADDD       Y2, Y0, Y11 // nmax-1
	VXORPS       Y9, Y9, Y9
	VPSUBD       Y0, Y9, Y10 // -nmax
	VMOVUPS      MAGIC, Y6
	VSUBPS       Y1, Y9, Y1 // float32(-nmax): 0 - nmax is exact
	VDIVPS       Y12, Y1, Y8 // iscale = -nmax/mx
	MOVQ         $1, R11 // the first pass sets scale and best

qxpass:
	VXORPS       Y5, Y5, Y5
	VXORPS       Y4, Y4, Y4
	MOVQ         CX, R10
	LEAQ         X_XT(DI), DX

qxsums:
	VMULPS       (DX), Y8, Y0 // iscale·x
	VADDPS       Y6, Y0, Y0
	VPAND        MANT, Y0, Y0
	VPSUBD       HALF22, Y0, Y0
	VPMINSD      Y11, Y0, Y0
	VPMAXSD      Y10, Y0, Y0
	VCVTDQ2PS    Y0, Y0 // l
	VMULPS       X_WXT(DX), Y0, Y1 // (w·x)·l
	VADDPS       Y1, Y5, Y5
	VMULPS       X_WT(DX), Y0, Y2 // w·l
	VMULPS       Y0, Y2, Y2
	VADDPS       Y2, Y4, Y4
	ADDQ         $32, DX
	DECQ         R10
	JNZ          qxsums

	TESTQ        R11, R11
	JZ           qxupdate
	XORQ         R11, R11
	// scale = suml2 != 0 ? sumlx/suml2 : 0; best = scale·sumlx
	VCMPPS       $4, Y9, Y4, Y0 // suml2 != 0 (NaN too)
	VDIVPS       Y4, Y5, Y14
	VANDPS       Y0, Y14, Y14
	VMULPS       Y5, Y14, Y13
	JMP          qxnext

qxupdate:
	// if suml2 > 0 && sumlx·sumlx > best·suml2 { scale = sumlx/suml2; best = scale·sumlx }
	VCMPPS       $1, Y4, Y9, Y0 // 0 < suml2
	VMULPS       Y5, Y5, Y1
	VMULPS       Y4, Y13, Y2
	VCMPPS       $1, Y1, Y2, Y3 // best·suml2 < sumlx²
	VANDPS       Y3, Y0, Y0
	VDIVPS       Y4, Y5, Y1
	VMULPS       Y5, Y1, Y2
	VBLENDVPS    Y0, Y1, Y14, Y14
	VBLENDVPS    Y0, Y2, Y13, Y13
	ADDQ         $4, R8
	DECQ         R9

qxnext:
	TESTQ        R9, R9
	JZ           qxdone
	VBROADCASTSS (R8), Y1
	VDIVPS       Y12, Y1, Y8 // iscale = num[k]/mx
	JMP          qxpass

qxdone:
	VANDNPS      Y14, Y15, Y14 // all-zero lanes: scale 0
	MOVQ         scales+48(FP), R10
	VMOVUPS      Y14, (R10)
	VZEROUPPER
	MOVB         $1, ret+56(FP)
	RET

qxnan:
	VZEROUPPER
	MOVB         $0, ret+56(FP)
	RET

// func levelsAVX2(L *byte, x *float32, n int, d, m *float32, nsub int, lo, hi, off int)
//
// The k-quants' last step for nsub sub-blocks of n elements (n%8 == 0):
// L[i] = off + clamp(nearestInt((x[i] + m[k]) / d[k]), lo, hi) for
// sub-block k, or nearestInt(x[i] / d[k]) when m is nil; a sub-block whose
// d[k] is 0 is left as it is (the scalar code's `if d == 0 { continue }`,
// so a NaN d is not skipped). Results must fit in a byte.
TEXT ·levelsAVX2(SB), NOSPLIT, $0-72
	MOVQ         L+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	MOVQ         d+24(FP), R8
	MOVQ         m+32(FP), R9
	MOVQ         nsub+40(FP), R10
	VPBROADCASTD lo+48(FP), Y13
	VPBROADCASTD hi+56(FP), Y12
	VPBROADCASTD off+64(FP), Y11
	VMOVUPS      MAGIC, Y10
	VMOVUPS      MANT, Y9
	VMOVUPS      HALF22, Y8
	VXORPS       X7, X7, X7
	TESTQ        R10, R10
	JZ           lvdone

lvsub:
	MOVQ         SI, BX
	MOVQ         DI, DX
	MOVQ         CX, R11
	VMOVSS       (R8), X1
	VUCOMISS     X7, X1
	JNE          lvgo
	JPS          lvgo
	JMP          lvnext // d == 0

lvgo:
	VBROADCASTSS (R8), Y1
	TESTQ        R9, R9
	JZ           lvdiv
	VBROADCASTSS (R9), Y2

lvadd:
	VMOVUPS      (BX), Y0
	VADDPS       Y2, Y0, Y0 // x + m
	VDIVPS       Y1, Y0, Y0 // / d
	VADDPS       Y10, Y0, Y0
	VPAND        Y9, Y0, Y0
	VPSUBD       Y8, Y0, Y0
	VPMINSD      Y12, Y0, Y0
	VPMAXSD      Y13, Y0, Y0
	VPADDD       Y11, Y0, Y0
	VEXTRACTI128 $1, Y0, X3
	VPACKUSDW    X3, X0, X0
	VPACKUSWB    X0, X0, X0
	VMOVQ        X0, (DX)
	ADDQ         $32, BX
	ADDQ         $8, DX
	SUBQ         $8, R11
	JNZ          lvadd
	JMP          lvnext

lvdiv:
	VMOVUPS      (BX), Y0
	VDIVPS       Y1, Y0, Y0 // x / d
	VADDPS       Y10, Y0, Y0
	VPAND        Y9, Y0, Y0
	VPSUBD       Y8, Y0, Y0
	VPMINSD      Y12, Y0, Y0
	VPMAXSD      Y13, Y0, Y0
	VPADDD       Y11, Y0, Y0
	VEXTRACTI128 $1, Y0, X3
	VPACKUSDW    X3, X0, X0
	VPACKUSWB    X0, X0, X0
	VMOVQ        X0, (DX)
	ADDQ         $32, BX
	ADDQ         $8, DX
	SUBQ         $8, R11
	JNZ          lvdiv

lvnext:
	LEAQ         (SI)(CX*4), SI
	ADDQ         CX, DI
	ADDQ         $4, R8
	TESTQ        R9, R9
	JZ           lvnom
	ADDQ         $4, R9

lvnom:
	DECQ         R10
	JNZ          lvsub

lvdone:
	VZEROUPPER
	RET

DATA absd<>+0x00(SB)/8, $0x7fffffffffffffff
GLOBL absd<>(SB), RODATA|NOPTR, $8

// func errorSumsAVX2(x, y *float32, n int, acc *[12]float64) bool
//
// ErrorSums over n (a multiple of 8) elements, in float64 lanes: acc[0:4]
// the partial sums of x², acc[4:8] of (x-y)², acc[8:12] the partial
// maxima of |x-y|; returns true when some difference is NaN (MAXPD drops
// NaNs, so they are flagged apart).
TEXT ·errorSumsAVX2(SB), NOSPLIT, $0-33
	MOVQ         x+0(FP), SI
	MOVQ         y+8(FP), DI
	MOVQ         n+16(FP), CX
	MOVQ         acc+24(FP), DX
	VXORPD       Y8, Y8, Y8 // sig, two chains
	VXORPD       Y9, Y9, Y9
	VXORPD       Y10, Y10, Y10 // noise, two chains
	VXORPD       Y11, Y11, Y11
	VXORPD       Y12, Y12, Y12 // max
	VXORPD       Y13, Y13, Y13
	VXORPD       Y14, Y14, Y14 // NaN seen
	VBROADCASTSD absd<>(SB), Y15
	TESTQ        CX, CX
	JZ           esdone

esloop:
	VCVTPS2PD    (SI), Y0
	VCVTPS2PD    16(SI), Y1
	VCVTPS2PD    (DI), Y2
	VCVTPS2PD    16(DI), Y3
	VSUBPD       Y2, Y0, Y2 // d = x - y
	VSUBPD       Y3, Y1, Y3
	VMULPD       Y0, Y0, Y0
	VMULPD       Y1, Y1, Y1
	VADDPD       Y0, Y8, Y8
	VADDPD       Y1, Y9, Y9
	VCMPPD       $3, Y2, Y2, Y4
	VCMPPD       $3, Y3, Y3, Y5
	VORPD        Y4, Y14, Y14
	VORPD        Y5, Y14, Y14
	VANDPD       Y15, Y2, Y4
	VANDPD       Y15, Y3, Y5
	VMAXPD       Y12, Y4, Y12
	VMAXPD       Y13, Y5, Y13
	VMULPD       Y2, Y2, Y2
	VMULPD       Y3, Y3, Y3
	VADDPD       Y2, Y10, Y10
	VADDPD       Y3, Y11, Y11
	ADDQ         $32, SI
	ADDQ         $32, DI
	SUBQ         $8, CX
	JNZ          esloop

esdone:
	VADDPD       Y9, Y8, Y8
	VADDPD       Y11, Y10, Y10
	VMAXPD       Y13, Y12, Y12
	VMOVUPD      Y8, (DX)
	VMOVUPD      Y10, 32(DX)
	VMOVUPD      Y12, 64(DX)
	VMOVMSKPD    Y14, AX
	TESTL        AX, AX
	SETNE        ret+32(FP)
	VZEROUPPER
	RET

// Scratch layout of searchQ45KAVX512 (bytes): x, weights and trial levels,
// transposed, 16 lanes.
#define Z_XT 0
#define Z_WT 2048
#define Z_LT 4096

// func searchQ45KAVX512(x, w *float32, n, mode int, num *float32, nnum int, nmax int, scales, mins *float32) bool
//
// searchQ45KAVX2 over sixteen lanes: sixteen sub-blocks x[n·j : n·j+n]
// (two Q4_K/Q5_K super-blocks, one Q2_K), scales[0:16] and mins[0:16].
// The lanes of a 512-bit vector are two independent dependency chains where
// the eight-lane kernel has one, which is what the error sums wait on.
TEXT ·searchQ45KAVX512(SB), $6144-73
	MOVQ         x+0(FP), SI
	MOVQ         w+8(FP), R12
	MOVQ         R12, R11 // weights given
	MOVQ         mode+24(FP), R10
	MOVQ         num+32(FP), R8
	MOVQ         nnum+40(FP), R9
	MOVQ         nmax+48(FP), AX
	MOVQ         SP, DI // the frame is the scratch

	VPBROADCASTD n+16(FP), Z31
	VPMULLD      kq<>+0x60(SB), Z31, Z31 // lane j's offset n·j
	VBROADCASTSS kq<>+0x00(SB), Z30 // 1.5·2^23
	VPBROADCASTD kq<>+0x20(SB), Z29 // mantissa mask
	VPBROADCASTD kq<>+0x40(SB), Z28 // 2^22
	VPBROADCASTD AX, Z27 // nmax
	VPXORD       Z26, Z26, Z26 // 0
	VPBROADCASTD kq<>+0xa0(SB), Z25 // |x| mask

	// Pass 1: transpose x, Σx², min and max.
	KXNORW       K1, K1, K1
	VGATHERDPS   (SI)(Z31*4), K1, Z0
	VMOVAPS      Z0, Z12 // mn
	VMOVAPS      Z0, Z13 // mx
	VPXORD       Z11, Z11, Z11 // sumX2
	KXORW        K3, K3, K3 // any NaN
	MOVQ         SI, BX
	LEAQ         Z_XT(DI), DX
	MOVQ         n+16(FP), CX

zpass1:
	KXNORW       K1, K1, K1
	VGATHERDPS   (BX)(Z31*4), K1, Z0
	VMOVUPS      Z0, (DX)
	VMULPS       Z0, Z0, Z1
	VADDPS       Z1, Z11, Z11
	VMINPS       Z12, Z0, Z12
	VMAXPS       Z13, Z0, Z13
	VCMPPS       $3, Z0, Z0, K2
	KORW         K2, K3, K3
	TESTQ        R12, R12
	JZ           zpass1x
	KXNORW       K1, K1, K1
	VGATHERDPS   (R12)(Z31*4), K1, Z2
	VMOVUPS      Z2, Z_WT(DX)
	VCMPPS       $3, Z2, Z2, K2
	KORW         K2, K3, K3
	ADDQ         $4, R12

zpass1x:
	ADDQ         $4, BX
	ADDQ         $64, DX
	DECQ         CX
	JNZ          zpass1
	KORTESTW     K3, K3
	JNZ          znan

	// weights avX + |x|, 0 + |x| (mode bit 1) or w; sumW, sumX
	VPBROADCASTD n+16(FP), Z1
	VCVTDQ2PS    Z1, Z1
	VDIVPS       Z1, Z11, Z11
	VSQRTPS      Z11, Z11
	TESTQ        $2, R10
	JZ           zpass2avx
	VPXORD       Z11, Z11, Z11

zpass2avx:
	LEAQ         Z_XT(DI), DX
	MOVQ         n+16(FP), CX

zpass2:
	VMOVUPS      (DX), Z0
	TESTQ        R11, R11
	JNZ          zpass2w
	VPANDD       Z25, Z0, Z1
	VADDPS       Z1, Z11, Z1
	VMOVUPS      Z1, Z_WT(DX)
	JMP          zpass2s

zpass2w:
	VMOVUPS      Z_WT(DX), Z1

zpass2s:
	CMPQ         CX, n+16(FP)
	JNE          zpass2a
	VMOVAPS      Z1, Z23 // sumW
	VMULPS       Z0, Z1, Z22 // sumX
	JMP          zpass2n

zpass2a:
	VADDPS       Z1, Z23, Z23
	VMULPS       Z0, Z1, Z2
	VADDPS       Z2, Z22, Z22

zpass2n:
	ADDQ         $64, DX
	DECQ         CX
	JNZ          zpass2

	VMINPS       Z12, Z26, Z12 // if mn > 0 { mn = 0 }
	VCMPPS       $2, Z12, Z13, K7 // mx <= mn
	VMOVAPS      Z12, Z21 // mn of the first pass
	VMOVAPS      Z13, Z24 // mx
	VMOVAPS      Z12, Z15 // mn

	VSUBPS       Z15, Z24, Z0
	VCVTDQ2PS    Z27, Z1
	VDIVPS       Z0, Z1, Z11 // iscale
	VBROADCASTSS kq<>+0xa8(SB), Z1
	VDIVPS       Z11, Z1, Z14 // scale
	VPXORD       Z13, Z13, Z13 // bestErr
	LEAQ         Z_XT(DI), DX
	MOVQ         n+16(FP), CX

zerr0:
	VMOVUPS      (DX), Z0
	VSUBPS       Z15, Z0, Z1
	VMULPS       Z1, Z11, Z1
	VADDPS       Z30, Z1, Z1
	VPANDD       Z29, Z1, Z1
	VPSUBD       Z28, Z1, Z1
	VPMINSD      Z27, Z1, Z1
	VPMAXSD      Z26, Z1, Z1
	VCVTDQ2PS    Z1, Z1
	VMULPS       Z1, Z14, Z1
	VADDPS       Z15, Z1, Z1
	VSUBPS       Z0, Z1, Z1
	TESTQ        $1, R10
	JNZ          zerr0mad
	VMULPS       Z1, Z1, Z1
	JMP          zerr0w

zerr0mad:
	VPANDD       Z25, Z1, Z1

zerr0w:
	VMULPS       Z_WT(DX), Z1, Z1
	VADDPS       Z1, Z13, Z13
	ADDQ         $64, DX
	DECQ         CX
	JNZ          zerr0

	TESTQ        R9, R9
	JZ           zfinish

ztrial:
	VSUBPS       Z15, Z24, Z0
	VBROADCASTSS (R8), Z1
	VDIVPS       Z0, Z1, Z11 // iscale = num[is]/(mx - mn)
	VPXORD       Z8, Z8, Z8 // sumL
	VPXORD       Z9, Z9, Z9 // sumL2
	VPXORD       Z10, Z10, Z10 // sumXL
	LEAQ         Z_XT(DI), DX
	MOVQ         n+16(FP), CX

zsums:
	VMOVUPS      (DX), Z0
	VSUBPS       Z15, Z0, Z1
	VMULPS       Z1, Z11, Z1
	VADDPS       Z30, Z1, Z1
	VPANDD       Z29, Z1, Z1
	VPSUBD       Z28, Z1, Z1
	VPMINSD      Z27, Z1, Z1
	VPMAXSD      Z26, Z1, Z1
	VCVTDQ2PS    Z1, Z1
	VMOVUPS      Z1, Z_LT(DX)
	VMULPS       Z_WT(DX), Z1, Z2 // w·l (l·w: one NaN-free product either way)
	VADDPS       Z2, Z8, Z8
	VMULPS       Z1, Z2, Z3
	VADDPS       Z3, Z9, Z9
	VMULPS       Z0, Z2, Z3
	VADDPS       Z3, Z10, Z10
	ADDQ         $64, DX
	DECQ         CX
	JNZ          zsums

	VMULPS       Z9, Z23, Z0
	VMULPS       Z8, Z8, Z1
	VSUBPS       Z1, Z0, Z0 // D
	VCMPPS       $1, Z0, Z26, K3 // 0 < D
	KORTESTW     K3, K3
	JZ           znext

	VMULPS       Z10, Z23, Z1
	VMULPS       Z8, Z22, Z2
	VSUBPS       Z2, Z1, Z1
	VDIVPS       Z0, Z1, Z1 // thisScale
	VMULPS       Z22, Z9, Z2
	VMULPS       Z10, Z8, Z4
	VSUBPS       Z4, Z2, Z2
	VDIVPS       Z0, Z2, Z2 // thisMin
	VCMPPS       $1, Z2, Z26, K4 // 0 < thisMin
	VDIVPS       Z9, Z10, Z5
	VMOVAPS      Z5, K4, Z1 // thisScale = sumXL/sumL2
	VMOVAPS      Z26, K4, Z2 // thisMin = 0

	VPXORD       Z5, Z5, Z5 // cur
	LEAQ         Z_XT(DI), DX
	MOVQ         n+16(FP), CX

zcur:
	VMULPS       Z_LT(DX), Z1, Z0
	VADDPS       Z2, Z0, Z0
	VSUBPS       (DX), Z0, Z0
	TESTQ        $1, R10
	JNZ          zcurmad
	VMULPS       Z0, Z0, Z0
	JMP          zcurw

zcurmad:
	VPANDD       Z25, Z0, Z0

zcurw:
	VMULPS       Z_WT(DX), Z0, Z0
	VADDPS       Z0, Z5, Z5
	ADDQ         $64, DX
	DECQ         CX
	JNZ          zcur

	VCMPPS       $1, Z13, Z5, K3, K5 // D > 0 && cur < bestErr
	VMOVAPS      Z5, K5, Z13
	VMOVAPS      Z1, K5, Z14
	VMOVAPS      Z2, K5, Z15

znext:
	ADDQ         $4, R8
	DECQ         R9
	JNZ          ztrial

zfinish:
	VMOVAPS      Z26, K7, Z14 // mx == mn: scale 0
	VMOVAPS      Z21, K7, Z15 // and -mn of the first pass
	VPBROADCASTD kq<>+0xa4(SB), Z1
	VPXORD       Z1, Z15, Z15
	MOVQ         scales+56(FP), R10
	MOVQ         mins+64(FP), R11
	VMOVUPS      Z14, (R10)
	VMOVUPS      Z15, (R11)
	VZEROUPPER
	MOVB         $1, ret+72(FP)
	RET

znan:
	VZEROUPPER
	MOVB         $0, ret+72(FP)
	RET

// func searchQXAVX512(x, w *float32, n int, nmax int, num *float32, nnum int, scales *float32) bool
//
// searchQXAVX2 over sixteen lanes (sixteen sub-blocks of n ≤ 32 elements);
// the scratch holds x, w and w·x transposed at 0, 2048 and 4096 bytes.
TEXT ·searchQXAVX512(SB), $6144-57
	MOVQ         x+0(FP), SI
	MOVQ         w+8(FP), BX
	MOVQ         n+16(FP), CX
	MOVQ         nmax+24(FP), AX
	MOVQ         num+32(FP), R8
	MOVQ         nnum+40(FP), R9
	MOVQ         SP, DI // the frame is the scratch

	VPBROADCASTD CX, Z0
	VPMULLD      kq<>+0x60(SB), Z0, Z31 // lane j's offset n·j
	VPBROADCASTD kq<>+0xa0(SB), Z30 // |x| mask
	VPXORD       Z13, Z13, Z13 // amax
	VPXORD       Z12, Z12, Z12 // mx
	KXORW        K3, K3, K3 // any NaN
	MOVQ         CX, R10
	MOVQ         DI, DX

zload:
	KXNORW       K1, K1, K1
	VGATHERDPS   (SI)(Z31*4), K1, Z0
	VCMPPS       $3, Z0, Z0, K2
	KORW         K2, K3, K3
	TESTQ        BX, BX
	JZ           zsquare
	KXNORW       K1, K1, K1
	VGATHERDPS   (BX)(Z31*4), K1, Z1
	VCMPPS       $3, Z1, Z1, K2
	KORW         K2, K3, K3
	ADDQ         $4, BX
	JMP          zloaded

zsquare:
	VMULPS       Z0, Z0, Z1

zloaded:
	VMOVUPS      Z0, (DX)
	VMOVUPS      Z1, 2048(DX)
	VMULPS       Z0, Z1, Z2 // w·x
	VMOVUPS      Z2, 4096(DX)
	VPANDD       Z30, Z0, Z2 // ax
	VCMPPS       $1, Z2, Z13, K4 // amax < ax
	VMOVAPS      Z2, K4, Z13
	VMOVAPS      Z0, K4, Z12
	ADDQ         $4, SI
	ADDQ         $64, DX
	DECQ         R10
	JNZ          zload
	KORTESTW     K3, K3
	JNZ          zqxnan

	// Z12 mx, Z13 best, Z14 scale, K7 amax < eps, Z11 nmax-1, Z10 -nmax,
	// Z9 zero, Z8 iscale, Z6 1.5·2^23, Z29 mantissa mask, Z28 2^22.
	VBROADCASTSS kq<>+0xb0(SB), Z0
	VCMPPS       $1, Z0, Z13, K7
	LEAQ         -1(AX), R12
	VPBROADCASTD R12, Z11
	MOVQ         AX, R12
	NEGQ         R12
	VPBROADCASTD R12, Z10
	VPXORD       Z9, Z9, Z9
	VBROADCASTSS kq<>+0x00(SB), Z6
	VPBROADCASTD kq<>+0x20(SB), Z29
	VPBROADCASTD kq<>+0x40(SB), Z28
	VPBROADCASTD AX, Z0
	VCVTDQ2PS    Z0, Z1
	VSUBPS       Z1, Z9, Z1 // float32(-nmax)
	VDIVPS       Z12, Z1, Z8 // iscale = -nmax/mx
	MOVQ         $1, R11

zqxpass:
	VPXORD       Z5, Z5, Z5 // sumlx
	VPXORD       Z4, Z4, Z4 // suml2
	MOVQ         CX, R10
	MOVQ         DI, DX

zqxsums:
	VMULPS       (DX), Z8, Z0
	VADDPS       Z6, Z0, Z0
	VPANDD       Z29, Z0, Z0
	VPSUBD       Z28, Z0, Z0
	VPMINSD      Z11, Z0, Z0
	VPMAXSD      Z10, Z0, Z0
	VCVTDQ2PS    Z0, Z0 // l
	VMULPS       4096(DX), Z0, Z1 // (w·x)·l
	VADDPS       Z1, Z5, Z5
	VMULPS       2048(DX), Z0, Z2 // w·l
	VMULPS       Z0, Z2, Z2
	VADDPS       Z2, Z4, Z4
	ADDQ         $64, DX
	DECQ         R10
	JNZ          zqxsums

	TESTQ        R11, R11
	JZ           zqxupdate
	XORQ         R11, R11
	VCMPPS       $4, Z9, Z4, K1 // suml2 != 0
	VPXORD       Z14, Z14, Z14
	VDIVPS       Z4, Z5, K1, Z14 // scale = sumlx/suml2 there, else 0
	VMULPS       Z5, Z14, Z13 // best = scale·sumlx
	JMP          zqxnext

zqxupdate:
	VCMPPS       $1, Z4, Z9, K1 // 0 < suml2
	VMULPS       Z5, Z5, Z1
	VMULPS       Z4, Z13, Z2
	VCMPPS       $1, Z1, Z2, K1, K2 // and best·suml2 < sumlx²
	VDIVPS       Z4, Z5, Z1
	VMULPS       Z5, Z1, Z2
	VMOVAPS      Z1, K2, Z14
	VMOVAPS      Z2, K2, Z13
	ADDQ         $4, R8
	DECQ         R9

zqxnext:
	TESTQ        R9, R9
	JZ           zqxdone
	VBROADCASTSS (R8), Z1
	VDIVPS       Z12, Z1, Z8 // iscale = num[k]/mx
	JMP          zqxpass

zqxdone:
	VMOVAPS      Z9, K7, Z14 // all-zero lanes: scale 0
	MOVQ         scales+48(FP), R10
	VMOVUPS      Z14, (R10)
	VZEROUPPER
	MOVB         $1, ret+56(FP)
	RET

zqxnan:
	VZEROUPPER
	MOVB         $0, ret+56(FP)
	RET

// func searchQ3KAVX512(x *float32, scales *float32) bool
//
// The sixteen makeQ3Quants(4, x[16j : 16j+16], .) calls of quantQ3_K, one
// sub-block per lane: the nearest levels -4..3 at -4/max, then five passes
// that move single elements to the level that improves the x²-weighted fit
// (a pass that moves nothing leaves nothing for the next to move, so the
// lanes all run five where the scalar code stops early). Writes the
// sixteen scales; the levels are left to the caller. Returns false, having
// written nothing, when x holds a NaN. The frame holds x, x², x³ and the
// levels (as floats), transposed.
TEXT ·searchQ3KAVX512(SB), $4096-17
	MOVQ         x+0(FP), SI
	MOVQ         SP, DI

	VMOVDQU32    kq<>+0x60(SB), Z31
	VPSLLD       $4, Z31, Z31 // lane j's offset 16·j
	VPBROADCASTD kq<>+0xa0(SB), Z30 // |x| mask
	VBROADCASTSS kq<>+0x00(SB), Z29 // 1.5·2^23
	VPBROADCASTD kq<>+0x20(SB), Z28 // mantissa mask
	VPBROADCASTD kq<>+0x40(SB), Z27 // 2^22
	MOVQ         $3, AX
	VPBROADCASTD AX, Z26 // nmax-1
	MOVQ         $-4, AX
	VPBROADCASTD AX, Z25 // -nmax
	VPXORD       Z24, Z24, Z24 // 0
	VPXORD       Z13, Z13, Z13 // amax
	VPXORD       Z12, Z12, Z12 // mx
	KXORW        K3, K3, K3
	MOVQ         $16, CX
	MOVQ         DI, DX

q3load:
	KXNORW       K1, K1, K1
	VGATHERDPS   (SI)(Z31*4), K1, Z0
	VCMPPS       $3, Z0, Z0, K2
	KORW         K2, K3, K3
	VMULPS       Z0, Z0, Z1 // w = x·x
	VMULPS       Z0, Z1, Z2 // w·x
	VMOVUPS      Z0, (DX)
	VMOVUPS      Z1, 1024(DX)
	VMOVUPS      Z2, 2048(DX)
	VPANDD       Z30, Z0, Z3
	VCMPPS       $1, Z3, Z13, K4 // amax < ax
	VMOVAPS      Z3, K4, Z13
	VMOVAPS      Z0, K4, Z12
	ADDQ         $4, SI
	ADDQ         $64, DX
	DECQ         CX
	JNZ          q3load
	KORTESTW     K3, K3
	JNZ          q3nan

	VBROADCASTSS kq<>+0xb0(SB), Z0
	VCMPPS       $1, Z0, Z13, K7 // amax < eps: scale 0
	MOVQ         $-4, AX
	VPBROADCASTD AX, Z0
	VCVTDQ2PS    Z0, Z0
	VDIVPS       Z12, Z0, Z8 // iscale = -4/mx

	// levels, sumlx = Σ(w·x)·l, suml2 = Σ(w·l)·l
	VPXORD       Z5, Z5, Z5
	VPXORD       Z4, Z4, Z4
	MOVQ         $16, CX
	MOVQ         DI, DX

q3init:
	VMULPS       (DX), Z8, Z0
	VADDPS       Z29, Z0, Z0
	VPANDD       Z28, Z0, Z0
	VPSUBD       Z27, Z0, Z0
	VPMINSD      Z26, Z0, Z0
	VPMAXSD      Z25, Z0, Z0
	VCVTDQ2PS    Z0, Z0 // l
	VMOVUPS      Z0, 3072(DX)
	VMULPS       2048(DX), Z0, Z1
	VADDPS       Z1, Z5, Z5
	VMULPS       1024(DX), Z0, Z2
	VMULPS       Z0, Z2, Z2
	VADDPS       Z2, Z4, Z4
	ADDQ         $64, DX
	DECQ         CX
	JNZ          q3init

	MOVQ         $5, R8

q3pass:
	MOVQ         $16, CX
	MOVQ         DI, DX

q3elem:
	VMOVUPS      3072(DX), Z0 // li
	VMOVUPS      1024(DX), Z1 // w
	VMOVUPS      2048(DX), Z2 // w·x
	VMULPS       Z0, Z2, Z3 // (w·x)·li
	VSUBPS       Z3, Z5, Z6 // slx = sumlx - (w·x)·li
	VCMPPS       $1, Z6, Z24, K1 // 0 < slx
	VMULPS       Z0, Z1, Z3
	VMULPS       Z0, Z3, Z3 // (w·li)·li
	VSUBPS       Z3, Z4, Z7 // sl2 = suml2 - (w·li)·li
	VMULPS       (DX), Z7, Z9 // x·sl2
	VDIVPS       Z6, Z9, Z9 // / slx
	VADDPS       Z29, Z9, Z9
	VPANDD       Z28, Z9, Z9
	VPSUBD       Z27, Z9, Z9
	VPMINSD      Z26, Z9, Z9
	VPMAXSD      Z25, Z9, Z9
	VCVTDQ2PS    Z9, Z9 // newL
	VCMPPS       $4, Z0, Z9, K1, K1 // and newL != li
	VMULPS       Z9, Z2, Z3
	VADDPS       Z3, Z6, Z6 // slx += (w·x)·newL
	VMULPS       Z9, Z1, Z3
	VMULPS       Z9, Z3, Z3
	VADDPS       Z3, Z7, Z7 // sl2 += (w·newL)·newL
	VCMPPS       $1, Z7, Z24, K1, K1 // and 0 < sl2
	VMULPS       Z6, Z6, Z10
	VMULPS       Z4, Z10, Z10 // (slx·slx)·suml2
	VMULPS       Z5, Z5, Z11
	VMULPS       Z7, Z11, Z11 // (sumlx·sumlx)·sl2
	VCMPPS       $1, Z10, Z11, K1, K1 // and that < (slx·slx)·suml2
	VMOVAPS      Z9, K1, Z0
	VMOVUPS      Z0, 3072(DX)
	VMOVAPS      Z6, K1, Z5
	VMOVAPS      Z7, K1, Z4
	ADDQ         $64, DX
	DECQ         CX
	JNZ          q3elem
	DECQ         R8
	JNZ          q3pass

	VDIVPS       Z4, Z5, Z0 // sumlx/suml2
	VMOVAPS      Z24, K7, Z0
	MOVQ         scales+8(FP), R10
	VMOVUPS      Z0, (R10)
	VZEROUPPER
	MOVB         $1, ret+16(FP)
	RET

q3nan:
	VZEROUPPER
	MOVB         $0, ret+16(FP)
	RET
