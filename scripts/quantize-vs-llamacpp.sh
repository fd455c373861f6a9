#!/usr/bin/env bash
# quantize-vs-llamacpp.sh: `tfconv quantize SRC OUT --type TYPE --threads N` beside
# `llama-quantize SRC OUT TYPE N` on the same 7B-shaped f16 GGUF (`tfconv synth --like llama-7b --layers L`),
# alternating, ROUNDS rounds each; prints each run and the medians of wall time, CPU time (user+sys) and max RSS
# (GNU time -v), the ratios llama.cpp/tfconv (above 1: tfconv faster), and whether the two outputs are the same bytes.
#
#   LLAMA_BIN=/path/build/bin scripts/quantize-vs-llamacpp.sh [ROUNDS] [THREADS]
#
# TYPE (default q4_k_m; the llama-quantize name is the upper case) and LAYERS (default 4, ~2 GB of f16; 32 is the
# whole 7B, ~13 GB) pick the run; IMATRIX=FILE (a legacy .dat, which llama-quantize c392e509 reads; e.g. from
# `tfconv imatrix SRC -f TEXT -o FILE.dat`) passes --imatrix FILE to both; QBENCH_DIR (default /tmp/qspeed) holds
# the input and outputs. This script never
# builds llama.cpp. Wall time is only meaningful on a quiet machine; CPU time holds up better under load. tfconv's
# wall time includes the fsync of its output before the rename (llama-quantize does not sync).
set -euo pipefail
rounds=${1:-3}
threads=${2:-2}
type=${TYPE:-q4_k_m}
layers=${LAYERS:-4}
if [ -z "${LLAMA_BIN:-}" ] || [ ! -x "$LLAMA_BIN/llama-quantize" ]; then
  echo "set LLAMA_BIN to a llama.cpp build/bin directory holding llama-quantize" >&2
  exit 2
fi
[ -x /usr/bin/time ] || { echo "needs GNU time at /usr/bin/time" >&2; exit 2; }
dir=${QBENCH_DIR:-/tmp/qspeed}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$dir"
tfconv=$dir/tfconv-bench
(cd "$root" && go build -o "$tfconv" ./cmd/tfconv)
src=$dir/llama-7b-L$layers-f16.gguf
[ -f "$src" ] || "$tfconv" synth --like llama-7b --layers "$layers" "$src"
ours=$dir/tfconv-$type.gguf
theirs=$dir/llamacpp-$type.gguf
upper=$(echo "$type" | tr '[:lower:]' '[:upper:]')
imat=()
[ -n "${IMATRIX:-}" ] && imat=(--imatrix "$IMATRIX")
log=$(mktemp)
# measure NAME CMD...: one run under GNU time; appends "NAME wall cpu rss_kb" to $log.
measure() {
  local name=$1 t
  shift
  t=$(mktemp)
  /usr/bin/time -v "$@" >/dev/null 2>"$t" || { cat "$t" >&2; exit 1; }
  awk -v n="$name" -F': ' '
    /User time/ {u=$2} /System time/ {s=$2} /Maximum resident/ {m=$2}
    /Elapsed \(wall clock\)/ {k=split($2, p, ":"); w=0; for (i=1; i<=k; i++) w=w*60+p[i]}
    END {printf "%s %.2f %.2f %d\n", n, w, u+s, m}' "$t" | tee -a "$log"
  rm -f "$t"
}
echo "name wall_s cpu_s max_rss_kb ($src, $type, $threads threads${IMATRIX:+, imatrix $IMATRIX})"
for r in $(seq "$rounds"); do
  measure llama.cpp env LD_LIBRARY_PATH="$LLAMA_BIN" "$LLAMA_BIN/llama-quantize" ${imat[@]+"${imat[@]}"} "$src" "$theirs" "$upper" "$threads"
  measure tfconv "$tfconv" quantize "$src" "$ours" --type "$type" --threads "$threads" --force ${imat[@]+"${imat[@]}"}
done
python3 - "$log" <<'EOF'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    name, wall, cpu, rss = line.split()
    runs.setdefault(name, []).append((float(wall), float(cpu), int(rss)))
med = {n: [statistics.median(v[i] for v in r) for i in range(3)] for n, r in runs.items()}
print("median      wall_s   cpu_s  max_rss_MB")
for n in ("llama.cpp", "tfconv"):
    w, c, m = med[n]
    print(f"{n:10s} {w:7.2f} {c:7.2f} {m/1024:10.0f}")
l, t = med["llama.cpp"], med["tfconv"]
print(f"speed (llama.cpp/tfconv): wall {l[0]/t[0]:.2f}x  cpu {l[1]/t[1]:.2f}x;  RSS tfconv/llama.cpp {t[2]/l[2]:.3f}")
EOF
rm -f "$log"
if cmp -s "$ours" "$theirs"; then echo "outputs: identical bytes"; else echo "outputs: DIFFERENT"; exit 1; fi
