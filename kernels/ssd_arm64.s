//go:build !noasm

#include "textflag.h"

// The step of Mamba-2's scan over one channel's state (simdSet.ssdStep),
// as ssd_amd64.s: for i < n, v = a·s[i] + dx·b[i], s[i] = v, and the sum
// of v·c[i] returned; the Go wrapper finishes the tail. Instructions Go's
// arm64 assembler does not know are WORDs with the instruction in the
// comment, in GNU syntax.

// func ssdStepNEON(s, b, c *float32, a, dx float32, n int) float32; n%16 == 0
TEXT ·ssdStepNEON(SB), NOSPLIT, $0-44
	MOVD  s+0(FP), R0
	MOVD  b+8(FP), R1
	MOVD  c+16(FP), R2
	FMOVS a+24(FP), F8
	FMOVS dx+28(FP), F9
	MOVD  n+32(FP), R3
	VDUP  V8.S[0], V8.S4
	VDUP  V9.S[0], V9.S4
	MOVD  R0, R4
	VEOR  V16.B16, V16.B16, V16.B16
	VEOR  V17.B16, V17.B16, V17.B16
	VEOR  V18.B16, V18.B16, V18.B16
	VEOR  V19.B16, V19.B16, V19.B16
	CBZ   R3, reduce

loop:
	VLD1.P 64(R0), [V0.S4, V1.S4, V2.S4, V3.S4]
	VLD1.P 64(R1), [V4.S4, V5.S4, V6.S4, V7.S4]
	VLD1.P 64(R2), [V20.S4, V21.S4, V22.S4, V23.S4]
	WORD   $0x6e28dc00 // FMUL V0.4S, V0.4S, V8.4S
	WORD   $0x6e28dc21 // FMUL V1.4S, V1.4S, V8.4S
	WORD   $0x6e28dc42 // FMUL V2.4S, V2.4S, V8.4S
	WORD   $0x6e28dc63 // FMUL V3.4S, V3.4S, V8.4S
	VFMLA  V9.S4, V4.S4, V0.S4
	VFMLA  V9.S4, V5.S4, V1.S4
	VFMLA  V9.S4, V6.S4, V2.S4
	VFMLA  V9.S4, V7.S4, V3.S4
	VST1.P [V0.S4, V1.S4, V2.S4, V3.S4], 64(R4)
	VFMLA  V0.S4, V20.S4, V16.S4
	VFMLA  V1.S4, V21.S4, V17.S4
	VFMLA  V2.S4, V22.S4, V18.S4
	VFMLA  V3.S4, V23.S4, V19.S4
	SUBS   $16, R3, R3
	BNE    loop

reduce:
	WORD  $0x4e31d610 // FADD V16.4S, V16.4S, V17.4S
	WORD  $0x4e33d652 // FADD V18.4S, V18.4S, V19.4S
	WORD  $0x4e32d610 // FADD V16.4S, V16.4S, V18.4S
	WORD  $0x6e30d610 // FADDP V16.4S, V16.4S, V16.4S
	WORD  $0x7e30da00 // FADDP S0, V16.2S
	FMOVS F0, ret+40(FP)
	RET

// The steps of all P channels of one head (simdSet.ssdRows), as
// ssd_amd64.s: for each channel p, with dx = d·x[p], ssdStep over its N
// state values (s advancing N a channel) and y[p] the sum.

// func ssdRowsNEON(s, x, b, c, y *float32, a, d float32, P, N int); N%16 == 0, N > 0
TEXT ·ssdRowsNEON(SB), NOSPLIT, $0-64
	MOVD  s+0(FP), R0
	MOVD  x+8(FP), R5
	MOVD  b+16(FP), R6
	MOVD  c+24(FP), R7
	MOVD  y+32(FP), R8
	FMOVS a+40(FP), F8
	FMOVS d+44(FP), F10
	MOVD  P+48(FP), R9
	MOVD  N+56(FP), R10
	VDUP  V8.S[0], V8.S4
	MOVD  R0, R4

row:
	CBZ   R9, done
	FMOVS (R5), F9
	FMULS F10, F9, F9
	VDUP  V9.S[0], V9.S4
	VEOR  V16.B16, V16.B16, V16.B16
	VEOR  V17.B16, V17.B16, V17.B16
	VEOR  V18.B16, V18.B16, V18.B16
	VEOR  V19.B16, V19.B16, V19.B16
	MOVD  R6, R1
	MOVD  R7, R2
	MOVD  R10, R3

inner:
	VLD1.P 64(R0), [V0.S4, V1.S4, V2.S4, V3.S4]
	VLD1.P 64(R1), [V4.S4, V5.S4, V6.S4, V7.S4]
	VLD1.P 64(R2), [V20.S4, V21.S4, V22.S4, V23.S4]
	WORD   $0x6e28dc00 // FMUL V0.4S, V0.4S, V8.4S
	WORD   $0x6e28dc21 // FMUL V1.4S, V1.4S, V8.4S
	WORD   $0x6e28dc42 // FMUL V2.4S, V2.4S, V8.4S
	WORD   $0x6e28dc63 // FMUL V3.4S, V3.4S, V8.4S
	VFMLA  V9.S4, V4.S4, V0.S4
	VFMLA  V9.S4, V5.S4, V1.S4
	VFMLA  V9.S4, V6.S4, V2.S4
	VFMLA  V9.S4, V7.S4, V3.S4
	VST1.P [V0.S4, V1.S4, V2.S4, V3.S4], 64(R4)
	VFMLA  V0.S4, V20.S4, V16.S4
	VFMLA  V1.S4, V21.S4, V17.S4
	VFMLA  V2.S4, V22.S4, V18.S4
	VFMLA  V3.S4, V23.S4, V19.S4
	SUBS   $16, R3, R3
	BNE    inner

	WORD  $0x4e31d610 // FADD V16.4S, V16.4S, V17.4S
	WORD  $0x4e33d652 // FADD V18.4S, V18.4S, V19.4S
	WORD  $0x4e32d610 // FADD V16.4S, V16.4S, V18.4S
	WORD  $0x6e30d610 // FADDP V16.4S, V16.4S, V16.4S
	WORD  $0x7e30da00 // FADDP S0, V16.2S
	FMOVS F0, (R8)
	ADD   $4, R5
	ADD   $4, R8
	SUB   $1, R9
	B     row

done:
	RET
