"""Make the FP8 fixtures with torch's own float8 types (run under Debian trixie's python3-torch 2.6).

    python3 testdata/fp8/gen.py LLAMACPP_NEW_TREE

decode.json: for torch.float8_e4m3fn, float8_e5m2, float8_e4m3fnuz and float8_e5m2fnuz, the float32 bit pattern
torch gives each of the 256 codes (`torch.arange(256, dtype=uint8).view(dtype).float()`).

Four checkpoints in the layouts FP8 models ship in (config.json's quantization_config + model.safetensors), each
with three F8_E4M3 weights (one whose sides are not multiples of 128) and a bf16 norm:

- deepseek-block: quant_method "fp8", weight_block_size [128, 128], `X.weight_scale_inv` float32 per 128x128 block
  (DeepSeek-V3). Quantized with DeepSeek's block formula (inference/kernel.py fp8_weight_block_wise_quant_kernel:
  s = max|x| / 448, y = (x / s) cast to e4m3 — a Triton GPU kernel; Triton is not available here, so its two lines
  run as the same torch float32 ops).
- ct-channel: compressed-tensors "float-quantized", strategy "channel", `X.weight_scale` bf16 [out, 1].
- ct-tensor: compressed-tensors, strategy "tensor", `X.weight_scale` float32 [1] and a static `X.input_scale`.
- fbgemm: quant_method "fbgemm_fp8", `X.weight_scale` float32 [out, 1] and `X.input_scale_ub` (Llama-3.1-FP8).

dequant.safetensors holds each weight as llama.cpp dequantizes it when converting (the fork's
conversion/base.py `dequant_simple`, taken from the tree given and run as it is: `weight.float() * scale`, the
block scales repeated over their blocks): float32. dequant-bf16.safetensors holds deepseek-block's weights as
DeepSeek's own `weight_dequant` computes them (kernel.py weight_dequant_kernel: x.to(float32) * s, stored in the
default dtype, which fp8_cast_bf16.py sets to bfloat16) — again as torch ops, Triton being unavailable.
"""
import ast
import json
import os
import sys
from typing import Sequence

import torch
from safetensors.torch import save_file

OUT = os.path.dirname(os.path.abspath(__file__))
FP8_MAX = 448.0


def llamacpp_dequant_simple(tree):
    """llama.cpp's dequant_simple, a function nested in ModelBase.dequant_model: compiled from its source."""
    src = open(os.path.join(tree, "conversion", "base.py")).read()
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.FunctionDef) and node.name == "dequant_simple":
            ns = {"torch": torch, "Tensor": torch.Tensor, "Sequence": Sequence}
            exec(compile(ast.Module(body=[node], type_ignores=[]), "conversion/base.py", "exec"), ns)
            return ns["dequant_simple"]
    raise SystemExit("no dequant_simple in " + tree)


def decode_tables():
    codes = torch.arange(256, dtype=torch.uint8)
    out = {}
    for name in ["float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"]:
        f = codes.view(getattr(torch, name)).float()
        out[name] = ["%08x" % (v & 0xffffffff) for v in f.view(torch.int32).tolist()]
    with open(os.path.join(OUT, "decode.json"), "w") as fh:
        json.dump(out, fh, indent=1)
        fh.write("\n")


SHAPES = {"model.layers.0.self_attn.q_proj.weight": (256, 128), "model.layers.0.mlp.down_proj.weight": (300, 200),
          "lm_head.weight": (96, 256)}


def weights(seed):
    g = torch.Generator().manual_seed(seed)
    return {k: (torch.randn(s, generator=g) * 0.05).to(torch.bfloat16) for k, s in SHAPES.items()}


def block_quant(x, bs=128):
    """DeepSeek's fp8_weight_block_wise_quant, block by block as its kernel does."""
    x = x.float()
    M, N = x.shape
    y = torch.empty(M, N, dtype=torch.float8_e4m3fn)
    s = torch.empty((M + bs - 1) // bs, (N + bs - 1) // bs, dtype=torch.float32)
    for i in range(s.shape[0]):
        for j in range(s.shape[1]):
            blk = x[i * bs:(i + 1) * bs, j * bs:(j + 1) * bs]
            sc = blk.abs().max() / FP8_MAX
            y[i * bs:(i + 1) * bs, j * bs:(j + 1) * bs] = (blk / sc).to(torch.float8_e4m3fn)
            s[i, j] = sc
    return y, s


def save(name, tensors, qcfg, dequant, extra=None):
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    tensors["model.norm.weight"] = torch.ones(128, dtype=torch.bfloat16)
    save_file(tensors, os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
    save_file(dequant, os.path.join(d, "dequant.safetensors"), metadata={"format": "pt"})
    for fname, t in (extra or {}).items():
        save_file(t, os.path.join(d, fname), metadata={"format": "pt"})
    with open(os.path.join(d, "config.json"), "w") as fh:
        json.dump({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "torch_dtype": "bfloat16",
                   "quantization_config": qcfg}, fh, indent=2, sort_keys=True)
        fh.write("\n")


def main():
    dequant_simple = llamacpp_dequant_simple(sys.argv[1])
    torch.set_num_threads(1)
    decode_tables()

    # DeepSeek-V3 block scales.
    t, dq, dq16 = {}, {}, {}
    for k, w in weights(1).items():
        y, s = block_quant(w)
        t[k], t[k + "_scale_inv"] = y, s
        dq[k] = dequant_simple(y, s, [128, 128])
        # weight_dequant: y = x.to(float32) * s, stored as the default dtype (bfloat16).
        dq16[k] = (y.to(torch.float32) * s.repeat_interleave(128, 0).repeat_interleave(128, 1)[:y.shape[0], :y.shape[1]]).to(torch.bfloat16)
    save("deepseek-block", t, {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
                               "weight_block_size": [128, 128]}, dq, {"dequant-bf16.safetensors": dq16})

    # compressed-tensors, one scale per output channel (bf16, as RedHat's FP8-dynamic models store it).
    t, dq = {}, {}
    for k, w in weights(2).items():
        s = (w.float().abs().amax(dim=1, keepdim=True) / FP8_MAX).to(torch.bfloat16)
        y = (w.float() / s.float()).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)
        t[k], t[k + "_scale"] = y, s
        dq[k] = dequant_simple(y, s, None)
    ct = lambda strategy, dynamic: {
        "quant_method": "compressed-tensors", "format": "float-quantized", "quantization_status": "compressed",
        "config_groups": {"group_0": {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "float", "strategy": strategy,
                                                                          "symmetric": True, "dynamic": False},
                                      "input_activations": {"num_bits": 8, "type": "float", "strategy": "token" if dynamic else "tensor",
                                                            "symmetric": True, "dynamic": dynamic}}},
        "ignore": ["lm_head"]}
    save("ct-channel", t, ct("channel", True), dq)

    # compressed-tensors, one scale per tensor, with a static activation scale.
    t, dq = {}, {}
    for k, w in weights(3).items():
        s = (w.float().abs().max() / FP8_MAX).reshape(1)
        y = (w.float() / s).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)
        t[k], t[k + "_scale"], t[k.replace(".weight", ".input_scale")] = y, s, torch.tensor([0.02])
        dq[k] = dequant_simple(y, s, None)
    save("ct-tensor", t, ct("tensor", False), dq)

    # FBGEMM (Llama-3.1-405B-FP8): per-row float32 scales and an activation upper bound.
    t, dq = {}, {}
    for k, w in weights(4).items():
        s = w.float().abs().amax(dim=1, keepdim=True) / FP8_MAX
        y = (w.float() / s).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)
        t[k], t[k + "_scale"], t[k.replace(".weight", ".input_scale_ub")] = y, s, torch.tensor([1200.0])
        dq[k] = dequant_simple(y, s, None)
    save("fbgemm", t, {"quant_method": "fbgemm_fp8", "activation_scale_ub": 1200.0,
                       "modules_to_not_convert": []}, dq)


main()
