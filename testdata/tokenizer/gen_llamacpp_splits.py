"""Writes testdata/tokenizer/llamacpp_splits.json: how llama.cpp splits text
before BPE, for every BPE pre-tokenizer name it knows.

Reads, from a llama.cpp source tree: src/llama-vocab.cpp (which name is which
LLAMA_VOCAB_PRE_TYPE_*, its ignore_merges, and each type's regex list) and
conversion/base.py (the converter's check text); runs split_dump (built from
tools/split_dump.cpp against that tree's libllama.so: it calls llama.cpp's own
unicode_regex_split) on the check text, tokenizer/pre_test_texts.txt and
models/ggml-vocab-gpt-2.gguf.inp.

    python3 testdata/tokenizer/gen_llamacpp_splits.py LLAMA_CPP_DIR SPLIT_DUMP
"""
import json
import re
import subprocess
import sys
import tempfile

src, dump = sys.argv[1], sys.argv[2]
vocab = open(f"{src}/src/llama-vocab.cpp", encoding="utf-8").read()


def c_string(body):
    # a C string literal's body: escapes as C reads them
    return body.encode("utf-8").decode("unicode_escape").encode("latin-1").decode("utf-8")


# each type's regex list: the switch of llm_tokenizer_bpe's constructor
a = vocab.index("struct llm_tokenizer_bpe : llm_tokenizer")
b = vocab.index("std::vector<std::string> regex_exprs;", a)
regexes = {}
for chunk in vocab[a:b].split("break;"):
    labels = re.findall(r"case LLAMA_VOCAB_PRE_TYPE_(\w+):", chunk)
    if "default:" in chunk:
        labels.append("DEFAULT")
    exprs = [c_string(m) for m in re.findall(r'^\s*"((?:[^"\\]|\\.)*)",?\s*(?://.*)?$', chunk, re.M)]
    for label in labels:
        regexes[label] = exprs

# each name's type and ignore_merges: the if/else chain of load()
a = vocab.index('} else if (tokenizer_pre == "default") {')
b = vocab.index("unknown pre-tokenizer type", a)
names = {}
for block in re.split(r"\}\s*else if\s*\(", vocab[a:b])[1:]:
    cond, _, body = block.partition(") {")
    m = re.search(r"pre_type = LLAMA_VOCAB_PRE_TYPE_(\w+);", body)
    if not m:
        continue
    for name in re.findall(r'tokenizer_pre == "([^"]+)"', cond):
        names[name] = {"type": m.group(1), "ignore_merges": "ignore_merges = true" in body}

base = open(f"{src}/conversion/base.py", encoding="utf-8").read()
chktxt = eval(re.search(r"chktxt = ('.*')\n", base).group(1))
sep = "\n__ggml_vocab_test__\n"
texts = [chktxt]
for path in ["tokenizer/pre_test_texts.txt", f"{src}/models/ggml-vocab-gpt-2.gguf.inp"]:
    t = open(path, encoding="utf-8", newline="").read()
    texts += [x for x in t[: -len(sep)].split(sep)] if t.endswith(sep) else t.split(sep)

types = {}
with tempfile.TemporaryDirectory() as d:
    with open(f"{d}/texts", "w", encoding="utf-8", newline="") as f:
        f.write(sep.join(texts) + sep)
    for ty in sorted({n["type"] for n in names.values()} | {"DEFAULT"}):
        if ty not in regexes or not regexes[ty]:
            continue
        with open(f"{d}/re", "w", encoding="utf-8", newline="") as f:
            f.write("\n__regex__\n".join(regexes[ty]))
        r = subprocess.run([dump, f"{d}/re", f"{d}/texts"], capture_output=True)
        if r.returncode != 0:
            print(ty, "fails in llama.cpp:", r.stderr.decode()[-200:], file=sys.stderr)
            continue
        out = r.stdout.decode("utf-8", "surrogateescape")
        splits = [json.loads(line) for line in out.splitlines()]
        assert len(splits) == len(texts), (ty, len(splits), len(texts))
        types[ty] = {"regexes": regexes[ty], "splits": splits}

json.dump({"llama_cpp": open(f"{src}/COMMIT").read().strip(), "texts": texts, "names": names, "types": types},
          open("testdata/tokenizer/llamacpp_splits.json", "w", encoding="utf-8"), ensure_ascii=False, indent=0)
print(len(names), "names,", len(types), "types,", len(texts), "texts")
