"""llama-quantize's k-quant mixtures on rows it does not fall back on.

    /usr/bin/python3 testdata/quantize/gen_mixtures.py LLAMA_CPP_TREE
    /usr/bin/python3 testdata/quantize/gen_mixtures.py LLAMA_CPP_TREE --family NAME TYPE...
    /usr/bin/python3 testdata/quantize/gen_mixtures.py LLAMA_CPP_TREE --only FAMILY


Writes mixtures-f16.gguf with llama.cpp's own gguf-py (a llama-architecture model of 8 layers whose rows are 256
wide, GQA 4, random normal weights, seed 7) and runs that tree's build/bin/llama-quantize on it for every k-quant
mixture it offers, and IQ4_NL, IQ4_XS, TQ1_0, TQ2_0 (Q2_K_S, Q4_K_S, IQ4_NL and IQ4_XS also with the random importance
matrix mixtures.imatrix.dat); mixtures.json records each output's sha256 and tensor types. Also an 80-layer model of
the same widths (not kept: llama.cpp takes an 80-layer GQA llama for a 70B and gives its attn_v more bits), quantized
to Q4_K_M and Q3_K_M, and an 8-expert model of the same widths (not kept: llama.cpp's rules for 8 experts), quantized
to IQ4_XS: mixtures.json "70B …" and "8x …" record the metadata and the tensors' names, shapes and chosen types. The
quantized files are not kept. Ours: it drives the reference tools and never runs tfconv.

With --only FAMILY it writes the same model and importance matrix, runs only the FAMILIES[FAMILY] entries and writes
mixtures-FAMILY.json instead: "iq2" is IQ2_XXS, IQ2_XS, IQ2_S and IQ2_M with the importance matrix, IQ2_M --pure (its
IQ2_S everywhere; token_embd and output, which the matrix does not cover, as Q2_K and Q5_K), and each of the four
without one, which llama-quantize refuses ("refused": true, its exit status non-zero, no file); and the 8-expert
model's IQ2_XXS and IQ2_M plans with a random importance matrix of its own ("8x …+imatrix"). "iq1" is the same for
IQ1_S and IQ1_M: both with the importance matrix, IQ1_M --pure with it (its IQ1_M everywhere; token_embd and output,
which the matrix does not cover, too: llama-quantize quantizes those two as IQ1_M without one), both without one
(refused), and the 8-expert model's IQ1_S and IQ1_M plans.
"""
import hashlib
import json
import os
import subprocess
import sys

import numpy as np

tree = sys.argv[1]
only = sys.argv[3] if len(sys.argv) > 3 and sys.argv[2] == "--only" else None
sys.path.insert(0, os.path.join(tree, "gguf-py"))
import gguf  # noqa: E402

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.join(here, "..", "..")
binDir = os.path.join(tree, "build", "bin")
N_EMBD, N_FF, N_HEAD, N_KV, VOCAB = 256, 256, 4, 1, 256


def write_model(out, n_layer, seed, n_expert=0):
    """A llama GGUF (f16 matrices, f32 norms; with n_expert, stacked experts and their gate instead of the FFN);
    returns {name: shape (rows, cols)} of its matrices."""
    rng = np.random.default_rng(seed)
    w = gguf.GGUFWriter(out, "llama")
    if n_expert:
        w.add_expert_count(n_expert); w.add_expert_used_count(2)
    w.add_context_length(128); w.add_embedding_length(N_EMBD); w.add_block_count(n_layer)
    w.add_feed_forward_length(N_FF); w.add_rope_dimension_count(N_EMBD // N_HEAD); w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_KV); w.add_layer_norm_rms_eps(1e-5); w.add_file_type(1); w.add_vocab_size(VOCAB)
    mats = {}

    def t(name, shape):
        mats[name] = shape
        w.add_tensor(name, (rng.standard_normal(shape) * 0.05).astype(np.float16))

    hd = N_EMBD // N_HEAD
    t("token_embd.weight", (VOCAB, N_EMBD))
    w.add_tensor("output_norm.weight", np.ones(N_EMBD, dtype=np.float32))
    t("output.weight", (VOCAB, N_EMBD))
    for i in range(n_layer):
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
        t(f"blk.{i}.attn_q.weight", (N_EMBD, N_EMBD)); t(f"blk.{i}.attn_k.weight", (N_KV * hd, N_EMBD))
        t(f"blk.{i}.attn_v.weight", (N_KV * hd, N_EMBD)); t(f"blk.{i}.attn_output.weight", (N_EMBD, N_EMBD))
        w.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
        if n_expert:
            t(f"blk.{i}.ffn_gate_inp.weight", (n_expert, N_EMBD))
            t(f"blk.{i}.ffn_gate_exps.weight", (n_expert, N_FF, N_EMBD))
            t(f"blk.{i}.ffn_up_exps.weight", (n_expert, N_FF, N_EMBD))
            t(f"blk.{i}.ffn_down_exps.weight", (n_expert, N_EMBD, N_FF))
            continue
        t(f"blk.{i}.ffn_gate.weight", (N_FF, N_EMBD)); t(f"blk.{i}.ffn_up.weight", (N_FF, N_EMBD))
        t(f"blk.{i}.ffn_down.weight", (N_EMBD, N_FF))
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
    return mats


OVERRIDES = ["general.name=str:tfconv mixtures", "llama.context_length=int:4096", "test.scale=float:0.1",
             "test.flag=bool:true"]


def quantize(src, typ, imatrix=None, overrides=(), flags=()):
    """Runs llama-quantize from the repository root with relative paths (it records the imatrix path as given)."""
    dst = os.path.join("/tmp", "mixtures-" + typ + ".gguf")
    args = [os.path.join(binDir, "llama-quantize")] + (["--imatrix", os.path.relpath(imatrix, root)] if imatrix else [])
    for o in overrides:
        args += ["--override-kv", o]
    args += list(flags)
    subprocess.run(args + [src, dst, typ], check=True, capture_output=True, cwd=root,
                   env=dict(os.environ, LD_LIBRARY_PATH=binDir))
    r = gguf.GGUFReader(dst)
    sha = hashlib.sha256(open(dst, "rb").read()).hexdigest()
    os.remove(dst)
    return sha, r


src = os.path.join(here, "mixtures-f16.gguf")
mats = write_model(src, 8, 7)

# An importance matrix in llama-imatrix's legacy .dat layout (the one c392e509's llama-quantize reads) with random
# positive entries for every weight matrix, for the mixtures llama-quantize makes only with one (Q2_K_S).
imat = os.path.join(here, "mixtures.imatrix.dat")
rng2 = np.random.default_rng(11)
with open(imat, "wb") as f:
    names = [n for n in mats if n.startswith("blk.")]
    f.write(np.int32(len(names)).tobytes())
    for n in names:
        f.write(np.int32(len(n)).tobytes()); f.write(n.encode())
        f.write(np.int32(10).tobytes())  # ncall: llama-quantize divides the sums by it
        f.write(np.int32(mats[n][1]).tobytes())
        f.write(rng2.gamma(2.0, 5.0, mats[n][1]).astype(np.float32).tobytes())
    f.write(np.int32(10).tobytes())  # last_call
    f.write(np.int32(6).tobytes()); f.write(b"random")

# --family NAME TYPE...: only these llama-quantize types, each without and with mixtures.imatrix.dat, written to
# mixtures-NAME.json (mixtures.json is left alone). A run llama-quantize refuses is recorded as {"refused": its
# message}; for TYPE given as plan:TYPE the run with the importance matrix is recorded as its tensor types only,
# under "plan TYPE imatrix" (for a mixture whose file tfconv cannot write yet); 70B:TYPE and 8x:TYPE record the plans
# of the 80-layer and the 8-expert models below, as "70B TYPE" / "8x TYPE"; types:BASE:EMB:OUT records BASE with
# --token-embedding-type EMB --output-tensor-type OUT as "BASE+types-NAME".
if len(sys.argv) > 3 and sys.argv[2] == "--family":
    fam = {}
    for typ in sys.argv[4:]:
        if typ.startswith(("70B:", "8x:")):
            # The plan of the 80-layer or the 8-expert model described below, recorded as "70B TYPE" / "8x TYPE".
            size, typ = typ.split(":")
            big = "/tmp/mixtures-" + size + "-f16.gguf"
            write_model(big, 80, 8) if size == "70B" else write_model(big, 8, 9, n_expert=8)
            _, r = quantize(big, typ)
            meta = {"general.architecture": "llama", "llama.block_count": 80 if size == "70B" else 8,
                    "llama.attention.head_count": N_HEAD, "llama.attention.head_count_kv": N_KV}
            if size == "8x":
                meta.update({"llama.expert_count": 8, "llama.expert_used_count": 2})
            fam[size + " " + typ] = {"metadata": meta, "tensors": [[t.name, t.tensor_type.name,
                                                                    [int(x) for x in reversed(t.shape)]]
                                                                   for t in r.tensors]}
            os.remove(big)
            continue
        if typ.startswith("types:"):
            # types:BASE:EMB:OUT, BASE with --token-embedding-type EMB --output-tensor-type OUT, as "BASE+types-NAME".
            _, base, emb, outt = typ.split(":")
            flags = ["--token-embedding-type", emb, "--output-tensor-type", outt]
            sha, r = quantize(os.path.relpath(src, root), base, flags=flags)
            fam[base + "+types-" + sys.argv[3]] = {"sha256": sha, "flags": flags,
                                                   "tensors": [[t.name, t.tensor_type.name] for t in r.tensors]}
            continue
        plan_only = typ.startswith("plan:")
        typ = typ.removeprefix("plan:")
        for imatrix in [None, imat]:
            key = typ + ("+imatrix" if imatrix else "")
            if plan_only and imatrix:
                key = "plan " + typ + " imatrix"
            try:
                sha, r = quantize(os.path.relpath(src, root), typ, imatrix)
            except subprocess.CalledProcessError as e:
                msg = [l for l in (e.stdout + e.stderr).decode().splitlines() if "importance matrix" in l]
                fam[key] = {"refused": msg[-1].strip() if msg else "exit %d" % e.returncode}
                continue
            fam[key] = {"tensors": [[t.name, t.tensor_type.name] for t in r.tensors]}
            if not key.startswith("plan "):
                fam[key]["sha256"] = sha
    with open(os.path.join(here, "mixtures-" + sys.argv[3] + ".json"), "w") as f:
        json.dump(fam, f, indent=1)
        f.write("\n")
    sys.exit(0)

# --only FAMILY: the runs of FAMILIES[FAMILY] below, written to mixtures-FAMILY.json.
# name: (type, with the imatrix, flags); a name ending in "-noimatrix" is expected to be refused.
FAMILIES = {
    "iq2": {"IQ2_XXS+imatrix": ("IQ2_XXS", True, []), "IQ2_XS+imatrix": ("IQ2_XS", True, []),
            "IQ2_S+imatrix": ("IQ2_S", True, []), "IQ2_M+imatrix": ("IQ2_M", True, []),
            "IQ2_M+imatrix+pure": ("IQ2_M", True, ["--pure", "--token-embedding-type", "q2_k",
                                                   "--output-tensor-type", "q5_k"]),
            "IQ2_XXS-noimatrix": ("IQ2_XXS", False, []), "IQ2_XS-noimatrix": ("IQ2_XS", False, []),
            "IQ2_S-noimatrix": ("IQ2_S", False, []), "IQ2_M-noimatrix": ("IQ2_M", False, [])},
    "iq1": {"IQ1_S+imatrix": ("IQ1_S", True, []), "IQ1_M+imatrix": ("IQ1_M", True, []),
            "IQ1_M+imatrix+pure": ("IQ1_M", True, ["--pure"]),
            "IQ1_S-noimatrix": ("IQ1_S", False, []), "IQ1_M-noimatrix": ("IQ1_M", False, [])},
}
if only:
    res = {}
    for name, (typ, with_imat, flags) in FAMILIES[only].items():
        if name.endswith("-noimatrix"):
            p = subprocess.run([os.path.join(binDir, "llama-quantize"), os.path.relpath(src, root), "/tmp/refused.gguf",
                                typ], capture_output=True, cwd=root, env=dict(os.environ, LD_LIBRARY_PATH=binDir))
            assert p.returncode != 0, name
            if os.path.exists("/tmp/refused.gguf"):
                os.remove("/tmp/refused.gguf")
            res[name] = {"refused": True}
            continue
        sha, r = quantize(os.path.relpath(src, root), typ, imat if with_imat else None, flags=flags)
        res[name] = {"sha256": sha, "tensors": [[t.name, t.tensor_type.name] for t in r.tensors]}
        if flags:
            res[name]["flags"] = flags
    if only in ("iq2", "iq1"):
        # The 8-expert model (not kept) with a random importance matrix of its own (not kept: one entry per weight
        # matrix, columns × experts for the stacked ones): the plans only ("8x …", names, shapes, types).
        moe, moe_imat = "/tmp/mixtures8x-f16.gguf", "/tmp/mixtures8x.imatrix.dat"
        moe_mats = write_model(moe, 8, 9, n_expert=8)
        with open(moe_imat, "wb") as f:
            names = [n for n in moe_mats if n.startswith("blk.") and "ffn_gate_inp" not in n]
            f.write(np.int32(len(names)).tobytes())
            for n in names:
                shape = moe_mats[n]
                size = shape[-1] * (shape[0] if len(shape) == 3 else 1)
                f.write(np.int32(len(n)).tobytes()); f.write(n.encode())
                f.write(np.int32(10).tobytes()); f.write(np.int32(size).tobytes())
                f.write(rng2.gamma(2.0, 5.0, size).astype(np.float32).tobytes())
            f.write(np.int32(10).tobytes())
        for typ in {"iq2": ["IQ2_XXS", "IQ2_M"], "iq1": ["IQ1_S", "IQ1_M"]}[only]:
            _, r = quantize(moe, typ, moe_imat)
            res["8x " + typ + "+imatrix"] = {
                "metadata": {"general.architecture": "llama", "llama.block_count": 8, "llama.attention.head_count": N_HEAD,
                             "llama.attention.head_count_kv": N_KV, "llama.expert_count": 8,
                             "llama.expert_used_count": 2},
                "tensors": [[t.name, t.tensor_type.name, [int(x) for x in reversed(t.shape)]] for t in r.tensors]}
        os.remove(moe); os.remove(moe_imat)
    with open(os.path.join(here, "mixtures-" + only + ".json"), "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")
    sys.exit(0)

res = {}
for typ in ["Q2_K", "Q3_K_S", "Q3_K_M", "Q3_K_L", "Q4_K_S", "Q4_K_M", "Q5_K_S", "Q5_K_M", "Q6_K", "IQ4_NL", "IQ4_XS", "TQ1_0",
            "TQ2_0"]:
    sha, r = quantize(os.path.relpath(src, root), typ)
    res[typ] = {"sha256": sha, "tensors": [[t.name, t.tensor_type.name] for t in r.tensors]}
for typ in ["Q2_K_S", "Q4_K_S", "IQ4_NL", "IQ4_XS"]:
    sha, r = quantize(os.path.relpath(src, root), typ, imat)
    res[typ + "+imatrix"] = {"sha256": sha, "tensors": [[t.name, t.tensor_type.name] for t in r.tensors]}

# --override-kv (OVERRIDES), alone and with an importance matrix (llama-quantize sets the overrides first).
for name, imatrix in [("Q4_K_M+override", None), ("Q4_K_S+imatrix+override", imat)]:
    sha, r = quantize(os.path.relpath(src, root), name.split("+")[0], imatrix, OVERRIDES)
    res[name] = {"sha256": sha, "overrides": OVERRIDES, "tensors": [[t.name, t.tensor_type.name] for t in r.tensors]}

# The IQ4 types as --token-embedding-type / --output-tensor-type (any ggml type is accepted there).
TYPE_FLAGS = ["--token-embedding-type", "iq4_xs", "--output-tensor-type", "iq4_nl"]
sha, r = quantize(os.path.relpath(src, root), "Q4_K_M", flags=TYPE_FLAGS)
res["Q4_K_M+types"] = {"sha256": sha, "flags": TYPE_FLAGS, "tensors": [[t.name, t.tensor_type.name] for t in r.tensors]}

big = "/tmp/mixtures70-f16.gguf"
write_model(big, 80, 8)
for typ in ["Q4_K_M", "Q3_K_M"]:
    _, r = quantize(big, typ)
    res["70B " + typ] = {"metadata": {"general.architecture": "llama", "llama.block_count": 80,
                                      "llama.attention.head_count": N_HEAD, "llama.attention.head_count_kv": N_KV},
                         "tensors": [[t.name, t.tensor_type.name, [int(x) for x in reversed(t.shape)]] for t in r.tensors]}
os.remove(big)

moe = "/tmp/mixtures8x-f16.gguf"
write_model(moe, 8, 9, n_expert=8)
for typ in ["IQ4_XS"]:
    _, r = quantize(moe, typ)
    res["8x " + typ] = {"metadata": {"general.architecture": "llama", "llama.block_count": 8,
                                     "llama.attention.head_count": N_HEAD, "llama.attention.head_count_kv": N_KV,
                                     "llama.expert_count": 8, "llama.expert_used_count": 2},
                        "tensors": [[t.name, t.tensor_type.name, [int(x) for x in reversed(t.shape)]] for t in r.tensors]}
os.remove(moe)
with open(os.path.join(here, "mixtures.json"), "w") as f:
    json.dump(res, f, indent=1)
    f.write("\n")
