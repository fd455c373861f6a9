"""GGUF -> HF of GPT-2 through transformers itself (issue 29, item 4).

For each GGUF llama.cpp made of the interop gpt2 fixture, `tfconv convert
GGUF DIR` writes a Hugging Face directory; this script loads DIR with
transformers' GPT2LMHeadModel.from_pretrained and compares its logits with the
reference transformers gave for the same weights:

  gpt2-f32.gguf     output.weight is a byte copy of token_embd.weight, so the
                    head is tied: against hf/reference.json (the original
                    HF model's logits).
  gpt2-Q4_K_M.gguf  output.weight (Q6_K) is not token_embd.weight (Q4_K), so
                    lm_head.weight is written untied: against
                    gguf/gpt2-Q4_K_M.dequant-hf.json (transformers on the
                    GGUF's weights dequantized by gguf-py, head untied).

A head transformers had to initialise (missing from the checkpoint and not
tied) shows as a missing key and logits far off.

Usage: PYTHONPATH=testdata/arch/pyshim:<transformers v4.43.4>/src \
    /usr/bin/python3 testdata/convert/gpt2_tie_check.py TFCONV FIXTURE_DIR WORK_DIR
"""
import json
import os
import subprocess
import sys

import torch
from transformers import GPT2LMHeadModel

tfconv, fixture, work = sys.argv[1:4]
torch.set_num_threads(1)
cases = [
    ("gpt2-f32.gguf", "hf/reference.json", True),
    ("gpt2-Q4_K_M.gguf", "gguf/gpt2-Q4_K_M.dequant-hf.json", False),
]
worst = 0.0
ok = True
for gguf, ref_path, tied in cases:
    out = os.path.join(work, gguf + "-hf")
    subprocess.run([tfconv, "convert", "--force", os.path.join(fixture, "gguf", gguf), out], check=True,
                   stdout=subprocess.DEVNULL)
    with open(os.path.join(out, "config.json")) as f:
        cfg = json.load(f)
    with open(os.path.join(fixture, ref_path)) as f:
        ref = json.load(f)
    model, info = GPT2LMHeadModel.from_pretrained(out, output_loading_info=True, attn_implementation="eager")
    model.eval()
    with torch.no_grad():
        logits = model(torch.tensor([ref["input_ids"]])).logits[0]
    diff = (logits - torch.tensor(ref["logits"])).abs().max().item()
    same_storage = model.lm_head.weight.data_ptr() == model.transformer.wte.weight.data_ptr()
    print(f"{gguf}: tie_word_embeddings={cfg.get('tie_word_embeddings')} lm_head tied to wte={same_storage} "
          f"missing={info['missing_keys']} unexpected={info['unexpected_keys']} max|logits - reference|={diff:.3g}")
    if cfg.get("tie_word_embeddings") is not tied or same_storage != tied or info["missing_keys"] or diff > 1e-4:
        ok = False
    worst = max(worst, diff)
print("ok" if ok else "FAIL", f"(worst {worst:.3g})")
sys.exit(0 if ok else 1)
