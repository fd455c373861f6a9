"""What llama-quantize of llama.cpp d32676d7 writes for the ggml types it added in 2026: Q1_0 (a --type,
LLAMA_FTYPE_MOSTLY_Q1_0) and NVFP4 (not a --type there; only per tensor, --tensor-type / --output-tensor-type).

    /usr/bin/python3 testdata/quantize/gen_ggmltypes.py LLAMA_CPP_TREE LOGITS_DUMP

Runs LLAMA_CPP_TREE/build/bin/llama-quantize from the repository root on inputs already in testdata (never on a file
tfconv wrote):

  - "mixtures Q1_0": testdata/quantize/mixtures-f16.gguf (rows 256 wide) to Q1_0, and "mixtures Q1_0 pure" with
    --pure;
  - "tiny-fortunes Q1_0": --allow-requantize testdata/tiny-fortunes/tiny-fortunes-Q8_0.gguf to Q1_0;
  - "tiny-fortunes NVFP4": the same input to Q8_0 with every attention and feed-forward matrix and output.weight
    NVFP4 (--tensor-type, --output-tensor-type) and token_embd.weight Q1_0 (--token-embedding-type);
  - "llama3 Q1_0": testdata/arch/llama3/gguf/llama3-f32.gguf, whose 64-wide rows Q1_0's 128 do not divide (it has
    no fallback type there: llama-quantize stops).

Per case (newer.json's layout, read by the same test code): the command line, the whole file's sha256, the metadata
keys in order with their GGUF value types, the block count, and each tensor's name, type and SHA-256 of its data
bytes; or, when llama-quantize failed, its exit status and the last line it printed. For the two tiny-fortunes files
also LOGITS_DUMP's logits (testdata/arch/tools/logits_dump.cpp built against the same tree with
-DLLAMA_FLASH_ATTN_TYPE_DISABLED_NEW_API: one decode, f32 KV cache, one thread) on the 19 reference ids of
tiny-fortunes-IQ4_XS.json. Writes ggmltypes.json. The quantized files are not kept. Ours: it drives the reference
tools and never runs tfconv.
"""
import hashlib
import json
import os
import subprocess
import sys

tree, logits_dump = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(tree, "gguf-py"))
import gguf  # noqa: E402

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.normpath(os.path.join(here, "..", ".."))
binDir = os.path.join(tree, "build", "bin")
mix = "testdata/quantize/mixtures-f16.gguf"
tiny = "testdata/tiny-fortunes/tiny-fortunes-Q8_0.gguf"
IDS = json.load(open(os.path.join(here, "tiny-fortunes-IQ4_XS.json")))["tokens"]
nvfp4 = ["--allow-requantize", "--tensor-type", r"attn_(q|k|v|output)\.weight=nvfp4",
         "--tensor-type", r"ffn_(gate|up|down)\.weight=nvfp4", "--output-tensor-type", "nvfp4",
         "--token-embedding-type", "q1_0"]
cases = [("mixtures Q1_0", mix, "Q1_0", []),
         ("mixtures Q1_0 pure", mix, "Q1_0", ["--pure"]),
         ("tiny-fortunes Q1_0", tiny, "Q1_0", ["--allow-requantize"]),
         ("tiny-fortunes NVFP4", tiny, "Q8_0", nvfp4),
         ("llama3 Q1_0", "testdata/arch/llama3/gguf/llama3-f32.gguf", "Q1_0", [])]

commit = ""
for n in ("SNAPSHOT-COMMIT", "COMMIT"):
    p = os.path.join(tree, n)
    if not commit and os.path.exists(p):
        commit = open(p).read().strip()
res = {"llama_cpp_commit": commit, "tokens": IDS, "cases": {}}
dst = "/tmp/gen-ggmltypes-out.gguf"
for name, src, typ, flags in cases:
    if os.path.exists(dst):
        os.remove(dst)
    p = subprocess.run([os.path.join(binDir, "llama-quantize")] + flags + [src, dst, typ], capture_output=True,
                       cwd=root, env=dict(os.environ, LD_LIBRARY_PATH=binDir), text=True)
    case = {"args": ["llama-quantize"] + flags + [src, dst, typ], "input": src}
    res["cases"][name] = case
    if p.returncode != 0:
        lines = [ln for ln in (p.stdout + p.stderr).splitlines() if ln.strip()]
        case.update({"exit": p.returncode, "last_line": lines[-1] if lines else ""})
        print(name, "failed:", case["last_line"])
        continue
    r = gguf.GGUFReader(dst)
    kv, blocks = [], None
    for f in r.fields.values():
        if f.name.startswith("GGUF."):
            continue  # gguf-py's header pseudo-fields
        t = f.types[0].name if f.types else ""
        if f.types and f.types[0] == gguf.GGUFValueType.ARRAY:
            t += "[" + f.types[-1].name + "]"
        kv.append([f.name, t])
        if f.name.endswith(".block_count"):
            blocks = int(f.parts[f.data[0]][0])
    tensors = [[t.name, t.tensor_type.name, hashlib.sha256(t.data.tobytes()).hexdigest()] for t in r.tensors]
    case.update({"sha256": hashlib.sha256(open(dst, "rb").read()).hexdigest(), "kv": kv, "block_count": blocks,
                 "tensors": tensors})
    if src == tiny:
        out = subprocess.run([logits_dump, dst, ",".join(map(str, IDS))], capture_output=True, check=True, text=True)
        lg = json.loads(out.stdout)
        assert lg["tokens"] == IDS
        case["logits"] = lg["logits"]
    os.remove(dst)
    print(name, case["sha256"], len(tensors), "tensors:", sorted({t[1] for t in tensors}))
with open(os.path.join(here, "ggmltypes.json"), "w") as f:
    json.dump(res, f, indent=1)
    f.write("\n")
