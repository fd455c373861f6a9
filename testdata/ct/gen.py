"""Make testdata/ct: a tiny Llama quantized and saved by the compressed-tensors library itself.

Run inside the Debian trixie chroot (python3-torch 2.6, python3-pydantic, python3-loguru), one thread:

    TORCHDYNAMO_DISABLE=1 PYTHONPATH=testdata/arch/pyshim-trixie:$CT/src:$TF/src python3 testdata/ct/gen.py

where $CT is compressed-tensors at 52792be02ec09e59f3517104e755a02d0e003fbb and $TF transformers v4.57.6.
Per scheme it writes testdata/ct/<scheme>/ (config.json with the library's quantization_config, model.safetensors
as the library's compressor writes it) and dequant.safetensors: the library's own decompression of that directory
(ModelCompressor.decompress_model), the weights in the dtype the library gives them.
"""
import ast
import hashlib
import json
import os
import shutil
import sys
import types
from typing import Sequence

import torch
import transformers
from safetensors.torch import load_file, save_file

import compressed_tensors
from compressed_tensors.compressors import ModelCompressor
from compressed_tensors.quantization import (QuantizationArgs, QuantizationConfig, QuantizationScheme,
                                             apply_quantization_config)
from compressed_tensors.quantization.utils import calculate_qparams, generate_gparam

HERE = os.path.dirname(os.path.abspath(__file__))
LLAMACPP = os.environ.get("LLAMACPP", "/work/ref/llama.cpp-d32676d7")
LLAMACPP_COMMIT = open(os.path.join(LLAMACPP, "COMMIT")).read().strip()

# torch 2.6's CPU torch.where has no float8 kernel, which calculate_qparams calls for NVFP4's float8 scales; this
# stand-in selects the same bytes through a uint8 view (other dtypes go to torch's own where).
_where = torch.where


def _where_f8(cond, a, b):
    if isinstance(a, torch.Tensor) and a.dtype == torch.float8_e4m3fn:
        b = b if isinstance(b, torch.Tensor) else torch.tensor(b, dtype=a.dtype)
        return _where(cond, a.view(torch.uint8), b.to(a.dtype).view(torch.uint8)).view(a.dtype)
    return _where(cond, a, b)


torch.where = _where_f8
torch.set_num_threads(1)

INT, FLOAT = "int", "float"
SCHEMES = {
    # name: (format, weight args)
    "w4a16": ("pack-quantized", dict(num_bits=4, type=INT, strategy="group", group_size=32, symmetric=True)),
    "w4a16-asym": ("pack-quantized", dict(num_bits=4, type=INT, strategy="group", group_size=32, symmetric=False)),
    "w8a16": ("pack-quantized", dict(num_bits=8, type=INT, strategy="channel", symmetric=True)),
    # INT8 W8A8 as published: int8 weights per channel, int8 activations per token (dynamic, so no stored scale)
    "w8a8-int": ("int-quantized", dict(num_bits=8, type=INT, strategy="channel", symmetric=True),
                 dict(num_bits=8, type=INT, strategy="token", symmetric=True, dynamic=True)),
    # FP8_BLOCK as published (DeepSeek-V3 style; 32×32 blocks at this size): dynamic per-group fp8 activations
    # FP8_DYNAMIC as published: fp8 weights per channel, dynamic fp8 activations per token
    "fp8-dynamic": ("float-quantized", dict(num_bits=8, type=FLOAT, strategy="channel", symmetric=True),
                    dict(num_bits=8, type=FLOAT, strategy="token", symmetric=True, dynamic=True)),
    "fp8-block": ("float-quantized", dict(num_bits=8, type=FLOAT, strategy="block", block_structure=[32, 32],
                                          symmetric=True),
                  dict(num_bits=8, type=FLOAT, strategy="group", group_size=32, symmetric=True, dynamic=True)),
    "nvfp4": ("nvfp4-pack-quantized", dict(num_bits=4, type=FLOAT, strategy="tensor_group", group_size=16,
                                           symmetric=True)),
}


def llamacpp_function(tree, name):
    """A function nested in llama.cpp's ModelBase.dequant_model (conversion/base.py), compiled from its source and
    run as it is; `self` stands for a converter that reads eagerly (self.lazy False)."""
    src = open(os.path.join(tree, "conversion", "base.py")).read()
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            ns = {"torch": torch, "Tensor": torch.Tensor, "Sequence": Sequence,
                  "self": types.SimpleNamespace(lazy=False)}
            exec(compile(ast.Module(body=[node], type_ignores=[]), "conversion/base.py", "exec"), ns)
            return ns[name]
    raise SystemExit("no %s in %s" % (name, tree))


def llamacpp_dequant(tree, out, fmt, wargs):
    """The float32 weights llama.cpp's converter computes from the saved tensors (dequant_packed for pack-quantized,
    dequant_simple for the scaled formats), as sha256 of their little-endian bytes."""
    t = load_file(os.path.join(out, "model.safetensors"))
    got = {}
    if fmt == "pack-quantized":
        f = llamacpp_function(tree, "dequant_packed")
        gs = wargs.get("group_size") or None
        for k in t:
            if k.endswith(".weight_packed"):
                base = k[: -len("_packed")]
                rows, cols = t[base + "_shape"].tolist()
                got[base] = f(t[k], t[base + "_scale"], t[base + "_shape"], t.get(base + "_zero_point"),
                              wargs["num_bits"], gs or cols)
    elif fmt in ("int-quantized", "float-quantized"):
        f = llamacpp_function(tree, "dequant_simple")
        for k in t:
            if k.endswith(".weight_scale"):
                base = k[: -len("_scale")]
                got[base] = f(t[base], t[k], wargs.get("block_structure"))
    else:
        return None
    return {k: hashlib.sha256(v.float().contiguous().numpy().tobytes()).hexdigest() for k, v in sorted(got.items())}


def tiny_model(seed, ffn=96):
    cfg = transformers.LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=ffn, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                   tie_word_embeddings=False, torch_dtype="bfloat16")
    torch.manual_seed(seed)
    m = transformers.LlamaForCausalLM(cfg).to(torch.bfloat16).eval()
    with torch.no_grad():
        for name, p in m.named_parameters():
            if name.endswith("proj.weight"):
                # wider than the init's 0.02 so groups differ in range, with a few outliers
                p.copy_(torch.randn_like(p, dtype=torch.float32).mul(0.05).to(torch.bfloat16))
                p.view(-1)[::97] *= 4
    return m


def observe(w, args):
    """Per-scale min and max of w as the library's static min-max observer groups them, in w's own dtype (as
    llm-compressor's MinMaxObserver takes torch.aminmax of the weight)."""
    rows, cols = w.shape
    s = getattr(args.strategy, "value", args.strategy)
    if s == "channel":
        return w.amin(dim=1, keepdim=True), w.amax(dim=1, keepdim=True)
    if s in ("group", "tensor_group"):
        g = w.reshape(rows, cols // args.group_size, args.group_size)
        return g.amin(dim=2), g.amax(dim=2)
    if s == "block":
        br, bc = args.block_structure
        b = w.reshape(rows // br, br, cols // bc, bc)
        return b.amin(dim=(1, 3)), b.amax(dim=(1, 3))
    raise ValueError(s)


def make(name, fmt, wargs, seed, iargs=None, ffn=96):
    out = os.path.join(HERE, name)
    shutil.rmtree(out, ignore_errors=True)
    model = tiny_model(seed, ffn)
    args = QuantizationArgs(**wargs)
    qcfg = QuantizationConfig(config_groups={"group_0": QuantizationScheme(
        targets=["Linear"], weights=args, input_activations=QuantizationArgs(**iargs) if iargs else None)},
                              ignore=["lm_head"], format=fmt)
    apply_quantization_config(model, qcfg)
    with torch.no_grad():
        for mname, mod in model.named_modules():
            if not hasattr(mod, "weight_scale"):
                continue
            lo, hi = observe(mod.weight, args)
            gs = None
            if getattr(args.strategy, "value", args.strategy) == "tensor_group":
                gs = generate_gparam(mod.weight.float().amin(), mod.weight.float().amax())
                mod.weight_global_scale.copy_(gs)
            scale, zp = calculate_qparams(lo, hi, args, global_scale=gs)
            mod.weight_scale.copy_(scale.reshape(mod.weight_scale.shape).to(mod.weight_scale.dtype))
            if hasattr(mod, "weight_zero_point"):
                mod.weight_zero_point.copy_(zp.reshape(mod.weight_zero_point.shape).to(mod.weight_zero_point.dtype))
    comp = ModelCompressor.from_pretrained_model(model, quantization_format=fmt)
    comp.compress_model(model)
    model.save_pretrained(out)
    comp.update_config(out)

    # The library's own decompression of what was saved: the compressed model in memory (whose parameters are
    # the saved tensors, byte for byte: checked) decompressed by ModelCompressor.decompress_model, the path
    # transformers takes for run_compressed=False.
    saved = load_file(os.path.join(out, "model.safetensors"))
    for k, v in model.state_dict().items():
        assert torch.equal(saved[k].view(torch.uint8), v.contiguous().view(torch.uint8)), k
    comp.decompress_model(model)
    ref = {k: v.contiguous() for k, v in model.state_dict().items() if k.endswith("proj.weight")}
    save_file(ref, os.path.join(out, "dequant.safetensors"))
    for f in os.listdir(out):
        if f == "generation_config.json":
            os.remove(os.path.join(out, f))
    sums = llamacpp_dequant(LLAMACPP, out, fmt, wargs)
    if sums is not None:
        with open(os.path.join(out, "llamacpp-sha256.json"), "w") as f:
            json.dump({"llama.cpp": LLAMACPP_COMMIT, "float32_sha256": sums}, f, indent=1, sort_keys=True)
            f.write("\n")
    return {"format": fmt, "weights": {k: (v if not hasattr(v, "value") else v.value) for k, v in wargs.items()},
            "seed": seed, "dequant_dtype": str(next(iter(ref.values())).dtype)}


SEED = 1000

# Schemes again on a model whose rows are whole multiples of 64 values: llama.cpp's converter carries NVFP4 into
# GGUF NVFP4 blocks of 64 (four scales of 16) and cannot repack the 96-wide rows of the others (down_proj).
# name: (scheme, intermediate_size); the float model is dense-<size>.
WIDE = {"nvfp4-ffn128": ("nvfp4", 128)}


def main():
    names = sys.argv[1:] or list(SCHEMES) + list(WIDE)
    # The float models every scheme starts from, for tfconv's writer to quantize the same weights (and ModelOpt's
    # export, testdata/modelopt/gen.py).
    for ffn in sorted({96} | {f for _, f in WIDE.values()}):
        dense = os.path.join(HERE, "dense" if ffn == 96 else f"dense-ffn{ffn}")
        shutil.rmtree(dense, ignore_errors=True)
        tiny_model(SEED, ffn).save_pretrained(dense)
        os.remove(os.path.join(dense, "generation_config.json"))
    summary = {"compressed_tensors": compressed_tensors.__version__, "transformers": transformers.__version__,
               "torch": torch.__version__, "schemes": {}}
    for i, n in enumerate(names):
        base, ffn = WIDE.get(n, (n, 96))
        fmt, wargs, *iargs = SCHEMES[base]
        summary["schemes"][n] = make(n, fmt, wargs, SEED, *(iargs or [None]), ffn=ffn)
    with open(os.path.join(HERE, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
