"""ggml's own IQ1_S and IQ1_M encodings (quantize_iq1_s / quantize_iq1_m through ggml_quantize_chunk).

    /usr/bin/python3 testdata/quant/ggml/gen_iq1.py LLAMA_CPP_TREE

Loads LLAMA_CPP_TREE/build/bin/libggml-base.so with ctypes (ours: it calls only ggml's public API), calls
ggml_quantize_init for each type (it builds the 1-bit grid's map and neighbour lists the searches read) and
quantizes, as llama-quantize does, rows of 512 values: normal rows at scales 1e-3, 1 and 30, normal rows rounded to
f16 (as an f16 model's weights are: many equal values, which the exact split search sorts), rows of a few repeated
values, rows with ×50 outliers, heavy-tailed (Student t, 3 degrees of freedom) rows, and edge rows (all zero; a zero
32-value block; a 16-value block below ggml's GROUP_MAX_EPS_IQ1_M; a 32-value block below GROUP_MAX_EPS_IQ1_S; one
non-zero value; every value equal; alternating signs). Each case is one ggml_quantize_chunk call whose first row is an
ordinary one: ggml carries each block position's shift across the super-blocks and rows of a call and stores it
again for a block below the epsilon, and before any ordinary block it reads uninitialised memory. Each case runs with
a random positive importance matrix (gamma(2, 5), one per column as llama-quantize passes it) and with one that is
zero on a few scattered columns; IQ1_M, which also runs without one, again without. numpy seed 24. Writes iq1.json:
per case the type, name, rows, row length, input float32 (hex, little-endian), importance (hex, or "" for none) and
the bytes ggml wrote (hex).
"""
import ctypes
import os
import sys

import numpy as np

tree = sys.argv[1]
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
import ggml_ctypes  # noqa: E402
base = ggml_ctypes.load_base(tree)
TYPES = {"IQ1_S": 19, "IQ1_M": 29}

rng = np.random.default_rng(24)
N = 512


def row(kind):
    return ggml_ctypes.test_row(rng, N, kind, {
        "f16": lambda x: (x * 0.02).astype(np.float16).astype(np.float64),
        "repeated": lambda x: rng.integers(-3, 4, N) * 0.25,
        "zero-block": lambda x: ggml_ctypes.zeroed(x, 320, 352),
        "tiny16": lambda x: ggml_ctypes.scaled(x, 288, 304, 1e-10),
        "tiny32": lambda x: ggml_ctypes.scaled(x, 384, 416, 1e-14)})


cases = [("normal 1e-3", [row("normal") * 1e-3 for _ in range(2)]), ("normal", [row("normal") for _ in range(4)]),
         ("normal 30", [row("normal") * 30 for _ in range(2)]), ("f16", [row("f16") for _ in range(4)]),
         ("repeated", [row("repeated") for _ in range(2)]), ("outliers", [row("outliers"), row("outliers")]),
         ("heavy", [row("heavy"), row("heavy")]),
         ("edges", [row(k) for k in ("normal", "zero", "zero-block", "tiny16", "tiny32", "one", "constant",
                                     "alternating")])]
out = []
for tname, gtype in TYPES.items():
    base.ggml_quantize_init(gtype)
    for name, rows in cases:
        x = np.ascontiguousarray(np.stack(rows).astype(np.float32))
        qw = rng.gamma(2.0, 5.0, N).astype(np.float32)
        holes = qw.copy()
        holes[rng.choice(N, 24, replace=False)] = 0
        imats = [qw, holes] + ([None] if tname == "IQ1_M" else [])
        for imat in imats:
            out.append(ggml_ctypes.quantize_record(base, tname, gtype, name, x, imat))
ggml_ctypes.write_json(os.path.join(os.path.dirname(os.path.abspath(__file__)), "iq1.json"), out)
