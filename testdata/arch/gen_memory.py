#!/usr/bin/env python3
"""What llama.cpp (c392e509) reports when it loads a GGUF with a context of N positions and a KV cache type: its
own log lines "KV self size = …, K (type): … MiB, V (type): … MiB" and "CPU_Mapped model buffer size = … MiB",
written to memory.json for `tfconv inspect --ctx` (checkpoint.TestMemoryMatchesLlamaCpp). The program is
tools/kv_report.cpp, built against the llama.cpp tree like logits_dump.cpp. Usage, from the repository root:

  python3 testdata/arch/gen_memory.py <kv-report binary>
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
CTX = [512, 4096, 32768]
TYPES = ["f16", "q8_0"]


def main():
    kv_report = sys.argv[1]
    out = []
    for f in FILES:
        for n in CTX:
            for t in TYPES:
                r = subprocess.run([kv_report, os.path.join(ROOT, f), str(n), t], capture_output=True, text=True)
                log = r.stdout + r.stderr
                kv = re.search(r"KV self size\s*=\s*([\d.]+) MiB, K \((\w+)\):\s*([\d.]+) MiB, V \((\w+)\):\s*([\d.]+) MiB", log)
                size = re.search(r"kv_size = (\d+)", log)
                mapped = re.search(r"CPU_Mapped model buffer size\s*=\s*([\d.]+) MiB", log)
                if r.returncode != 0 or not kv:
                    out.append({"file": f, "ctx": n, "kv_type": t, "refused": True})
                    continue
                out.append({"file": f, "ctx": n, "kv_type": t, "kv_size": int(size.group(1)),
                            "k_mib": float(kv.group(3)), "v_mib": float(kv.group(5)),
                            "mapped_model_mib": float(mapped.group(1)) if mapped else None})
    with open(os.path.join(HERE, "memory.json"), "w") as fh:
        json.dump({"llama.cpp": "c392e5094deaf2d1a7c18683214f007fad3fe42b", "tool": "tools/kv_report.cpp",
                   "cases": out}, fh, indent=1)
        fh.write("\n")


if __name__ == "__main__":
    main()
