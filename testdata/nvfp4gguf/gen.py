"""Records what llama.cpp's converter writes for the NVFP4 fixtures testdata/modelopt/nvfp4 (exported by ModelOpt)
and testdata/ct/nvfp4 (written by compressed-tensors): it carries their blocks into GGUF NVFP4 (type 40) with the
per-tensor scales beside them (conversion/base.py _generate_nvfp4_tensors). Per fixture, in converter.json: each
tensor in file order with its ggml type, shape and the sha256 of its bytes, the metadata but the tokenizer's, and the
logits llama.cpp computes on that GGUF (logits-dump). convert.TestNVFP4PassThrough holds tfconv's GGUF to it and
model.TestNVFP4RunMatchesLlamaCpp tfconv's run.

The fixtures have no tokenizer and the converter needs one: the script gives its copy of each folder a GPT-2
(slow) tokenizer of the 256 byte tokens and one merge that never applies, the vocabulary size config.json says. Its keys (tokenizer.*)
are left out of the record: tfconv's GGUF of the folder without it has none.

Run as gen_outtype.py runs (the trixie chroot, llama.cpp d32676d7's converter through gen_fixtures.convert, unmodified
but for get_vocab_base_pre), from the repository root:

    PYTHONPATH=testdata/arch/pyshim-trixie:testdata/arch:$TF/src python3 testdata/nvfp4gguf/gen.py $L /work/ref/logits-dump-d32676d7
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

import gen_fixtures as g

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = {"modelopt": os.path.join(HERE, "..", "modelopt", "nvfp4-ffn128"), "ct": os.path.join(HERE, "..", "ct", "nvfp4-ffn128"),
            # Qwen3-MoE with one NVFP4 tensor per expert, which the converter stacks (_flush_nvfp4_experts)
            "modelopt-moe": os.path.join(HERE, "..", "modelopt", "nvfp4-moe")}
IDS = [1, 15, 250, 99, 3, 87, 51, 64, 33, 98, 42, 77]


def byte_tokenizer(d):
    # GPT-2's printable stand-ins for the 256 bytes, in byte order: id = byte.
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    table = dict(zip(bs, cs))
    with open(os.path.join(d, "vocab.json"), "w") as f:
        json.dump({chr(table[b]): b for b in range(256)}, f)
    with open(os.path.join(d, "merges.txt"), "w") as f:
        # one merge (llama.cpp loads no BPE vocabulary without merges); its result is no token, so it never applies
        f.write("#version: 0.2\nx y\n")
    with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
        # the special tokens are config.json's ids (GPT-2's own <|endoftext|> would be a 257th token)
        json.dump({"tokenizer_class": "GPT2Tokenizer", "model_max_length": 64, "unk_token": chr(table[0]),
                   "bos_token": chr(table[1]), "eos_token": chr(table[2])}, f)


def value(v):
    if hasattr(v, "tolist"):
        v = v.tolist()
    return v


def main():
    llamacpp, dump = sys.argv[1], sys.argv[2]
    sys.path.insert(0, os.path.join(llamacpp, "gguf-py"))
    import gguf
    commit = open(os.path.join(llamacpp, "COMMIT")).read().strip()
    with tempfile.TemporaryDirectory() as tmp:
        for name, src in FIXTURES.items():
            d = os.path.join(tmp, name)
            shutil.copytree(src, d, ignore=shutil.ignore_patterns("dequant.safetensors"))
            byte_tokenizer(d)
            path = os.path.join(tmp, name + ".gguf")
            g.convert(llamacpp, d, path, "f16", "gpt-2")
            r = gguf.GGUFReader(path)
            md = {}
            for k, f in r.fields.items():
                if k.startswith("tokenizer.") or k.startswith("GGUF."):
                    continue
                md[k] = value(f.contents())
            tensors = [{"name": t.name, "type": t.tensor_type.name, "shape": [int(x) for x in t.shape],
                        "sha256": hashlib.sha256(t.data.tobytes()).hexdigest()} for t in r.tensors]
            if len(sys.argv) > 3:
                shutil.copy(path, os.path.join(sys.argv[3], name + ".gguf"))
            run = subprocess.run([dump, path, ",".join(map(str, IDS))], capture_output=True, text=True)
            if run.returncode != 0:
                raise RuntimeError(f"logits-dump {name}.gguf: " + run.stderr[-3000:])
            out = run.stdout
            rec = {"llama.cpp": commit, "command": f"convert_hf_to_gguf.py {name}/nvfp4 --outtype f16 (+ a 256-byte GPT-2 tokenizer)",
                   "metadata": md, "tensors": tensors, "ids": IDS, "logits": json.loads(out)}
            with open(os.path.join(HERE, name + ".json"), "w") as f:
                json.dump(rec, f, indent=1, sort_keys=True)
                f.write("\n")


if __name__ == "__main__":
    main()
