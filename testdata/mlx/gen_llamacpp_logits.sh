#!/bin/sh
# gen_llamacpp_logits.sh TFCONV LOGITS_DUMP
#
# llama.cpp's logits for each MLX directory here (llamacpp.logits.json): the directory (written by mlx-lm's own
# save code, gen_mlxlm.py) with its fixture's tokenizer files beside it, named mlx, converted by tfconv to the f32
# GGUF the tests convert it to (smollm3-mxfp4: `quantize DIR X.gguf f32`, the dequantized model; the others:
# `convert DIR X.gguf --outtype f32`; gpt-oss keeps its MXFP4 experts as blocks at any outtype), then run by
# llama.cpp d32676d7 (LOGITS_DUMP: testdata/arch/tools/logits_dump.cpp built as /work/ref/SETUP.md says) on the
# fixtures' tokens. gguf_sha256 is that GGUF's sha256, which the tests hold their own conversion to.
set -eu
TFCONV=$1 DUMP=$2
HERE=$(cd "$(dirname "$0")" && pwd)
TOKENS=1,15,250,999,3,87,512,640,33,998,421,77
for name in smollm3-q4g64 smollm3-mxfp4 qwen3moe-q4g32 gptoss; do
	fam=${name%%-*}
	tmp=$(mktemp -d)
	mkdir "$tmp/mlx"
	cp "$HERE/$name/model.safetensors" "$HERE/$name/config.json" "$tmp/mlx/"
	for f in tokenizer.json tokenizer_config.json special_tokens_map.json vocab.json merges.txt generation_config.json; do
		[ -f "$HERE/../arch/$fam/hf/$f" ] && cp "$HERE/../arch/$fam/hf/$f" "$tmp/mlx/"
	done
	if [ "$name" = smollm3-mxfp4 ]; then
		"$TFCONV" quantize "$tmp/mlx" "$tmp/x.gguf" f32 >/dev/null
	else
		"$TFCONV" convert "$tmp/mlx" "$tmp/x.gguf" --outtype f32 >/dev/null
	fi
	sum=$(sha256sum "$tmp/x.gguf" | cut -d' ' -f1)
	"$DUMP" "$tmp/x.gguf" "$TOKENS" 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(json.dumps({"gguf_sha256": sys.argv[1], "tokens": d["tokens"], "logits": d["logits"]}, separators=(",", ":")))' "$sum" >"$HERE/$name/llamacpp.logits.json"
	rm -rf "$tmp"
	echo "$name: $sum"
done
