"""Make testdata/modelopt: the tiny Llama of testdata/ct/dense quantized and exported by NVIDIA ModelOpt itself.

Run inside the Debian trixie chroot, one thread:

    PYTHONPATH=testdata/arch/pyshim-trixie:$SHIM:$MO:$TF/src python3 testdata/modelopt/gen.py

$MO is NVIDIA/TensorRT-Model-Optimizer at 5a4242faf4147fb0688bb73e10ca30b8ad3aabb3 (the modelopt package from its
source tree), $SHIM a directory with an nvidia-modelopt dist-info (modelopt reads its own version from the installed
metadata) and a torchprofile stand-in (imported by modelopt's NAS code, never called by quantization).
"""
import json
import os
import shutil
import sys

import torch
import transformers

import modelopt.torch.quantization as mtq
from modelopt.torch.export import export_hf_checkpoint
from modelopt.torch.quantization.qtensor import FP8QTensor, NVFP4QTensor
from safetensors.torch import load_file, save_file

HERE = os.path.dirname(os.path.abspath(__file__))
DENSE = os.path.join(HERE, "..", "ct", "dense")
torch.set_num_threads(1)

# ModelOpt asks torch for the GPU's compute capability before it considers TensorRT-LLM's fp4/fp8 kernels; this
# torch has no CUDA, so the question raises. Answering "no GPU" ((0, 0)) makes it take its pure-torch path.
if not torch.cuda.is_available():
    torch.cuda.get_device_capability = lambda device=None: (0, 0)


def tiny_moe(seed=7):
    """A tiny Qwen3-MoE (4 experts, 2 per token) whose rows are whole 64s (moe_intermediate_size 64), its weights
    drawn as testdata/ct/gen.py's tiny_model draws them: transformers keeps one Linear per expert, which ModelOpt
    exports as one NVFP4 tensor per expert and projection."""
    cfg = transformers.Qwen3MoeConfig(vocab_size=256, hidden_size=64, intermediate_size=128, moe_intermediate_size=64,
                                      num_experts=4, num_experts_per_tok=2, num_hidden_layers=2, num_attention_heads=4,
                                      num_key_value_heads=2, head_dim=16, max_position_embeddings=64,
                                      tie_word_embeddings=False, norm_topk_prob=True, bos_token_id=1, eos_token_id=2,
                                      torch_dtype="bfloat16")
    torch.manual_seed(seed)
    m = transformers.Qwen3MoeForCausalLM(cfg).to(torch.bfloat16).eval()
    with torch.no_grad():
        for name, p in m.named_parameters():
            if name.endswith("proj.weight") or name.endswith("mlp.gate.weight"):
                p.copy_(torch.randn_like(p, dtype=torch.float32).mul(0.05).to(torch.bfloat16))
                p.view(-1)[::97] *= 4
    return m


def make(name, cfg, dense=DENSE, model=None, dequant=True):
    out = os.path.join(HERE, name)
    shutil.rmtree(out, ignore_errors=True)
    if model is None:
        model = transformers.LlamaForCausalLM.from_pretrained(dense, torch_dtype=torch.bfloat16).eval()
    ids = torch.tensor([[1, 15, 250, 99, 3, 87, 51, 64, 33, 98, 42, 77]])

    def forward_loop(m):
        with torch.no_grad():
            m(ids)

    model = mtq.quantize(model, cfg, forward_loop)
    with torch.inference_mode():
        export_hf_checkpoint(model, export_dir=out)
    for f in ("generation_config.json",):
        if os.path.exists(os.path.join(out, f)):
            os.remove(os.path.join(out, f))

    if not dequant:
        return
    # ModelOpt's own dequantization of what it exported, in float32: NVFP4QTensor.dequantize (scale · scale_2 per
    # block, times the E2M1 value) and FP8QTensor.dequantize (code · scale).
    t = load_file(os.path.join(out, "model.safetensors"))
    ref = {}
    for k, w in t.items():
        if not k.endswith(".weight") or k + "_scale" not in t:
            continue
        s = t[k + "_scale"]
        if w.dtype == torch.uint8:
            shape = (w.shape[0], 2 * w.shape[1])
            q = NVFP4QTensor(torch.Size(shape), torch.bfloat16, w)
            ref[k] = q.dequantize(dtype=torch.float32, scale=s, double_scale=t[k + "_scale_2"], block_sizes={-1: 16})
        else:
            ref[k] = FP8QTensor(w.shape, torch.bfloat16, w).dequantize(dtype=torch.float32, scale=s)
    save_file({k: v.contiguous() for k, v in ref.items()}, os.path.join(out, "dequant.safetensors"))


def main():
    import copy
    names = sys.argv[1:] or ["nvfp4", "fp8", "nvfp4-ffn128", "nvfp4-moe"]
    if "nvfp4" in names:
        make("nvfp4", copy.deepcopy(mtq.NVFP4_DEFAULT_CFG))
    if "fp8" in names:
        make("fp8", copy.deepcopy(mtq.FP8_DEFAULT_CFG))
    # rows of whole 64s, as llama.cpp's converter needs to carry NVFP4 into GGUF (testdata/ct/gen.py's WIDE)
    if "nvfp4-ffn128" in names:
        make("nvfp4-ffn128", copy.deepcopy(mtq.NVFP4_DEFAULT_CFG), os.path.join(HERE, "..", "ct", "dense-ffn128"))
    # experts stored one tensor per expert (llama.cpp's converter stacks them: _flush_nvfp4_experts)
    if "nvfp4-moe" in names:
        make("nvfp4-moe", copy.deepcopy(mtq.NVFP4_DEFAULT_CFG), model=tiny_moe(), dequant=False)


if __name__ == "__main__":
    main()
