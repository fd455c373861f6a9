"""ggml's own IQ4_XS dot products (ggml_vec_dot_iq4_xs_q8_K), for kernels' TestMatMulQMatchesGGML.

    /usr/bin/python3 testdata/kernels/gen_iq4xs_vecdot.py LLAMA_CPP_TREE

Loads LLAMA_CPP_TREE/build/bin/libggml-base.so and libggml-cpu.so with ctypes (ours: it only calls ggml's public
API) and, for rows of 512 and 2048 weights (normal, and normal with ×20 outliers; seed 5), does what
ggml-vectors.json's vec_dot entries record for the other types: ggml_quantize_chunk(GGML_TYPE_IQ4_XS, …, NULL) on
the weights, from_float of the vec_dot_type (Q8_K) on normal activations, then vec_dot. Writes
ggml-vectors-iq4xs.json in ggml-vectors.json's layout (hex, little-endian).
"""
import os
import sys

import numpy as np

tree = sys.argv[1]
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import ggml_ctypes  # noqa: E402
base, cpu = ggml_ctypes.load_cpu(tree)
GGML_TYPE_IQ4_XS = 23

rng = np.random.default_rng(5)
out = []
vdts = set()
for n in (512, 2048):
    for outliers in (False, True):
        w = rng.standard_normal(n).astype(np.float32)
        if outliers:
            idx = rng.choice(n, n // 64, replace=False)
            w[idx] *= 20
        x = rng.standard_normal(n).astype(np.float32)
        rec, vdt = ggml_ctypes.vec_dot_record(base, cpu, "iq4_xs", GGML_TYPE_IQ4_XS, w, x)
        vdts.add(vdt)
        out.append(rec)
ggml_ctypes.write_json(os.path.join(os.path.dirname(os.path.abspath(__file__)), "ggml-vectors-iq4xs.json"), {"vec_dot_type": vdts.pop(), "vec_dot": out})
