"""ggml's own NVFP4 and Q1_0 dot products (ggml_vec_dot_nvfp4_q8_0, ggml_vec_dot_q1_0_q8_0), for kernels'
TestMatMulQMatchesGGML.

    /usr/bin/python3 testdata/kernels/gen_nvfp4_q1_0_vecdot.py LLAMA_CPP_TREE

Loads LLAMA_CPP_TREE/build/bin/libggml-base.so and libggml-cpu.so with ctypes (ours: it only calls ggml's public
API) and, for each type and rows of 512 and 2048 weights (normal, and normal with ×20 outliers on 1/64 of them;
activations normal, and for the outlier rows normal with ×20 outliers of their own; numpy seed 29), does what
ggml-vectors.json's vec_dot entries record for the other types: ggml_quantize_chunk(type, …, NULL) on the weights,
from_float of the vec_dot_type (Q8_0, recorded as vec_dot_type 8) on the activations, then vec_dot. Writes
ggml-vectors-nvfp4-q1_0.json in ggml-vectors.json's layout (hex, little-endian).
"""
import os
import sys

import numpy as np

tree = sys.argv[1]
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import ggml_ctypes  # noqa: E402
base, cpu = ggml_ctypes.load_cpu(tree)

rng = np.random.default_rng(29)
out = []
vdts = set()
for name, gtype in (("nvfp4", 40), ("q1_0", 41)):
    for n in (512, 2048):
        for outliers in (False, True):
            w = rng.standard_normal(n).astype(np.float32)
            x = rng.standard_normal(n).astype(np.float32)
            if outliers:
                w[rng.choice(n, n // 64, replace=False)] *= 20
                x[rng.choice(n, n // 64, replace=False)] *= 20
            rec, vdt = ggml_ctypes.vec_dot_record(base, cpu, name, gtype, w, x)
            vdts.add(vdt)
            out.append(rec)
assert len(vdts) == 1
ggml_ctypes.write_json(os.path.join(os.path.dirname(os.path.abspath(__file__)), "ggml-vectors-nvfp4-q1_0.json"),
                       {"vec_dot_type": vdts.pop(), "vec_dot": out})
