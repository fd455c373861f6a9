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


def make(name, cfg, dense=DENSE):
    out = os.path.join(HERE, name)
    shutil.rmtree(out, ignore_errors=True)
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
    nv = copy.deepcopy(mtq.NVFP4_DEFAULT_CFG)
    make("nvfp4", nv)
    make("fp8", copy.deepcopy(mtq.FP8_DEFAULT_CFG))
    # rows of whole 64s, as llama.cpp's converter needs to carry NVFP4 into GGUF (testdata/ct/gen.py's WIDE)
    make("nvfp4-ffn128", copy.deepcopy(mtq.NVFP4_DEFAULT_CFG), os.path.join(HERE, "..", "ct", "dense-ffn128"))


if __name__ == "__main__":
    main()
