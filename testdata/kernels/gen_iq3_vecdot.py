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
import os
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
    for n in (512, 2048):
        for outliers in (False, True):
            w = rng.standard_normal(n).astype(np.float32)
            x = rng.standard_normal(n).astype(np.float32)
            if outliers:
                idx = rng.choice(n, n // 64, replace=False)
                w[idx] *= 20
                for b in range(n // 256):
                    x[256 * b + 7 + 13 * b] = 9.0 if b % 2 == 0 else -9.0
            rec, vdt = ggml_ctypes.vec_dot_record(base, cpu, name, typ, w, x)
            vdts.add(vdt)
            out.append(rec)
assert len(vdts) == 1
ggml_ctypes.write_json(os.path.join(os.path.dirname(os.path.abspath(__file__)), "ggml-vectors-iq3.json"), {"vec_dot_type": vdts.pop(), "vec_dot": out})
