"""ggml's public C API through ctypes, for the generators that record ggml's own encodings and dot products
(testdata/quant/ggml/gen_*.py, testdata/kernels/gen_*_vecdot.py): the prototypes those scripts call, declared once.
Ours: it only loads a llama.cpp build's libraries and names their functions' argument types.

    base = ggml_ctypes.load_base(tree)          # libggml-base: quantize_init, quantize_chunk, row_size
    base, cpu = ggml_ctypes.load_cpu(tree)      # also libggml-cpu: cpu_init (called), type traits (from_float, vec_dot)
"""
import ctypes
import os

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
