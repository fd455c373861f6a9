#!/bin/sh
# tfconv's side of testdata/quantize/ppl.json (llama.cpp's, from gen_ppl.py): quantize shared/fixtures' trained
# tiny-fortunes to every type listed there, with and without the llama-imatrix matrix, check each file is
# llama-quantize's (sha256), and measure `tfconv perplexity` on the same held-out text (val.txt after the 4207 bytes
# of testdata/imatrix/calib.txt, 128-token chunks). Prints "TYPE IMATRIX(0/1) SAME-FILE(yes/no) PPL" per run, then
# the f32 model's PPL. Usage, from the repository root: scripts/ppl-table.sh [SHARED_FIXTURES] > table.txt
# (ONLY="IQ2_M TQ1_0 ..." limits it to those types.)
set -e
shared=${1:-../shared/fixtures}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/tfconv" ./cmd/tfconv
hf="$shared/trained/tiny-fortunes/hf"
tail -c +4208 "$shared/trained/tiny-fortunes/val.txt" > "$tmp/eval.txt"
python3 -c "
import json
for r in json.load(open('testdata/quantize/ppl.json'))['runs']: print(r['type'], int(r['imatrix']), r['sha256'])" |
while read -r typ im sha; do
  case " ${ONLY:-$typ} " in *" $typ "*) ;; *) continue ;; esac
  set -- ; [ "$im" = 1 ] && set -- --imatrix testdata/imatrix/tiny-fortunes.c392e509.dat
  "$tmp/tfconv" quantize "$hf" "$tmp/q.gguf" --type "$(echo "$typ" | tr A-Z a-z)" "$@" --force >/dev/null 2>&1
  same=no; [ "$(sha256sum "$tmp/q.gguf" | cut -c1-64)" = "$sha" ] && same=yes
  ppl=$("$tmp/tfconv" perplexity "$tmp/q.gguf" --file "$tmp/eval.txt" --ctx 128 --json | python3 -c "import json,sys; print(json.load(sys.stdin)['ppl'])")
  echo "$typ $im $same $ppl"
done
"$tmp/tfconv" perplexity "$hf" --file "$tmp/eval.txt" --ctx 128 --json | python3 -c "import json,sys; print('f32', json.load(sys.stdin)['ppl'])"
