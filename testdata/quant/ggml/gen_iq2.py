"""ggml's own IQ2_XXS, IQ2_XS and IQ2_S encodings (quantize_iq2_{xxs,xs,s} through ggml_quantize_chunk).

    /usr/bin/python3 testdata/quant/ggml/gen_iq2.py LLAMA_CPP_TREE

Loads LLAMA_CPP_TREE/build/bin/libggml-base.so with ctypes (ours: it calls only ggml's public API), calls
ggml_quantize_init for each type (it builds the grid maps and neighbour lists the searches read) and quantizes, as
llama-quantize does, rows of 512 values: normal rows at scales 1e-3, 1 and 30, rows with ×50 outliers, heavy-tailed
(Student t, 3 degrees of freedom) rows, edge rows (all zero; a zero 32-value block; a 16-value block below ggml's
GROUP_MAX_EPS; a 16-value block between GROUP_MAX_EPS and GROUP_MAX_EPS_IQ2_S; one non-zero value; every value equal;
alternating signs; an odd number of negatives in every group of 8), each with a random positive importance matrix
(gamma(2, 5), one per column as llama-quantize passes it) and with one that is zero on a few scattered columns;
IQ2_S, which also runs without one, again without. numpy seed 19. Writes iq2.json: per case the type, name, rows,
row length, input float32 (hex, little-endian), importance (hex, or "" for none) and the bytes ggml wrote (hex).
"""
import ctypes
import os
import sys

import numpy as np

tree = sys.argv[1]
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
import ggml_ctypes  # noqa: E402
base = ggml_ctypes.load_base(tree)
TYPES = {"IQ2_XXS": 16, "IQ2_XS": 17, "IQ2_S": 22}

rng = np.random.default_rng(19)
N = 512


def row(kind):
    return ggml_ctypes.test_row(rng, N, kind, {
        "zero-block": lambda x: ggml_ctypes.zeroed(x, 64, 96),
        "tiny-block": lambda x: ggml_ctypes.scaled(x, 288, 304, 1e-17),
        "small-block": lambda x: ggml_ctypes.scaled(x, 304, 320, 1e-10),
        "odd-negatives": ggml_ctypes.odd_negatives})


cases = [("normal 1e-3", [row("normal") * 1e-3 for _ in range(2)]), ("normal", [row("normal") for _ in range(4)]),
         ("normal 30", [row("normal") * 30 for _ in range(2)]), ("outliers", [row("outliers"), row("outliers")]),
         ("heavy", [row("heavy"), row("heavy")]),
         ("edges", [row(k) for k in ("zero", "zero-block", "tiny-block", "small-block", "one", "constant",
                                     "alternating", "odd-negatives")])]
out = []
for tname, gtype in TYPES.items():
    base.ggml_quantize_init(gtype)
    for name, rows in cases:
        x = np.ascontiguousarray(np.stack(rows).astype(np.float32))
        qw = rng.gamma(2.0, 5.0, N).astype(np.float32)
        holes = qw.copy()
        holes[rng.choice(N, 24, replace=False)] = 0
        imats = [qw, holes] + ([None] if tname == "IQ2_S" else [])
        for imat in imats:
            out.append(ggml_ctypes.quantize_record(base, tname, gtype, name, x, imat))
ggml_ctypes.write_json(os.path.join(os.path.dirname(os.path.abspath(__file__)), "iq2.json"), out)
