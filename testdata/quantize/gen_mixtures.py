"""llama-quantize's k-quant mixtures on rows it does not fall back on.

    /usr/bin/python3 testdata/quantize/gen_mixtures.py LLAMA_CPP_TREE

Writes mixtures-f16.gguf with llama.cpp's own gguf-py (a llama-architecture model of 8 layers whose rows are 256
wide, GQA 4, random normal weights, seed 7) and runs that tree's build/bin/llama-quantize on it for every k-quant
mixture it offers without an importance matrix; mixtures.json records each output's sha256 and tensor types.
The quantized files themselves are not kept. Ours: it drives the reference tools and never runs tfconv.
"""
import hashlib, json, os, subprocess, sys
import numpy as np
tree = sys.argv[1]
sys.path.insert(0, os.path.join(tree, "gguf-py"))
import gguf
here = os.path.dirname(os.path.abspath(__file__))
out = os.path.join(here, "mixtures-f16.gguf")
rng = np.random.default_rng(7)
w = gguf.GGUFWriter(out, "llama")
n_embd, n_ff, n_layer, n_head, n_kv, vocab = 256, 256, 8, 4, 1, 256
w.add_context_length(128); w.add_embedding_length(n_embd); w.add_block_count(n_layer); w.add_feed_forward_length(n_ff)
w.add_rope_dimension_count(n_embd // n_head); w.add_head_count(n_head); w.add_head_count_kv(n_kv)
w.add_layer_norm_rms_eps(1e-5); w.add_file_type(1); w.add_vocab_size(vocab)
TENSORS = {}
def t(name, shape):
    TENSORS[name] = shape
    w.add_tensor(name, (rng.standard_normal(shape) * 0.05).astype(np.float16))
t("token_embd.weight", (vocab, n_embd))
w.add_tensor("output_norm.weight", np.ones(n_embd, dtype=np.float32))
t("output.weight", (vocab, n_embd))
hd = n_embd // n_head
for i in range(n_layer):
    w.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(n_embd, dtype=np.float32))
    t(f"blk.{i}.attn_q.weight", (n_embd, n_embd)); t(f"blk.{i}.attn_k.weight", (n_kv*hd, n_embd)); t(f"blk.{i}.attn_v.weight", (n_kv*hd, n_embd))
    t(f"blk.{i}.attn_output.weight", (n_embd, n_embd))
    w.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(n_embd, dtype=np.float32))
    t(f"blk.{i}.ffn_gate.weight", (n_ff, n_embd)); t(f"blk.{i}.ffn_up.weight", (n_ff, n_embd)); t(f"blk.{i}.ffn_down.weight", (n_embd, n_ff))
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()

# An importance matrix in llama-imatrix's legacy .dat layout (the one c392e509's llama-quantize reads) with random
# positive entries for every weight matrix, for the mixtures llama-quantize will only make with one (Q2_K_S).
imat = os.path.join(here, "mixtures.imatrix.dat")
rng2 = np.random.default_rng(11)
with open(imat, "wb") as f:
    names = [n for n in TENSORS if n.startswith("blk.") and not n.endswith("norm.weight")]
    f.write(np.int32(len(names)).tobytes())
    for n in names:
        f.write(np.int32(len(n)).tobytes()); f.write(n.encode())
        f.write(np.int32(10).tobytes())  # ncall: llama-quantize divides the sums by it
        ncols = TENSORS[n][1]
        f.write(np.int32(ncols).tobytes())
        f.write((rng2.gamma(2.0, 5.0, ncols)).astype(np.float32).tobytes())
    f.write(np.int32(10).tobytes())  # last_call
    ds = b"random"
    f.write(np.int32(len(ds)).tobytes()); f.write(ds)

TYPES = ["Q2_K", "Q3_K_S", "Q3_K_M", "Q3_K_L", "Q4_K_S", "Q4_K_M", "Q5_K_S", "Q5_K_M", "Q6_K", "Q2_K_S+imatrix", "Q4_K_S+imatrix"]
res = {}
binDir = os.path.join(tree, "build", "bin")
for typ in TYPES:
    dst = os.path.join("/tmp", "mixtures-" + typ + ".gguf")
    base, _, extra = typ.partition("+")
    # From the repository root with relative paths: llama-quantize records the imatrix path as given.
    rel = os.path.relpath(imat, os.path.join(here, "..", ".."))
    args = [os.path.join(binDir, "llama-quantize")] + (["--imatrix", rel] if extra else []) + [out, dst, base]
    subprocess.run(args, check=True, capture_output=True, env=dict(os.environ, LD_LIBRARY_PATH=binDir),
                   cwd=os.path.join(here, "..", ".."))
    r = gguf.GGUFReader(dst)
    res[typ] = {"sha256": hashlib.sha256(open(dst, "rb").read()).hexdigest(),
                "tensors": [[t.name, t.tensor_type.name] for t in r.tensors]}
    os.remove(dst)
with open(os.path.join(here, "mixtures.json"), "w") as f:
    json.dump(res, f, indent=1)
    f.write("\n")
