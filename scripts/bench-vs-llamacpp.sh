#!/usr/bin/env bash
# bench-vs-llamacpp.sh: tfconv bench (reference mode and --match-llamacpp) side by side with llama-bench on
# TinyLlama-1.1B-shaped random checkpoints (F32, Q8_0, Q4_0, Q4_K_M), alternating runs, medians and ratios (and, for
# tfconv, the GB/s of weights its decode streamed against the read bandwidth it measured), on
#   (a) this CPU as it is: tfconv against the llama.cpp build in LLAMA_BIN;
#   (b) this CPU without AVX-512: tfconv under GODEBUG=cpu.avx512f=off (its AVX2 / AVX-VNNI kernels) against a
#       llama.cpp built without AVX-512 in LLAMA_BIN_AVX2 (cmake -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON
#       -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF; its system_info must not list AVX512).
#
#   LLAMA_BIN=/path/build/bin LLAMA_BIN_AVX2=/path/build-avx2/bin scripts/bench-vs-llamacpp.sh [ROUNDS] [THREADS]
#
# Either variable may be left out to skip that CPU mode. TYPES (default "f32 q8_0 q4_0 q4_k_m") picks the weights.
# SHAPE (default tinyllama-1.1b) is the `tfconv synth --like` shape and LAYERS (default: all) its --layers, e.g.
# SHAPE=mamba2-2.7b LAYERS=4 or SHAPE=granite-4.0-h-tiny LAYERS=6 (five Mamba-2 layers, then attention);
# PROMPT and GEN (default 128 and 32) are both programs' prompt and generated tokens. BANDWIDTH=false skips
# tfconv's read-bandwidth measurement (its column stays empty). TFCONV_AVX2=1 adds, in mode (a), tfconv rows under
# GODEBUG=cpu.avx512f=off (its AVX2 kernels) against the same native llama.cpp, for machines without an AVX2 build.
# On a machine other processes load, export OMP_WAIT_POLICY=passive: llama.cpp's OpenMP threads otherwise spin at
# every barrier for a partner the OS has descheduled (a 4-layer Mamba-2 decode, 2 threads, load 30 on 2 cores:
# 0.43 tok/s spinning, 7.9 passive); tfconv does not read it.
# MODELS="a.gguf b.gguf" benches those GGUFs instead (named by file in the table; nothing is synthesized), e.g. the
# gpt-oss-20b and Llama-4-Scout synths of docs/speed.md; REPS (default 1) is both programs' -r (runs averaged per round).
# This script never builds llama.cpp. The checkpoints are written once into $BENCH_DIR (default /tmp/modelbench,
# ~8 GB for TinyLlama): F32 and Q8_0 with `tfconv synth`, the others with `tfconv quantize` of the F32 one. Quiet
# machines only: every process you run beside it shows up in the figures.
set -euo pipefail
rounds=${1:-3}
threads=${2:-2}
types=${TYPES:-f32 q8_0 q4_0 q4_k_m}
modes=()
[ -n "${LLAMA_BIN:-}" ] && modes+=(a)
[ -n "${LLAMA_BIN_AVX2:-}" ] && modes+=(b)
if [ ${#modes[@]} -eq 0 ]; then
  echo "set LLAMA_BIN (a llama.cpp build/bin directory) and/or LLAMA_BIN_AVX2 (one built without AVX-512)" >&2
  exit 2
fi
# Each build's llama_print_system_info() goes to stderr; the AVX2 one must not list AVX512.
sysinfo() {
  LD_LIBRARY_PATH=$1 python3 -c 'import ctypes, sys
l = ctypes.CDLL(sys.argv[1] + "/libllama.so"); l.llama_print_system_info.restype = ctypes.c_char_p
print(l.llama_print_system_info().decode())' "$1"
}
for bin in ${LLAMA_BIN:-} ${LLAMA_BIN_AVX2:-}; do echo "$bin: $(sysinfo "$bin")" >&2; done
if [ -n "${LLAMA_BIN_AVX2:-}" ] && sysinfo "$LLAMA_BIN_AVX2" | grep -q 'AVX512 = 1'; then
  echo "$LLAMA_BIN_AVX2's llama.cpp reports AVX512 = 1: build it with -DGGML_AVX512=OFF" >&2
  exit 2
fi
dir=${BENCH_DIR:-/tmp/modelbench}
root=$(cd "$(dirname "$0")/.." && pwd)
tfconv=$(mktemp -d)/tfconv
(cd "$root" && go build -o "$tfconv" ./cmd/tfconv)
mkdir -p "$dir"
shape=${SHAPE:-tinyllama-1.1b}
prompt=${PROMPT:-128}
gen=${GEN:-32}
reps=${REPS:-1}
bwflag=--bandwidth=${BANDWIDTH:-true}
layers=()
name=tl
if [ "$shape" != tinyllama-1.1b ] || [ -n "${LAYERS:-}" ]; then name=$shape${LAYERS:+-${LAYERS}l}; fi
[ -n "${LAYERS:-}" ] && layers=(--layers "$LAYERS")
declare -A path
if [ -n "${MODELS:-}" ]; then
  types=""
  for m in $MODELS; do
    t=$(basename "$m" .gguf)
    path[$t]=$m
    types="$types $t"
  done
else
  for t in $types; do
    case $t in
    f32 | f16 | bf16 | q8_0) [ -f "$dir/$name-$t.gguf" ] || "$tfconv" synth --like "$shape" "${layers[@]}" "$dir/$name-$t.gguf" --type "$t" ;;
    *)
      if [ ! -f "$dir/$name-$t.gguf" ]; then
        [ -f "$dir/$name-f32.gguf" ] || "$tfconv" synth --like "$shape" "${layers[@]}" "$dir/$name-f32.gguf" --type f32
        "$tfconv" quantize "$dir/$name-f32.gguf" "$dir/$name-$t.gguf" --type "$t" >/dev/null
      fi
      ;;
    esac
    path[$t]=$dir/$name-$t.gguf
  done
fi
out=$(mktemp)
for r in $(seq "$rounds"); do
  for mode in "${modes[@]}"; do
    if [ "$mode" = a ]; then bin=$LLAMA_BIN godebug=${GODEBUG:-}; else bin=$LLAMA_BIN_AVX2 godebug=cpu.avx512f=off; fi
    for t in $types; do
      m=${path[$t]}
      LD_LIBRARY_PATH=$bin "$bin/llama-bench" -m "$m" -t "$threads" -p "$prompt" -n "$gen" -r "$reps" -o json 2>/dev/null |
        python3 -c 'import json,sys; d=json.load(sys.stdin); print(*sys.argv[1:3], "llama.cpp", *("%s=%f"%("pp" if x["n_prompt"] else "tg", x["avg_ts"]) for x in d))' "$mode" "$t" >>"$out"
      runs=("$godebug|")
      [ "$mode" = a ] && [ -n "${TFCONV_AVX2:-}" ] && runs+=("cpu.avx512f=off|-avx2")
      for run in "${runs[@]}"; do
        for numeric in "" --match-llamacpp; do
          GODEBUG=${run%%|*} "$tfconv" bench "$m" --threads "$threads" --prompt "$prompt" --gen "$gen" --repetitions "$reps" $bwflag --json $numeric 2>/dev/null |
            python3 -c 'import json,sys; d=json.load(sys.stdin); print(*sys.argv[1:3], "tfconv"+sys.argv[3], "pp=%f"%d["prefill_tok_s"], "tg=%f"%d["decode_tok_s"], "gbs=%f"%d["decode_weight_gb_s"], "bw=%f"%d["read_bandwidth_gb_s"])' "$mode" "$t" "$numeric${run#*|}" >>"$out"
        done
      done
    done
  done
  echo "round $r done (load $(cut -d' ' -f1 /proc/loadavg))" >&2
done
# RAW=FILE keeps every run's figures, a line per program and round.
[ -n "${RAW:-}" ] && cp "$out" "$RAW"
python3 - "$out" "$types" <<'PY'
import sys, statistics, collections
runs = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(sys.argv[1]):
    mode, t, who, *kv = line.split()
    for x in kv:
        k, v = x.split("=")
        runs[(mode, t, who)][k].append(float(v))
cpu = {"a": "native", "b": "AVX-512 off"}
print("| CPU | weights | program | prefill tok/s | decode tok/s | prefill ratio | decode ratio | decode weights GB/s (of read bandwidth) |")
print("|---|---|---|---|---|---|---|---|")
for mode in ("a", "b"):
    for t in sys.argv[2].split():
        ref = {k: statistics.median(v) for k, v in runs[(mode, t, "llama.cpp")].items()}
        for who in ("llama.cpp", "tfconv", "tfconv--match-llamacpp", "tfconv-avx2", "tfconv--match-llamacpp-avx2"):
            med = {k: statistics.median(v) for k, v in runs[(mode, t, who)].items()}
            if not med:
                continue
            ratio = lambda k: "%.2f×" % (med[k] / ref[k]) if ref.get(k) else "n/a"
            gbs = "%.1f (%.0f%% of %.1f)" % (med["gbs"], 100 * med["gbs"] / med["bw"], med["bw"]) if med.get("bw") else ""
            label = who.replace("--", " --").replace("-avx2", " (AVX-512 off)")
            print("| %s | %s | %s | %.1f | %.2f | %s | %s | %s |" % (cpu[mode], t.upper() if t.islower() and "-" not in t else t, label,
                  med["pp"], med["tg"], ratio("pp"), ratio("tg"), gbs))
PY
