#!/usr/bin/env bash
# convert-vs-cp.sh: `tfconv convert SRC OUT.gguf --outtype f16` (bf16 → f16, every byte converted) beside
# `cp -r SRC COPY` on the same 7B-shaped bf16 Hugging Face folder (`tfconv synth --like llama-7b --layers L
# --type bf16`), each timed until its output is on disk (`&& sync`), alternating, ROUNDS rounds each; prints each
# run, the medians and the ratio cp/tfconv (1.0: as fast as copying the files).
#
#   scripts/convert-vs-cp.sh [ROUNDS]
#
# LAYERS (default 4, ~2 GB; 32 is the whole 7B, ~13.5 GB) picks the size, CVBENCH_DIR (default /tmp/cvbench) holds
# the input and outputs. Before every run the outputs of the last one are deleted, the file system synced and the
# machine left alone for a second, so that neither tool pays for the other's writeback; the input stays in the page
# cache for both (cp reads it first too). Quiet machines only.
set -euo pipefail
rounds=${1:-5}
layers=${LAYERS:-4}
[ -x /usr/bin/time ] || { echo "needs GNU time at /usr/bin/time" >&2; exit 2; }
dir=${CVBENCH_DIR:-/tmp/cvbench}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$dir"
tfconv=$dir/tfconv-bench
(cd "$root" && go build -o "$tfconv" ./cmd/tfconv)
src=$dir/llama-7b-L$layers-bf16
[ -d "$src" ] || "$tfconv" synth --like llama-7b --layers "$layers" --to safetensors "$src" --type bf16 >/dev/null
log=$(mktemp)
clean() { rm -rf "$dir/copy" "$dir/out.gguf"; sync; sleep 1; }
cat "$src"/* >/dev/null
for r in $(seq "$rounds"); do
  clean
  /usr/bin/time -f "cp %e" -a -o "$log" sh -c "cp -r '$src' '$dir/copy' && sync"
  clean
  /usr/bin/time -f "tfconv %e" -a -o "$log" sh -c "'$tfconv' convert '$src' '$dir/out.gguf' --outtype f16 >/dev/null 2>&1 && sync"
  tail -2 "$log" | tr '\n' ' '
  echo "(round $r, load $(cut -d' ' -f1 /proc/loadavg))"
done
clean
python3 - "$log" "$(du -sb "$src" | cut -f1)" <<'PY'
import sys, statistics
runs = {}
for line in open(sys.argv[1]):
    who, wall = line.split()
    runs.setdefault(who, []).append(float(wall))
size = int(sys.argv[2])
cp, tf = statistics.median(runs["cp"]), statistics.median(runs["tfconv"])
print(f"input {size/1e9:.2f} GB, {len(runs['cp'])} rounds, medians to the data on disk:")
print(f"  cp -r           {cp:6.2f} s  {size/cp/1e9:5.2f} GB/s")
print(f"  tfconv convert  {tf:6.2f} s  {size/tf/1e9:5.2f} GB/s")
print(f"  ratio cp/tfconv {cp/tf:.2f}x")
PY
rm -f "$log"
