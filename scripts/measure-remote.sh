#!/bin/sh
# measure-remote.sh TFCONV HUBSERVE LAYERS OUTDIR [SPLIT [LIMIT]]
#
# Quantizes a Kimi-K2-shaped checkpoint served by hubserve (its first
# LAYERS layers, in Kimi K2's shard layout, generated on the fly) with
# tfconv quantize --split-max-size, and reports peak RSS (/usr/bin/time -v),
# the most local disk OUTDIR held (sampled each second; each finished shard
# is hashed and removed as it appears), source bytes and time. With LIMIT
# (seconds) the run is stopped after that long and the progress it reached
# is reported, for an extrapolation.
set -eu
TFCONV=$1 HUBSERVE=$2 LAYERS=$3 OUT=$4 SPLIT=${5:-5GB} LIMIT=${6:-0}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT"
rm -f "$OUT/serve.out"
"$HUBSERVE" -shape kimi-k2 -deepseek-rope -layers "$LAYERS" -sides "$ROOT/testdata/arch/deepseek3/hf" >"$OUT/serve.out" 2>"$OUT/serve.err" &
SERVE=$!
trap 'kill $SERVE 2>/dev/null' EXIT
while [ ! -s "$OUT/serve.out" ]; do sleep 0.2; done
export HF_ENDPOINT=$(head -1 "$OUT/serve.out" | cut -d' ' -f1)
SRC=$(awk '/safetensors /{s+=$2} END{printf "%.0f", s}' "$OUT/serve.out")
echo "source: $(head -1 "$OUT/serve.out"), safetensors bytes $SRC"
: >"$OUT/shards.sha256"
maxdisk=0
start=$(date +%s.%N)
/usr/bin/time -v "$TFCONV" quantize hf://org/kimi-k2 "$OUT/q/kimi.gguf" --type q4_k_m --split-max-size "$SPLIT" --progress \
	>"$OUT/quantize.out" 2>"$OUT/quantize.err" &
Q=$!
mkdir -p "$OUT/q"
while kill -0 $Q 2>/dev/null; do
	d=$(du -sb "$OUT/q" | cut -f1)
	[ "$d" -gt "$maxdisk" ] && maxdisk=$d
	for f in "$OUT"/q/kimi-*-of-*.gguf; do
		[ -f "$f" ] || continue
		sha256sum "$f" >>"$OUT/shards.sha256" && rm "$f"
	done
	if [ "$LIMIT" -gt 0 ] && [ "$(echo "$(date +%s.%N) - $start > $LIMIT" | bc)" -eq 1 ]; then
		pkill -TERM -P $Q || true # tfconv, the child of time
		LIMIT=0
	fi
	sleep 1
done
wait $Q && rc=0 || rc=$?
end=$(date +%s.%N)
for f in "$OUT"/q/kimi-*-of-*.gguf; do
	[ -f "$f" ] || continue
	sha256sum "$f" >>"$OUT/shards.sha256" && rm "$f"
done
secs=$(echo "$end - $start" | bc)
echo "exit $rc in $secs s; max disk $maxdisk bytes; $(grep 'Maximum resident' "$OUT/quantize.err")"
echo "last progress: $(tr '\r' '\n' <"$OUT/quantize.err" | grep 'quantize: .*MiB /' | tail -1)"
echo "source throughput $(echo "scale=3; $SRC / $secs / 1000000000" | bc) GB/s; shards: $(wc -l <"$OUT/shards.sha256")"
