"""llama.cpp's IQ1_S and IQ1_M of the trained tiny-fortunes model with an importance matrix, and llama.cpp's logits.

    /usr/bin/python3 testdata/quantize/gen_tiny_iq1.py LLAMA_CPP_TREE LOGITS_DUMP SHARED_FIXTURES

Runs LLAMA_CPP_TREE/build/bin/llama-quantize --allow-requantize --imatrix testdata/quantize/tiny-fortunes.imatrix.dat
(llama-imatrix's matrix that gen_tiny_iq2.py wrote, as a path relative to the repository root, which llama-quantize
records) on testdata/tiny-fortunes/tiny-fortunes-Q8_0.gguf (the shipped sample) to IQ1_S and IQ1_M, and LOGITS_DUMP
(testdata/arch/tools/logits_dump.cpp built against that tree) on each result with the token ids of
SHARED_FIXTURES/trained/tiny-fortunes/gguf/tiny-fortunes-f16.logits.json. Writes tiny-fortunes-IQ1.json: per type
the command, the quantized file's sha256 and tensor types, llama.cpp's logits on it; the ids and, copied from that
f16 file, llama.cpp's logits of the f16 GGUF ("f16_logits"). The quantized files are not kept. Ours: it drives the
reference tools and never runs tfconv.
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
root = os.path.normpath(os.path.join(here, "..", ".."))
binDir = os.path.join(tree, "build", "bin")
env = dict(os.environ, LD_LIBRARY_PATH=binDir)
src = os.path.join("testdata", "tiny-fortunes", "tiny-fortunes-Q8_0.gguf")
imat = os.path.join("testdata", "quantize", "tiny-fortunes.imatrix.dat")
f16 = json.load(open(os.path.join(shared, "trained", "tiny-fortunes", "gguf", "tiny-fortunes-f16.logits.json")))
ids = f16["tokens"]
res = {"tokens": ids, "f16_logits": f16["logits"]}
for typ in ["IQ1_S", "IQ1_M"]:
    dst = "/tmp/tiny-fortunes-" + typ + ".gguf"
    cmd = ["llama-quantize", "--allow-requantize", "--imatrix", imat, src, dst, typ]
    subprocess.run([os.path.join(binDir, cmd[0])] + cmd[1:], check=True, capture_output=True, env=env, cwd=root)
    q = json.loads(subprocess.run([dump, dst, ",".join(map(str, ids))], check=True, capture_output=True,
                                  env=env).stdout)
    assert q["tokens"] == ids
    r = gguf.GGUFReader(dst)
    res[typ] = {"command": " ".join(cmd), "sha256": hashlib.sha256(open(dst, "rb").read()).hexdigest(),
                "tensors": [[t.name, t.tensor_type.name] for t in r.tensors], "logits": q["logits"]}
    os.remove(dst)
with open(os.path.join(here, "tiny-fortunes-IQ1.json"), "w") as f:
    json.dump(res, f, separators=(",", ":"))
    f.write("\n")
