#!/usr/bin/env bash
# bench-vs-llamacpp.sh: tfconv bench (reference mode and --match-llamacpp) side by side with llama-bench on
# TinyLlama-1.1B-shaped random checkpoints (F32 and Q8_0), alternating runs, medians and ratios.
#
#   LLAMA_BIN=/path/to/llama.cpp/build/bin scripts/bench-vs-llamacpp.sh [ROUNDS] [THREADS]
#
# LLAMA_BIN is an existing llama.cpp build (this script never builds it). The checkpoints are written once with
# `tfconv synth` into $BENCH_DIR (default /tmp/modelbench, ~5.6 GB). Quiet machines only: every process you
# run beside it shows up in the figures.
set -euo pipefail
rounds=${1:-3}
threads=${2:-2}
: "${LLAMA_BIN:?set LLAMA_BIN to a llama.cpp build/bin directory}"
dir=${BENCH_DIR:-/tmp/modelbench}
root=$(cd "$(dirname "$0")/.." && pwd)
tfconv=$(mktemp -d)/tfconv
(cd "$root" && go build -o "$tfconv" ./cmd/tfconv)
mkdir -p "$dir"
for t in f32 q8_0; do
  [ -f "$dir/tl-$t.gguf" ] || "$tfconv" synth --like tinyllama-1.1b "$dir/tl-$t.gguf" --type "$t"
done
out=$(mktemp)
for r in $(seq "$rounds"); do
  for t in q8_0 f32; do
    m=$dir/tl-$t.gguf
    LD_LIBRARY_PATH=$LLAMA_BIN "$LLAMA_BIN/llama-bench" -m "$m" -t "$threads" -p 128 -n 32 -r 1 -o json 2>/dev/null |
      python3 -c 'import json,sys; d=json.load(sys.stdin); print(sys.argv[1], "llama.cpp", *("%s=%f"%("pp" if x["n_prompt"] else "tg", x["avg_ts"]) for x in d))' "$t" >>"$out"
    for mode in "" --match-llamacpp; do
      "$tfconv" bench "$m" --threads "$threads" --json $mode 2>/dev/null |
        python3 -c 'import json,sys; d=json.load(sys.stdin); print(sys.argv[1], "tfconv"+sys.argv[2], "pp=%f"%d["prefill_tok_s"], "tg=%f"%d["decode_tok_s"])' "$t" "$mode" >>"$out"
    done
  done
  echo "round $r done (load $(cut -d' ' -f1 /proc/loadavg))" >&2
done
python3 - "$out" <<'PY'
import sys, statistics, collections
runs = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(sys.argv[1]):
    t, who, *kv = line.split()
    for x in kv:
        k, v = x.split("=")
        runs[(t, who)][k].append(float(v))
print("| weights | program | prefill tok/s | decode tok/s | prefill ratio | decode ratio |")
print("|---|---|---|---|---|---|")
for t in ("f32", "q8_0"):
    ref = {k: statistics.median(v) for k, v in runs[(t, "llama.cpp")].items()}
    for who in ("llama.cpp", "tfconv", "tfconv--match-llamacpp"):
        med = {k: statistics.median(v) for k, v in runs[(t, who)].items()}
        if not med:
            continue
        print("| %s | %s | %.1f | %.2f | %.2f× | %.2f× |" % (t.upper(), who.replace("--", " --"), med["pp"], med["tg"],
              med["pp"] / ref["pp"], med["tg"] / ref["tg"]))
PY
