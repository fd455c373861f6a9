//go:build !noasm

#include "textflag.h"

// func lanesKNEON(W *int16, a *byte, s *int32): lanesK on NEON. The eight
// lane sums of one k-quant super-block: lane l sums W[e]·a[e] over the
// elements e = 32c+4l..32c+4l+3 of the eight 32-element chunks c. Lane l's
// four products of a chunk are one SMLAL's four int32 lanes, so
// accumulator l collects them over the chunks and a pairwise-add tree
// sums each accumulator at the end; the sums are exact (|W·a| < 2¹⁷, 64
// terms per lane). WORD lines are instructions Go's assembler lacks, in
// GNU syntax.
TEXT ·lanesKNEON(SB), NOSPLIT, $0-24
	MOVD W+0(FP), R0
	MOVD a+8(FP), R1
	MOVD s+16(FP), R2
	VEOR V16.B16, V16.B16, V16.B16
	VEOR V17.B16, V17.B16, V17.B16
	VEOR V18.B16, V18.B16, V18.B16
	VEOR V19.B16, V19.B16, V19.B16
	VEOR V20.B16, V20.B16, V20.B16
	VEOR V21.B16, V21.B16, V21.B16
	VEOR V22.B16, V22.B16, V22.B16
	VEOR V23.B16, V23.B16, V23.B16
	MOVD $8, R3

loop:
	VLD1.P 64(R0), [V0.H8, V1.H8, V2.H8, V3.H8]
	VLD1.P 32(R1), [V4.B16, V5.B16]
	WORD $0x0f08a486	// SXTL V6.8H, V4.8B
	WORD $0x4f08a487	// SXTL2 V7.8H, V4.16B
	WORD $0x0f08a4a8	// SXTL V8.8H, V5.8B
	WORD $0x4f08a4a9	// SXTL2 V9.8H, V5.16B
	WORD $0x0e668010	// SMLAL V16.4S, V0.4H, V6.4H
	WORD $0x4e668011	// SMLAL2 V17.4S, V0.8H, V6.8H
	WORD $0x0e678032	// SMLAL V18.4S, V1.4H, V7.4H
	WORD $0x4e678033	// SMLAL2 V19.4S, V1.8H, V7.8H
	WORD $0x0e688054	// SMLAL V20.4S, V2.4H, V8.4H
	WORD $0x4e688055	// SMLAL2 V21.4S, V2.8H, V8.8H
	WORD $0x0e698076	// SMLAL V22.4S, V3.4H, V9.4H
	WORD $0x4e698077	// SMLAL2 V23.4S, V3.8H, V9.8H
	SUBS $1, R3, R3
	BNE  loop

	WORD $0x4eb1be10	// ADDP V16.4S, V16.4S, V17.4S
	WORD $0x4eb3be52	// ADDP V18.4S, V18.4S, V19.4S
	WORD $0x4eb5be94	// ADDP V20.4S, V20.4S, V21.4S
	WORD $0x4eb7bed6	// ADDP V22.4S, V22.4S, V23.4S
	WORD $0x4eb2be10	// ADDP V16.4S, V16.4S, V18.4S
	WORD $0x4eb6be94	// ADDP V20.4S, V20.4S, V22.4S
	VST1.P [V16.S4], 16(R2)
	VST1   [V20.S4], (R2)
	RET
