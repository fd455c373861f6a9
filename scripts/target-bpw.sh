#!/bin/sh
# The --target-bpw table of README.md: for each llama.cpp mixture TYPE, tfconv's llama-quantize-identical TYPE file of
# shared/fixtures' trained tiny-fortunes with testdata/imatrix/tiny-fortunes.c392e509.dat, then --target-bpw at that
# file's bits per weight (calibration testdata/imatrix/calib.txt), and the perplexity of both on the held-out rest of
# val.txt. Prints "TYPE BPW PPL-mixture BPW-auto PPL-auto". Usage, from the repository root:
#   scripts/target-bpw.sh [SHARED_FIXTURES] [TYPE...]   (default types: q4_k_m q3_k_m q2_k iq2_m)
set -e
shared=${1:-../shared/fixtures}
[ $# -gt 0 ] && shift
types=${*:-q4_k_m q3_k_m q2_k iq2_m}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/tfconv" ./cmd/tfconv
hf="$shared/trained/tiny-fortunes/hf"
imat=testdata/imatrix/tiny-fortunes.c392e509.dat
tail -c +4208 "$shared/trained/tiny-fortunes/val.txt" > "$tmp/eval.txt"
ppl() { "$tmp/tfconv" perplexity "$1" --file "$tmp/eval.txt" --ctx 128 --json | python3 -c "import json,sys; print(json.load(sys.stdin)['ppl'])"; }
bpw() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['bits_per_weight'])" "$1"; }
for t in $types; do
  "$tmp/tfconv" quantize "$hf" "$tmp/mix.gguf" --type "$t" --imatrix "$imat" --force --json > "$tmp/mix.json" 2>/dev/null
  b=$(bpw "$tmp/mix.json")
  "$tmp/tfconv" quantize "$hf" "$tmp/auto.gguf" --type "$t" --imatrix "$imat" --target-bpw "$b" \
    --calib testdata/imatrix/calib.txt --force --json > "$tmp/auto.json" 2>/dev/null
  echo "$t $b $(ppl "$tmp/mix.gguf") $(bpw "$tmp/auto.json") $(ppl "$tmp/auto.gguf")"
done
