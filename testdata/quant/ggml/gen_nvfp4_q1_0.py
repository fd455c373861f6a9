"""ggml's own NVFP4 and Q1_0 encodings and decodings (ggml types 40 and 41, which llama.cpp added in 2026).

    /usr/bin/python3 testdata/quant/ggml/gen_nvfp4_q1_0.py LLAMA_CPP_TREE

Loads LLAMA_CPP_TREE/build/bin/libggml-base.so with ctypes (ours: it calls only ggml's exported functions) and, for
each type and case, encodes rows of float32 with the block encoder (quantize_row_nvfp4_ref, quantize_row_q1_0_ref),
with ggml_quantize_chunk (the path llama-quantize takes) without and with a random importance matrix, and decodes
ggml's blocks with dequantize_row_nvfp4 / dequantize_row_q1_0. Rows of 256 (four NVFP4 blocks, two Q1_0 blocks).
Cases, numpy seed 23: normal rows at scales 1e-3, 1 and 30; ×50 outliers; and edge rows per type.
NVFP4 (its scale is the UE4M3 byte of max|x|/6 per 16 values): zero; sub-block maxima whose max/6 sits exactly on,
just below and just above UE4M3 values, on the mantissa round-up that carries into the exponent, at the top (448·6
and beyond) and in UE4M3's subnormal range (2^-9 … 2^-6) and below it; values halfway between FP4 levels; NaN and
±Inf among ordinary values. Q1_0 (d = mean |x| in f16, a sign bit per value): zero; -0.0 and +0.0 mixed with
ordinary values; sums that overflow f16 and float32; means below f16's subnormals; NaN.
Writes nvfp4.json and q1_0.json in mxfp4.json's layout: the tree's commit (LLAMA_CPP_TREE/SNAPSHOT-COMMIT or COMMIT),
and per case the name, rows, row length, input float32 (hex, little-endian), the bytes the block encoder wrote (hex),
whether ggml_quantize_chunk wrote the same bytes without and with the importance matrix, and the decoder's floats
(float32 hex).
"""
import ctypes
import json
import os
import sys

import numpy as np

tree = sys.argv[1]
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", ".."))
import ggml_ctypes  # noqa: E402
base = ggml_ctypes.load_base(tree)
for fn in ("quantize_row_nvfp4_ref", "dequantize_row_nvfp4", "quantize_row_q1_0_ref", "dequantize_row_q1_0"):
    getattr(base, fn).restype = None
    getattr(base, fn).argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
GGML_TYPE_NVFP4, GGML_TYPE_Q1_0 = 40, 41
N = 256
rng = np.random.default_rng(23)
f32 = np.float32


def ue4m3(e, m):
    """The value of the UE4M3 byte of exponent e (1..15) and mantissa m."""
    return (1 + m / 8) * 2.0 ** (e - 7)


def nvfp4_edges():
    rows = [np.zeros(N, np.float32)]
    # sixteen sub-blocks per row; each gets a maximum whose /6 is a chosen UE4M3 neighbourhood
    for shift in (0.0, -1.0, 1.0):  # exactly on, one float32 below, one above (in ulps of the max)
        r = rng.uniform(-1, 1, N).astype(np.float32)
        for s in range(16):
            e, m = 1 + (s * 7) % 14, s % 8
            top = f32(ue4m3(e, m) * 6)
            if shift < 0:
                top = np.nextafter(top, f32(0))
            elif shift > 0:
                top = np.nextafter(top, f32(np.inf))
            blk = r[16 * s:16 * s + 16] * top
            blk[s % 16] = top if s % 2 == 0 else -top
            r[16 * s:16 * s + 16] = blk
        rows.append(r)
    # halfway between two UE4M3 mantissas (the round bit set), and the carry from mantissa 7 into the next exponent
    r = rng.uniform(-1, 1, N).astype(np.float32)
    for s in range(16):
        e, m = 2 + s % 12, 7 if s % 2 == 0 else s % 7
        top = f32((ue4m3(e, m) + 2.0 ** (e - 7) / 16) * 6)
        r[16 * s:16 * s + 16] *= top
        r[16 * s + 3] = top
    rows.append(r)
    # the top: max/6 around 448 and beyond (clamped to 448), infinite exponents
    r = rng.uniform(-1, 1, N).astype(np.float32)
    for s, top in enumerate([448 * 6, 448 * 6 * 1.01, 480 * 6, 1e6, 3e38, 416 * 6, 440 * 6, 447.9 * 6] * 2):
        r[16 * s:16 * s + 16] *= f32(top)
        r[16 * s + 7] = f32(top)
    rows.append(r)
    # UE4M3 subnormals (max/6 in 2^-10 … 2^-6) and below
    r = rng.uniform(-1, 1, N).astype(np.float32)
    for s in range(16):
        top = f32(6 * 2.0 ** (-6 - s * 0.4))
        r[16 * s:16 * s + 16] *= top
        r[16 * s + 11] = -top
    rows.append(r)
    r = np.zeros(N, np.float32)
    for s in range(16):
        top = f32(6 * (s + 0.5) * 2.0 ** -9)  # x·512 + 0.5 right on an integer
        r[16 * s + 1] = top
        r[16 * s + 2] = -top / 3
    rows.append(r)
    # halfway between FP4 levels: max 6·2^k gives the half scale 2^k·… ; levels 0 .5 1 1.5 2 3 4 6 (×d·2)
    mids = np.array([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5, 6], np.float32)
    r = np.zeros(N, np.float32)
    for s in range(16):
        blk = np.concatenate([mids, -mids[::-1]]) * f32(2.0 ** (s - 8))
        r[16 * s:16 * s + 16] = blk
    rows.append(r)
    # NaN and infinities among ordinary values
    r = rng.standard_normal(N).astype(np.float32)
    r[5], r[40], r[77], r[200] = np.nan, np.inf, -np.inf, np.nan
    rows.append(r)
    return rows


def q1_0_edges():
    rows = [np.zeros(N, np.float32)]
    r = rng.standard_normal(N).astype(np.float32)
    r[::3] = f32(-0.0)
    r[1::7] = f32(0.0)
    rows.append(r)
    r = rng.uniform(-1, 1, N).astype(np.float32) * f32(1e3)  # mean |x| past f16's 65504 only for the next rows
    rows.append(r)
    r = rng.uniform(0.5, 1, N).astype(np.float32) * f32(2e5)  # mean past 65504: f16 infinity
    r[::2] *= -1
    rows.append(r)
    r = np.full(N, f32(3e38))  # the float32 sum overflows
    r[1::2] *= -1
    rows.append(r)
    for top in (1e-5, 1e-7, 1e-9):  # f16 subnormal means, and below them
        r = rng.uniform(-1, 1, N).astype(np.float32) * f32(top)
        rows.append(r)
    r = rng.standard_normal(N).astype(np.float32)
    r[17], r[130] = np.nan, np.nan
    rows.append(r)
    return rows


def common():
    cases = [("normal 1e-3", [rng.standard_normal(N) * 1e-3 for _ in range(2)]),
             ("normal", [rng.standard_normal(N) for _ in range(2)]),
             ("normal 30", [rng.standard_normal(N) * 30 for _ in range(2)])]
    out_rows = []
    for _ in range(2):
        x = rng.standard_normal(N)
        x[rng.choice(N, 8, replace=False)] *= 50
        out_rows.append(x)
    cases.append(("outliers", out_rows))
    return cases


commit = ""
for name in ("SNAPSHOT-COMMIT", "COMMIT"):
    p = os.path.join(tree, name)
    if not commit and os.path.exists(p):
        commit = open(p).read().strip()
for tname, gtype, enc, dec, edges in (("nvfp4", GGML_TYPE_NVFP4, base.quantize_row_nvfp4_ref, base.dequantize_row_nvfp4,
                                       nvfp4_edges),
                                      ("q1_0", GGML_TYPE_Q1_0, base.quantize_row_q1_0_ref, base.dequantize_row_q1_0,
                                       q1_0_edges)):
    res = {"llama_cpp_commit": commit, "cases": []}
    cases = common() + [("edges", edges())]
    with np.errstate(over="ignore", invalid="ignore"):
        for name, rows in cases:
            x = np.ascontiguousarray(np.stack(rows).astype(np.float32))
            n = x.size
            size = base.ggml_row_size(gtype, N) * len(rows)
            ref = ctypes.create_string_buffer(size)
            enc(x.ctypes.data, ref, n)
            same = []
            qw = rng.gamma(2.0, 5.0, N).astype(np.float32)
            for imat in (None, qw):
                dst = ctypes.create_string_buffer(size)
                base.ggml_quantize_chunk(gtype, x.ctypes.data, dst, 0, len(rows), N,
                                         None if imat is None else imat.ctypes.data)
                same.append(dst.raw == ref.raw)
            y = np.zeros(n, np.float32)
            dec(ref, y.ctypes.data, n)
            res["cases"].append({"name": name, "rows": len(rows), "row_len": N, "input": x.tobytes().hex(),
                                 "blocks": ref.raw.hex(), "chunk_same": same[0], "chunk_imatrix_same": same[1],
                                 "decoded": y.tobytes().hex()})
    with open(os.path.join(here, tname + ".json"), "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")
    print(tname, len(cases), "cases", sum(c["rows"] for c in res["cases"]), "rows")
