//go:build !noasm

#include "textflag.h"

// The integer dot products of MatMulQ on arm64 (simdSet.qdot): one weight
// row of a 32-element block type against one row of Q8_0 (Q8_1 for Q4_1
// and Q5_1) activations, forming ggml's eight int32 lane sums per block
// (lane l: elements 4l..4l+3 of the block, qdot.go) and accumulating them
// in float32 exactly as dotQ0Generic does:
//
//	acc[l] = fma(dw·dx, float32(lane_l), acc[l])   (FMLA: one rounding)
//	summs  = fma(m, sx, summs)                     (Q4_1, Q5_1: FMADD)
//	result = ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)) (+ summs)
//
// so the result is the plain-Go bits. The lanes 0–3 and 4–7 are the two
// 16-byte halves of a block, after the weights are unpacked to one int8
// per element (Q4: nibbles; Q5: plus bit j of qh as 16, found by TBL of
// qh's bytes and CMTST against each element's bit; Q4_0, Q5_0 centred by
// −8, −16). With the dot-product extension one SDOT forms four lanes;
// without it SMULL/SMULL2 form the 16-bit products (|q·x| ≤ 2¹⁴), SADDLP
// adds pairs into 32 bits and ADDP the pairs of pairs. The Q4_0 chain
// dots (simdSet.qdotChain) form the same lanes, add them per block and
// accumulate one float32 chain (dotQ4_0Chain). WORD lines are
// instructions Go's assembler lacks, in GNU syntax.

// qhConsts: the TBL indices that spread qh's bytes 0,1 (elements 0–15)
// and 2,3 (16–31) over 8 lanes each, then each lane's bit (also used by
// rowdot01_arm64.s).
DATA ·qhConsts+0(SB)/8, $0x0000000000000000
DATA ·qhConsts+8(SB)/8, $0x0101010101010101
DATA ·qhConsts+16(SB)/8, $0x0202020202020202
DATA ·qhConsts+24(SB)/8, $0x0303030303030303
DATA ·qhConsts+32(SB)/8, $0x8040201008040201
DATA ·qhConsts+40(SB)/8, $0x8040201008040201
GLOBL ·qhConsts(SB), RODATA|NOPTR, $48

// Q4_0BLOCK loads one Q4_0 weight block (R0) and one Q8_0 activation
// block (R1): V10 = dw·dx in every lane, V0/V1 the low/high nibbles minus
// 8, V3/V4 the activations (V30: 0x0f, V31: 0x08).
#define Q4_0BLOCK \
	VLD1R.P 2(R0), [V8.H8] \
	VLD1R.P 2(R1), [V9.H8] \
	WORD $0x0e217908 \ // FCVTL V8.4S, V8.4H
	WORD $0x0e217929 \ // FCVTL V9.4S, V9.4H
	WORD $0x6e29dd0a \ // FMUL V10.4S, V8.4S, V9.4S
	VLD1.P 16(R0), [V2.B16] \
	WORD $0x4e3e1c40 \ // AND V0.16B, V2.16B, V30.16B
	WORD $0x6f0c0441 \ // USHR V1.16B, V2.16B, #4
	WORD $0x6e3f8400 \ // SUB V0.16B, V0.16B, V31.16B
	WORD $0x6e3f8421 \ // SUB V1.16B, V1.16B, V31.16B
	VLD1.P 32(R1), [V3.B16, V4.B16]

// Q4_0SDOTLANES and Q4_0NEONLANES leave the lanes 0–3 and 4–7 of the
// block Q4_0BLOCK unpacked in V5 and V6.
#define Q4_0SDOTLANES \
	VEOR V5.B16, V5.B16, V5.B16 \
	WORD $0x4e839405 \ // SDOT V5.4S, V0.16B, V3.16B
	VEOR V6.B16, V6.B16, V6.B16 \
	WORD $0x4e849426 // SDOT V6.4S, V1.16B, V4.16B

#define Q4_0NEONLANES \
	WORD $0x0e23c005 \ // SMULL V5.8H, V0.8B, V3.8B
	WORD $0x4e23c00c \ // SMULL2 V12.8H, V0.16B, V3.16B
	WORD $0x4e6028a5 \ // SADDLP V5.4S, V5.8H
	WORD $0x4e60298c \ // SADDLP V12.4S, V12.8H
	WORD $0x4eacbca5 \ // ADDP V5.4S, V5.4S, V12.4S
	WORD $0x0e24c026 \ // SMULL V6.8H, V1.8B, V4.8B
	WORD $0x4e24c02c \ // SMULL2 V12.8H, V1.16B, V4.16B
	WORD $0x4e6028c6 \ // SADDLP V6.4S, V6.8H
	WORD $0x4e60298c \ // SADDLP V12.4S, V12.8H
	WORD $0x4eacbcc6 // ADDP V6.4S, V6.4S, V12.4S

// func qdotQ8_0SDOT(w, a *byte, nb int) float32: nb Q8_0 weight blocks (34 bytes: binary16 d, 32 int8)
// by nb Q8_0 activation blocks, lanes by SDOT.
TEXT ·qdotQ8_0SDOT(SB), NOSPLIT, $0-28
	MOVD w+0(FP), R0
	MOVD a+8(FP), R1
	MOVD nb+16(FP), R2
	VEOR V16.B16, V16.B16, V16.B16
	VEOR V17.B16, V17.B16, V17.B16
	VEOR V20.B16, V20.B16, V20.B16
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
	VEOR V20.B16, V20.B16, V20.B16
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
	VEOR V20.B16, V20.B16, V20.B16
	VMOVI $15, V30.B16
	VMOVI $8, V31.B16
	CBZ  R2, reduce

loop:
	Q4_0BLOCK
	Q4_0SDOTLANES
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
	VEOR V20.B16, V20.B16, V20.B16
	VMOVI $15, V30.B16
	VMOVI $8, V31.B16
	CBZ  R2, reduce

loop:
	Q4_0BLOCK
	Q4_0NEONLANES
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

// The Q4_0 chain dots (chainOrder): one weight row as llama.cpp's
// repacked Q4_0 kernels sum it, per block the exact integer Σ (q−8)·x
// (both halves' lanes added, then ADDV), then
// acc = fma(float32(Σ), dw·dx, acc) in S16 (FMADDS: one rounding).
#define Q4CHAINHEAD \
	MOVD w+0(FP), R0 \
	MOVD a+8(FP), R1 \
	MOVD nb+16(FP), R2 \
	VEOR V16.B16, V16.B16, V16.B16 \
	VMOVI $15, V30.B16 \
	VMOVI $8, V31.B16

#define Q4CHAINFMA \
	VADD   V6.S4, V5.S4, V5.S4 \
	VADDV  V5.S4, V5 \
	VMOV   V5.S[0], R3 \
	SCVTFWS R3, F5 \
	FMADDS F10, F16, F5, F16 \
	SUBS   $1, R2, R2

// func qdotQ4_0ChainSDOT(w, a *byte, nb int) float32: dotQ4_0Chain, lanes by SDOT.
TEXT ·qdotQ4_0ChainSDOT(SB), NOSPLIT, $0-28
	Q4CHAINHEAD
	CBZ  R2, done

loop:
	Q4_0BLOCK
	Q4_0SDOTLANES
	Q4CHAINFMA
	BNE  loop

done:
	FMOVS F16, ret+24(FP)
	RET

// func qdotQ4_0ChainNEON(w, a *byte, nb int) float32: dotQ4_0Chain, lanes by SMULL/SADDLP.
TEXT ·qdotQ4_0ChainNEON(SB), NOSPLIT, $0-28
	Q4CHAINHEAD
	CBZ  R2, done

loop:
	Q4_0BLOCK
	Q4_0NEONLANES
	Q4CHAINFMA
	BNE  loop

done:
	FMOVS F16, ret+24(FP)
	RET

// func qdotQ5_0SDOT(w, a *byte, nb int) float32: nb Q5_0 weight blocks (22 bytes: binary16 d, qh u32, 16
// bytes of nibbles; element j's fifth bit is bit j of qh; minus 16)
// by nb Q8_0 activation blocks, lanes by SDOT.
TEXT ·qdotQ5_0SDOT(SB), NOSPLIT, $0-28
	MOVD w+0(FP), R0
	MOVD a+8(FP), R1
	MOVD nb+16(FP), R2
	VEOR V16.B16, V16.B16, V16.B16
	VEOR V17.B16, V17.B16, V17.B16
	VEOR V20.B16, V20.B16, V20.B16
	VMOVI $15, V30.B16
	VMOVI $16, V31.B16
	MOVD $·qhConsts(SB), R3
	VLD1 (R3), [V26.B16, V27.B16, V28.B16]
	VMOVI $16, V29.B16
	CBZ  R2, reduce

loop:
	VLD1R.P 2(R0), [V8.H8]
	VLD1R.P 2(R1), [V9.H8]
	WORD $0x0e217908	// FCVTL V8.4S, V8.4H
	WORD $0x0e217929	// FCVTL V9.4S, V9.4H
	WORD $0x6e29dd0a	// FMUL V10.4S, V8.4S, V9.4S
	VLD1R.P 4(R0), [V22.S4]
	VLD1.P 16(R0), [V2.B16]
	WORD $0x4e3e1c40	// AND V0.16B, V2.16B, V30.16B
	WORD $0x6f0c0441	// USHR V1.16B, V2.16B, #4
	WORD $0x4e1a02d7	// TBL V23.16B, {V22.16B}, V26.16B
	WORD $0x4e1b02d8	// TBL V24.16B, {V22.16B}, V27.16B
	WORD $0x4e3c8ef7	// CMTST V23.16B, V23.16B, V28.16B
	WORD $0x4e3c8f18	// CMTST V24.16B, V24.16B, V28.16B
	WORD $0x4e3d1ef7	// AND V23.16B, V23.16B, V29.16B
	WORD $0x4e3d1f18	// AND V24.16B, V24.16B, V29.16B
	WORD $0x4eb71c00	// ORR V0.16B, V0.16B, V23.16B
	WORD $0x4eb81c21	// ORR V1.16B, V1.16B, V24.16B
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

// func qdotQ5_0NEON(w, a *byte, nb int) float32: nb Q5_0 weight blocks (22 bytes: binary16 d, qh u32, 16
// bytes of nibbles; element j's fifth bit is bit j of qh; minus 16)
// by nb Q8_0 activation blocks, lanes by SMULL/SADDLP.
TEXT ·qdotQ5_0NEON(SB), NOSPLIT, $0-28
	MOVD w+0(FP), R0
	MOVD a+8(FP), R1
	MOVD nb+16(FP), R2
	VEOR V16.B16, V16.B16, V16.B16
	VEOR V17.B16, V17.B16, V17.B16
	VEOR V20.B16, V20.B16, V20.B16
	VMOVI $15, V30.B16
	VMOVI $16, V31.B16
	MOVD $·qhConsts(SB), R3
	VLD1 (R3), [V26.B16, V27.B16, V28.B16]
	VMOVI $16, V29.B16
	CBZ  R2, reduce

loop:
	VLD1R.P 2(R0), [V8.H8]
	VLD1R.P 2(R1), [V9.H8]
	WORD $0x0e217908	// FCVTL V8.4S, V8.4H
	WORD $0x0e217929	// FCVTL V9.4S, V9.4H
	WORD $0x6e29dd0a	// FMUL V10.4S, V8.4S, V9.4S
	VLD1R.P 4(R0), [V22.S4]
	VLD1.P 16(R0), [V2.B16]
	WORD $0x4e3e1c40	// AND V0.16B, V2.16B, V30.16B
	WORD $0x6f0c0441	// USHR V1.16B, V2.16B, #4
	WORD $0x4e1a02d7	// TBL V23.16B, {V22.16B}, V26.16B
	WORD $0x4e1b02d8	// TBL V24.16B, {V22.16B}, V27.16B
	WORD $0x4e3c8ef7	// CMTST V23.16B, V23.16B, V28.16B
	WORD $0x4e3c8f18	// CMTST V24.16B, V24.16B, V28.16B
	WORD $0x4e3d1ef7	// AND V23.16B, V23.16B, V29.16B
	WORD $0x4e3d1f18	// AND V24.16B, V24.16B, V29.16B
	WORD $0x4eb71c00	// ORR V0.16B, V0.16B, V23.16B
	WORD $0x4eb81c21	// ORR V1.16B, V1.16B, V24.16B
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

// func qdotQ4_1SDOT(w, a *byte, nb int) float32: nb Q4_1 weight blocks (20 bytes: binary16 d and m, 16 bytes
// of nibbles)
// by nb Q8_1 activation blocks, lanes by SDOT.
TEXT ·qdotQ4_1SDOT(SB), NOSPLIT, $0-28
	MOVD w+0(FP), R0
	MOVD a+8(FP), R1
	MOVD nb+16(FP), R2
	VEOR V16.B16, V16.B16, V16.B16
	VEOR V17.B16, V17.B16, V17.B16
	VEOR V20.B16, V20.B16, V20.B16
	VMOVI $15, V30.B16
	CBZ  R2, reduce

loop:
	VLD1R.P 2(R0), [V8.H8]
	VLD1R.P 2(R1), [V9.H8]
	WORD $0x0e217908	// FCVTL V8.4S, V8.4H
	WORD $0x0e217929	// FCVTL V9.4S, V9.4H
	WORD $0x6e29dd0a	// FMUL V10.4S, V8.4S, V9.4S
	VLD1R.P 2(R0), [V11.H8]
	VLD1R.P 2(R1), [V21.H8]
	WORD $0x0e21796b	// FCVTL V11.4S, V11.4H
	WORD $0x0e217ab5	// FCVTL V21.4S, V21.4H
	VLD1.P 16(R0), [V2.B16]
	WORD $0x4e3e1c40	// AND V0.16B, V2.16B, V30.16B
	WORD $0x6f0c0441	// USHR V1.16B, V2.16B, #4
	VLD1.P 32(R1), [V3.B16, V4.B16]
	VEOR V5.B16, V5.B16, V5.B16
	WORD $0x4e839405	// SDOT V5.4S, V0.16B, V3.16B
	VEOR V6.B16, V6.B16, V6.B16
	WORD $0x4e849426	// SDOT V6.4S, V1.16B, V4.16B
	WORD $0x4e21d8a5	// SCVTF V5.4S, V5.4S
	WORD $0x4e21d8c6	// SCVTF V6.4S, V6.4S
	VFMLA V10.S4, V5.S4, V16.S4
	VFMLA V10.S4, V6.S4, V17.S4
	WORD $0x1f155174	// FMADD S20, S11, S21, S20
	SUBS $1, R2, R2
	BNE  loop

reduce:
	WORD $0x4e31d610	// FADD V16.4S, V16.4S, V17.4S
	WORD $0x6e104211	// EXT V17.16B, V16.16B, V16.16B, #8
	WORD $0x4e31d610	// FADD V16.4S, V16.4S, V17.4S
	WORD $0x7e30da00	// FADDP S0, V16.2S
	WORD $0x1e342800	// FADD S0, S0, S20
	FMOVS F0, ret+24(FP)
	RET

// func qdotQ4_1NEON(w, a *byte, nb int) float32: nb Q4_1 weight blocks (20 bytes: binary16 d and m, 16 bytes
// of nibbles)
// by nb Q8_1 activation blocks, lanes by SMULL/SADDLP.
TEXT ·qdotQ4_1NEON(SB), NOSPLIT, $0-28
	MOVD w+0(FP), R0
	MOVD a+8(FP), R1
	MOVD nb+16(FP), R2
	VEOR V16.B16, V16.B16, V16.B16
	VEOR V17.B16, V17.B16, V17.B16
	VEOR V20.B16, V20.B16, V20.B16
	VMOVI $15, V30.B16
	CBZ  R2, reduce

loop:
	VLD1R.P 2(R0), [V8.H8]
	VLD1R.P 2(R1), [V9.H8]
	WORD $0x0e217908	// FCVTL V8.4S, V8.4H
	WORD $0x0e217929	// FCVTL V9.4S, V9.4H
	WORD $0x6e29dd0a	// FMUL V10.4S, V8.4S, V9.4S
	VLD1R.P 2(R0), [V11.H8]
	VLD1R.P 2(R1), [V21.H8]
	WORD $0x0e21796b	// FCVTL V11.4S, V11.4H
	WORD $0x0e217ab5	// FCVTL V21.4S, V21.4H
	VLD1.P 16(R0), [V2.B16]
	WORD $0x4e3e1c40	// AND V0.16B, V2.16B, V30.16B
	WORD $0x6f0c0441	// USHR V1.16B, V2.16B, #4
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
	WORD $0x1f155174	// FMADD S20, S11, S21, S20
	SUBS $1, R2, R2
	BNE  loop

reduce:
	WORD $0x4e31d610	// FADD V16.4S, V16.4S, V17.4S
	WORD $0x6e104211	// EXT V17.16B, V16.16B, V16.16B, #8
	WORD $0x4e31d610	// FADD V16.4S, V16.4S, V17.4S
	WORD $0x7e30da00	// FADDP S0, V16.2S
	WORD $0x1e342800	// FADD S0, S0, S20
	FMOVS F0, ret+24(FP)
	RET

// func qdotQ5_1SDOT(w, a *byte, nb int) float32: nb Q5_1 weight blocks (24 bytes: binary16 d and m, qh u32,
// 16 bytes of nibbles)
// by nb Q8_1 activation blocks, lanes by SDOT.
TEXT ·qdotQ5_1SDOT(SB), NOSPLIT, $0-28
	MOVD w+0(FP), R0
	MOVD a+8(FP), R1
	MOVD nb+16(FP), R2
	VEOR V16.B16, V16.B16, V16.B16
	VEOR V17.B16, V17.B16, V17.B16
	VEOR V20.B16, V20.B16, V20.B16
	VMOVI $15, V30.B16
	MOVD $·qhConsts(SB), R3
	VLD1 (R3), [V26.B16, V27.B16, V28.B16]
	VMOVI $16, V29.B16
	CBZ  R2, reduce

loop:
	VLD1R.P 2(R0), [V8.H8]
	VLD1R.P 2(R1), [V9.H8]
	WORD $0x0e217908	// FCVTL V8.4S, V8.4H
	WORD $0x0e217929	// FCVTL V9.4S, V9.4H
	WORD $0x6e29dd0a	// FMUL V10.4S, V8.4S, V9.4S
	VLD1R.P 2(R0), [V11.H8]
	VLD1R.P 2(R1), [V21.H8]
	WORD $0x0e21796b	// FCVTL V11.4S, V11.4H
	WORD $0x0e217ab5	// FCVTL V21.4S, V21.4H
	VLD1R.P 4(R0), [V22.S4]
	VLD1.P 16(R0), [V2.B16]
	WORD $0x4e3e1c40	// AND V0.16B, V2.16B, V30.16B
	WORD $0x6f0c0441	// USHR V1.16B, V2.16B, #4
	WORD $0x4e1a02d7	// TBL V23.16B, {V22.16B}, V26.16B
	WORD $0x4e1b02d8	// TBL V24.16B, {V22.16B}, V27.16B
	WORD $0x4e3c8ef7	// CMTST V23.16B, V23.16B, V28.16B
	WORD $0x4e3c8f18	// CMTST V24.16B, V24.16B, V28.16B
	WORD $0x4e3d1ef7	// AND V23.16B, V23.16B, V29.16B
	WORD $0x4e3d1f18	// AND V24.16B, V24.16B, V29.16B
	WORD $0x4eb71c00	// ORR V0.16B, V0.16B, V23.16B
	WORD $0x4eb81c21	// ORR V1.16B, V1.16B, V24.16B
	VLD1.P 32(R1), [V3.B16, V4.B16]
	VEOR V5.B16, V5.B16, V5.B16
	WORD $0x4e839405	// SDOT V5.4S, V0.16B, V3.16B
	VEOR V6.B16, V6.B16, V6.B16
	WORD $0x4e849426	// SDOT V6.4S, V1.16B, V4.16B
	WORD $0x4e21d8a5	// SCVTF V5.4S, V5.4S
	WORD $0x4e21d8c6	// SCVTF V6.4S, V6.4S
	VFMLA V10.S4, V5.S4, V16.S4
	VFMLA V10.S4, V6.S4, V17.S4
	WORD $0x1f155174	// FMADD S20, S11, S21, S20
	SUBS $1, R2, R2
	BNE  loop

reduce:
	WORD $0x4e31d610	// FADD V16.4S, V16.4S, V17.4S
	WORD $0x6e104211	// EXT V17.16B, V16.16B, V16.16B, #8
	WORD $0x4e31d610	// FADD V16.4S, V16.4S, V17.4S
	WORD $0x7e30da00	// FADDP S0, V16.2S
	WORD $0x1e342800	// FADD S0, S0, S20
	FMOVS F0, ret+24(FP)
	RET

// func qdotQ5_1NEON(w, a *byte, nb int) float32: nb Q5_1 weight blocks (24 bytes: binary16 d and m, qh u32,
// 16 bytes of nibbles)
// by nb Q8_1 activation blocks, lanes by SMULL/SADDLP.
TEXT ·qdotQ5_1NEON(SB), NOSPLIT, $0-28
	MOVD w+0(FP), R0
	MOVD a+8(FP), R1
	MOVD nb+16(FP), R2
	VEOR V16.B16, V16.B16, V16.B16
	VEOR V17.B16, V17.B16, V17.B16
	VEOR V20.B16, V20.B16, V20.B16
	VMOVI $15, V30.B16
	MOVD $·qhConsts(SB), R3
	VLD1 (R3), [V26.B16, V27.B16, V28.B16]
	VMOVI $16, V29.B16
	CBZ  R2, reduce

loop:
	VLD1R.P 2(R0), [V8.H8]
	VLD1R.P 2(R1), [V9.H8]
	WORD $0x0e217908	// FCVTL V8.4S, V8.4H
	WORD $0x0e217929	// FCVTL V9.4S, V9.4H
	WORD $0x6e29dd0a	// FMUL V10.4S, V8.4S, V9.4S
	VLD1R.P 2(R0), [V11.H8]
	VLD1R.P 2(R1), [V21.H8]
	WORD $0x0e21796b	// FCVTL V11.4S, V11.4H
	WORD $0x0e217ab5	// FCVTL V21.4S, V21.4H
	VLD1R.P 4(R0), [V22.S4]
	VLD1.P 16(R0), [V2.B16]
	WORD $0x4e3e1c40	// AND V0.16B, V2.16B, V30.16B
	WORD $0x6f0c0441	// USHR V1.16B, V2.16B, #4
	WORD $0x4e1a02d7	// TBL V23.16B, {V22.16B}, V26.16B
	WORD $0x4e1b02d8	// TBL V24.16B, {V22.16B}, V27.16B
	WORD $0x4e3c8ef7	// CMTST V23.16B, V23.16B, V28.16B
	WORD $0x4e3c8f18	// CMTST V24.16B, V24.16B, V28.16B
	WORD $0x4e3d1ef7	// AND V23.16B, V23.16B, V29.16B
	WORD $0x4e3d1f18	// AND V24.16B, V24.16B, V29.16B
	WORD $0x4eb71c00	// ORR V0.16B, V0.16B, V23.16B
	WORD $0x4eb81c21	// ORR V1.16B, V1.16B, V24.16B
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
	WORD $0x1f155174	// FMADD S20, S11, S21, S20
	SUBS $1, R2, R2
	BNE  loop

reduce:
	WORD $0x4e31d610	// FADD V16.4S, V16.4S, V17.4S
	WORD $0x6e104211	// EXT V17.16B, V16.16B, V16.16B, #8
	WORD $0x4e31d610	// FADD V16.4S, V16.4S, V17.4S
	WORD $0x7e30da00	// FADDP S0, V16.2S
	WORD $0x1e342800	// FADD S0, S0, S20
	FMOVS F0, ret+24(FP)
	RET
