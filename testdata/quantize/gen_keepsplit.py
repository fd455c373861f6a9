"""llama-quantize --keep-split on a GGUF split set, for TestQuantizeKeepSplit.

    /usr/bin/python3 testdata/quantize/gen_keepsplit.py LLAMA_CPP_TREE

Splits mixtures-f16.gguf with that tree's build/bin/llama-gguf-split (--split-max-size 2M: three shards), then runs
its build/bin/llama-quantize on the first shard: Q4_K_M and Q8_0 with --keep-split (one output shard per input
shard), and Q4_K_M without it (one file). keepsplit.json records the input shards' sha256 (the test rebuilds them
from mixtures-f16.gguf and checks they are gguf-split's) and each output file's name and sha256. Nothing but the
json is kept. Ours: it drives the reference tools and never runs tfconv.
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys

tree = sys.argv[1]
here = os.path.dirname(os.path.abspath(__file__))
binDir = os.path.join(tree, "build", "bin")
work = "/tmp/keepsplit"
SPLIT_MAX = "2M"


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def main():
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    subprocess.run([os.path.join(binDir, "llama-gguf-split"), "--split", "--split-max-size", SPLIT_MAX,
                    os.path.join(here, "mixtures-f16.gguf"), os.path.join(work, "in")], check=True, capture_output=True)
    inputs = sorted(f for f in os.listdir(work) if f.startswith("in-"))
    out = {"llama.cpp": "c392e5094deaf2d1a7c18683214f007fad3fe42b", "split_max_size": SPLIT_MAX,
           "inputs": [{"name": f, "sha256": sha(os.path.join(work, f))} for f in inputs], "runs": []}
    for typ, keep in [("Q4_K_M", True), ("Q8_0", True), ("Q4_K_M", False)]:
        d = os.path.join(work, typ + ("-keep" if keep else "-one"))
        os.makedirs(d)
        args = [os.path.join(binDir, "llama-quantize")] + (["--keep-split"] if keep else [])
        subprocess.run(args + [os.path.join(work, inputs[0]), os.path.join(d, "out.gguf"), typ], check=True,
                       capture_output=True)
        files = sorted(os.listdir(d))
        out["runs"].append({"type": typ, "keep_split": keep,
                            "outputs": [{"name": f, "sha256": sha(os.path.join(d, f))} for f in files]})
    with open(os.path.join(here, "keepsplit.json"), "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
