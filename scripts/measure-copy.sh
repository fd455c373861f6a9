#!/bin/sh
# measure-copy.sh TFCONV HUBSERVE LAYERS OUTDIR [ROUNDS]
#
# Remote throughput of a conversion that copies tensors unchanged: hubserve
# serves a Qwen2-7B-shaped BF16 checkpoint (its first LAYERS layers,
# generated on the fly), and each round reads its safetensors files with
# curl -s -o /dev/null, one after another, then runs tfconv convert
# hf://org/qwen2-bf16 --outtype bf16 into OUTDIR (removed after), the two
# interleaved so that both see the same load. hubserve hashes every file
# before serving (-hash), so that neither pays for the sha256 it publishes. Prints each time and the
# ratio of the rates (curl's time over tfconv's: 1 is curl's rate), with
# the CPU seconds each client and the server spent: on a machine whose cores
# are busy the rates follow the CPU each byte costs.
#
# With RAWGET set to hubtest/cmd/rawget's binary, each round also reads the
# files with it (-sha256: Go's net/http into reused buffers, hashed on a
# second goroutine), between curl and tfconv: the floor for tfconv's reads.
# The last lines are the medians over the rounds, with the load before and
# after (uptime).
set -eu
TFCONV=$1 HUBSERVE=$2 LAYERS=$3 OUT=$4 ROUNDS=${5:-3}
mkdir -p "$OUT"
rm -f "$OUT/serve.out"
"$HUBSERVE" -shape qwen2-bf16 -layers "$LAYERS" -hash >"$OUT/serve.out" 2>"$OUT/serve.err" &
SERVE=$!
trap 'kill $SERVE 2>/dev/null' EXIT
while [ ! -s "$OUT/serve.out" ]; do sleep 0.2; done
export HF_ENDPOINT=$(head -1 "$OUT/serve.out" | cut -d' ' -f1)
SRC=$(awk '/safetensors /{s+=$2} END{printf "%.0f", s}' "$OUT/serve.out")
echo "source: $(head -1 "$OUT/serve.out"), safetensors bytes $SRC"
echo "before: $(uptime)"
rm -f "$OUT/ratios" "$OUT/floors"
now() { date +%s.%N; }
# cpu PID: the process's user+system seconds so far (/proc/PID/stat).
cpu() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / hz}' "/proc/$1/stat"; }
r=1
while [ $r -le "$ROUNDS" ]; do
	s=$(now) h=$(cpu $SERVE)
	got=0
	for u in $(awk '/safetensors /{print $1}' "$OUT/serve.out"); do
		got=$((got + $(/usr/bin/time -a -o "$OUT/curl.time" -f '%U %S' curl -sfL -o /dev/null -w '%{size_download}' "$u")))
	done
	[ "$got" -eq "$SRC" ] || { echo "curl read $got bytes of $SRC" >&2; exit 1; }
	c=$(echo "$(now) - $s" | bc) hc=$(echo "$(cpu $SERVE) - $h" | bc)
	cc=$(awk '{s+=$1+$2} END{printf "%.2f", s}' "$OUT/curl.time") && rm "$OUT/curl.time"
	floor=
	if [ -n "${RAWGET:-}" ]; then
		s=$(now)
		got=$(/usr/bin/time -o "$OUT/rawget.time" -f '%U %S' "$RAWGET" -sha256 $(awk '/safetensors /{print $1}' "$OUT/serve.out") | tail -1)
		[ "$got" -eq "$SRC" ] || { echo "rawget read $got bytes of $SRC" >&2; exit 1; }
		g=$(echo "$(now) - $s" | bc)
		floor=", rawget -sha256 $g s ($(echo "scale=1; $SRC / $g / 1000000" | bc) MB/s; CPU $(awk '{printf "%.2f", $1+$2}' "$OUT/rawget.time") s), rawget/curl rate $(echo "scale=2; $c / $g" | bc)"
		echo "$c / $g" | bc -l >>"$OUT/floors"
	fi
	s=$(now) h=$(cpu $SERVE)
	/usr/bin/time -o "$OUT/tfconv.time" -f '%U %S' "$TFCONV" convert hf://org/qwen2-bf16 "$OUT/copy.gguf" --outtype bf16 --force >"$OUT/convert.out" 2>"$OUT/convert.err"
	t=$(echo "$(now) - $s" | bc) ht=$(echo "$(cpu $SERVE) - $h" | bc)
	tc=$(awk '{printf "%.2f", $1+$2}' "$OUT/tfconv.time")
	rm -f "$OUT/copy.gguf"
	echo "round $r: curl $c s ($(echo "scale=1; $SRC / $c / 1000000" | bc) MB/s; CPU curl $cc s, hubserve $hc s)$floor, tfconv $t s ($(echo "scale=1; $SRC / $t / 1000000" | bc) MB/s; CPU tfconv $tc s, hubserve $ht s), tfconv/curl rate $(echo "scale=2; $c / $t" | bc); load $(cut -d' ' -f1 /proc/loadavg)"
	echo "$c / $t" | bc -l >>"$OUT/ratios"
	r=$((r + 1))
done
median() { sort -n "$1" | awk '{v[NR]=$1} END{m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%.2f", m}'; }
echo "median tfconv/curl rate $(median "$OUT/ratios") over $ROUNDS rounds"
[ -s "$OUT/floors" ] && echo "median rawget -sha256/curl rate $(median "$OUT/floors")"
echo "after: $(uptime)"
rm -f "$OUT/ratios" "$OUT/floors"
