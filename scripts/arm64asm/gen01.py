def W(ins): return f"\tWORD $0 // {ins}\n"
out = """//go:build !noasm

#include "textflag.h"

// Q4_1, Q5_0 and Q5_1 rows for the NEON set: fused M = 1 dots and the
// decoders of MatMul's weight blocks. A block's weights are unpacked to
// int8 as in qdot_arm64.s (qh's bits by TBL and CMTST), widened to
// float32 and formed as decQ4_1/decQ5_0/decQ5_1 form them: q·d (exact),
// then + m rounded once for the types with a min. WORD lines are
// instructions Go's assembler lacks, in GNU syntax.

"""
types = {
    "Q4_1": dict(bb=20, m=True, qh=False, c=0, lay="20 bytes: binary16 d and m, 16 bytes of nibbles"),
    "Q5_0": dict(bb=22, m=False, qh=True, c=16, lay="22 bytes: binary16 d, qh u32, 16 bytes of nibbles"),
    "Q5_1": dict(bb=24, m=True, qh=True, c=0, lay="24 bytes: binary16 d and m, qh u32, 16 bytes of nibbles"),
}
def widen(src):
    r = W(f"sxtl v9.8h, v{src}.8b") + W(f"sxtl2 v10.8h, v{src}.16b")
    r += W("sxtl v20.4s, v9.4h") + W("sxtl2 v21.4s, v9.8h") + W("sxtl v22.4s, v10.4h") + W("sxtl2 v23.4s, v10.8h")
    r += "".join(W(f"scvtf v{20+i}.4s, v{20+i}.4s") for i in range(4))
    r += "".join(W(f"fmul v{20+i}.4s, v{20+i}.4s, v8.4s") for i in range(4))
    return r
for wt, p in types.items():
    for dot in (True, False):
        name = ("dot" if dot else "dec") + wt + "NEON"
        first = "x" if dot else "dst"
        out += f"""// func {name}({first} *float32, w *byte, n int){' float32' if dot else ''}: the n/32 {wt} blocks
// ({p['lay']}) {'dotted with x' if dot else 'decoded to dst, bit-identical to dec' + wt}.
TEXT ·{name}(SB), NOSPLIT, $0-{28 if dot else 24}
	MOVD {first}+0(FP), R0
	MOVD w+8(FP), R1
	MOVD n+16(FP), R2
	LSR  $5, R2, R2
"""
        if dot:
            out += "".join(f"\tVEOR V{r}.B16, V{r}.B16, V{r}.B16\n" for r in (16, 17, 18, 19))
        out += "\tVMOVI $15, V30.B16\n"
        if p['c']:
            out += f"\tVMOVI ${p['c']}, V31.B16\n"
        if p['qh']:
            out += "\tMOVD $·qhConsts(SB), R3\n\tVLD1 (R3), [V26.B16, V27.B16, V28.B16]\n\tVMOVI $16, V29.B16\n"
        end = "reduce" if dot else "done"
        out += f"\tCBZ  R2, {end}\n\nloop:\n\tVLD1R.P 2(R1), [V8.H8]\n" + W("fcvtl v8.4s, v8.4h")
        if p['m']:
            out += "\tVLD1R.P 2(R1), [V11.H8]\n" + W("fcvtl v11.4s, v11.4h")
        if p['qh']:
            out += "\tVLD1R.P 4(R1), [V24.S4]\n"
        out += "\tVLD1.P 16(R1), [V14.B16]\n" + W("and v12.16b, v14.16b, v30.16b") + W("ushr v13.16b, v14.16b, #4")
        if p['qh']:
            out += (W("tbl v25.16b, {v24.16b}, v26.16b") + W("tbl v15.16b, {v24.16b}, v27.16b") +
                    W("cmtst v25.16b, v25.16b, v28.16b") + W("cmtst v15.16b, v15.16b, v28.16b") +
                    W("and v25.16b, v25.16b, v29.16b") + W("and v15.16b, v15.16b, v29.16b") +
                    W("orr v12.16b, v12.16b, v25.16b") + W("orr v13.16b, v13.16b, v15.16b"))
        if p['c']:
            out += W("sub v12.16b, v12.16b, v31.16b") + W("sub v13.16b, v13.16b, v31.16b")
        for half, src in enumerate((12, 13)):
            out += widen(src)
            if p['m']:
                out += "".join(W(f"fadd v{20+i}.4s, v{20+i}.4s, v11.4s") for i in range(4))
            if dot:
                out += f"\tVLD1.P 64(R0), [V{4*half}.S4, V{4*half+1}.S4, V{4*half+2}.S4, V{4*half+3}.S4]\n"
                out += "".join(f"\tVFMLA V{4*half+i}.S4, V{20+i}.S4, V{16+i}.S4\n" for i in range(4))
            else:
                out += "\tVST1.P [V20.S4, V21.S4, V22.S4, V23.S4], 64(R0)\n"
        out += "\tSUBS $1, R2, R2\n\tBNE  loop\n\n"
        if dot:
            out += ("reduce:\n" + W("fadd v16.4s, v16.4s, v17.4s") + W("fadd v18.4s, v18.4s, v19.4s") +
                    W("fadd v16.4s, v16.4s, v18.4s") + W("faddp v16.4s, v16.4s, v16.4s") + W("faddp s0, v16.2s") +
                    "\tFMOVS F0, ret+24(FP)\n\tRET\n\n")
        else:
            out += "done:\n\tRET\n\n"
open('rowdot01_arm64.s', 'w').write(out.rstrip('\n') + '\n')
