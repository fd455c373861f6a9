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

// Dword index of block b's amax after quantQ8_0AVX512's reduction tree.
DATA q8lane<>+0x00(SB)/4, $0
DATA q8lane<>+0x04(SB)/4, $4
DATA q8lane<>+0x08(SB)/4, $8
DATA q8lane<>+0x0c(SB)/4, $12
DATA q8lane<>+0x10(SB)/4, $2
DATA q8lane<>+0x14(SB)/4, $6
DATA q8lane<>+0x18(SB)/4, $10
DATA q8lane<>+0x1c(SB)/4, $14
GLOBL q8lane<>(SB), RODATA|NOPTR, $32

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

// func quantQ8_0AVX512(dst *byte, src *float32, nblocks int); nblocks%8 == 0
//
// Eight blocks per iteration, all 256 inputs held in Z0–Z15 (block b in
// Z2b, Z2b+1). The eight max-abs reductions are done together by a
// transposing tree of lane shuffles, so the divides (d = amax/127 and
// id = 1/d) and the f16 conversion of d run once per eight blocks on vectors
// instead of twice per block on scalars, which was the single-block
// kernel's bottleneck. After the tree, block b's amax sits in dword 4b
// (b < 4) or 4(b-4)+2 (b >= 4). Rounding is the same trunc(v +
// copysign(0.5-2^-25, v)) as the AVX2 kernel; VPMOVSDB narrows with signed
// saturation straight to memory.
TEXT ·quantQ8_0AVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ nblocks+16(FP), CX
	VPBROADCASTD consts<>+0x0c(SB), Z31 // abs mask
	VPBROADCASTD consts<>+0x10(SB), Z29 // sign mask
	VPBROADCASTD consts<>+0x14(SB), Z28 // 0.5-2^-25
	VPBROADCASTD consts<>+0x18(SB), Z30 // 127
	VPBROADCASTD consts<>+0x1c(SB), Z27 // 1
	VPXORD       Z26, Z26, Z26          // 0

loop:
	CMPQ CX, $8
	JLT  done

	VMOVUPS 0(SI), Z0
	VMOVUPS 64(SI), Z1
	VMOVUPS 128(SI), Z2
	VMOVUPS 192(SI), Z3
	VMOVUPS 256(SI), Z4
	VMOVUPS 320(SI), Z5
	VMOVUPS 384(SI), Z6
	VMOVUPS 448(SI), Z7
	VMOVUPS 512(SI), Z8
	VMOVUPS 576(SI), Z9
	VMOVUPS 640(SI), Z10
	VMOVUPS 704(SI), Z11
	VMOVUPS 768(SI), Z12
	VMOVUPS 832(SI), Z13
	VMOVUPS 896(SI), Z14
	VMOVUPS 960(SI), Z15

	// per block: 16 lanes of max |x|
	VPANDD Z31, Z0, Z16
	VPANDD Z31, Z1, Z24
	VMAXPS Z24, Z16, Z16
	VPANDD Z31, Z2, Z17
	VPANDD Z31, Z3, Z24
	VMAXPS Z24, Z17, Z17
	VPANDD Z31, Z4, Z18
	VPANDD Z31, Z5, Z24
	VMAXPS Z24, Z18, Z18
	VPANDD Z31, Z6, Z19
	VPANDD Z31, Z7, Z24
	VMAXPS Z24, Z19, Z19
	VPANDD Z31, Z8, Z20
	VPANDD Z31, Z9, Z24
	VMAXPS Z24, Z20, Z20
	VPANDD Z31, Z10, Z21
	VPANDD Z31, Z11, Z24
	VMAXPS Z24, Z21, Z21
	VPANDD Z31, Z12, Z22
	VPANDD Z31, Z13, Z24
	VMAXPS Z24, Z22, Z22
	VPANDD Z31, Z14, Z23
	VPANDD Z31, Z15, Z24
	VMAXPS Z24, Z23, Z23

	// 512 -> 256 bits: Z16 = [A0 lo|hi max, A1 lo|hi max], likewise Z18, Z20, Z22
	VSHUFF64X2 $0x44, Z17, Z16, Z24
	VSHUFF64X2 $0xEE, Z17, Z16, Z25
	VMAXPS     Z25, Z24, Z16
	VSHUFF64X2 $0x44, Z19, Z18, Z24
	VSHUFF64X2 $0xEE, Z19, Z18, Z25
	VMAXPS     Z25, Z24, Z18
	VSHUFF64X2 $0x44, Z21, Z20, Z24
	VSHUFF64X2 $0xEE, Z21, Z20, Z25
	VMAXPS     Z25, Z24, Z20
	VSHUFF64X2 $0x44, Z23, Z22, Z24
	VSHUFF64X2 $0xEE, Z23, Z22, Z25
	VMAXPS     Z25, Z24, Z22

	// 256 -> 128 bits: lane k of Z16 is block k, of Z20 block 4+k
	VSHUFF64X2 $0x88, Z18, Z16, Z24
	VSHUFF64X2 $0xDD, Z18, Z16, Z25
	VMAXPS     Z25, Z24, Z16
	VSHUFF64X2 $0x88, Z22, Z20, Z24
	VSHUFF64X2 $0xDD, Z22, Z20, Z25
	VMAXPS     Z25, Z24, Z20

	// 128 -> 32 bits within lanes: dwords 4k, 4k+1 = block k; 4k+2, 4k+3 = block 4+k
	VSHUFPS   $0x88, Z20, Z16, Z24
	VSHUFPS   $0xDD, Z20, Z16, Z25
	VMAXPS    Z25, Z24, Z16
	VPERMILPS $0xb1, Z16, Z24
	VMAXPS    Z24, Z16, Z16

	// d = amax/127, stored as f16; id = d != 0 ? 1/d : 0. Everything stays
	// in registers: a round trip through the stack costs failed store
	// forwarding (a 64-byte store read back as 4-byte pieces).
	VDIVPS        Z30, Z16, Z17
	VCVTPS2PH     $0, Z17, Y18
	VEXTRACTI32X4 $1, Y18, X19
	VCMPPS        $4, Z26, Z17, K1
	VDIVPS.Z      Z17, Z27, K1, Z20

	// block 0: amax in dword 0
	VPEXTRW      $0, X18, AX
	MOVW         AX, 0(DI)
	VPBROADCASTD q8lane<>+0(SB), Z24
	VPERMPS      Z20, Z24, Z24
	VMULPS       Z24, Z0, Z0
	VPANDD       Z29, Z0, Z25
	VPORD        Z28, Z25, Z25
	VADDPS       Z25, Z0, Z0
	VCVTTPS2DQ   Z0, Z0
	VPMOVSDB     Z0, 2(DI)
	VMULPS       Z24, Z1, Z1
	VPANDD       Z29, Z1, Z25
	VPORD        Z28, Z25, Z25
	VADDPS       Z25, Z1, Z1
	VCVTTPS2DQ   Z1, Z1
	VPMOVSDB     Z1, 18(DI)

	// block 1: amax in dword 4
	VPEXTRW      $4, X18, AX
	MOVW         AX, 34(DI)
	VPBROADCASTD q8lane<>+4(SB), Z24
	VPERMPS      Z20, Z24, Z24
	VMULPS       Z24, Z2, Z2
	VPANDD       Z29, Z2, Z25
	VPORD        Z28, Z25, Z25
	VADDPS       Z25, Z2, Z2
	VCVTTPS2DQ   Z2, Z2
	VPMOVSDB     Z2, 36(DI)
	VMULPS       Z24, Z3, Z3
	VPANDD       Z29, Z3, Z25
	VPORD        Z28, Z25, Z25
	VADDPS       Z25, Z3, Z3
	VCVTTPS2DQ   Z3, Z3
	VPMOVSDB     Z3, 52(DI)

	// block 2: amax in dword 8
	VPEXTRW      $0, X19, AX
	MOVW         AX, 68(DI)
	VPBROADCASTD q8lane<>+8(SB), Z24
	VPERMPS      Z20, Z24, Z24
	VMULPS       Z24, Z4, Z4
	VPANDD       Z29, Z4, Z25
	VPORD        Z28, Z25, Z25
	VADDPS       Z25, Z4, Z4
	VCVTTPS2DQ   Z4, Z4
	VPMOVSDB     Z4, 70(DI)
	VMULPS       Z24, Z5, Z5
	VPANDD       Z29, Z5, Z25
	VPORD        Z28, Z25, Z25
	VADDPS       Z25, Z5, Z5
	VCVTTPS2DQ   Z5, Z5
	VPMOVSDB     Z5, 86(DI)

	// block 3: amax in dword 12
	VPEXTRW      $4, X19, AX
	MOVW         AX, 102(DI)
	VPBROADCASTD q8lane<>+12(SB), Z24
	VPERMPS      Z20, Z24, Z24
	VMULPS       Z24, Z6, Z6
	VPANDD       Z29, Z6, Z25
	VPORD        Z28, Z25, Z25
	VADDPS       Z25, Z6, Z6
	VCVTTPS2DQ   Z6, Z6
	VPMOVSDB     Z6, 104(DI)
	VMULPS       Z24, Z7, Z7
	VPANDD       Z29, Z7, Z25
	VPORD        Z28, Z25, Z25
	VADDPS       Z25, Z7, Z7
	VCVTTPS2DQ   Z7, Z7
	VPMOVSDB     Z7, 120(DI)

	// block 4: amax in dword 2
	VPEXTRW      $2, X18, AX
	MOVW         AX, 136(DI)
	VPBROADCASTD q8lane<>+16(SB), Z24
	VPERMPS      Z20, Z24, Z24
	VMULPS       Z24, Z8, Z8
	VPANDD       Z29, Z8, Z25
	VPORD        Z28, Z25, Z25
	VADDPS       Z25, Z8, Z8
	VCVTTPS2DQ   Z8, Z8
	VPMOVSDB     Z8, 138(DI)
	VMULPS       Z24, Z9, Z9
	VPANDD       Z29, Z9, Z25
	VPORD        Z28, Z25, Z25
	VADDPS       Z25, Z9, Z9
	VCVTTPS2DQ   Z9, Z9
	VPMOVSDB     Z9, 154(DI)

	// block 5: amax in dword 6
	VPEXTRW      $6, X18, AX
	MOVW         AX, 170(DI)
	VPBROADCASTD q8lane<>+20(SB), Z24
	VPERMPS      Z20, Z24, Z24
	VMULPS       Z24, Z10, Z10
	VPANDD       Z29, Z10, Z25
	VPORD        Z28, Z25, Z25
	VADDPS       Z25, Z10, Z10
	VCVTTPS2DQ   Z10, Z10
	VPMOVSDB     Z10, 172(DI)
	VMULPS       Z24, Z11, Z11
	VPANDD       Z29, Z11, Z25
	VPORD        Z28, Z25, Z25
	VADDPS       Z25, Z11, Z11
	VCVTTPS2DQ   Z11, Z11
	VPMOVSDB     Z11, 188(DI)

	// block 6: amax in dword 10
	VPEXTRW      $2, X19, AX
	MOVW         AX, 204(DI)
	VPBROADCASTD q8lane<>+24(SB), Z24
	VPERMPS      Z20, Z24, Z24
	VMULPS       Z24, Z12, Z12
	VPANDD       Z29, Z12, Z25
	VPORD        Z28, Z25, Z25
	VADDPS       Z25, Z12, Z12
	VCVTTPS2DQ   Z12, Z12
	VPMOVSDB     Z12, 206(DI)
	VMULPS       Z24, Z13, Z13
	VPANDD       Z29, Z13, Z25
	VPORD        Z28, Z25, Z25
	VADDPS       Z25, Z13, Z13
	VCVTTPS2DQ   Z13, Z13
	VPMOVSDB     Z13, 222(DI)

	// block 7: amax in dword 14
	VPEXTRW      $6, X19, AX
	MOVW         AX, 238(DI)
	VPBROADCASTD q8lane<>+28(SB), Z24
	VPERMPS      Z20, Z24, Z24
	VMULPS       Z24, Z14, Z14
	VPANDD       Z29, Z14, Z25
	VPORD        Z28, Z25, Z25
	VADDPS       Z25, Z14, Z14
	VCVTTPS2DQ   Z14, Z14
	VPMOVSDB     Z14, 240(DI)
	VMULPS       Z24, Z15, Z15
	VPANDD       Z29, Z15, Z25
	VPORD        Z28, Z25, Z25
	VADDPS       Z25, Z15, Z15
	VCVTTPS2DQ   Z15, Z15
	VPMOVSDB     Z15, 256(DI)

	ADDQ $1024, SI
	ADDQ $272, DI
	SUBQ $8, CX
	JMP  loop

done:
	VZEROUPPER
	RET
