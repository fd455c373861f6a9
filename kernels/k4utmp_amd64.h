// K4UTMPR is ggml's utmp shuffle of a Q4_K / Q5_K super-block's 12 scale
// bytes at 4(B): it leaves the 6-bit scales sc0..3 in AX, sc4..7 in DX,
// the mins mn0..3 in BX and mn4..7 in TMP (SCR scratch). The integer
// kernels (qgemm256_amd64.s, qgemm_amd64.s's qkM1Q4_KVNNI) take them from
// these registers: a vector load of bytes that separate narrower stores
// wrote waits for the stores to retire instead of taking them from the
// store buffer. The float kernels (kquant_amd64.s, Q4KSCALES) pack them
// into one vector.
#define K4UTMPR(B, TMP, SCR) \
	MOVL 4(B), AX \
	MOVL 8(B), BX \
	MOVL 12(B), DX \
	MOVL BX, SCR \
	SHRL $6, SCR \
	ANDL $0x03030303, SCR \
	SHLL $4, SCR \
	MOVL DX, TMP \
	SHRL $4, TMP \
	ANDL $0x0f0f0f0f, TMP \
	ORL  SCR, TMP \
	ANDL $0x3f3f3f3f, BX \
	MOVL AX, SCR \
	SHRL $6, SCR \
	ANDL $0x03030303, SCR \
	SHLL $4, SCR \
	ANDL $0x0f0f0f0f, DX \
	ORL  SCR, DX \
	ANDL $0x3f3f3f3f, AX

// K4UTMP is K4UTMPR for the super-block at SI, with CX as scratch.
#define K4UTMP(TMP) K4UTMPR(SI, TMP, CX)
