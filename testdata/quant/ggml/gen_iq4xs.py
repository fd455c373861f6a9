"""ggml's own IQ4_XS encodings (quantize_iq4_xs through ggml_quantize_chunk), with and without an importance matrix.

    /usr/bin/python3 testdata/quant/ggml/gen_iq4xs.py LLAMA_CPP_TREE

Loads LLAMA_CPP_TREE/build/bin/libggml-base.so with ctypes (ours: it calls only ggml's public API) and quantizes,
as llama-quantize does, rows of 512 values to GGML_TYPE_IQ4_XS: normal rows at scales 1e-3, 1 and 30, a row with
×50 outliers, edge rows (all zero; a zero 32-value block inside a super-block; one block of values below ggml's
GROUP_MAX_EPS; one non-zero value; every value equal; alternating signs), each with no importance matrix and with a
random positive one (gamma(2, 5), one per column as llama-quantize passes it). numpy seed 13. Writes iq4xs.json:
per case the name, rows, row length, input float32 (hex, little-endian), importance (hex, or "" for none) and the
IQ4_XS bytes ggml wrote (hex).
"""
import ctypes
import os
import sys

import numpy as np

tree = sys.argv[1]
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
import ggml_ctypes  # noqa: E402
base = ggml_ctypes.load_base(tree)
GGML_TYPE_IQ4_XS = 23

rng = np.random.default_rng(13)
N = 512


def row(kind):
    return ggml_ctypes.test_row(rng, N, kind, {
        "zero-block": lambda x: ggml_ctypes.zeroed(x, 64, 96),
        "tiny-block": lambda x: ggml_ctypes.scaled(x, 288, 320, 1e-17)})


cases = [("normal 1e-3", [row("normal") * 1e-3 for _ in range(2)]), ("normal", [row("normal") for _ in range(2)]),
         ("normal 30", [row("normal") * 30 for _ in range(2)]), ("outliers", [row("outliers"), row("outliers")]),
         ("edges", [row(k) for k in ("zero", "zero-block", "tiny-block", "one", "constant", "alternating")])]
out = []
for name, rows in cases:
    x = np.ascontiguousarray(np.stack(rows).astype(np.float32))
    qw = rng.gamma(2.0, 5.0, N).astype(np.float32)
    for imat in (None, qw):
        out.append(ggml_ctypes.quantize_record(base, None, GGML_TYPE_IQ4_XS, name, x, imat))
ggml_ctypes.write_json(os.path.join(os.path.dirname(os.path.abspath(__file__)), "iq4xs.json"), out)
