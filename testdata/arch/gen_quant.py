#!/usr/bin/env python3
"""Quantized mixture-of-experts fixtures, made by llama.cpp's llama-quantize, and transformers' logits on the exact
dequantization of their weights.

For each family F below: `llama-quantize F/gguf/F-f32.gguf F/gguf/F-TYPE.gguf TYPE`, then every tensor of that file
is dequantized by gguf-py's own `gguf.quants.dequantize` (llama.cpp's reference Python), put back under its Hugging
Face name (expert stacks cut per expert; LLaMA's Q/K row permutation undone, the inverse of the converter's
`LlamaModel.permute`), loaded into transformers' own model class over F/hf's config, and run on the fixtures' input
ids: F/gguf/F-TYPE.reference.json. tfconv's code is never run. Usage, from the repository root:

  DEEPSEEK_V2_CODE=<folder of DeepSeek-V2's modeling_deepseek.py> DEEPSEEK_V3_CODE=<DeepSeek-V3's> \\
  PYTHONPATH=testdata/arch/pyshim:<transformers v4.43.4>/src:<llama.cpp>/gguf-py /usr/bin/python3 \\
      testdata/arch/gen_quant.py <llama-quantize binary> [FAMILY ...]

The families in NEWER (dots1) are quantized by the newer llama.cpp's llama-quantize (README: d32676d7) and run by
transformers v4.57.6 in the Debian trixie chroot, with that tree's gguf-py on PYTHONPATH, and asked for by name:

  chroot /work/ref/trixie sh -c "cd <repo> && PYTHONPATH=testdata/arch/pyshim-trixie:$TF/src:$L/gguf-py \
      python3 testdata/arch/gen_quant.py $L/build/bin/llama-quantize dots1"
"""

import json
import os
import subprocess
import sys

import numpy as np
import torch
import transformers
from gguf import GGUFReader, get_tensor_name_map, MODEL_ARCH_NAMES
from gguf.quants import dequantize

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_fixtures import DEEPSEEK, INPUT_IDS, deepseek_module, dump, f32  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
torch.set_num_threads(1)

# family -> (quantization types); the fixtures' rows are 64 or 128 wide, so K-quants fall back (llama-quantize
# picks its fallback types, as for any model).
# deepseek2's latent is 16 wide (kv_lora_rank), which no 32-element block divides: llama-quantize refuses Q4_0
# ("Unsupported tensor size encountered") and Q4_K_M falls back per tensor. Its model class is DeepSeek's own
# (gen_fixtures.deepseek_module, from $DEEPSEEK_V2_CODE).
FAMILIES = {"mixtral": ["Q4_0", "Q4_K_M"], "qwen2moe": ["Q4_0"], "deepseek2": ["Q4_K_M"], "deepseek3": ["Q4_K_M"]}

# Families newer than c392e509 (their f32 GGUF is the newer converter's; gen_fixtures.py NEWER): quantized by the
# newer llama-quantize, only when named. dots.llm1's expert groups are in its GGUF, so its reference keeps them.
NEWER = {"dots1": ["Q4_K_M"], "mamba2": ["Q4_K_M"], "granitehybrid": ["Q4_K_M"]}

# Mamba-2's mixer parameters without a ".weight"/".bias" suffix, by their GGUF names (the converter's A = −exp(A_log):
# the reference takes A_log = log(−A)).
MAMBA2_PARAMS = {"A_log": "ssm_a", "D": "ssm_d", "dt_bias": "ssm_dt.bias"}


def unpermute(w, n_head):
    """The inverse of convert_hf_to_gguf.py's LlamaModel.permute."""
    rows = w.shape[0]
    return w.reshape(n_head, rows // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def hf_state(family, reader, cfg, hf_names):
    field = reader.fields["general.architecture"]
    arch_name = bytes(field.parts[field.data[0]]).decode()
    arch = next(k for k, v in MODEL_ARCH_NAMES.items() if v == arch_name)
    nmap = get_tensor_name_map(arch, cfg["num_hidden_layers"])
    tensors = {}
    for t in reader.tensors:
        shape = [int(x) for x in reversed(t.shape)]  # ggml's ne, outermost first
        tensors[t.name] = np.asarray(dequantize(t.data, t.tensor_type), dtype=np.float32).reshape(shape)
    sd = {}
    for name in hf_names:
        # DeepSeek-V3's expert-choice bias, renamed as the converter renames it.
        base, suffix = name.replace("e_score_correction_bias", "e_score_correction.bias").rsplit(".", 1)
        if suffix in MAMBA2_PARAMS and (".mixer" in base or base.endswith(".mamba")):
            w = tensors["blk.%s.%s" % (base.split(".")[2], MAMBA2_PARAMS[suffix])]
            sd[name] = torch.from_numpy(np.ascontiguousarray(np.log(-w) if suffix == "A_log" else w))
            continue
        if base.endswith(("block_sparse_moe.input_linear", "shared_mlp.input_linear")):
            # GraniteMoE's gate rows then up rows, which the converter cut in two.
            layer, shared = base.split(".")[2], "shared_mlp" in base
            g, u = (tensors["blk.%s.ffn_%s_%s.weight" % (layer, k, "shexp" if shared else "exps")] for k in ("gate", "up"))
            sd[name] = torch.from_numpy(np.ascontiguousarray(np.concatenate([g, u], axis=-2)))
            continue
        parts = base.split(".")
        xid = None
        if "experts" in parts and parts[parts.index("experts") + 1].isdigit():
            i = parts.index("experts")
            xid = int(parts[i + 1])
            merged = ".".join(parts[:i + 1] + parts[i + 2:])
        else:
            merged = base
        gname = nmap.get_name(merged)
        if gname is None:
            raise KeyError(name)
        if gname == "output" and "output.weight" not in tensors:
            gname = "token_embd"  # a tied head
        w = tensors[gname + "." + suffix]
        if xid is not None:
            w = w[xid]
        if family == "mixtral" and gname.endswith("attn_q"):
            w = unpermute(w, cfg["num_attention_heads"])
        if family == "mixtral" and gname.endswith("attn_k"):
            w = unpermute(w, cfg["num_key_value_heads"])
        sd[name] = torch.from_numpy(np.ascontiguousarray(w))
    return sd


def main():
    quantize = sys.argv[1]
    todo = {f: FAMILIES.get(f) or NEWER[f] for f in sys.argv[2:]} or FAMILIES
    for fam, types in todo.items():
        hf = os.path.join(HERE, fam, "hf")
        with open(os.path.join(hf, "config.json")) as f:
            cfg = json.load(f)
        if fam in DEEPSEEK:
            cls = getattr(deepseek_module(DEEPSEEK[fam][1]), cfg["architectures"][0])
        else:
            cls = getattr(transformers, cfg["architectures"][0])
        # A GGUF keeps no expert groups (DeepSeek-V3's n_group/topk_group): the reference runs the class over one
        # group, as the GGUF states the model (and as llama.cpp and tfconv's GGUF → HF read it).
        over = dict(n_group=1, topk_group=1) if cfg.get("topk_method") == "noaux_tc" else {}
        model = cls.from_pretrained(hf, attn_implementation="eager", **over).eval()
        shapes = {n: tuple(v.shape) for n, v in model.state_dict().items() if "rotary_emb" not in n}
        names = list(shapes)
        for qt in types:
            src = os.path.join(HERE, fam, "gguf", f"{fam}-f32.gguf")
            dst = os.path.join(HERE, fam, "gguf", f"{fam}-{qt.lower()}.gguf")
            subprocess.run([quantize, src, dst, qt], check=True, capture_output=True)
            sd = {n: w.reshape(shapes[n]) for n, w in hf_state(fam, GGUFReader(dst), cfg, names).items()}
            model.load_state_dict(sd, strict=False)
            with torch.no_grad():
                logits = model(torch.tensor([INPUT_IDS]), use_cache=False).logits[0]
            dump(os.path.join(HERE, fam, "gguf", f"{fam}-{qt.lower()}.reference.json"),
                 {"transformers": transformers.__version__, "quantized_by": f"llama-quantize {qt}",
                  "dequantized_by": "gguf-py gguf.quants.dequantize", "input_ids": INPUT_IDS, "logits": f32(logits)})
            print(f"{fam} {qt}: {os.path.getsize(dst)} bytes")


if __name__ == "__main__":
    main()
