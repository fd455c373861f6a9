"""ggml's own IQ1_S and IQ1_M dot products (ggml_vec_dot_iq1_{s,m}_q8_K), for kernels' TestMatMulQMatchesGGML.

    /usr/bin/python3 testdata/kernels/gen_iq1_vecdot.py LLAMA_CPP_TREE

Loads LLAMA_CPP_TREE/build/bin/libggml-base.so and libggml-cpu.so with ctypes (ours: it only calls ggml's public
API) and, for each type and rows of 256, 512, 2048 and 8192 weights (normal, and normal with ×20 outliers; seed 6): after
ggml_quantize_init, ggml_quantize_chunk of the weights with a random importance matrix (gamma(2, 5); the IQ1 types
take one), from_float of the vec_dot_type (Q8_K) on normal activations, then vec_dot. Writes ggml-vectors-iq1.json in
ggml-vectors.json's layout (hex, little-endian).
"""
import os
import sys

import numpy as np

tree = sys.argv[1]
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import ggml_ctypes  # noqa: E402
base, cpu = ggml_ctypes.load_cpu(tree)
TYPES = {"iq1_s": 19, "iq1_m": 29}

rng = np.random.default_rng(6)
out = []
vdts = set()
for name, gt in TYPES.items():
    base.ggml_quantize_init(gt)
    for n in (256, 512, 2048, 8192):
        for outliers in (False, True):
            w = rng.standard_normal(n).astype(np.float32)
            if outliers:
                idx = rng.choice(n, n // 64, replace=False)
                w[idx] *= 20
            qw = rng.gamma(2.0, 5.0, n).astype(np.float32)
            x = rng.standard_normal(n).astype(np.float32)
            rec, vdt = ggml_ctypes.vec_dot_record(base, cpu, name, gt, w, x, qw)
            vdts.add(vdt)
            out.append(rec)
assert len(vdts) == 1
ggml_ctypes.write_json(os.path.join(os.path.dirname(os.path.abspath(__file__)), "ggml-vectors-iq1.json"), {"vec_dot_type": vdts.pop(), "vec_dot": out})
