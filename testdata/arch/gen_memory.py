#!/usr/bin/env python3
"""What llama.cpp (c392e509) reports when it loads a GGUF and makes a context on the CPU: its own log lines
"KV self size = …, K (type): … MiB, V (type): … MiB", "CPU_Mapped model buffer size = … MiB",
"CPU output buffer size = … MiB" and "CPU compute buffer size = … MiB", written to memory.json for
`tfconv inspect --ctx` (checkpoint.TestMemoryMatchesLlamaCpp, TestComputeBufferAgainstLlamaCpp). The program is
tools/kv_report.cpp, built against the llama.cpp tree like logits_dump.cpp.

"cases": the fixtures below at three context lengths, f16 and q8_0 caches, llama.cpp's default batches.
"buffers": the fixtures and real-width one-layer models at two context lengths, two physical batches (-ub 512 with
one sequence, -ub 128 with four), with the hyperparameters llama.cpp printed for each. The real-width models are
`tfconv synth --like NAME --layers 1 --type q8_0` GGUFs (random weights; only their shapes matter here, and what
is recorded is llama.cpp's report on them); they are too large to keep, so give their folder as the second
argument (without it only the fixtures are measured). Usage, from the repository root:

  python3 testdata/arch/gen_memory.py <kv-report binary> [<folder of NAME.gguf synth files>]
"""

import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FILES = ["testdata/model/gguf/llama-Q8_0.gguf", "testdata/model/gguf/gpt2-Q4_0.gguf",
         "testdata/arch/gemma2/gguf/gemma2-f32.gguf", "testdata/arch/deepseek2/gguf/deepseek2-f32.gguf"]
SYNTH = ["tinyllama-1.1b", "qwen2.5-0.5b", "gemma-2b", "gpt2-124m", "phi3-mini-4k"]
CTX = [512, 4096, 32768]
TYPES = ["f16", "q8_0"]
HPARAMS = ["n_embd", "n_layer", "n_head", "n_head_kv", "n_embd_head_k", "n_embd_head_v", "n_ff", "n_expert",
           "n_expert_used", "n_ff_exp", "n_vocab"]


def report(kv_report, path, n, t, ubatch=None, nseq=None):
    args = [kv_report, path, str(n), t] + ([str(ubatch), str(nseq)] if ubatch else [])
    r = subprocess.run(args, capture_output=True, text=True)
    log = r.stdout + r.stderr
    kv = re.search(r"KV self size\s*=\s*([\d.]+) MiB, K \((\w+)\):\s*([\d.]+) MiB, V \((\w+)\):\s*([\d.]+) MiB", log)
    if r.returncode != 0 or not kv:
        return None, log
    num = lambda pat: float(re.search(pat, log).group(1)) if re.search(pat, log) else None
    out = {"kv_size": int(re.search(r"kv_size = (\d+)", log).group(1)),
           "k_mib": float(kv.group(3)), "v_mib": float(kv.group(5)),
           "mapped_model_mib": num(r"CPU_Mapped model buffer size\s*=\s*([\d.]+) MiB"),
           "output_mib": num(r"output buffer size\s*=\s*([\d.]+) MiB"),
           "compute_mib": num(r"compute buffer size\s*=\s*([\d.]+) MiB")}
    return out, log


def hparams(log):
    hp = {}
    m = re.search(r"print_info: arch\s*=\s*(\S+)\n", log)
    if m:
        hp["arch"] = m.group(1)
    for k in HPARAMS:
        m = re.search(r"print_info: %s\s*=\s*(\d+)\n" % k, log)
        if m:
            hp[k] = int(m.group(1))
    return hp


def main():
    kv_report = sys.argv[1]
    synth_dir = sys.argv[2] if len(sys.argv) > 2 else None
    cases = []
    for f in FILES:
        for n in CTX:
            for t in TYPES:
                r, _ = report(kv_report, os.path.join(ROOT, f), n, t)
                if r is None:
                    cases.append({"file": f, "ctx": n, "kv_type": t, "refused": True})
                    continue
                cases.append({"file": f, "ctx": n, "kv_type": t, **r})
    models = [(f, os.path.join(ROOT, f), None) for f in FILES]
    if synth_dir:
        models += [("synth:" + s, os.path.join(synth_dir, s + ".gguf"),
                    "tfconv synth --like %s --layers 1 --type q8_0" % s) for s in SYNTH]
    buffers = []
    for name, path, made in models:
        for n in [512, 4096]:
            for t in TYPES:
                for ub, nseq in [(512, 1), (128, 4)]:
                    r, log = report(kv_report, path, n, t, ub, nseq)
                    if r is None:
                        continue  # llama.cpp refused the context (a quantized V cache where it has no flash attention)
                    row = {"model": name, "ctx": n, "kv_type": t, "ubatch": ub, "parallel": nseq,
                           "output_mib": r["output_mib"], "compute_mib": r["compute_mib"], "hparams": hparams(log)}
                    if made:
                        row["made_by"] = made
                    buffers.append(row)
    with open(os.path.join(HERE, "memory.json"), "w") as fh:
        json.dump({"llama.cpp": "c392e5094deaf2d1a7c18683214f007fad3fe42b", "tool": "tools/kv_report.cpp",
                   "cases": cases, "buffers": buffers}, fh, indent=1)
        fh.write("\n")


# The hybrid and recurrent fixtures, measured by kv_report.cpp built against the newer llama.cpp (d32676d7, with
# -DLLAMA_FLASH_ATTN_TYPE_DISABLED_NEW_API), whose log names the attention layers' cache llama_kv_cache and the
# recurrent layers' state llama_memory_recurrent: written to memory-recurrent.json
# (checkpoint.TestRecurrentMemoryMatchesLlamaCpp). Usage: gen_memory.py --recurrent <kv-report binary of d32676d7>
# Every fixture with recurrent layers; a model without attention (mamba, mamba2) has no llama_kv_cache line (its
# kv_* fields are 0). rs_mib is llama_memory_recurrent's size, rs_layers the layers it keeps a state for (those it
# does not log as "skipped").
RECURRENT = ["testdata/arch/%s/gguf/%s-f32.gguf" % (f, f) for f in (
    "lfm2", "lfm2moe", "mamba", "jamba", "mamba2", "mamba2-groups", "granitehybrid", "granitehybrid-dense", "falcon_h1",
    "nemotron_h", "qwen3next", "rwkv7")]


def main_recurrent():
    kv_report = sys.argv[2]
    cases = []
    for f in RECURRENT:
        for n, nseq in [(512, 1), (4096, 1), (32768, 1), (4096, 4), (4096, 64), (4096, 256)]:
            r = subprocess.run([kv_report, os.path.join(ROOT, f), str(n), "f16", "512", str(nseq)],
                               capture_output=True, text=True)
            log = r.stdout + r.stderr
            kv = re.search(r"llama_kv_cache: size =\s*([\d.]+) MiB \(\s*(\d+) cells,\s*(\d+) layers.*K \((\w+)\):\s*([\d.]+) MiB, "
                           r"V \((\w+)\):\s*([\d.]+) MiB", log)
            rs = re.search(r"llama_memory_recurrent: size =\s*([\d.]+) MiB \(\s*(\d+) cells,.*R \((\w+)\):\s*([\d.]+) MiB, "
                           r"S \((\w+)\):\s*([\d.]+) MiB", log)
            if r.returncode != 0 or not rs or not kv and "llama_kv_cache" in log:
                raise RuntimeError(f"{f} {n} {nseq}:\n{log[-2000:]}")
            layers = re.search(r"llama_memory_recurrent: size = .*?(\d+) layers", log)
            skipped = len(re.findall(r"llama_memory_recurrent: layer +\d+: skipped", log))
            cases.append({"file": f, "ctx": n, "kv_type": "f16", "parallel": nseq,
                          "kv_cells": int(kv.group(2)) if kv else 0, "kv_layers": int(kv.group(3)) if kv else 0,
                          "k_mib": float(kv.group(5)) if kv else 0.0, "v_mib": float(kv.group(7)) if kv else 0.0,
                          "rs_cells": int(rs.group(2)), "r_mib": float(rs.group(4)), "s_mib": float(rs.group(6)),
                          "rs_mib": float(rs.group(1)), "rs_layers": int(layers.group(1)) - skipped})
    with open(os.path.join(HERE, "memory-recurrent.json"), "w") as fh:
        json.dump({"llama.cpp": "d32676d77426540327835040d5d3279728f0b4c8", "tool": "tools/kv_report.cpp",
                   "cases": cases}, fh, indent=1)
        fh.write("\n")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--recurrent":
        main_recurrent()
    else:
        main()
