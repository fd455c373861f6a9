hdr = """//go:build !noasm

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
// adds pairs into 32 bits and ADDP the pairs of pairs. WORD lines are
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

"""
def W(ins): return f"\tWORD $0 // {ins}\n"
def lanes(w, a, dst, sdot):
    if sdot:
        return f"\tVEOR V{dst}.B16, V{dst}.B16, V{dst}.B16\n" + W(f"sdot v{dst}.4s, v{w}.16b, v{a}.16b")
    return (W(f"smull v{dst}.8h, v{w}.8b, v{a}.8b") + W(f"smull2 v12.8h, v{w}.16b, v{a}.16b") +
            W(f"saddlp v{dst}.4s, v{dst}.8h") + W("saddlp v12.4s, v12.8h") + W(f"addp v{dst}.4s, v{dst}.4s, v12.4s"))

# type: (block bytes, has min, has qh, centre, act Q8_1)
types = {
    "Q8_0": dict(bb=34, m=False, qh=False, c=0, desc="Q8_0 weight blocks (34 bytes: binary16 d, 32 int8)"),
    "Q4_0": dict(bb=18, m=False, qh=False, c=8, desc="Q4_0 weight blocks (18 bytes: binary16 d, 16 bytes of\n// nibbles: low ones elements 0–15, high ones 16–31, each minus 8)"),
    "Q5_0": dict(bb=22, m=False, qh=True, c=16, desc="Q5_0 weight blocks (22 bytes: binary16 d, qh u32, 16\n// bytes of nibbles; element j's fifth bit is bit j of qh; minus 16)"),
    "Q4_1": dict(bb=20, m=True, qh=False, c=0, desc="Q4_1 weight blocks (20 bytes: binary16 d and m, 16 bytes\n// of nibbles)"),
    "Q5_1": dict(bb=24, m=True, qh=True, c=0, desc="Q5_1 weight blocks (24 bytes: binary16 d and m, qh u32,\n// 16 bytes of nibbles)"),
}
out = hdr
for wt, p in types.items():
    for sdot in (True, False):
        name = f"qdot{wt}{'SDOT' if sdot else 'NEON'}"
        act = "Q8_1" if p['m'] else "Q8_0"
        out += f"""// func {name}(w, a *byte, nb int) float32: nb {p['desc']}
// by nb {act} activation blocks, lanes by {'SDOT' if sdot else 'SMULL/SADDLP'}.
TEXT ·{name}(SB), NOSPLIT, $0-28
	MOVD w+0(FP), R0
	MOVD a+8(FP), R1
	MOVD nb+16(FP), R2
	VEOR V16.B16, V16.B16, V16.B16
	VEOR V17.B16, V17.B16, V17.B16
	VEOR V20.B16, V20.B16, V20.B16
"""
        if wt != "Q8_0":
            out += "\tVMOVI $15, V30.B16\n"
        if p['c']:
            out += f"\tVMOVI ${p['c']}, V31.B16\n"
        if p['qh']:
            out += "\tMOVD $·qhConsts(SB), R3\n\tVLD1 (R3), [V26.B16, V27.B16, V28.B16]\n\tVMOVI $16, V29.B16\n"
        out += """	CBZ  R2, reduce

loop:
	VLD1R.P 2(R0), [V8.H8]
	VLD1R.P 2(R1), [V9.H8]
""" + W("fcvtl v8.4s, v8.4h") + W("fcvtl v9.4s, v9.4h") + W("fmul v10.4s, v8.4s, v9.4s")
        if p['m']:
            out += "\tVLD1R.P 2(R0), [V11.H8]\n\tVLD1R.P 2(R1), [V21.H8]\n" + W("fcvtl v11.4s, v11.4h") + W("fcvtl v21.4s, v21.4h")
        if wt == "Q8_0":
            out += "\tVLD1.P 32(R0), [V0.B16, V1.B16]\n"
        else:
            if p['qh']:
                out += "\tVLD1R.P 4(R0), [V22.S4]\n"
            out += "\tVLD1.P 16(R0), [V2.B16]\n" + W("and v0.16b, v2.16b, v30.16b") + W("ushr v1.16b, v2.16b, #4")
            if p['qh']:
                out += (W("tbl v23.16b, {v22.16b}, v26.16b") + W("tbl v24.16b, {v22.16b}, v27.16b") +
                        W("cmtst v23.16b, v23.16b, v28.16b") + W("cmtst v24.16b, v24.16b, v28.16b") +
                        W("and v23.16b, v23.16b, v29.16b") + W("and v24.16b, v24.16b, v29.16b") +
                        W("orr v0.16b, v0.16b, v23.16b") + W("orr v1.16b, v1.16b, v24.16b"))
            if p['c']:
                out += W("sub v0.16b, v0.16b, v31.16b") + W("sub v1.16b, v1.16b, v31.16b")
        out += "\tVLD1.P 32(R1), [V3.B16, V4.B16]\n" + lanes(0, 3, 5, sdot) + lanes(1, 4, 6, sdot)
        out += W("scvtf v5.4s, v5.4s") + W("scvtf v6.4s, v6.4s")
        out += "\tVFMLA V10.S4, V5.S4, V16.S4\n\tVFMLA V10.S4, V6.S4, V17.S4\n"
        if p['m']:
            out += W("fmadd s20, s11, s21, s20")
        out += """	SUBS $1, R2, R2
	BNE  loop

reduce:
""" + W("fadd v16.4s, v16.4s, v17.4s") + W("ext v17.16b, v16.16b, v16.16b, #8") + W("fadd v16.4s, v16.4s, v17.4s") + W("faddp s0, v16.2s")
        if p['m']:
            out += W("fadd s0, s0, s20")
        out += """	FMOVS F0, ret+24(FP)
	RET

"""
open('qdot_arm64.s', 'w').write(out.rstrip('\n') + '\n')
