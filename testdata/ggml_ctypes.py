"""ggml's public C API through ctypes, for the generators that record ggml's own encodings and dot products
(testdata/quant/ggml/gen_*.py, testdata/kernels/gen_*_vecdot.py): the prototypes those scripts call, declared once.
Ours: it only loads a llama.cpp build's libraries and names their functions' argument types.

    base = ggml_ctypes.load_base(tree)          # libggml-base: quantize_init, quantize_chunk, row_size
    base, cpu = ggml_ctypes.load_cpu(tree)      # also libggml-cpu: cpu_init (called), type traits (from_float, vec_dot)
"""
import ctypes
import json
import os
import struct

import numpy as np

FROM_FLOAT = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
VEC_DOT = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t,
                           ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)


class TraitsCPU(ctypes.Structure):
    """struct ggml_type_traits_cpu."""
    _fields_ = [("from_float", FROM_FLOAT), ("vec_dot", VEC_DOT), ("vec_dot_type", ctypes.c_int),
                ("nrows", ctypes.c_int64)]


def _bindir(tree):
    return os.path.join(tree, "build", "bin")


def _declare_base(base):
    base.ggml_quantize_init.argtypes = [ctypes.c_int]
    base.ggml_quantize_chunk.restype = ctypes.c_size_t
    base.ggml_quantize_chunk.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                         ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
    base.ggml_row_size.restype = ctypes.c_size_t
    base.ggml_row_size.argtypes = [ctypes.c_int, ctypes.c_int64]
    return base


def load_base(tree):
    """LLAMA_CPP_TREE/build/bin/libggml-base.so."""
    return _declare_base(ctypes.CDLL(os.path.join(_bindir(tree), "libggml-base.so")))


def load_cpu(tree):
    """libggml-base.so and libggml-cpu.so (loaded globally, as the CPU backend needs), ggml_cpu_init called."""
    base = _declare_base(ctypes.CDLL(os.path.join(_bindir(tree), "libggml-base.so"), mode=ctypes.RTLD_GLOBAL))
    cpu = ctypes.CDLL(os.path.join(_bindir(tree), "libggml-cpu.so"), mode=ctypes.RTLD_GLOBAL)
    cpu.ggml_cpu_init.restype = None
    cpu.ggml_get_type_traits_cpu.restype = ctypes.POINTER(TraitsCPU)
    cpu.ggml_get_type_traits_cpu.argtypes = [ctypes.c_int]
    cpu.ggml_cpu_init()
    return base, cpu


def vec_dot_record(base, cpu, name, gtype, w, x, qw=None):
    """One entry of ggml-vectors*.json's vec_dot list: ggml_quantize_chunk of the weights w (float32, one row; with the
    importance matrix qw or none), from_float of the type's vec_dot_type on the activations x, then vec_dot; returns
    the entry (hex, little-endian) and the vec_dot_type."""
    n = len(w)
    tr = cpu.ggml_get_type_traits_cpu(gtype).contents
    vdt = tr.vec_dot_type
    act = cpu.ggml_get_type_traits_cpu(vdt).contents
    wq = ctypes.create_string_buffer(base.ggml_row_size(gtype, n))
    base.ggml_quantize_chunk(gtype, w.ctypes.data, wq, 0, 1, n, None if qw is None else qw.ctypes.data)
    xq = ctypes.create_string_buffer(base.ggml_row_size(vdt, n))
    act.from_float(x.ctypes.data, xq, n)
    s = ctypes.c_float()
    tr.vec_dot(n, ctypes.addressof(s), 0, wq, 0, xq, 0, 1)
    return {"type": name, "n": n, "w": wq.raw.hex(), "x": x.tobytes().hex(),
            "want": struct.pack("<f", s.value).hex()}, vdt


def quantize_record(base, name, gtype, case, rows, imat):
    """One entry of testdata/quant/ggml/<type>.json (quant's ggmlCase): ggml_quantize_chunk of rows (float32, rows ×
    row length) as gtype with the importance matrix imat or none, and the bytes it wrote."""
    nrows, n = rows.shape
    dst = ctypes.create_string_buffer(base.ggml_row_size(gtype, n) * nrows)
    base.ggml_quantize_chunk(gtype, rows.ctypes.data, dst, 0, nrows, n, None if imat is None else imat.ctypes.data)
    rec = {} if name is None else {"type": name}  # iq4xs.json, of one type, has no "type"
    rec.update({"name": case, "rows": nrows, "row_len": n, "input": rows.tobytes().hex(),
                "imatrix": "" if imat is None else imat.tobytes().hex(), "blocks": dst.raw.hex()})
    return rec


def test_row(rng, n, kind, special=None):
    """A row of n values for a quantizer case: rng.standard_normal(n), then shaped by kind — the kinds every
    generator shares here ("normal" leaves it; "outliers": 8 values ×50; "heavy": Student t with 3 degrees of
    freedom instead; "zero"; "one": one non-zero value; "constant"; "alternating" signs of a slow ramp), a script's
    own in special (kind → function of the normal row, returning the row; it may draw from rng after the row)."""
    x = rng.standard_normal(n)
    if special and kind in special:
        return special[kind](x)
    if kind == "outliers":
        x[rng.choice(n, 8, replace=False)] *= 50
    elif kind == "heavy":
        x = rng.standard_t(3, n)
    elif kind == "zero":
        x[:] = 0
    elif kind == "one":
        x[:] = 0
        x[300] = -2.5
    elif kind == "constant":
        x[:] = 0.75
    elif kind == "alternating":
        x = np.where(np.arange(n) % 2 == 0, 1.0, -1.0) * (1 + np.arange(n) / n)
    elif kind != "normal":
        raise ValueError(kind)
    return x


def scaled(x, lo, hi, f):
    """x with x[lo:hi] multiplied by f."""
    x[lo:hi] *= f
    return x


def zeroed(x, lo, hi):
    """x with x[lo:hi] set to +0."""
    x[lo:hi] = 0
    return x


def odd_negatives(x):
    """|x| with every eighth value negated: one negative in each group of 8."""
    x = np.abs(x)
    x[::8] *= -1
    return x


def write_json(path, obj):
    """Writes obj as the generators write their fixtures: indent 1, a final newline."""
    with open(path, "w") as f:
        json.dump(obj, f, indent=1)
        f.write("\n")
