"""The shared step of gen_tiny_iq1.py and gen_tiny_iq2.py: llama-quantize --allow-requantize --imatrix of the shipped
tiny-fortunes Q8_0 sample to each type, llama.cpp's logits of each result (LOGITS_DUMP, testdata/arch/tools/
logits_dump.cpp built against the tree) on the reference ids, and the JSON the Go tests read
(cmd/tfconv/requant_test.go, readRequantRef): the ids, llama.cpp's logits of the f16 GGUF ("f16_logits"), and per type
the command, the file's sha256, its tensor types and llama.cpp's logits on it. The quantized files are not kept.
Ours: it drives the reference tools and never runs tfconv.
"""
import hashlib
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
SRC = os.path.join("testdata", "tiny-fortunes", "tiny-fortunes-Q8_0.gguf")
IMATRIX = os.path.join("testdata", "quantize", "tiny-fortunes.imatrix.dat")


def bin_env(tree):
    """The tree's build/bin and an environment that loads its libraries."""
    bin_dir = os.path.join(tree, "build", "bin")
    return bin_dir, dict(os.environ, LD_LIBRARY_PATH=bin_dir)


def requant(tree, dump, shared, types, out_name):
    """Quantizes SRC to each of types with IMATRIX (paths relative to the repository root, as llama-quantize records
    them) and writes HERE/out_name."""
    sys.path.insert(0, os.path.join(tree, "gguf-py"))
    import gguf  # noqa: E402
    bin_dir, env = bin_env(tree)
    f16 = json.load(open(os.path.join(shared, "trained", "tiny-fortunes", "gguf", "tiny-fortunes-f16.logits.json")))
    ids = f16["tokens"]
    res = {"tokens": ids, "f16_logits": f16["logits"]}
    for typ in types:
        dst = "/tmp/tiny-fortunes-" + typ + ".gguf"
        cmd = ["llama-quantize", "--allow-requantize", "--imatrix", IMATRIX, SRC, dst, typ]
        subprocess.run([os.path.join(bin_dir, cmd[0])] + cmd[1:], check=True, capture_output=True, env=env, cwd=ROOT)
        q = json.loads(subprocess.run([dump, dst, ",".join(map(str, ids))], check=True, capture_output=True,
                                      env=env).stdout)
        assert q["tokens"] == ids
        r = gguf.GGUFReader(dst)
        res[typ] = {"command": " ".join(cmd), "sha256": hashlib.sha256(open(dst, "rb").read()).hexdigest(),
                    "tensors": [[t.name, t.tensor_type.name] for t in r.tensors], "logits": q["logits"]}
        os.remove(dst)
    with open(os.path.join(HERE, out_name), "w") as f:
        json.dump(res, f, separators=(",", ":"))
        f.write("\n")
