#!/usr/bin/env python3
"""transformers' slow LlamaTokenizer with legacy true and false on texts with special tokens inside them: where the
SentencePiece space prefix goes (legacy true: at the start and after every special token, as llama.cpp puts it;
false: at the text's start only). Writes legacy.json beside this script: per legacy value, per text, the ids of
tokenizer(text) with add_special_tokens False.

The tokenizer is testdata/vision/gemma3/hf's (a trimmed LLaMA SentencePiece model with Gemma 3's image tokens added,
legacy false in its tokenizer_config.json); the legacy-true run loads it with legacy=True. Usage (the Debian trixie
chroot of testdata/arch/README.md, transformers v4.57.6, slow tokenizers), from the repository root:

  PYTHONPATH=testdata/arch/pyshim-trixie:$TF/src python3 testdata/tokenizer/legacy/gen_legacy.py
"""
import json
import os

import transformers

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "..", "..", "vision", "gemma3", "hf")
TEXTS = ["Describe this picture: <start_of_image> What is in it?",
         "<start_of_image>abc def",
         "Hello<end_of_image>world",
         "one <end_of_image> two<start_of_image>three",
         "plain text, no special token"]


def main():
    out = {"transformers": transformers.__version__, "tokenizer": "testdata/vision/gemma3/hf (LlamaTokenizer, slow)",
           "texts": TEXTS, "ids": {}}
    for legacy in (True, False):
        tok = transformers.LlamaTokenizer.from_pretrained(SRC, legacy=legacy)
        out["ids"][str(legacy).lower()] = [tok(t, add_special_tokens=False)["input_ids"] for t in TEXTS]
    with open(os.path.join(HERE, "legacy.json"), "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
