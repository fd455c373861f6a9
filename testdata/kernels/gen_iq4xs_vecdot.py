"""ggml's own IQ4_XS dot products (ggml_vec_dot_iq4_xs_q8_K), for kernels' TestMatMulQMatchesGGML.

    /usr/bin/python3 testdata/kernels/gen_iq4xs_vecdot.py LLAMA_CPP_TREE

Loads LLAMA_CPP_TREE/build/bin/libggml-base.so and libggml-cpu.so with ctypes (ours: it only calls ggml's public
API) and, for rows of 512 and 2048 weights (normal, and normal with ×20 outliers; seed 5), does what
ggml-vectors.json's vec_dot entries record for the other types: ggml_quantize_chunk(GGML_TYPE_IQ4_XS, …, NULL) on
the weights, from_float of the vec_dot_type (Q8_K) on normal activations, then vec_dot. Writes
ggml-vectors-iq4xs.json in ggml-vectors.json's layout (hex, little-endian).
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
GGML_TYPE_IQ4_XS = 23

tr = cpu.ggml_get_type_traits_cpu(GGML_TYPE_IQ4_XS).contents
vdt = tr.vec_dot_type
act = cpu.ggml_get_type_traits_cpu(vdt).contents
rng = np.random.default_rng(5)
out = []
for n in (512, 2048):
    for outliers in (False, True):
        w = rng.standard_normal(n).astype(np.float32)
        if outliers:
            idx = rng.choice(n, n // 64, replace=False)
            w[idx] *= 20
        x = rng.standard_normal(n).astype(np.float32)
        wq = ctypes.create_string_buffer(base.ggml_row_size(GGML_TYPE_IQ4_XS, n))
        base.ggml_quantize_chunk(GGML_TYPE_IQ4_XS, w.ctypes.data, wq, 0, 1, n, None)
        xq = ctypes.create_string_buffer(base.ggml_row_size(vdt, n))
        act.from_float(x.ctypes.data, xq, n)
        s = ctypes.c_float()
        tr.vec_dot(n, ctypes.addressof(s), 0, wq, 0, xq, 0, 1)
        out.append({"type": "iq4_xs", "n": n, "w": wq.raw.hex(), "x": x.tobytes().hex(),
                    "want": struct.pack("<f", s.value).hex()})
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "ggml-vectors-iq4xs.json"), "w") as f:
    json.dump({"vec_dot_type": vdt, "vec_dot": out}, f, indent=1)
    f.write("\n")
