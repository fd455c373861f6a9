#!/usr/bin/env python3
"""Importance-matrix fixtures, made by llama.cpp's own llama-imatrix and llama-quantize; tfconv is never run.

For each model below, over calib.txt (the first 4207 bytes of shared/fixtures/trained/tiny-fortunes/val.txt,
cut at a fortune boundary), with an f32 KV cache so that no f16 rounding enters the activations:

  llama-imatrix (c392e509)  -m MODEL -f calib.txt -o NAME.c392e509.dat -c 128 -ctk f32 -ctv f32 -t 1 --no-ppl
  llama-imatrix (fork)      -m MODEL -f calib.txt -o NAME.gguf         -c 128 -ctk f32 -ctv f32 -t 1 --no-ppl -fa off
  llama-imatrix (fork)      ... -o NAME.dat --output-format dat   (tiny-fortunes only)

The fork's flash attention defaults to auto, which is on for the CPU and rounds inside attention to f16 (entries
move by up to 9.3e-4); -fa off computes attention as c392e509 does by default.

then, with c392e509's llama-quantize and the .c392e509.dat matrix, quantized references whose SHA-256 (whole file
and each tensor's data) go to quantize.json:

  llama-quantize [--pure] --imatrix NAME.c392e509.dat MODEL OUT TYPE 1     (run in this folder)

Models: testdata/arch/mixtral/gguf/mixtral-f32.gguf and testdata/arch/llama3/gguf/llama3-f32.gguf (random weights,
in the repository), tiny-fortunes (shared/fixtures/trained/tiny-fortunes/hf converted with convert_hf_to_gguf.py
--outtype f32 into a scratch folder, as testdata/arch/gen_fixtures.py converts) and the interop llama
(shared/fixtures/interop/llama/gguf/llama-f32.gguf). Usage, from the repository root:

  PYTHONPATH=testdata/arch/pyshim:<transformers v4.43.4>/src /usr/bin/python3 testdata/imatrix/gen_imatrix.py \\
      <llama.cpp c392e509 tree, built> <fork's llama-imatrix binary, or - to keep its files> <shared/fixtures>

The recurrent families' fixtures (RECURRENT: issue 32), which c392e509 cannot load, have the fork's GGUF alone
(NAME.gguf, the same command); their commands join commands.json:

  python3 testdata/imatrix/gen_imatrix.py --recurrent <fork's llama-imatrix binary>
"""

import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "testdata", "arch"))
from gen_fixtures import convert  # noqa: E402

CTX = "128"
# model name -> quantize runs: (type, pure)
QUANT = {
    "mixtral": [("Q4_0", True), ("Q4_1", True), ("Q5_0", True), ("Q5_1", True), ("Q4_0", False), ("Q2_K", False),
                ("Q3_K_M", False), ("Q4_K_M", False)],
    "tiny-fortunes": [("Q4_0", True), ("Q4_1", True), ("Q5_0", True), ("Q5_1", True), ("Q2_K", True),
                      ("Q3_K", True), ("Q4_K", True), ("Q5_K", True), ("Q6_K", True), ("Q4_0", False),
                      ("Q4_K_M", False), ("Q3_K_M", False)],
}


def run(cmd, cwd=HERE):
    r = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        raise RuntimeError(" ".join(cmd) + "\n" + r.stdout[-3000:])
    return r.stdout


def sha(b):
    return hashlib.sha256(b).hexdigest()


def tensor_hashes(path):
    """SHA-256 of each tensor's data bytes, read with llama.cpp's gguf-py."""
    from gguf import GGUFReader
    r = GGUFReader(path)
    return [{"name": t.name, "type": t.tensor_type.name, "sha256": sha(bytes(t.data.tobytes()))} for t in r.tensors]


# The recurrent families' fixtures (testdata/arch), run by the fork's llama-imatrix alone.
RECURRENT = ("mamba", "mamba2", "granitehybrid", "lfm2", "qwen3next")
COMMON = ["-f", "calib.txt", "-c", CTX, "-ctk", "f32", "-ctv", "f32", "-t", "1", "--no-ppl"]


def command_line(c):
    return " ".join([os.path.basename(c[0])] + [os.path.relpath(a, ROOT) if os.path.isabs(a) else a for a in c[1:]])


def main_recurrent(new_imatrix):
    path = os.path.join(HERE, "commands.json")
    with open(path) as f:
        commands = json.load(f)
    for name in RECURRENT:
        model = os.path.join(ROOT, "testdata", "arch", name, "gguf", name + "-f32.gguf")
        c = [new_imatrix, "-m", model, "-o", name + ".gguf"] + COMMON + ["-fa", "off"]
        run(c)
        commands[name] = [command_line(c)]
    with open(path, "w") as f:
        json.dump(commands, f, indent=1, sort_keys=True)
        f.write("\n")


def main():
    if sys.argv[1] == "--recurrent":
        return main_recurrent(sys.argv[2])
    old, new_imatrix, shared = sys.argv[1], sys.argv[2], sys.argv[3]
    sys.path.insert(0, os.path.join(old, "gguf-py"))
    imatrix_old = os.path.join(old, "build", "bin", "llama-imatrix")
    quantize = os.path.join(old, "build", "bin", "llama-quantize")
    scratch = tempfile.mkdtemp()
    try:
        tf = os.path.join(scratch, "tiny-fortunes-f32.gguf")
        convert(old, os.path.join(shared, "trained", "tiny-fortunes", "hf"), tf, "f32", None)
        models = {
            "mixtral": os.path.join(ROOT, "testdata", "arch", "mixtral", "gguf", "mixtral-f32.gguf"),
            "llama3": os.path.join(ROOT, "testdata", "arch", "llama3", "gguf", "llama3-f32.gguf"),
            "tiny-fortunes": tf,
            "interop-llama": os.path.join(shared, "interop", "llama", "gguf", "llama-f32.gguf"),
        }
        common = COMMON
        commands = {}
        for name, path in models.items():
            cmds = [[imatrix_old, "-m", path, "-o", name + ".c392e509.dat"] + common]
            if new_imatrix != "-":
                cmds.append([new_imatrix, "-m", path, "-o", name + ".gguf"] + common + ["-fa", "off"])
            if name == "tiny-fortunes" and new_imatrix != "-":
                cmds.append([new_imatrix, "-m", path, "-o", name + ".dat", "--output-format", "dat"] + common + ["-fa", "off"])
            for c in cmds:
                run(c)
            commands[name] = [" ".join([os.path.basename(c[0])] + [os.path.relpath(a, ROOT) if os.path.isabs(a) else a
                                                                       for a in c[1:]]) for c in cmds]
        quant = {}
        for name, runs in QUANT.items():
            for typ, pure in runs:
                out = os.path.join(scratch, "out.gguf")
                args = [quantize] + (["--pure"] if pure else []) + ["--imatrix", name + ".c392e509.dat",
                                                                    models[name], out, typ, "1"]
                run(args)
                with open(out, "rb") as f:
                    b = f.read()
                key = "%s/%s%s" % (name, typ, "/pure" if pure else "")
                quant[key] = {"command": " ".join(["llama-quantize"] + args[1:-4] + [os.path.relpath(models[name], ROOT)
                                                   if models[name].startswith(ROOT) else os.path.basename(models[name]),
                                                   "OUT", typ, "1"]),
                              "bytes": len(b), "sha256": sha(b), "tensors": tensor_hashes(out)}
                os.remove(out)
        with open(os.path.join(HERE, "quantize.json"), "w") as f:
            json.dump(quant, f, indent=1, sort_keys=True)
            f.write("\n")
        if new_imatrix != "-":
            with open(os.path.join(HERE, "commands.json"), "w") as f:
                json.dump(commands, f, indent=1, sort_keys=True)
                f.write("\n")
    finally:
        shutil.rmtree(scratch)


if __name__ == "__main__":
    main()
