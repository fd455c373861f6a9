"""ggml's own IQ3_XXS and IQ3_S encodings (quantize_iq3_xxs, quantize_iq3_s through ggml_quantize_chunk), with and
without an importance matrix.

    /usr/bin/python3 testdata/quant/ggml/gen_iq3.py LLAMA_CPP_TREE

Loads LLAMA_CPP_TREE/build/bin/libggml-base.so with ctypes (ours: it calls only ggml's public API;
ggml_quantize_chunk builds the IQ3 grid maps itself through ggml_quantize_init) and quantizes, as llama-quantize
does, rows of 512 values to GGML_TYPE_IQ3_XXS and GGML_TYPE_IQ3_S: 16 normal rows at each of the scales 1e-3, 1 and
30, 16 heavy-tailed rows (Student t, 3 degrees of freedom), rows with ×50 outliers, and edge rows (all zero; a zero
32-value block inside a super-block; a block of values far below IQ3_XXS's GROUP_MAX_EPS_IQ3_XXS (1e-8); a block just
below it; one non-zero value; every value equal; alternating signs; one negative value per group of eight), each
with no importance matrix and with a random positive one (gamma(2, 5), one per column as llama-quantize passes it);
and the normal rows once more with an importance matrix whose second 32-column block is zero. numpy seed 17. Writes
iq3.json: per case the type, name, rows, row length, input float32 (hex, little-endian), importance (hex, or "" for
none) and the bytes ggml wrote (hex).
"""
import ctypes
import os
import sys

import numpy as np

tree = sys.argv[1]
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
import ggml_ctypes  # noqa: E402
base = ggml_ctypes.load_base(tree)
TYPES = {"IQ3_XXS": 18, "IQ3_S": 21}

rng = np.random.default_rng(17)
N = 512


def row(kind):
    return ggml_ctypes.test_row(rng, N, kind, {
        "zero-block": lambda x: ggml_ctypes.zeroed(x, 64, 96),
        "tiny-block": lambda x: ggml_ctypes.scaled(x, 288, 320, 1e-17),
        "eps-block": lambda x: ggml_ctypes.scaled(x, 320, 352, 3e-9),
        "one-negative": ggml_ctypes.odd_negatives})


cases = [("normal 1e-3", [row("normal") * 1e-3 for _ in range(16)]), ("normal", [row("normal") for _ in range(16)]),
         ("normal 30", [row("normal") * 30 for _ in range(16)]), ("heavy", [row("heavy") for _ in range(16)]),
         ("outliers", [row("outliers") for _ in range(4)]),
         ("edges", [row(k) for k in ("zero", "zero-block", "tiny-block", "eps-block", "one", "constant", "alternating",
                                     "one-negative")])]
out = []
for tname, t in TYPES.items():
    for name, rows in cases + [("normal, zero importance block", None)]:
        if rows is None:
            rows = cases[1][1]
            qw = rng.gamma(2.0, 5.0, N).astype(np.float32)
            qw[32:64] = 0
            imats = [qw]
        else:
            imats = [None, rng.gamma(2.0, 5.0, N).astype(np.float32)]
        x = np.ascontiguousarray(np.stack(rows).astype(np.float32))
        for imat in imats:
            out.append(ggml_ctypes.quantize_record(base, tname, t, name, x, imat))
ggml_ctypes.write_json(os.path.join(os.path.dirname(os.path.abspath(__file__)), "iq3.json"), out)
