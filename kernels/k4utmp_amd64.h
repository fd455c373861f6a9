// K4UTMP is ggml's utmp shuffle of a Q4_K / Q5_K super-block's 12 scale
// bytes at 4(SI): it leaves the 6-bit scales sc0..3 in AX, sc4..7 in DX,
// the mins mn0..3 in BX and mn4..7 in TMP (CX scratch). The integer
// kernels (qgemm256_amd64.s, qgemm_amd64.s's qkM1Q4_KVNNI) take them from
// these registers: a vector load of bytes that separate narrower stores
// wrote waits for the stores to retire instead of taking them from the
// store buffer.
#define K4UTMP(TMP) \
	MOVL 4(SI), AX \
	MOVL 8(SI), BX \
	MOVL 12(SI), DX \
	MOVL BX, CX \
	SHRL $6, CX \
	ANDL $0x03030303, CX \
	SHLL $4, CX \
	MOVL DX, TMP \
	SHRL $4, TMP \
	ANDL $0x0f0f0f0f, TMP \
	ORL  CX, TMP \
	ANDL $0x3f3f3f3f, BX \
	MOVL AX, CX \
	SHRL $6, CX \
	ANDL $0x03030303, CX \
	SHLL $4, CX \
	ANDL $0x0f0f0f0f, DX \
	ORL  CX, DX \
	ANDL $0x3f3f3f3f, AX
