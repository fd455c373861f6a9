#!/usr/bin/env bash
# wine-check.sh: the windows build's core commands (inspect, convert HF → GGUF and back, replacing an existing
# output with --force, quantize, verify) under Wine, beside the linux build's on the same inputs: every output must be
# byte-identical (inspect's text with its path separators turned) and verify's figures equal.
#
#   scripts/wine-check.sh WINDOWS.exe LINUX-BINARY [WINE]      (WINE: default wine64, then /usr/lib/wine/wine64)
#
# Go 1.26's windows binaries need bcryptprimitives.dll (ProcessPrng), which Wine has from 9.0 on: Debian trixie's
# wine (10.0) runs them, bookworm's (8.0) cannot start them; the script says so and exits 77 (skipped).
set -euo pipefail
exe=$(realpath "$1") lin=$(realpath "$2")
wine=${3:-$(command -v wine64 || echo /usr/lib/wine/wine64)}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export WINEDEBUG=-all WINEPREFIX=$work/prefix HOME=$work XDG_RUNTIME_DIR=$work
cp -r "$root/testdata/arch/qwen2" "$work/qwen2"
cd "$work"
if ! out=$("$wine" "$exe" --version 2>&1); then
  if grep -q bcryptprimitives <<<"$out"; then
    echo "SKIPPED: this Wine ($("$wine" --version 2>/dev/null || echo unknown)) cannot start Go 1.26 binaries (no bcryptprimitives.dll; Wine 9.0 or later can)" >&2
    exit 77
  fi
  echo "$out" >&2
  exit 1
fi
echo "$out" | grep 'windows/' >&2
ids=1,15,250,999,3,87,512,640,33,998,421,77
for side in win lin; do
  if [ $side = win ]; then run() { "$wine" "$exe" "$@"; }; else run() { "$lin" "$@"; }; fi
  run inspect qwen2/gguf/qwen2-f32.gguf | tr '\\' / > $side-inspect.txt
  run convert qwen2/hf $side.gguf --outtype f32 >/dev/null 2>&1
  run convert qwen2/hf $side.gguf --outtype f16 --force >/dev/null 2>&1   # replaces the existing output
  run quantize $side.gguf $side-q8.gguf --type q8_0 >/dev/null
  run verify $side.gguf $side-q8.gguf --tokens $ids --json | grep -v '"ref"\|"cand"' > $side-verify.json
  run convert $side.gguf $side-hf --to safetensors >/dev/null 2>&1
done
cmp win-inspect.txt lin-inspect.txt
cmp win.gguf lin.gguf
cmp win-q8.gguf lin-q8.gguf
cmp win-verify.json lin-verify.json
for f in lin-hf/*; do cmp "$f" "win-hf/${f#lin-hf/}"; done
echo "wine-check: inspect, convert (and --force), quantize, verify and GGUF → HF identical to the linux build's" >&2
