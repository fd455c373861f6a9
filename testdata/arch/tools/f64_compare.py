"""Runs DeepSeek-V2's own model class in float64 and prints each logits file's max |Δ| from it: how far a float32 run
(transformers' reference.json, or `tfconv run --json`) is from the float64 result on the same weights.

    DEEPSEEK_V2_CODE=<folder of modeling_deepseek.py> PYTHONPATH=testdata/arch/pyshim:<transformers>/src \\
        /usr/bin/python3 testdata/arch/tools/f64_compare.py testdata/arch/deepseek2/hf IDS.json LOGITS.json ...

IDS.json holds {"input_ids": [...]} (reference.json does); each LOGITS.json holds {"logits": [[...], ...]}.
"""
import importlib.util
import json
import os
import sys

import numpy as np
import torch

torch.set_num_threads(1)
torch.set_default_dtype(torch.float64)
folder = os.environ["DEEPSEEK_V2_CODE"]
spec = importlib.util.spec_from_file_location("dsv2", os.path.join(folder, "modeling_deepseek.py"),
                                              submodule_search_locations=[folder])
m = importlib.util.module_from_spec(spec)
sys.modules["dsv2"] = m
spec.loader.exec_module(m)
model = m.DeepseekV2ForCausalLM.from_pretrained(sys.argv[1], attn_implementation="eager").eval().double()
ids = json.load(open(sys.argv[2]))["input_ids"]
with torch.no_grad():
    ref = model(torch.tensor([ids]), use_cache=False).logits[0].numpy()
for f in sys.argv[3:]:
    out = np.asarray(json.load(open(f))["logits"], np.float64)
    print(f, float(np.abs(ref - out).max()))
