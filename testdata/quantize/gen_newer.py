"""What a llama-quantize newer than c392e509 writes for the two things c392e509 does not have: the MXFP4_MOE type and
--prune-layers.

    /usr/bin/python3 testdata/quantize/gen_newer.py NEW_LLAMA_CPP_TREE [NEW_LOGITS_DUMP]

Runs NEW_LLAMA_CPP_TREE/build/bin/llama-quantize from the repository root (relative paths: it records an imatrix
path as given) on fixtures already in testdata (never on a file tfconv wrote):

  - MXFP4_MOE of the MoE fixtures testdata/arch/{mixtral,qwen2moe,olmoe,qwen3moe,deepseek2}/gguf/*-f32.gguf, and of
    mixtral and qwen2moe with --prune-layers 0;
  - --prune-layers on testdata/quantize/mixtures-f16.gguf (llama, 8 blocks): Q8_0 pruned of 1,3, of 0 and of 7;
    Q4_K_M pruned of 1,3 (the mixture rules counting what is left), also with --imatrix
    testdata/quantize/mixtures.imatrix.dat (entries found by the input names);
  - what it does with the lists tfconv refuses: a layer the model does not have (9) and every layer (0..7).

Reads each output with that tree's gguf-py and writes newer.json: the tree's commit (NEW_LLAMA_CPP_TREE/SNAPSHOT-COMMIT)
and per case the command line, the whole file's sha256, the metadata keys in order with their GGUF value types (not
gguf-py's GGUF.* header fields), the
block count, and each tensor's name, type and SHA-256 of its data bytes; or, when llama-quantize failed, its exit
status and the last line it printed.

That llama-quantize names the kept blocks right but reads each renamed tensor's data by its new name (src/llama-quant.cpp
renames the tensor with ggml_set_name before llama_model_loader::load_data_for looks its weight up by name), so a
renamed blk.J holds the input's blk.J, not the block it stands for: pruning 1,3 of 8 writes the data of blocks 0-5.
So each pruning case also records "unpruned_typed": the same llama-quantize on the unpruned input with one --tensor-type
override per renamed quantized tensor, giving the input tensor (blk.B.X, ^blk\.B\.X$) the type the pruned file gave
the name it takes (blk.J.X): llama-quantize's own encoding of the data a correct pruning keeps, in the type its rules
chose for the new position (imatrix entries found by the input names, as in the pruned run). Its tensors are listed
under their input names. The quantized files are not kept. Ours: it drives the reference tool and never runs tfconv.

With NEW_LOGITS_DUMP (testdata/arch/tools/logits_dump.cpp built against the same tree, with
-DLLAMA_FLASH_ATTN_TYPE_DISABLED_NEW_API) it also writes newer-mxfp4-logits.json: that llama.cpp's logits (one decode,
f32 KV cache, one thread) of the mixtral MXFP4_MOE file on the fixture's 12 reference ids, with the file's sha256.
"""
import hashlib
import json
import os
import subprocess
import sys

tree = sys.argv[1]
logits_dump = sys.argv[2] if len(sys.argv) > 2 else None
IDS = [1, 15, 250, 999, 3, 87, 512, 640, 33, 998, 421, 77]  # testdata/arch/README.md's input ids
sys.path.insert(0, os.path.join(tree, "gguf-py"))
import gguf  # noqa: E402

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.normpath(os.path.join(here, "..", ".."))
binDir = os.path.join(tree, "build", "bin")
arch = "testdata/arch/{0}/gguf/{0}-f32.gguf"
mix = "testdata/quantize/mixtures-f16.gguf"
imat = "testdata/quantize/mixtures.imatrix.dat"

cases = [(f + " MXFP4_MOE", arch.format(f), "MXFP4_MOE", []) for f in ("mixtral", "qwen2moe", "olmoe", "qwen3moe",
                                                                        "deepseek2")]
cases += [(f + " MXFP4_MOE prune 0", arch.format(f), "MXFP4_MOE", ["--prune-layers", "0"]) for f in ("mixtral",
                                                                                                    "qwen2moe")]
cases += [("mixtures Q8_0 prune 1,3", mix, "Q8_0", ["--prune-layers", "1,3"]),
          ("mixtures Q8_0 prune 0", mix, "Q8_0", ["--prune-layers", "0"]),
          ("mixtures Q8_0 prune 7", mix, "Q8_0", ["--prune-layers", "7"]),
          ("mixtures Q4_K_M prune 1,3", mix, "Q4_K_M", ["--prune-layers", "1,3"]),
          ("mixtures Q4_K_M prune 1,3 +imatrix", mix, "Q4_K_M", ["--imatrix", imat, "--prune-layers", "1,3"]),
          ("mixtures Q8_0 prune 9", mix, "Q8_0", ["--prune-layers", "9"]),
          ("mixtures Q8_0 prune all", mix, "Q8_0", ["--prune-layers", "0,1,2,3,4,5,6,7"])]

commit = ""
p = os.path.join(tree, "SNAPSHOT-COMMIT")
if os.path.exists(p):
    commit = open(p).read().strip()
res = {"llama_cpp_commit": commit, "cases": {}}
dst = "/tmp/gen-newer-out.gguf"


def run(flags, src, typ):
    """llama-quantize flags src dst typ from the repository root: (the case record, the output's tensors) or (record, None)."""
    if os.path.exists(dst):
        os.remove(dst)
    p = subprocess.run([os.path.join(binDir, "llama-quantize")] + flags + [src, dst, typ], capture_output=True,
                       cwd=root, env=dict(os.environ, LD_LIBRARY_PATH=binDir), text=True)
    case = {"args": ["llama-quantize"] + flags + [src, dst, typ], "input": src}
    if p.returncode != 0:
        lines = [l for l in (p.stdout + p.stderr).splitlines() if l.strip()]
        case.update({"exit": p.returncode, "last_line": lines[-1] if lines else ""})
        return case, None
    if logits_dump and flags == [] and src == arch.format("mixtral") and typ == "MXFP4_MOE":
        out = subprocess.run([logits_dump, dst, ",".join(map(str, IDS))], capture_output=True, check=True, text=True)
        lg = json.loads(out.stdout)
        assert lg["tokens"] == IDS
        with open(os.path.join(here, "newer-mxfp4-logits.json"), "w") as f:
            json.dump({"llama_cpp_commit": commit, "file": "mixtral MXFP4_MOE",
                       "sha256": hashlib.sha256(open(dst, "rb").read()).hexdigest(), "tokens": IDS,
                       "logits": lg["logits"]}, f)
            f.write("\n")
    r = gguf.GGUFReader(dst)
    kv = []
    blocks = None
    for f in r.fields.values():
        if f.name.startswith("GGUF."):
            continue  # gguf-py's header pseudo-fields: version, tensor and key counts
        t = f.types[0].name if f.types else ""
        if f.types and f.types[0] == gguf.GGUFValueType.ARRAY:
            t += "[" + f.types[-1].name + "]"
        kv.append([f.name, t])
        if f.name.endswith(".block_count"):
            blocks = int(f.parts[f.data[0]][0])
    tensors = [[t.name, t.tensor_type.name, hashlib.sha256(t.data.tobytes()).hexdigest()] for t in r.tensors]
    case.update({"sha256": hashlib.sha256(open(dst, "rb").read()).hexdigest(), "kv": kv, "block_count": blocks,
                 "tensors": tensors})
    os.remove(dst)
    return case, tensors


def renamed(tensors, prune):
    """{new name: input name} for the tensors remap_layer renames (blocks below the first pruned keep their number)."""
    blocks = sorted({int(n.split(".")[1]) for n, _, _ in tensors if n.startswith("blk.")})
    out = {}
    for n, _, _ in tensors:
        if not n.startswith("blk."):
            continue
        j = int(n.split(".")[1])
        # the input block that is the j-th kept one
        kept = [b for b in range(blocks[-1] + len(prune) + 1) if b not in prune]
        b = kept[j]
        if b != j:
            out[n] = "blk.%d.%s" % (b, n.split(".", 2)[2])
    return out


for name, src, typ, flags in cases:
    case, tensors = run(flags, src, typ)
    res["cases"][name] = case
    if tensors is None:
        print(name, "failed:", case["last_line"])
        continue
    print(name, case["sha256"], len(tensors), "tensors, block_count", case["block_count"])
    if "--prune-layers" not in flags or name.endswith(" prune 9") or name.endswith(" prune all"):
        continue
    prune = sorted({int(x) for x in flags[flags.index("--prune-layers") + 1].split(",")})
    ren = renamed(tensors, prune)
    types = {n: t for n, t, _ in tensors}
    rest = flags[:flags.index("--prune-layers")] + flags[flags.index("--prune-layers") + 2:]
    over = []
    for new, old in sorted(ren.items()):
        if types[new] not in ("F32", "F16", "BF16"):
            over += ["--tensor-type", "^" + old.replace(".", "\\.") + "$=" + types[new].lower()]
    ref, reft = run(rest + over, src, typ)
    assert reft is not None, ref
    case["unpruned_typed"] = {"args": ref["args"], "tensors": reft}
    print("  unpruned, pruned types:", len(over) // 2, "overrides")

with open(os.path.join(here, "newer.json"), "w") as f:
    json.dump(res, f, indent=1)
    f.write("\n")
