"""llama.cpp's IQ3_XS and IQ3_S of the trained tiny-fortunes model, and llama.cpp's logits for them and for the
model's f16 GGUF.

    /usr/bin/python3 testdata/quantize/gen_tiny_iq3.py LLAMA_CPP_TREE LOGITS_DUMP SHARED_FIXTURES

As gen_tiny_iq4xs.py, for the IQ3 mixtures: runs LLAMA_CPP_TREE/build/bin/llama-quantize --allow-requantize on
testdata/tiny-fortunes/tiny-fortunes-Q8_0.gguf (the shipped sample) to IQ3_XS (IQ3_S with IQ3_XXS attn_q, attn_k and
middle ffn_gate/ffn_up) and to IQ3_S, then LOGITS_DUMP (testdata/arch/tools/logits_dump.cpp built against that tree)
on each result with the token ids of SHARED_FIXTURES/trained/tiny-fortunes/gguf/tiny-fortunes-f16.logits.json,
llama.cpp's logits of the f16 GGUF made from the same checkpoint. Writes tiny-fortunes-IQ3.json: the ids, the f16
logits copied from that file ("f16_logits") and per type the quantized file's sha256, tensor types and llama.cpp's
logits on it. The quantized files are not kept. Ours: it drives the reference tools and never runs tfconv.
"""
import hashlib
import json
import os
import subprocess
import sys

tree, dump, shared = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path.insert(0, os.path.join(tree, "gguf-py"))
import gguf  # noqa: E402

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.join(here, "..", "..")
binDir = os.path.join(tree, "build", "bin")
src = os.path.join(root, "testdata", "tiny-fortunes", "tiny-fortunes-Q8_0.gguf")
env = dict(os.environ, LD_LIBRARY_PATH=binDir)
f16 = json.load(open(os.path.join(shared, "trained", "tiny-fortunes", "gguf", "tiny-fortunes-f16.logits.json")))
ids = f16["tokens"]
res = {"tokens": ids, "f16_logits": f16["logits"]}
for typ in ["IQ3_XS", "IQ3_S"]:
    dst = "/tmp/tiny-fortunes-" + typ + ".gguf"
    subprocess.run([os.path.join(binDir, "llama-quantize"), "--allow-requantize", src, dst, typ], check=True,
                   capture_output=True, env=env)
    out = subprocess.run([dump, dst, ",".join(map(str, ids))], check=True, capture_output=True, env=env).stdout
    q = json.loads(out)
    assert q["tokens"] == ids
    r = gguf.GGUFReader(dst)
    res[typ] = {
        "command": "llama-quantize --allow-requantize tiny-fortunes-Q8_0.gguf tiny-fortunes-%s.gguf %s" % (typ, typ),
        "sha256": hashlib.sha256(open(dst, "rb").read()).hexdigest(),
        "tensors": [[t.name, t.tensor_type.name] for t in r.tensors],
        "logits": q["logits"],
    }
    os.remove(dst)
with open(os.path.join(here, "tiny-fortunes-IQ3.json"), "w") as f:
    json.dump(res, f, separators=(",", ":"))
    f.write("\n")
