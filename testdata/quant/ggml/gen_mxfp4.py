"""ggml's own MXFP4 encodings and decodings, from a llama.cpp tree newer than c392e509 (which has no MXFP4).

    /usr/bin/python3 testdata/quant/ggml/gen_mxfp4.py LLAMA_CPP_TREE

Loads LLAMA_CPP_TREE/build/bin/libggml-base.so with ctypes (ours: it calls only ggml's exported functions) and, for
each case, encodes rows of float32 with quantize_row_mxfp4_ref (the block encoder), with ggml_quantize_chunk
(GGML_TYPE_MXFP4 = 39, the path llama-quantize takes) without and with a random importance matrix, and decodes
ggml's blocks with dequantize_row_mxfp4. Cases: normal rows at scales 1e-3, 1 and 30, ×50 outliers; edge blocks
(all zero; the largest magnitude exactly a power of two, and one float32 below it, for 2^-20 … 2^20; values halfway
between two FP4 levels, both signs; values beyond the largest level; tiny values whose shared exponent leaves E8M0's
range (2^-127 and below, subnormal float32); huge values near float32's largest). numpy seed 17. Writes mxfp4.json:
tree commit (from LLAMA_CPP_TREE/SNAPSHOT-COMMIT when present), and per case the name, rows, row length, input
float32 (hex, little-endian), the bytes quantize_row_mxfp4_ref wrote (hex), whether ggml_quantize_chunk wrote the same
bytes without and with the importance matrix (ggml's quantize_mxfp4 ignores it), and dequantize_row_mxfp4's output
(float32 hex).
"""
import ctypes
import json
import os
import sys

import numpy as np

tree = sys.argv[1]
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
import ggml_ctypes  # noqa: E402
base = ggml_ctypes.load_base(tree)
base.quantize_row_mxfp4_ref.restype = None
base.quantize_row_mxfp4_ref.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
base.dequantize_row_mxfp4.restype = None
base.dequantize_row_mxfp4.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
GGML_TYPE_MXFP4 = 39
QK = 32

rng = np.random.default_rng(17)
N = 256


def f32(v):
    return np.float32(v)


def below(v):
    return np.nextafter(f32(v), f32(0))


def edge_rows():
    rows = [np.zeros(N, np.float32)]
    # the largest magnitude exactly 2^k, then one float32 below it, in each block (sign alternating by block)
    for just_below in (False, True):
        r = rng.standard_normal(N).astype(np.float32) * f32(0.1)
        for b, k in enumerate(range(-4, 4)):
            top = f32(2.0 ** k)
            if just_below:
                top = below(top)
            blk = r[b * QK:(b + 1) * QK] * f32(2.0 ** k)
            blk[b % QK] = top if b % 2 == 0 else -top
            r[b * QK:(b + 1) * QK] = blk
        rows.append(r)
    for ks in (range(-20, -12), range(12, 20)):
        for just_below in (False, True):
            r = np.zeros(N, np.float32)
            for b, k in enumerate(ks):
                top = f32(2.0 ** k)
                if just_below:
                    top = below(top)
                r[b * QK:(b + 1) * QK] = rng.uniform(-1, 1, QK).astype(np.float32) * top
                r[b * QK + 5] = top
            rows.append(r)
    # halfway between FP4 levels: block max 12 gives the half scale d = 1, levels 0 1 2 3 4 6 8 12 (doubled E2M1)
    mids = np.array([0.5, 1.5, 2.5, 3.5, 5, 7, 10, 12], np.float32)
    r = np.zeros(N, np.float32)
    for b in range(N // QK):
        scale = f32(2.0 ** (b - 4))
        blk = np.concatenate([mids, -mids, mids[::-1], -mids[::-1]]) * scale
        r[b * QK:(b + 1) * QK] = blk
    rows.append(r)
    # beyond the largest level: block max in [8·2^k, 16·2^k), values up to 15.99·2^k clip to 12·2^k
    r = rng.uniform(-1, 1, N).astype(np.float32) * f32(15.99)
    rows.append(r)
    # tiny: shared exponent below E8M0's range (the encoder's uint8 cast wraps), subnormal float32 inputs
    for top in (2.0 ** -125, 2.0 ** -127, 2.0 ** -130, 1e-40, 1e-45):
        r = np.zeros(N, np.float32)
        r[::7] = f32(top)
        r[3::11] = -f32(top) * f32(0.3)
        rows.append(r)
    # huge
    r = rng.uniform(-1, 1, N).astype(np.float32) * f32(3.0e38)
    r[0] = f32(3.4e38)
    rows.append(r)
    return rows


cases = [("normal 1e-3", [rng.standard_normal(N) * 1e-3 for _ in range(2)]),
         ("normal", [rng.standard_normal(N) for _ in range(2)]),
         ("normal 30", [rng.standard_normal(N) * 30 for _ in range(2)])]
out_rows = []
for _ in range(2):
    x = rng.standard_normal(N)
    x[rng.choice(N, 8, replace=False)] *= 50
    out_rows.append(x)
cases.append(("outliers", out_rows))
cases.append(("edges", edge_rows()))

commit = ""
p = os.path.join(tree, "SNAPSHOT-COMMIT")
if os.path.exists(p):
    commit = open(p).read().strip()
res = {"llama_cpp_commit": commit, "cases": []}
with np.errstate(over="ignore"):
    for name, rows in cases:
        x = np.ascontiguousarray(np.stack(rows).astype(np.float32))
        n = x.size
        size = base.ggml_row_size(GGML_TYPE_MXFP4, N) * len(rows)
        ref = ctypes.create_string_buffer(size)
        base.quantize_row_mxfp4_ref(x.ctypes.data, ref, n)
        same = []
        qw = rng.gamma(2.0, 5.0, N).astype(np.float32)
        for imat in (None, qw):
            dst = ctypes.create_string_buffer(size)
            base.ggml_quantize_chunk(GGML_TYPE_MXFP4, x.ctypes.data, dst, 0, len(rows), N,
                                     None if imat is None else imat.ctypes.data)
            same.append(dst.raw == ref.raw)
        y = np.zeros(n, np.float32)
        base.dequantize_row_mxfp4(ref, y.ctypes.data, n)
        res["cases"].append({"name": name, "rows": len(rows), "row_len": N, "input": x.tobytes().hex(),
                             "blocks": ref.raw.hex(), "chunk_same": same[0], "chunk_imatrix_same": same[1],
                             "decoded": y.tobytes().hex()})
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "mxfp4.json"), "w") as f:
    json.dump(res, f, indent=1)
    f.write("\n")
