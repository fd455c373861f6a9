"""ggml's own Q4_0 matrix products through the CPU backend's repacked ("CPU_AARCH64") weights: q4_0_8x8_q8_0,
ggml_gemv_q4_0_8x8_q8_0 for single activation rows and ggml_gemm_q4_0_8x8_q8_0 for groups of four.

    /usr/bin/python3 testdata/kernels/gen_q4_0x8_mulmat.py LLAMA_CPP_TREE

Loads LLAMA_CPP_TREE/build/bin/libggml-base.so and libggml-cpu.so with ctypes (ours: it only calls ggml's public
API). For each case (numpy seed 11) it quantizes N×K normal weights (half the cases with ×20 outliers on 1/64 of
them) with ggml_quantize_chunk(GGML_TYPE_Q4_0, …, NULL), then computes ggml_mul_mat(W, X) for M×K float32
activations with ggml_backend_graph_compute on a CPU backend (4 threads), W allocated in the buffer type that the CPU
device's "ggml_backend_dev_get_extra_bufts" lists as CPU_AARCH64 (ggml_backend_tensor_set repacks it into 8-row
interleaved blocks), X and Y in ggml_backend_cpu_buffer_type().

It checks, and fails otherwise:
- that the CPU_AARCH64 buffer holds other bytes than the row-major blocks it was given (the repack ran);
- that 1 and 2 threads give the same bits as 4 (with 4 threads every thread gets 8 columns and
  ggml_gemm_q4_0_8x8_q8_0 runs only its AVX2 loops; with fewer, 16-column slices take its AVX-512 loops);
- that the same product with W in the plain CPU buffer type equals, bit for bit, each output computed alone by
  ggml_get_type_traits_cpu(GGML_TYPE_Q4_0)->vec_dot (ggml_vec_dot_q4_0_q8_0) on from_float(Q8_0) of its row;
- that the repacked product differs from that one in some bits in at least one case; the number of differing
  outputs is recorded per case ("differs_from_vec_dot").

Writes ggml-vectors-q4_0x8.json (hex, little-endian): "w" the row-major Q4_0 bytes as ggml_quantize_chunk wrote them
(not repacked), "x" the M×K activations, "want" the M×N outputs (row m holds the N outputs of activation row m).
"""
import ctypes
import os
import sys

import numpy as np

tree = sys.argv[1]
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import ggml_ctypes  # noqa: E402
base, cpu = ggml_ctypes.load_cpu(tree)
GGML_TYPE_F32 = 0
GGML_TYPE_Q4_0 = 2
P = ctypes.c_void_p


class InitParams(ctypes.Structure):
    """struct ggml_init_params."""
    _fields_ = [("mem_size", ctypes.c_size_t), ("mem_buffer", P), ("no_alloc", ctypes.c_bool)]


def declare(lib, name, restype, *argtypes):
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)


for name, restype, argtypes in [
        ("ggml_init", P, [InitParams]), ("ggml_free", None, [P]),
        ("ggml_tensor_overhead", ctypes.c_size_t, []), ("ggml_graph_overhead", ctypes.c_size_t, []),
        ("ggml_new_tensor_2d", P, [P, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]),
        ("ggml_mul_mat", P, [P, P, P]), ("ggml_new_graph", P, [P]), ("ggml_build_forward_expand", None, [P, P]),
        ("ggml_nbytes", ctypes.c_size_t, [P]), ("ggml_get_data", P, [P]),
        ("ggml_backend_reg_dev_get", P, [P, ctypes.c_size_t]),
        ("ggml_backend_reg_get_proc_address", P, [P, ctypes.c_char_p]),
        ("ggml_backend_buft_name", ctypes.c_char_p, [P]), ("ggml_backend_buft_alloc_buffer", P, [P, ctypes.c_size_t]),
        ("ggml_backend_buft_get_alignment", ctypes.c_size_t, [P]),
        ("ggml_backend_buft_get_alloc_size", ctypes.c_size_t, [P, P]),
        ("ggml_backend_buffer_get_base", P, [P]), ("ggml_backend_buffer_free", None, [P]),
        ("ggml_backend_tensor_alloc", None, [P, P, P]),
        ("ggml_backend_tensor_set", None, [P, P, ctypes.c_size_t, ctypes.c_size_t]),
        ("ggml_backend_tensor_get", None, [P, P, ctypes.c_size_t, ctypes.c_size_t]),
        ("ggml_backend_alloc_ctx_tensors_from_buft", P, [P, P]),
        ("ggml_backend_graph_compute", ctypes.c_int, [P, P]), ("ggml_backend_free", None, [P]),
        ("ggml_backend_cpu_buffer_type", P, [])]:
    declare(base, name, restype, *argtypes)
for name, restype, argtypes in [("ggml_backend_cpu_reg", P, []), ("ggml_backend_cpu_init", P, []),
                                ("ggml_backend_cpu_set_n_threads", None, [P, ctypes.c_int])]:
    declare(cpu, name, restype, *argtypes)

# The CPU device's extra buffer types: a NULL-terminated array of ggml_backend_buffer_type_t.
reg = cpu.ggml_backend_cpu_reg()
dev = base.ggml_backend_reg_dev_get(reg, 0)
fn = base.ggml_backend_reg_get_proc_address(reg, b"ggml_backend_dev_get_extra_bufts")
assert fn, "no ggml_backend_dev_get_extra_bufts"
extra = ctypes.CFUNCTYPE(ctypes.POINTER(P), P)(fn)(dev)
names = []
while extra[len(names)]:
    names.append(base.ggml_backend_buft_name(extra[len(names)]).decode())
print("extra buffer types:", names)
assert "CPU_AARCH64" in names, names
aarch64_buft = extra[names.index("CPU_AARCH64")]
assert base.ggml_backend_buft_name(aarch64_buft) == b"CPU_AARCH64"
cpu_buft = base.ggml_backend_cpu_buffer_type()
print("plain buffer type:", base.ggml_backend_buft_name(cpu_buft).decode())


def mul_mat(wq, x, k, n, m, wbuft, n_threads):
    """ggml_mul_mat(W, X) on a CPU backend with n_threads threads, W (N×K Q4_0 bytes wq) in wbuft, X (M×K float32)
    and Y in the plain CPU buffer type; returns Y (M×N float32) and the bytes W's buffer holds after tensor_set."""
    ctx = base.ggml_init(InitParams(4 * base.ggml_tensor_overhead() + base.ggml_graph_overhead() + 4096, None, True))
    assert ctx
    w = base.ggml_new_tensor_2d(ctx, GGML_TYPE_Q4_0, k, n)
    xt = base.ggml_new_tensor_2d(ctx, GGML_TYPE_F32, k, m)
    y = base.ggml_mul_mat(ctx, w, xt)
    nbytes = base.ggml_nbytes(w)
    assert nbytes == len(wq)
    wbuf = base.ggml_backend_buft_alloc_buffer(wbuft, base.ggml_backend_buft_get_alloc_size(wbuft, w)
                                               + base.ggml_backend_buft_get_alignment(wbuft))
    assert wbuf
    wbase = base.ggml_backend_buffer_get_base(wbuf)
    base.ggml_backend_tensor_alloc(wbuf, w, wbase)  # the buffer's init_tensor
    assert base.ggml_get_data(w) == wbase
    base.ggml_backend_tensor_set(w, wq, 0, nbytes)  # CPU_AARCH64: repacks
    held = ctypes.string_at(wbase, nbytes)
    xybuf = base.ggml_backend_alloc_ctx_tensors_from_buft(ctx, cpu_buft)  # X and Y; W already has its data
    assert xybuf
    assert base.ggml_get_data(w) == wbase
    xb = np.ascontiguousarray(x, dtype="<f4").tobytes()
    base.ggml_backend_tensor_set(xt, xb, 0, len(xb))
    backend = cpu.ggml_backend_cpu_init()
    cpu.ggml_backend_cpu_set_n_threads(backend, n_threads)
    graph = base.ggml_new_graph(ctx)
    base.ggml_build_forward_expand(graph, y)
    assert base.ggml_backend_graph_compute(backend, graph) == 0  # GGML_STATUS_SUCCESS
    assert base.ggml_nbytes(y) == 4 * m * n
    out = ctypes.create_string_buffer(4 * m * n)
    base.ggml_backend_tensor_get(y, out, 0, 4 * m * n)
    base.ggml_backend_free(backend)
    base.ggml_backend_buffer_free(xybuf)
    base.ggml_backend_buffer_free(wbuf)
    base.ggml_free(ctx)
    return np.frombuffer(out.raw, dtype="<f4").reshape(m, n).copy(), held


def vec_dot(wq, x, k, n, m):
    """Each output by ggml_get_type_traits_cpu(Q4_0)->vec_dot on from_float(Q8_0) of its activation row."""
    tr = cpu.ggml_get_type_traits_cpu(GGML_TYPE_Q4_0).contents
    assert tr.vec_dot_type == 8  # GGML_TYPE_Q8_0
    q8 = cpu.ggml_get_type_traits_cpu(tr.vec_dot_type).contents
    rw = base.ggml_row_size(GGML_TYPE_Q4_0, k)
    wbuf = ctypes.create_string_buffer(wq, len(wq))
    res = np.zeros((m, n), dtype=np.float32)
    s = ctypes.c_float()
    for r in range(m):
        xr = np.ascontiguousarray(x[r], dtype=np.float32)
        xq = ctypes.create_string_buffer(base.ggml_row_size(tr.vec_dot_type, k))
        q8.from_float(xr.ctypes.data, xq, k)
        for c in range(n):
            tr.vec_dot(k, ctypes.addressof(s), 0, ctypes.addressof(wbuf) + c * rw, 0, xq, 0, 1)
            res[r, c] = s.value
    return res


# (K, N, M, weight outliers, activations)
CASES = [(512, 16, 1, False, "normal"), (512, 16, 4, True, "normal"), (512, 16, 7, False, "small"),
         (2048, 8, 1, True, "normal"), (2048, 8, 5, False, "outliers"), (256, 24, 37, True, "normal")]

rng = np.random.default_rng(11)
out = []
for k, n, m, w_outliers, acts in CASES:
    w = rng.standard_normal((n, k)).astype(np.float32)
    if w_outliers:
        w.reshape(-1)[rng.choice(n * k, n * k // 64, replace=False)] *= 20
    x = rng.standard_normal((m, k))
    if acts == "small":
        x *= 1e-3
    elif acts == "outliers":  # three ±1e3 values in each row
        for r in range(m):
            x[r, rng.choice(k, 3, replace=False)] = rng.choice([-1e3, 1e3], 3)
    x = x.astype(np.float32)
    wq = ctypes.create_string_buffer(base.ggml_row_size(GGML_TYPE_Q4_0, k) * n)
    assert base.ggml_quantize_chunk(GGML_TYPE_Q4_0, w.ctypes.data, wq, 0, n, k, None) == len(wq.raw)
    wq = wq.raw

    got, held = mul_mat(wq, x, k, n, m, aarch64_buft, 4)
    assert held != wq, "CPU_AARCH64 buffer holds the row-major blocks: no repack"
    for t in (1, 2):
        again, _ = mul_mat(wq, x, k, n, m, aarch64_buft, t)
        assert again.tobytes() == got.tobytes(), f"k={k} n={n} m={m}: {t} threads differ from 4"
    plain, held_plain = mul_mat(wq, x, k, n, m, cpu_buft, 4)
    assert held_plain == wq
    assert plain.tobytes() == vec_dot(wq, x, k, n, m).tobytes(), f"k={k} n={n} m={m}: plain buffer is not vec_dot"
    differs = int(np.count_nonzero(got.view(np.uint32) != plain.view(np.uint32)))
    scale = np.abs(w).max() * np.abs(x).sum(axis=1, keepdims=True)  # a loose bound: the repacked rows are not garbage
    assert np.all(np.abs(got - plain) <= 1e-4 * scale), f"k={k} n={n} m={m}: far from the plain buffer's product"
    print(f"k={k:5d} n={n:3d} m={m:3d} weights={'outliers' if w_outliers else 'normal':8s} acts={acts:8s} "
          f"differs_from_vec_dot={differs}/{m * n}  max|diff|={np.abs(got - plain).max():.3g}")
    out.append({"k": k, "n": n, "m": m, "w": wq.hex(), "x": x.astype("<f4").tobytes().hex(),
                "want": got.astype("<f4").tobytes().hex(), "differs_from_vec_dot": differs})

assert any(c["differs_from_vec_dot"] > 0 for c in out), "repacked product equals the plain one everywhere"
ggml_ctypes.write_json(os.path.join(os.path.dirname(os.path.abspath(__file__)), "ggml-vectors-q4_0x8.json"),
                       {"cases": out})
