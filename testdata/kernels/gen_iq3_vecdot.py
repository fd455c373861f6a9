"""ggml's own IQ3_XXS and IQ3_S dot products (ggml_vec_dot_iq3_xxs_q8_K, ggml_vec_dot_iq3_s_q8_K), for kernels' TestMatMulQMatchesGGML.

    /usr/bin/python3 testdata/kernels/gen_iq3_vecdot.py LLAMA_CPP_TREE

Loads LLAMA_CPP_TREE/build/bin/libggml-base.so and libggml-cpu.so with ctypes (ours: it only calls ggml's public
API) and, for IQ3_XXS and IQ3_S and rows of 512 and 2048 weights (normal, and normal with ×20 outliers; seed 5),
does what ggml-vectors.json's vec_dot entries record for the other types: ggml_quantize_chunk(type, …, NULL) on the
weights, from_float of the vec_dot_type (Q8_K) on activations (normal; for the second row of each size, half of the
super-blocks with a large positive and half with a large negative element, so that Q8_K's −127 and +127 both meet
negative weight signs), then vec_dot. Writes ggml-vectors-iq3.json in ggml-vectors.json's layout (hex,
little-endian); this build of libggml-cpu (GGML_NATIVE on an AVX2 machine) runs the AVX2 dots.
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
TYPES = {"iq3_xxs": 18, "iq3_s": 21}

rng = np.random.default_rng(5)
out = []
vdts = set()
for name, typ in TYPES.items():
    tr = cpu.ggml_get_type_traits_cpu(typ).contents
    vdt = tr.vec_dot_type
    vdts.add(vdt)
    act = cpu.ggml_get_type_traits_cpu(vdt).contents
    for n in (512, 2048):
        for outliers in (False, True):
            w = rng.standard_normal(n).astype(np.float32)
            x = rng.standard_normal(n).astype(np.float32)
            if outliers:
                idx = rng.choice(n, n // 64, replace=False)
                w[idx] *= 20
                for b in range(n // 256):
                    x[256 * b + 7 + 13 * b] = 9.0 if b % 2 == 0 else -9.0
            wq = ctypes.create_string_buffer(base.ggml_row_size(typ, n))
            base.ggml_quantize_chunk(typ, w.ctypes.data, wq, 0, 1, n, None)
            xq = ctypes.create_string_buffer(base.ggml_row_size(vdt, n))
            act.from_float(x.ctypes.data, xq, n)
            s = ctypes.c_float()
            tr.vec_dot(n, ctypes.addressof(s), 0, wq, 0, xq, 0, 1)
            out.append({"type": name, "n": n, "w": wq.raw.hex(), "x": x.tobytes().hex(),
                        "want": struct.pack("<f", s.value).hex()})
assert len(vdts) == 1
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "ggml-vectors-iq3.json"), "w") as f:
    json.dump({"vec_dot_type": vdt, "vec_dot": out}, f, indent=1)
    f.write("\n")
