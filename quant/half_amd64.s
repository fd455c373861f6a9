//go:build !noasm

#include "textflag.h"

// Conversions written from the IEEE formats, not from any other project's
// intrinsics: F16C does f32<->f16 with round-to-nearest-even (imm8 0) in
// hardware; bfloat16 is the top half of a float32, rounded to nearest even by
// adding 0x7FFF plus the lowest kept bit; Q8_0 is max-abs, one divide and a
// round-half-away-from-zero done as trunc(v + copysign(0.5-2^-25, v)), which
// equals C's roundf for every |v| < 2^22.

DATA consts<>+0x00(SB)/4, $0x00000001 // bf16 lsb mask
DATA consts<>+0x04(SB)/4, $0x00007fff // bf16 rounding bias
DATA consts<>+0x08(SB)/4, $0x00007fc0 // bf16 canonical NaN (torch)
DATA consts<>+0x0c(SB)/4, $0x7fffffff // abs mask
DATA consts<>+0x10(SB)/4, $0x80000000 // sign mask
DATA consts<>+0x14(SB)/4, $0x3effffff // 0.5 - 2^-25
DATA consts<>+0x18(SB)/4, $0x42fe0000 // 127.0
DATA consts<>+0x1c(SB)/4, $0x3f800000 // 1.0
// VPERMD order that undoes the lane interleave of VPACKSSDW/VPACKSSWB.
DATA consts<>+0x20(SB)/4, $0
DATA consts<>+0x24(SB)/4, $4
DATA consts<>+0x28(SB)/4, $1
DATA consts<>+0x2c(SB)/4, $5
DATA consts<>+0x30(SB)/4, $2
DATA consts<>+0x34(SB)/4, $6
DATA consts<>+0x38(SB)/4, $3
DATA consts<>+0x3c(SB)/4, $7
GLOBL consts<>(SB), RODATA|NOPTR, $64

// func encodeF16F16C(dst *uint16, src *float32, n int); n%8 == 0
TEXT ·encodeF16F16C(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX

loop32:
	CMPQ CX, $32
	JLT  loop8
	VMOVUPS   (SI), Y0
	VMOVUPS   32(SI), Y1
	VMOVUPS   64(SI), Y2
	VMOVUPS   96(SI), Y3
	VCVTPS2PH $0, Y0, (DI)
	VCVTPS2PH $0, Y1, 16(DI)
	VCVTPS2PH $0, Y2, 32(DI)
	VCVTPS2PH $0, Y3, 48(DI)
	ADDQ      $128, SI
	ADDQ      $64, DI
	SUBQ      $32, CX
	JMP       loop32

loop8:
	CMPQ CX, $8
	JLT  done
	VMOVUPS   (SI), Y0
	VCVTPS2PH $0, Y0, (DI)
	ADDQ      $32, SI
	ADDQ      $16, DI
	SUBQ      $8, CX
	JMP       loop8

done:
	VZEROUPPER
	RET

// func decodeF16F16C(dst *float32, src *uint16, n int); n%8 == 0
TEXT ·decodeF16F16C(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX

loop32:
	CMPQ CX, $32
	JLT  loop8
	VCVTPH2PS (SI), Y0
	VCVTPH2PS 16(SI), Y1
	VCVTPH2PS 32(SI), Y2
	VCVTPH2PS 48(SI), Y3
	VMOVUPS   Y0, (DI)
	VMOVUPS   Y1, 32(DI)
	VMOVUPS   Y2, 64(DI)
	VMOVUPS   Y3, 96(DI)
	ADDQ      $64, SI
	ADDQ      $128, DI
	SUBQ      $32, CX
	JMP       loop32

loop8:
	CMPQ CX, $8
	JLT  done
	VCVTPH2PS (SI), Y0
	VMOVUPS   Y0, (DI)
	ADDQ      $16, SI
	ADDQ      $32, DI
	SUBQ      $8, CX
	JMP       loop8

done:
	VZEROUPPER
	RET

// BF16ROUND rounds the 8 floats in y to bfloat16 in the low half of each
// dword (NaN lanes become 0x7FC0), using tmp.
#define BF16ROUND(y, tmp) \
	VPSRLD    $16, y, tmp        \
	VPAND     Y13, tmp, tmp      \
	VPADDD    Y14, tmp, tmp      \
	VPADDD    y, tmp, tmp        \
	VPSRLD    $16, tmp, tmp      \
	VCMPPS    $3, y, y, y        \
	VBLENDVPS y, Y15, tmp, y

// func encodeBF16AVX2(dst *uint16, src *float32, n int); n%8 == 0
TEXT ·encodeBF16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	VPBROADCASTD consts<>+0x00(SB), Y13
	VPBROADCASTD consts<>+0x04(SB), Y14
	VPBROADCASTD consts<>+0x08(SB), Y15

loop16:
	CMPQ CX, $16
	JLT  loop8
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	BF16ROUND(Y0, Y2)
	BF16ROUND(Y1, Y3)
	VPACKUSDW Y1, Y0, Y0
	VPERMQ    $0xd8, Y0, Y0
	VMOVDQU   Y0, (DI)
	ADDQ      $64, SI
	ADDQ      $32, DI
	SUBQ      $16, CX
	JMP       loop16

loop8:
	CMPQ CX, $8
	JLT  done
	VMOVUPS      (SI), Y0
	BF16ROUND(Y0, Y2)
	VEXTRACTI128 $1, Y0, X1
	VPACKUSDW    X1, X0, X0
	VMOVDQU      X0, (DI)
	ADDQ         $32, SI
	ADDQ         $16, DI
	SUBQ         $8, CX
	JMP          loop8

done:
	VZEROUPPER
	RET

// func decodeBF16AVX2(dst *float32, src *uint16, n int); n%8 == 0
TEXT ·decodeBF16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX

loop32:
	CMPQ CX, $32
	JLT  loop8
	VPMOVZXWD (SI), Y0
	VPMOVZXWD 16(SI), Y1
	VPMOVZXWD 32(SI), Y2
	VPMOVZXWD 48(SI), Y3
	VPSLLD    $16, Y0, Y0
	VPSLLD    $16, Y1, Y1
	VPSLLD    $16, Y2, Y2
	VPSLLD    $16, Y3, Y3
	VMOVDQU   Y0, (DI)
	VMOVDQU   Y1, 32(DI)
	VMOVDQU   Y2, 64(DI)
	VMOVDQU   Y3, 96(DI)
	ADDQ      $64, SI
	ADDQ      $128, DI
	SUBQ      $32, CX
	JMP       loop32

loop8:
	CMPQ CX, $8
	JLT  done
	VPMOVZXWD (SI), Y0
	VPSLLD    $16, Y0, Y0
	VMOVDQU   Y0, (DI)
	ADDQ      $16, SI
	ADDQ      $32, DI
	SUBQ      $8, CX
	JMP       loop8

done:
	VZEROUPPER
	RET

// ROUNDQ scales y by the broadcast 1/d in Y7 and truncates y + copysign(0.5-2^-25, y)
// to int32 (C's roundf).
#define ROUNDQ(y, tmp) \
	VMULPS     Y7, y, y     \
	VANDPS     Y14, y, tmp  \
	VORPS      Y13, tmp, tmp \
	VADDPS     tmp, y, y    \
	VCVTTPS2DQ y, y

// func quantQ8_0AVX2(dst *byte, src *float32, nblocks int)
TEXT ·quantQ8_0AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ nblocks+16(FP), CX
	VPBROADCASTD consts<>+0x0c(SB), Y15 // abs mask
	VPBROADCASTD consts<>+0x10(SB), Y14 // sign mask
	VPBROADCASTD consts<>+0x14(SB), Y13 // 0.5-2^-25
	VMOVDQU      consts<>+0x20(SB), Y12 // permutation
	VMOVSS       consts<>+0x18(SB), X11 // 127
	VMOVSS       consts<>+0x1c(SB), X10 // 1
	VXORPS       X9, X9, X9             // 0

loop:
	TESTQ CX, CX
	JZ    done
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3

	// amax = max |x|
	VANDPS       Y15, Y0, Y4
	VANDPS       Y15, Y1, Y5
	VANDPS       Y15, Y2, Y6
	VANDPS       Y15, Y3, Y8
	VMAXPS       Y5, Y4, Y4
	VMAXPS       Y8, Y6, Y6
	VMAXPS       Y6, Y4, Y4
	VEXTRACTF128 $1, Y4, X5
	VMAXPS       X5, X4, X4
	VPERMILPS    $0x4e, X4, X5
	VMAXPS       X5, X4, X4
	VPERMILPS    $0xb1, X4, X5
	VMAXPS       X5, X4, X4

	// d = amax/127 stored as f16; id = d != 0 ? 1/d : 0
	VDIVSS       X11, X4, X6
	VCVTPS2PH    $0, X6, X8
	VPEXTRW      $0, X8, AX
	MOVW         AX, (DI)
	VDIVSS       X6, X10, X7
	VCMPSS       $4, X9, X6, X8
	VANDPS       X8, X7, X7
	VBROADCASTSS X7, Y7

	ROUNDQ(Y0, Y4)
	ROUNDQ(Y1, Y5)
	ROUNDQ(Y2, Y6)
	ROUNDQ(Y3, Y8)
	VPACKSSDW Y1, Y0, Y0
	VPACKSSDW Y3, Y2, Y2
	VPACKSSWB Y2, Y0, Y0
	VPERMD    Y0, Y12, Y0
	VMOVDQU   Y0, 2(DI)

	ADDQ $128, SI
	ADDQ $34, DI
	DECQ CX
	JMP  loop

done:
	VZEROUPPER
	RET

// func dequantQ8_0AVX2(dst *float32, src *byte, nblocks int)
TEXT ·dequantQ8_0AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ nblocks+16(FP), CX

loop:
	TESTQ CX, CX
	JZ    done
	MOVWLZX      (SI), AX
	VMOVD        AX, X0
	VCVTPH2PS    X0, X0
	VBROADCASTSS X0, Y0
	VPMOVSXBD    2(SI), Y1
	VPMOVSXBD    10(SI), Y2
	VPMOVSXBD    18(SI), Y3
	VPMOVSXBD    26(SI), Y4
	VCVTDQ2PS    Y1, Y1
	VCVTDQ2PS    Y2, Y2
	VCVTDQ2PS    Y3, Y3
	VCVTDQ2PS    Y4, Y4
	VMULPS       Y0, Y1, Y1
	VMULPS       Y0, Y2, Y2
	VMULPS       Y0, Y3, Y3
	VMULPS       Y0, Y4, Y4
	VMOVUPS      Y1, (DI)
	VMOVUPS      Y2, 32(DI)
	VMOVUPS      Y3, 64(DI)
	VMOVUPS      Y4, 96(DI)
	ADDQ         $34, SI
	ADDQ         $128, DI
	DECQ         CX
	JMP          loop

done:
	VZEROUPPER
	RET
