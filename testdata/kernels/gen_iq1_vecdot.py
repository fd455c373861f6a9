"""ggml's own IQ1_S and IQ1_M dot products (ggml_vec_dot_iq1_{s,m}_q8_K), for kernels' TestMatMulQMatchesGGML.

    /usr/bin/python3 testdata/kernels/gen_iq1_vecdot.py LLAMA_CPP_TREE

Loads LLAMA_CPP_TREE/build/bin/libggml-base.so and libggml-cpu.so with ctypes (ours: it only calls ggml's public
API) and, for each type and rows of 256, 512, 2048 and 8192 weights (normal, and normal with ×20 outliers; seed 6): after
ggml_quantize_init, ggml_quantize_chunk of the weights with a random importance matrix (gamma(2, 5); the IQ1 types
take one), from_float of the vec_dot_type (Q8_K) on normal activations, then vec_dot. Writes ggml-vectors-iq1.json in
ggml-vectors.json's layout (hex, little-endian).
"""
import ctypes
import json
import os
import struct
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
    tr = cpu.ggml_get_type_traits_cpu(gt).contents
    vdt = tr.vec_dot_type
    vdts.add(vdt)
    act = cpu.ggml_get_type_traits_cpu(vdt).contents
    for n in (256, 512, 2048, 8192):
        for outliers in (False, True):
            w = rng.standard_normal(n).astype(np.float32)
            if outliers:
                idx = rng.choice(n, n // 64, replace=False)
                w[idx] *= 20
            qw = rng.gamma(2.0, 5.0, n).astype(np.float32)
            x = rng.standard_normal(n).astype(np.float32)
            wq = ctypes.create_string_buffer(base.ggml_row_size(gt, n))
            base.ggml_quantize_chunk(gt, w.ctypes.data, wq, 0, 1, n, qw.ctypes.data)
            xq = ctypes.create_string_buffer(base.ggml_row_size(vdt, n))
            act.from_float(x.ctypes.data, xq, n)
            s = ctypes.c_float()
            tr.vec_dot(n, ctypes.addressof(s), 0, wq, 0, xq, 0, 1)
            out.append({"type": name, "n": n, "w": wq.raw.hex(), "x": x.tobytes().hex(),
                        "want": struct.pack("<f", s.value).hex()})
assert len(vdts) == 1
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "ggml-vectors-iq1.json"), "w") as f:
    json.dump({"vec_dot_type": vdts.pop(), "vec_dot": out}, f, indent=1)
    f.write("\n")
