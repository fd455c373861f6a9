//go:build !noasm

#include "textflag.h"

// The integer dot products of MatMulQ on arm64 (simdSet.qdot): one weight
// row against one row of Q8_0 activations, forming ggml's eight int32
// lane sums per 32-element block (lane l: elements 4l..4l+3 of the block,
// qdot.go) and accumulating them in float32 exactly as dotQ0Generic does:
//
//	acc[l] = fma(dw·dx, float32(lane_l), acc[l])   (FMLA: one rounding)
//	result = ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7))
//
// so the result is the plain-Go bits. The lanes 0–3 and 4–7 are the two
// 16-byte halves of a block. With the dot-product extension one SDOT forms
// four lanes; without it SMULL/SMULL2 form the 16-bit products (|q·x| ≤
// 2¹⁴), SADDLP adds pairs into 32 bits and ADDP the pairs of pairs. WORD
// lines are instructions Go's assembler lacks, in GNU syntax.

// func qdotQ8_0SDOT(w, a *byte, nb int) float32: nb Q8_0 weight blocks (34 bytes: binary16 d, 32 int8)
// by nb Q8_0 activation blocks, lanes by SDOT.
TEXT ·qdotQ8_0SDOT(SB), NOSPLIT, $0-28
	MOVD w+0(FP), R0
	MOVD a+8(FP), R1
	MOVD nb+16(FP), R2
	VEOR V16.B16, V16.B16, V16.B16
	VEOR V17.B16, V17.B16, V17.B16
	CBZ  R2, reduce

loop:
	VLD1R.P 2(R0), [V8.H8]
	VLD1R.P 2(R1), [V9.H8]
	WORD $0x0e217908	// FCVTL V8.4S, V8.4H
	WORD $0x0e217929	// FCVTL V9.4S, V9.4H
	WORD $0x6e29dd0a	// FMUL V10.4S, V8.4S, V9.4S
	VLD1.P 32(R0), [V0.B16, V1.B16]
	VLD1.P 32(R1), [V3.B16, V4.B16]
	VEOR V5.B16, V5.B16, V5.B16
	WORD $0x4e839405	// SDOT V5.4S, V0.16B, V3.16B
	VEOR V6.B16, V6.B16, V6.B16
	WORD $0x4e849426	// SDOT V6.4S, V1.16B, V4.16B
	WORD $0x4e21d8a5	// SCVTF V5.4S, V5.4S
	WORD $0x4e21d8c6	// SCVTF V6.4S, V6.4S
	VFMLA V10.S4, V5.S4, V16.S4
	VFMLA V10.S4, V6.S4, V17.S4
	SUBS $1, R2, R2
	BNE  loop

reduce:
	WORD $0x4e31d610	// FADD V16.4S, V16.4S, V17.4S
	WORD $0x6e104211	// EXT V17.16B, V16.16B, V16.16B, #8
	WORD $0x4e31d610	// FADD V16.4S, V16.4S, V17.4S
	WORD $0x7e30da00	// FADDP S0, V16.2S
	FMOVS F0, ret+24(FP)
	RET

// func qdotQ8_0NEON(w, a *byte, nb int) float32: nb Q8_0 weight blocks (34 bytes: binary16 d, 32 int8)
// by nb Q8_0 activation blocks, lanes by SMULL/SADDLP.
TEXT ·qdotQ8_0NEON(SB), NOSPLIT, $0-28
	MOVD w+0(FP), R0
	MOVD a+8(FP), R1
	MOVD nb+16(FP), R2
	VEOR V16.B16, V16.B16, V16.B16
	VEOR V17.B16, V17.B16, V17.B16
	CBZ  R2, reduce

loop:
	VLD1R.P 2(R0), [V8.H8]
	VLD1R.P 2(R1), [V9.H8]
	WORD $0x0e217908	// FCVTL V8.4S, V8.4H
	WORD $0x0e217929	// FCVTL V9.4S, V9.4H
	WORD $0x6e29dd0a	// FMUL V10.4S, V8.4S, V9.4S
	VLD1.P 32(R0), [V0.B16, V1.B16]
	VLD1.P 32(R1), [V3.B16, V4.B16]
	WORD $0x0e23c005	// SMULL V5.8H, V0.8B, V3.8B
	WORD $0x4e23c00c	// SMULL2 V12.8H, V0.16B, V3.16B
	WORD $0x4e6028a5	// SADDLP V5.4S, V5.8H
	WORD $0x4e60298c	// SADDLP V12.4S, V12.8H
	WORD $0x4eacbca5	// ADDP V5.4S, V5.4S, V12.4S
	WORD $0x0e24c026	// SMULL V6.8H, V1.8B, V4.8B
	WORD $0x4e24c02c	// SMULL2 V12.8H, V1.16B, V4.16B
	WORD $0x4e6028c6	// SADDLP V6.4S, V6.8H
	WORD $0x4e60298c	// SADDLP V12.4S, V12.8H
	WORD $0x4eacbcc6	// ADDP V6.4S, V6.4S, V12.4S
	WORD $0x4e21d8a5	// SCVTF V5.4S, V5.4S
	WORD $0x4e21d8c6	// SCVTF V6.4S, V6.4S
	VFMLA V10.S4, V5.S4, V16.S4
	VFMLA V10.S4, V6.S4, V17.S4
	SUBS $1, R2, R2
	BNE  loop

reduce:
	WORD $0x4e31d610	// FADD V16.4S, V16.4S, V17.4S
	WORD $0x6e104211	// EXT V17.16B, V16.16B, V16.16B, #8
	WORD $0x4e31d610	// FADD V16.4S, V16.4S, V17.4S
	WORD $0x7e30da00	// FADDP S0, V16.2S
	FMOVS F0, ret+24(FP)
	RET

// func qdotQ4_0SDOT(w, a *byte, nb int) float32: nb Q4_0 weight blocks (18 bytes: binary16 d, 16 bytes of
// nibbles: low ones elements 0–15, high ones 16–31, each minus 8)
// by nb Q8_0 activation blocks, lanes by SDOT.
TEXT ·qdotQ4_0SDOT(SB), NOSPLIT, $0-28
	MOVD w+0(FP), R0
	MOVD a+8(FP), R1
	MOVD nb+16(FP), R2
	VEOR V16.B16, V16.B16, V16.B16
	VEOR V17.B16, V17.B16, V17.B16
	VMOVI $15, V30.B16
	VMOVI $8, V31.B16
	CBZ  R2, reduce

loop:
	VLD1R.P 2(R0), [V8.H8]
	VLD1R.P 2(R1), [V9.H8]
	WORD $0x0e217908	// FCVTL V8.4S, V8.4H
	WORD $0x0e217929	// FCVTL V9.4S, V9.4H
	WORD $0x6e29dd0a	// FMUL V10.4S, V8.4S, V9.4S
	VLD1.P 16(R0), [V2.B16]
	WORD $0x4e3e1c40	// AND V0.16B, V2.16B, V30.16B
	WORD $0x6f0c0441	// USHR V1.16B, V2.16B, #4
	WORD $0x6e3f8400	// SUB V0.16B, V0.16B, V31.16B
	WORD $0x6e3f8421	// SUB V1.16B, V1.16B, V31.16B
	VLD1.P 32(R1), [V3.B16, V4.B16]
	VEOR V5.B16, V5.B16, V5.B16
	WORD $0x4e839405	// SDOT V5.4S, V0.16B, V3.16B
	VEOR V6.B16, V6.B16, V6.B16
	WORD $0x4e849426	// SDOT V6.4S, V1.16B, V4.16B
	WORD $0x4e21d8a5	// SCVTF V5.4S, V5.4S
	WORD $0x4e21d8c6	// SCVTF V6.4S, V6.4S
	VFMLA V10.S4, V5.S4, V16.S4
	VFMLA V10.S4, V6.S4, V17.S4
	SUBS $1, R2, R2
	BNE  loop

reduce:
	WORD $0x4e31d610	// FADD V16.4S, V16.4S, V17.4S
	WORD $0x6e104211	// EXT V17.16B, V16.16B, V16.16B, #8
	WORD $0x4e31d610	// FADD V16.4S, V16.4S, V17.4S
	WORD $0x7e30da00	// FADDP S0, V16.2S
	FMOVS F0, ret+24(FP)
	RET

// func qdotQ4_0NEON(w, a *byte, nb int) float32: nb Q4_0 weight blocks (18 bytes: binary16 d, 16 bytes of
// nibbles: low ones elements 0–15, high ones 16–31, each minus 8)
// by nb Q8_0 activation blocks, lanes by SMULL/SADDLP.
TEXT ·qdotQ4_0NEON(SB), NOSPLIT, $0-28
	MOVD w+0(FP), R0
	MOVD a+8(FP), R1
	MOVD nb+16(FP), R2
	VEOR V16.B16, V16.B16, V16.B16
	VEOR V17.B16, V17.B16, V17.B16
	VMOVI $15, V30.B16
	VMOVI $8, V31.B16
	CBZ  R2, reduce

loop:
	VLD1R.P 2(R0), [V8.H8]
	VLD1R.P 2(R1), [V9.H8]
	WORD $0x0e217908	// FCVTL V8.4S, V8.4H
	WORD $0x0e217929	// FCVTL V9.4S, V9.4H
	WORD $0x6e29dd0a	// FMUL V10.4S, V8.4S, V9.4S
	VLD1.P 16(R0), [V2.B16]
	WORD $0x4e3e1c40	// AND V0.16B, V2.16B, V30.16B
	WORD $0x6f0c0441	// USHR V1.16B, V2.16B, #4
	WORD $0x6e3f8400	// SUB V0.16B, V0.16B, V31.16B
	WORD $0x6e3f8421	// SUB V1.16B, V1.16B, V31.16B
	VLD1.P 32(R1), [V3.B16, V4.B16]
	WORD $0x0e23c005	// SMULL V5.8H, V0.8B, V3.8B
	WORD $0x4e23c00c	// SMULL2 V12.8H, V0.16B, V3.16B
	WORD $0x4e6028a5	// SADDLP V5.4S, V5.8H
	WORD $0x4e60298c	// SADDLP V12.4S, V12.8H
	WORD $0x4eacbca5	// ADDP V5.4S, V5.4S, V12.4S
	WORD $0x0e24c026	// SMULL V6.8H, V1.8B, V4.8B
	WORD $0x4e24c02c	// SMULL2 V12.8H, V1.16B, V4.16B
	WORD $0x4e6028c6	// SADDLP V6.4S, V6.8H
	WORD $0x4e60298c	// SADDLP V12.4S, V12.8H
	WORD $0x4eacbcc6	// ADDP V6.4S, V6.4S, V12.4S
	WORD $0x4e21d8a5	// SCVTF V5.4S, V5.4S
	WORD $0x4e21d8c6	// SCVTF V6.4S, V6.4S
	VFMLA V10.S4, V5.S4, V16.S4
	VFMLA V10.S4, V6.S4, V17.S4
	SUBS $1, R2, R2
	BNE  loop

reduce:
	WORD $0x4e31d610	// FADD V16.4S, V16.4S, V17.4S
	WORD $0x6e104211	// EXT V17.16B, V16.16B, V16.16B, #8
	WORD $0x4e31d610	// FADD V16.4S, V16.4S, V17.4S
	WORD $0x7e30da00	// FADDP S0, V16.2S
	FMOVS F0, ret+24(FP)
	RET
