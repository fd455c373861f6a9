//go:build !noasm

#include "textflag.h"

// Peak loops for BenchmarkPeak: twelve independent accumulator chains of
// one instruction, n iterations, so that nothing but the instruction's
// throughput limits them. They measure the arithmetic ceiling the kernels
// work under: float32 FMA for the reference mode, 8-bit integer products
// for --match-llamacpp (and llama.cpp).

// Z12OP(OP, A, B) and Y12OP apply OP A, B to each of the twelve chains.
#define Z12OP(OP, A, B) \
	OP A, B, Z0; OP A, B, Z1; OP A, B, Z2; OP A, B, Z3; OP A, B, Z4; OP A, B, Z5 \
	OP A, B, Z6; OP A, B, Z7; OP A, B, Z8; OP A, B, Z9; OP A, B, Z10; OP A, B, Z11

#define Y12OP(OP, A, B) \
	OP A, B, Y0; OP A, B, Y1; OP A, B, Y2; OP A, B, Y3; OP A, B, Y4; OP A, B, Y5 \
	OP A, B, Y6; OP A, B, Y7; OP A, B, Y8; OP A, B, Y9; OP A, B, Y10; OP A, B, Y11

// func peakFMA512(n int)
TEXT ·peakFMA512(SB), NOSPLIT, $0-8
	MOVQ n+0(FP), CX
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	Z12OP(VPXORD, Z12, Z12)

loop:
	Z12OP(VFMADD231PS, Z12, Z13)
	DECQ CX
	JNZ  loop
	VZEROUPPER
	RET

// func peakFMA256(n int)
TEXT ·peakFMA256(SB), NOSPLIT, $0-8
	MOVQ n+0(FP), CX
	VPXOR Y12, Y12, Y12
	VPXOR Y13, Y13, Y13
	Y12OP(VPXOR, Y12, Y12)

loop:
	Y12OP(VFMADD231PS, Y12, Y13)
	DECQ CX
	JNZ  loop
	VZEROUPPER
	RET

// func peakDPBUSD512(n int)
TEXT ·peakDPBUSD512(SB), NOSPLIT, $0-8
	MOVQ n+0(FP), CX
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	Z12OP(VPXORD, Z12, Z12)

loop:
	Z12OP(VPDPBUSD, Z12, Z13)
	DECQ CX
	JNZ  loop
	VZEROUPPER
	RET

// func peakMADDUBSW256(n int)
TEXT ·peakMADDUBSW256(SB), NOSPLIT, $0-8
	MOVQ n+0(FP), CX
	VPXOR Y12, Y12, Y12
	VPXOR Y13, Y13, Y13
	Y12OP(VPXOR, Y12, Y12)

loop:
	Y12OP(VPMADDUBSW, Y12, Y13)
	DECQ CX
	JNZ  loop
	VZEROUPPER
	RET
