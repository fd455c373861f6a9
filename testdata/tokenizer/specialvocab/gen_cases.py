"""Writes cases.json: special-token cases and what gguf-py's SpecialVocab
(llama.cpp c392e509, gguf-py/gguf/vocab.py) makes of them.

Each case is a fixture folder of this repository with some side files
replaced (a string) or removed (null). SpecialVocab is run on the result with
n_vocab = 1000 (every fixture's vocabulary), as convert_hf_to_gguf.py runs it
for SentencePiece and most BPE vocabularies; want_ids are the
tokenizer.ggml.*_token_id it writes, in order (add_to_gguf: kinds without a GGUFWriter
handler, cls, are skipped) and want_add the add_bos/add_eos_token it writes.

Usage: PYTHONPATH=<llama.cpp c392e509>/gguf-py:<a module sentencepiece, a stub is
enough: SpecialVocab does not use it> /usr/bin/python3 gen_cases.py > cases.json
(run from the repository root).
"""
import json
import os
import shutil
import sys
import tempfile

import gguf

PHI3 = "testdata/arch/phi3/hf"          # SentencePiece tokenizer.model, as Phi-3
OLMO = "testdata/arch/olmo/hf"          # GPT-NeoX BPE tokenizer.json, as OLMo
GPT2 = "testdata/tokenizer/interop/gpt2"  # vocab.json + merges.txt, no tokenizer.json
LLAMA = "testdata/tokenizer/interop/llama"


def with_config(path, **kv):
    with open(os.path.join(path, "config.json")) as f:
        c = json.load(f)
    c.update(kv)
    return json.dumps(c, indent=2)


def with_json(path, name, **kv):
    with open(os.path.join(path, name)) as f:
        c = json.load(f)
    for k, v in kv.items():
        if v is ...:
            c.pop(k, None)
        else:
            c[k] = v
    return json.dumps(c, indent=2)


cases = [
    ("phi3 pad null", PHI3, {"config.json": with_config(PHI3, pad_token_id=None)}),
    ("olmo pad null", OLMO, {"config.json": with_config(OLMO, pad_token_id=None)}),
    ("olmo bos null", OLMO, {"config.json": with_config(OLMO, pad_token_id=None, bos_token_id=None),
                             "tokenizer_config.json": with_json(OLMO, "tokenizer_config.json", bos_token=None)}),
    ("phi3 as shipped", PHI3, {}),
    ("olmo as shipped", OLMO, {}),
    ("gpt2 pad null", GPT2, {"config.json": with_config(GPT2, pad_token_id=None)}),
    ("pad absent", LLAMA, {"config.json": json.dumps({"bos_token_id": 1, "eos_token_id": 2})}),
    ("pad 0 stated", LLAMA, {"config.json": json.dumps({"pad_token_id": 0})}),
    ("pad past the vocabulary", LLAMA, {"config.json": json.dumps({"pad_token_id": 1000, "eos_token_id": 2})}),
    ("eos list, float and string ids", LLAMA, {"config.json": json.dumps({"eos_token_id": [2, 0], "unk_token_id": 0.0, "sep_token_id": "2"})}),
    ("every kind", LLAMA, {"config.json": json.dumps({"bos_token_id": 1, "eos_token_id": 2, "unk_token_id": 0, "sep_token_id": 2,
                                                       "pad_token_id": 0, "cls_token_id": 1, "mask_token_id": 3})}),
    ("add flags null", LLAMA, {"config.json": json.dumps({"bos_token_id": 1}),
                               "tokenizer_config.json": json.dumps({"add_bos_token": None, "add_eos_token": True, "pad_token": None})}),
    ("add flags only in special_tokens_map", LLAMA, {"config.json": "{}", "tokenizer_config.json": None,
                                                     "special_tokens_map.json": json.dumps({"add_bos_token": False, "add_eos_token": True, "pad_token": "<unk>"})}),
    ("olmo pad only in special_tokens_map", OLMO, {"config.json": with_config(OLMO, pad_token_id=None),
                                                   "special_tokens_map.json": with_json(OLMO, "special_tokens_map.json", pad_token="<|endoftext|>")}),
    ("olmo pad in tokenizer_config", OLMO, {"config.json": with_config(OLMO, pad_token_id=None),
                                            "tokenizer_config.json": with_json(OLMO, "tokenizer_config.json", pad_token="<|endoftext|>")}),
    ("olmo token text not an added token", OLMO, {"config.json": with_config(OLMO, pad_token_id=None, eos_token_id=None, bos_token_id=None),
                                                  "tokenizer_config.json": with_json(OLMO, "tokenizer_config.json", eos_token="Ġthe", bos_token={"content": "<|endoftext|>"})}),
    ("no config.json", GPT2, {"config.json": None}),
]

GGUF_KEY = {"bos": "bos", "eos": "eos", "unk": "unknown", "sep": "seperator", "pad": "padding", "mask": "mask"}
out = []
for name, folder, files in cases:
    with tempfile.TemporaryDirectory() as d:
        for f in os.listdir(folder):
            shutil.copy(os.path.join(folder, f), d)
        for f, body in files.items():
            p = os.path.join(d, f)
            if body is None:
                if os.path.exists(p):
                    os.remove(p)
            else:
                with open(p, "w") as fp:
                    fp.write(body)
        sv = gguf.SpecialVocab(d, n_vocab=1000)
    ids = [[GGUF_KEY[k], v] for k, v in sv.special_token_ids.items() if k in GGUF_KEY]  # in writing order
    add = {k: v for k, v in sv.add_special_token.items() if k in ("bos", "eos")}
    out.append({"name": name, "dir": folder, "files": files, "want_ids": ids, "want_add": add})
json.dump(out, sys.stdout, indent=1)
sys.stdout.write("\n")
