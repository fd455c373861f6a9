//go:build !noasm

#include "textflag.h"

// The float32 loops of the NEON set (stubs_arm64.go): dot, axpy, the
// 6×16 gemm microkernel and exp, over whole vectors; the Go wrappers finish
// the tails. Instructions Go's arm64 assembler does not know are written as
// WORD with the instruction in the comment, in GNU syntax (re-encode one
// with aarch64-linux-gnu-as to check it).

// func dotNEON(a *float32, b *byte, n int) float32; n%16 == 0
TEXT ·dotNEON(SB), NOSPLIT, $0-28
	MOVD a+0(FP), R0
	MOVD b+8(FP), R1
	MOVD n+16(FP), R2
	VEOR V16.B16, V16.B16, V16.B16
	VEOR V17.B16, V17.B16, V17.B16
	VEOR V18.B16, V18.B16, V18.B16
	VEOR V19.B16, V19.B16, V19.B16
	CBZ  R2, reduce

loop:
	VLD1.P 64(R0), [V0.S4, V1.S4, V2.S4, V3.S4]
	VLD1.P 64(R1), [V4.S4, V5.S4, V6.S4, V7.S4]
	VFMLA  V0.S4, V4.S4, V16.S4
	VFMLA  V1.S4, V5.S4, V17.S4
	VFMLA  V2.S4, V6.S4, V18.S4
	VFMLA  V3.S4, V7.S4, V19.S4
	SUBS   $16, R2, R2
	BNE    loop

reduce:
	WORD $0x4e31d610	// FADD V16.4S, V16.4S, V17.4S
	WORD $0x4e33d652	// FADD V18.4S, V18.4S, V19.4S
	WORD $0x4e32d610	// FADD V16.4S, V16.4S, V18.4S
	WORD $0x6e30d610	// FADDP V16.4S, V16.4S, V16.4S
	WORD $0x7e30da00	// FADDP S0, V16.2S
	FMOVS F0, ret+24(FP)
	RET

// func axpyNEON(dst *float32, a float32, x *float32, n int); n%16 == 0
TEXT ·axpyNEON(SB), NOSPLIT, $0-32
	MOVD  dst+0(FP), R0
	FMOVS a+8(FP), F8
	MOVD  x+16(FP), R1
	MOVD  n+24(FP), R2
	VDUP  V8.S[0], V8.S4
	MOVD  R0, R3
	CBZ   R2, done

loop:
	VLD1.P 64(R0), [V0.S4, V1.S4, V2.S4, V3.S4]
	VLD1.P 64(R1), [V4.S4, V5.S4, V6.S4, V7.S4]
	VFMLA  V8.S4, V4.S4, V0.S4
	VFMLA  V8.S4, V5.S4, V1.S4
	VFMLA  V8.S4, V6.S4, V2.S4
	VFMLA  V8.S4, V7.S4, V3.S4
	VST1.P [V0.S4, V1.S4, V2.S4, V3.S4], 64(R3)
	SUBS   $16, R2, R2
	BNE    loop

done:
	RET

// func gemm6x16NEON(w *byte, ldw int, xt *float32, kc int, c *float32, acc bool)
//
// One 6×16 tile of Cᵀ (simdSet.gemm): row i of the tile is V8+4i..V11+4i,
// each k broadcasts w[i][k] (LD1R from the row's own pointer) and
// multiplies the 16 packed activations of xt[k].
TEXT ·gemm6x16NEON(SB), NOSPLIT, $0-41
	MOVD    w+0(FP), R0
	MOVD    ldw+8(FP), R9
	MOVD    xt+16(FP), R6
	MOVD    kc+24(FP), R7
	MOVD    c+32(FP), R8
	MOVBU   acc+40(FP), R10
	LSL     $2, R9, R9
	ADD     R9, R0, R1
	ADD     R9, R1, R2
	ADD     R9, R2, R3
	ADD     R9, R3, R4
	ADD     R9, R4, R5
	CBZ     R10, zero
	MOVD    R8, R11
	VLD1.P  64(R11), [V8.S4, V9.S4, V10.S4, V11.S4]
	VLD1.P  64(R11), [V12.S4, V13.S4, V14.S4, V15.S4]
	VLD1.P  64(R11), [V16.S4, V17.S4, V18.S4, V19.S4]
	VLD1.P  64(R11), [V20.S4, V21.S4, V22.S4, V23.S4]
	VLD1.P  64(R11), [V24.S4, V25.S4, V26.S4, V27.S4]
	VLD1    (R11), [V28.S4, V29.S4, V30.S4, V31.S4]
	B       kloop

zero:
	VEOR V8.B16, V8.B16, V8.B16
	VEOR V9.B16, V9.B16, V9.B16
	VEOR V10.B16, V10.B16, V10.B16
	VEOR V11.B16, V11.B16, V11.B16
	VEOR V12.B16, V12.B16, V12.B16
	VEOR V13.B16, V13.B16, V13.B16
	VEOR V14.B16, V14.B16, V14.B16
	VEOR V15.B16, V15.B16, V15.B16
	VEOR V16.B16, V16.B16, V16.B16
	VEOR V17.B16, V17.B16, V17.B16
	VEOR V18.B16, V18.B16, V18.B16
	VEOR V19.B16, V19.B16, V19.B16
	VEOR V20.B16, V20.B16, V20.B16
	VEOR V21.B16, V21.B16, V21.B16
	VEOR V22.B16, V22.B16, V22.B16
	VEOR V23.B16, V23.B16, V23.B16
	VEOR V24.B16, V24.B16, V24.B16
	VEOR V25.B16, V25.B16, V25.B16
	VEOR V26.B16, V26.B16, V26.B16
	VEOR V27.B16, V27.B16, V27.B16
	VEOR V28.B16, V28.B16, V28.B16
	VEOR V29.B16, V29.B16, V29.B16
	VEOR V30.B16, V30.B16, V30.B16
	VEOR V31.B16, V31.B16, V31.B16

kloop:
	CBZ    R7, store
	VLD1.P 64(R6), [V0.S4, V1.S4, V2.S4, V3.S4]
	VLD1R.P 4(R0), [V4.S4]
	VLD1R.P 4(R1), [V5.S4]
	VFMLA  V4.S4, V0.S4, V8.S4
	VFMLA  V4.S4, V1.S4, V9.S4
	VFMLA  V4.S4, V2.S4, V10.S4
	VFMLA  V4.S4, V3.S4, V11.S4
	VLD1R.P 4(R2), [V4.S4]
	VFMLA  V5.S4, V0.S4, V12.S4
	VFMLA  V5.S4, V1.S4, V13.S4
	VFMLA  V5.S4, V2.S4, V14.S4
	VFMLA  V5.S4, V3.S4, V15.S4
	VLD1R.P 4(R3), [V5.S4]
	VFMLA  V4.S4, V0.S4, V16.S4
	VFMLA  V4.S4, V1.S4, V17.S4
	VFMLA  V4.S4, V2.S4, V18.S4
	VFMLA  V4.S4, V3.S4, V19.S4
	VLD1R.P 4(R4), [V4.S4]
	VFMLA  V5.S4, V0.S4, V20.S4
	VFMLA  V5.S4, V1.S4, V21.S4
	VFMLA  V5.S4, V2.S4, V22.S4
	VFMLA  V5.S4, V3.S4, V23.S4
	VLD1R.P 4(R5), [V5.S4]
	VFMLA  V4.S4, V0.S4, V24.S4
	VFMLA  V4.S4, V1.S4, V25.S4
	VFMLA  V4.S4, V2.S4, V26.S4
	VFMLA  V4.S4, V3.S4, V27.S4
	VFMLA  V5.S4, V0.S4, V28.S4
	VFMLA  V5.S4, V1.S4, V29.S4
	VFMLA  V5.S4, V2.S4, V30.S4
	VFMLA  V5.S4, V3.S4, V31.S4
	SUB    $1, R7, R7
	B      kloop

store:
	VST1.P [V8.S4, V9.S4, V10.S4, V11.S4], 64(R8)
	VST1.P [V12.S4, V13.S4, V14.S4, V15.S4], 64(R8)
	VST1.P [V16.S4, V17.S4, V18.S4, V19.S4], 64(R8)
	VST1.P [V20.S4, V21.S4, V22.S4, V23.S4], 64(R8)
	VST1.P [V24.S4, V25.S4, V26.S4, V27.S4], 64(R8)
	VST1   [V28.S4, V29.S4, V30.S4, V31.S4], (R8)
	RET

// Constants of expGo (exp.go), in its order: clamp bounds, log2(e), ln 2
// split in two, the polynomial, 1, and the exponent bias 127<<23.
DATA expConstsNEON<>+0(SB)/4, $0xc2aeac4f  // lo
DATA expConstsNEON<>+4(SB)/4, $0x42b00000  // hi
DATA expConstsNEON<>+8(SB)/4, $0x3fb8aa3b  // log2e
DATA expConstsNEON<>+12(SB)/4, $0x3f318000 // c1
DATA expConstsNEON<>+16(SB)/4, $0xb95e8083 // c2
DATA expConstsNEON<>+20(SB)/4, $0x39506967 // p0
DATA expConstsNEON<>+24(SB)/4, $0x3ab743ce // p1
DATA expConstsNEON<>+28(SB)/4, $0x3c088908 // p2
DATA expConstsNEON<>+32(SB)/4, $0x3d2aa9c1 // p3
DATA expConstsNEON<>+36(SB)/4, $0x3e2aaaaa // p4
DATA expConstsNEON<>+40(SB)/4, $0x3f000000 // p5
DATA expConstsNEON<>+44(SB)/4, $0x3f800000 // 1
DATA expConstsNEON<>+48(SB)/4, $0x3f800000 // 127<<23
GLOBL expConstsNEON<>(SB), RODATA|NOPTR, $52

// func expNEON(x *float32, n int); n%16 == 0. x[i] = e^x[i] in place, the
// steps of expGo with fused multiply-adds where the AVX kernels fuse them.
TEXT ·expNEON(SB), NOSPLIT, $0-16
	MOVD x+0(FP), R0
	MOVD n+8(FP), R2
	MOVD $expConstsNEON<>(SB), R3
	VLD1R.P 4(R3), [V16.S4]
	VLD1R.P 4(R3), [V17.S4]
	VLD1R.P 4(R3), [V18.S4]
	VLD1R.P 4(R3), [V19.S4]
	VLD1R.P 4(R3), [V20.S4]
	VLD1R.P 4(R3), [V21.S4]
	VLD1R.P 4(R3), [V22.S4]
	VLD1R.P 4(R3), [V23.S4]
	VLD1R.P 4(R3), [V24.S4]
	VLD1R.P 4(R3), [V25.S4]
	VLD1R.P 4(R3), [V26.S4]
	VLD1R.P 4(R3), [V27.S4]
	VLD1R   (R3), [V28.S4]
	MOVD R0, R1
	CBZ  R2, done

loop:
	VLD1 (R0), [V0.S4]
	ADD  $16, R0, R0
	WORD $0x4e30f400	// FMAX V0.4S, V0.4S, V16.4S
	WORD $0x4eb1f400	// FMIN V0.4S, V0.4S, V17.4S
	WORD $0x6e32dc01	// FMUL V1.4S, V0.4S, V18.4S
	WORD $0x4e218821	// FRINTN V1.4S, V1.4S
	WORD $0x4eb3cc20	// FMLS V0.4S, V1.4S, V19.4S
	WORD $0x4eb4cc20	// FMLS V0.4S, V1.4S, V20.4S
	WORD $0x6e20dc02	// FMUL V2.4S, V0.4S, V0.4S
	VORR V22.B16, V22.B16, V4.B16
	VFMLA V21.S4, V0.S4, V4.S4 // y = p0·r + p1
	VORR V23.B16, V23.B16, V3.B16
	VFMLA V4.S4, V0.S4, V3.S4
	VORR V24.B16, V24.B16, V4.B16
	VFMLA V3.S4, V0.S4, V4.S4
	VORR V25.B16, V25.B16, V3.B16
	VFMLA V4.S4, V0.S4, V3.S4
	VORR V26.B16, V26.B16, V4.B16
	VFMLA V3.S4, V0.S4, V4.S4
	VFMLA V4.S4, V2.S4, V0.S4 // y = y·z + r
	WORD $0x4e3bd400	// FADD V0.4S, V0.4S, V27.4S
	WORD $0x4ea1b821	// FCVTZS V1.4S, V1.4S
	VSHL $23, V1.S4, V1.S4
	VADD V28.S4, V1.S4, V1.S4
	WORD $0x6e21dc00	// FMUL V0.4S, V0.4S, V1.4S
	VST1.P [V0.S4], 16(R1)
	SUBS $4, R2, R2
	BNE  loop

done:
	RET

// func prefetchRows(p *byte, stride, rows, n int); rows ≥ 1, n ≥ 1
//
// PRFM PLDL2KEEP (into L2) every 64-byte line of n bytes at p, p+stride,
// …, p+(rows-1)·stride: gemmSIMD's next weight block, fetched while the
// microkernel works on this one.
TEXT ·prefetchRows(SB), NOSPLIT, $0-32
	MOVD p+0(FP), R0
	MOVD stride+8(FP), R1
	MOVD rows+16(FP), R2
	MOVD n+24(FP), R3

prow:
	MOVD R0, R4
	ADD  R3, R0, R5

pline:
	PRFM (R4), PLDL2KEEP
	ADD  $64, R4
	CMP  R5, R4
	BLO  pline
	SUB  $1, R5
	PRFM (R5), PLDL2KEEP
	ADD  R1, R0
	SUBS $1, R2, R2
	BNE  prow
	RET
