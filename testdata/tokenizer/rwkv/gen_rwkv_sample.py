#!/usr/bin/env python3
"""Cuts rwkv_vocab_sample.txt from RWKV World's rwkv_vocab_v20230424.txt (argument 1; BlinkDL/RWKV-LM 524481d5,
RWKV-v7/, sha256 e6dee3d4e31b4d5c40ac99508ac6c701ceef4bed681bf2167ce9a908552bca89) and writes what Python makes of
each line the way llama.cpp d32676d7's converter reads it (_set_vocab_rwkv_world: ast.literal_eval of the literal,
str encoded as UTF-8, the text stored as repr(bytes)[2:-1]) to rwkv_vocab_sample.json, as hex bytes and text.
The sample (lines from 1000 on): every one with an escaped backslash or quote or in double quotes, every 3rd with a
\\u escape, every 25th with \\x, every 400th other."""
import ast, json, sys

lines = open(sys.argv[1], encoding="utf-8").readlines()


def kept(i, l):
    lit = " ".join(l.split(" ")[1:-1])
    if "\\\\" in lit or "\\'" in lit or '\\"' in lit or lit.lstrip("b").startswith('"'):
        return True
    if "\\u" in lit:
        return i % 3 == 0
    if "\\x" in lit:
        return i % 25 == 0
    return i % 400 == 0


keep = [l for i, l in enumerate(lines) if i >= 999 and kept(i, l)]
with open("rwkv_vocab_sample.txt", "w", encoding="utf-8") as f:
    f.writelines(keep)
out = []
for line in keep:
    parts = line.split(" ")
    tok = ast.literal_eval(" ".join(parts[1:-1]))
    tok = tok.encode("utf-8") if isinstance(tok, str) else tok
    assert len(tok) == int(parts[-1])
    out.append({"bytes": tok.hex(), "text": repr(tok)[2:-1]})
with open("rwkv_vocab_sample.json", "w", encoding="utf-8") as f:
    json.dump(out, f, ensure_ascii=False, indent=0)
    f.write("\n")
print(len(keep), "lines")
