"""llama.cpp's IQ4_XS of the trained tiny-fortunes model, and llama.cpp's logits for it and for the model's f16 GGUF.

    /usr/bin/python3 testdata/quantize/gen_tiny_iq4xs.py LLAMA_CPP_TREE LOGITS_DUMP SHARED_FIXTURES

Runs LLAMA_CPP_TREE/build/bin/llama-quantize --allow-requantize on testdata/tiny-fortunes/tiny-fortunes-Q8_0.gguf
(the shipped sample) to IQ4_XS, then LOGITS_DUMP (testdata/arch/tools/logits_dump.cpp built against that tree) on the
result with the token ids of SHARED_FIXTURES/trained/tiny-fortunes/gguf/tiny-fortunes-f16.logits.json, llama.cpp's
logits of the f16 GGUF made from the same checkpoint. Writes tiny-fortunes-IQ4_XS.json: the quantized file's sha256
and tensor types, the ids, llama.cpp's logits on the IQ4_XS file ("logits") and, copied from that f16 file, on the
f16 one ("f16_logits"). The quantized file is not kept. Ours: it drives the reference tools and never runs tfconv.
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
dst = "/tmp/tiny-fortunes-IQ4_XS.gguf"
env = dict(os.environ, LD_LIBRARY_PATH=binDir)
subprocess.run([os.path.join(binDir, "llama-quantize"), "--allow-requantize", src, dst, "IQ4_XS"], check=True,
               capture_output=True, env=env)
f16 = json.load(open(os.path.join(shared, "trained", "tiny-fortunes", "gguf", "tiny-fortunes-f16.logits.json")))
ids = f16["tokens"]
out = subprocess.run([dump, dst, ",".join(map(str, ids))], check=True, capture_output=True, env=env).stdout
q = json.loads(out)
assert q["tokens"] == ids
r = gguf.GGUFReader(dst)
res = {
    "command": "llama-quantize --allow-requantize tiny-fortunes-Q8_0.gguf tiny-fortunes-IQ4_XS.gguf IQ4_XS",
    "sha256": hashlib.sha256(open(dst, "rb").read()).hexdigest(),
    "tensors": [[t.name, t.tensor_type.name] for t in r.tensors],
    "tokens": ids,
    "logits": q["logits"],
    "f16_logits": f16["logits"],
}
os.remove(dst)
with open(os.path.join(here, "tiny-fortunes-IQ4_XS.json"), "w") as f:
    json.dump(res, f, separators=(",", ":"))
    f.write("\n")
