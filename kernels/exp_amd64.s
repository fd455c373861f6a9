//go:build !noasm

#include "textflag.h"

// Constants of expGo (exp.go), in its order: clamp bounds, log2(e), ln 2
// split in two, the polynomial, 1.
DATA expConsts<>+0(SB)/4, $0xc2aeac4f  // lo
DATA expConsts<>+4(SB)/4, $0x42b00000  // hi
DATA expConsts<>+8(SB)/4, $0x3fb8aa3b  // log2e
DATA expConsts<>+12(SB)/4, $0x3f318000 // c1
DATA expConsts<>+16(SB)/4, $0xb95e8083 // c2
DATA expConsts<>+20(SB)/4, $0x39506967 // p0
DATA expConsts<>+24(SB)/4, $0x3ab743ce // p1
DATA expConsts<>+28(SB)/4, $0x3c088908 // p2
DATA expConsts<>+32(SB)/4, $0x3d2aa9c1 // p3
DATA expConsts<>+36(SB)/4, $0x3e2aaaaa // p4
DATA expConsts<>+40(SB)/4, $0x3f000000 // p5
DATA expConsts<>+44(SB)/4, $0x3f800000 // 1
DATA expConsts<>+48(SB)/4, $127
GLOBL expConsts<>(SB), RODATA|NOPTR, $52

// func expAVX512(x *float32, n int); n%16 == 0. x[i] = e^x[i] in place.
TEXT ·expAVX512(SB), NOSPLIT, $0-16
	MOVQ         x+0(FP), DI
	MOVQ         n+8(FP), CX
	LEAQ         expConsts<>(SB), R8
	VBROADCASTSS 0(R8), Z16
	VBROADCASTSS 4(R8), Z17
	VBROADCASTSS 8(R8), Z18
	VBROADCASTSS 12(R8), Z19
	VBROADCASTSS 16(R8), Z20
	VBROADCASTSS 20(R8), Z21
	VBROADCASTSS 24(R8), Z22
	VBROADCASTSS 28(R8), Z23
	VBROADCASTSS 32(R8), Z24
	VBROADCASTSS 36(R8), Z25
	VBROADCASTSS 40(R8), Z26
	VBROADCASTSS 44(R8), Z27

loop:
	CMPQ          CX, $16
	JLT           done
	VMOVUPS       (DI), Z0
	VMAXPS        Z16, Z0, Z0
	VMINPS        Z17, Z0, Z0
	VMULPS        Z18, Z0, Z1
	VRNDSCALEPS   $0, Z1, Z1     // n = round-to-even(x·log2 e)
	VFNMADD231PS  Z19, Z1, Z0    // r = x - n·c1
	VFNMADD231PS  Z20, Z1, Z0    // r -= n·c2
	VMULPS        Z0, Z0, Z2     // z = r²
	VMOVAPS       Z21, Z3
	VFMADD213PS   Z22, Z0, Z3    // y = y·r + p1 …
	VFMADD213PS   Z23, Z0, Z3
	VFMADD213PS   Z24, Z0, Z3
	VFMADD213PS   Z25, Z0, Z3
	VFMADD213PS   Z26, Z0, Z3
	VFMADD213PS   Z0, Z2, Z3     // y = y·z + r
	VADDPS        Z27, Z3, Z3    // y += 1
	VSCALEFPS     Z1, Z3, Z3     // y·2ⁿ
	VMOVUPS       Z3, (DI)
	ADDQ          $64, DI
	SUBQ          $16, CX
	JMP           loop

done:
	VZEROUPPER
	RET

// func expAVX2(x *float32, n int); n%8 == 0.
TEXT ·expAVX2(SB), NOSPLIT, $0-16
	MOVQ         x+0(FP), DI
	MOVQ         n+8(FP), CX
	LEAQ         expConsts<>(SB), R8
	VBROADCASTSS 0(R8), Y4
	VBROADCASTSS 4(R8), Y5
	VBROADCASTSS 8(R8), Y6
	VBROADCASTSS 12(R8), Y7
	VBROADCASTSS 16(R8), Y8
	VBROADCASTSS 20(R8), Y9
	VBROADCASTSS 24(R8), Y10
	VBROADCASTSS 28(R8), Y11
	VBROADCASTSS 32(R8), Y12
	VBROADCASTSS 36(R8), Y13
	VBROADCASTSS 40(R8), Y14
	VBROADCASTSS 44(R8), Y15

loop:
	CMPQ          CX, $8
	JLT           done
	VMOVUPS       (DI), Y0
	VMAXPS        Y4, Y0, Y0
	VMINPS        Y5, Y0, Y0
	VMULPS        Y6, Y0, Y1
	VROUNDPS      $0, Y1, Y1
	VFNMADD231PS  Y7, Y1, Y0
	VFNMADD231PS  Y8, Y1, Y0
	VMULPS        Y0, Y0, Y2
	VMOVAPS       Y9, Y3
	VFMADD213PS   Y10, Y0, Y3
	VFMADD213PS   Y11, Y0, Y3
	VFMADD213PS   Y12, Y0, Y3
	VFMADD213PS   Y13, Y0, Y3
	VFMADD213PS   Y14, Y0, Y3
	VFMADD213PS   Y0, Y2, Y3
	VADDPS        Y15, Y3, Y3
	// 2ⁿ built in the exponent field: n ∈ [-126, 127] after the clamp.
	VCVTPS2DQ     Y1, Y1
	VPBROADCASTD  48(R8), Y2
	VPADDD        Y2, Y1, Y1
	VPSLLD        $23, Y1, Y1
	VMULPS        Y1, Y3, Y3
	VMOVUPS       Y3, (DI)
	ADDQ          $32, DI
	SUBQ          $8, CX
	JMP           loop

done:
	VZEROUPPER
	RET
