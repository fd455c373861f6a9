"""Make the GPTQ and AWQ fixtures with AutoGPTQ's and AutoAWQ's own code (run on CPU).

    PYTHONPATH=testdata/arch/pyshim:TRANSFORMERS/src /usr/bin/python3 testdata/gptq/gen.py AUTOGPTQ_TREE AUTOAWQ_TREE [CASE...]

Each case is a tiny random Llama (transformers' LlamaForCausalLM, float16 like real GPTQ/AWQ inputs) whose
projection layers are quantized by the project's own code: AutoGPTQ's GPTQ.fasterquant (with random calibration
inputs) then QuantLinear.pack from qlinear_cuda; AutoAWQ's AwqQuantizer.pseudo_quantize_tensor then
WQLinear_GEMM.from_linear. The checkpoint holds the packed tensors as transformers loads them
(qweight/qzeros/scales[/g_idx]) and a config.json with quantization_config. dequant.safetensors holds each
layer's weight as the project's own dequantization computes it: AutoGPTQ's QuantLinear.forward (its torch path,
the weight it hands to torch.matmul) and AutoAWQ's dequantize_gemm (transposed to the [out, in] of nn.Linear).
This script imports those files directly (the packages' __init__ pull in CUDA and dataset dependencies we do not
need) and replaces three helpers (and, for one call, torch.arange: see dequantize_gemm below): torch.cuda.synchronize (fasterquant calls it to time itself) does nothing, AutoAWQ's get_best_device (which asks torch.xpu, absent from torch 1.13) returns
"cpu", and its calibration-data module is not loaded (the quantizer's pseudo_quantize_tensor does not use it).
"""
import importlib
import json
import os
import sys
import types

import torch
import transformers
import transformers.pytorch_utils
from safetensors.torch import save_file

AG, AW = sys.argv[1], sys.argv[2]
OUT = os.path.dirname(os.path.abspath(__file__))


def pkg(name, path):
    m = types.ModuleType(name)
    m.__path__ = [path]
    sys.modules[name] = m
    return m


for n in ["auto_gptq", "auto_gptq.quantization", "auto_gptq.nn_modules", "auto_gptq.nn_modules.qlinear"]:
    pkg(n, os.path.join(AG, *n.split(".")))
gptq = importlib.import_module("auto_gptq.quantization.gptq")
qlinear = importlib.import_module("auto_gptq.nn_modules.qlinear.qlinear_cuda")

for n in ["awq", "awq.utils", "awq.modules", "awq.modules.linear", "awq.quantize"]:
    pkg(n, os.path.join(AW, *n.split(".")))
u = types.ModuleType("awq.utils.utils")
u.get_best_device = lambda: "cpu"
u.clear_memory = lambda *a: None
sys.modules["awq.utils.utils"] = u
c = types.ModuleType("awq.utils.calib_data")
c.get_calib_dataset = None
sys.modules["awq.utils.calib_data"] = c
awq_gemm = importlib.import_module("awq.modules.linear.gemm")
lin = sys.modules["awq.modules.linear"]
lin.WQLinear_GEMM = awq_gemm.WQLinear_GEMM
lin.WQLinear_GEMV = lin.WQLinear_Marlin = lin.WQLinear_GEMVFast = None
awq_quantizer = importlib.import_module("awq.quantize.quantizer")
awq_packing = importlib.import_module("awq.utils.packing_utils")

PROJ = ["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
        "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"]


def tiny_llama(seed):
    torch.manual_seed(seed)
    cfg = transformers.LlamaConfig(vocab_size=96, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                   rms_norm_eps=1e-5, tie_word_embeddings=False)
    model = transformers.LlamaForCausalLM(cfg).eval()
    for p in model.parameters():  # spread the weights beyond the init's 0.02 so every level is used
        p.data.normal_(0, 0.5)
    return cfg, model.half()


def linears(model):
    for i, layer in enumerate(model.model.layers):
        for p in PROJ:
            mod = layer
            for part in p.split("."):
                mod = getattr(mod, part)
            yield "model.layers.%d.%s" % (i, p), mod


def gptq_weight(q):
    """The weight QuantLinear.forward multiplies by, captured at its torch.matmul."""
    seen = []
    real = torch.matmul

    def capture(a, b):
        seen.append(b.clone())
        return real(a.float(), b.float())

    torch.matmul = capture
    try:
        q.forward(torch.zeros(1, q.infeatures, dtype=torch.float16))
    finally:
        torch.matmul = real
    return seen[0].t().contiguous()  # [in, out] -> nn.Linear's [out, in]


def save_case(name, cfg, model, tensors, dequant, qcfg):
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    for prefix, _ in linears(model):
        del state[prefix + ".weight"]
    state.update(tensors)
    save_file(state, os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
    save_file(dequant, os.path.join(d, "dequant.safetensors"), metadata={"format": "pt"})
    conf = cfg.to_dict()
    conf["torch_dtype"] = "float16"
    conf["architectures"] = ["LlamaForCausalLM"]
    conf["quantization_config"] = qcfg
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(conf, f, indent=2, sort_keys=True)
        f.write("\n")


def make_gptq(name, seed, bits, group_size, desc_act, sym):
    cfg, model = tiny_llama(seed)
    tensors, dequant = {}, {}
    for prefix, layer in linears(model):
        g = gptq.GPTQ(layer)
        g.quantizer.configure(bits, perchannel=True, sym=sym, mse=False)
        x = torch.randn(256, layer.in_features).half()
        g.add_batch(x, None)  # the layer output is not used by add_batch
        scale, zero, g_idx = g.fasterquant(blocksize=128, percdamp=0.01, group_size=group_size, actorder=desc_act)
        q = qlinear.QuantLinear(bits, group_size, layer.in_features, layer.out_features, layer.bias is not None)
        q.pack(layer, scale, zero, g_idx)
        for k in ["qweight", "qzeros", "scales", "g_idx"]:
            tensors["%s.%s" % (prefix, k)] = getattr(q, k).contiguous()
        dequant[prefix + ".weight"] = gptq_weight(q)
    save_case(name, cfg, model, tensors, dequant,
              {"quant_method": "gptq", "bits": bits, "group_size": group_size, "desc_act": desc_act, "sym": sym,
               "damp_percent": 0.01, "true_sequential": True, "static_groups": False})


def dequantize_gemm(*args):
    """AutoAWQ's dequantize_gemm. It indexes with an int32 arange, which torch 1.13 refuses (newer torch accepts
    it); the same indices as int64 select the same elements."""
    real = torch.arange

    def arange(*a, **kw):
        if kw.get("dtype") == torch.int32:
            kw["dtype"] = torch.int64
        return real(*a, **kw)

    torch.arange = arange
    try:
        return awq_packing.dequantize_gemm(*args)
    finally:
        torch.arange = real


def make_awq(name, seed, group_size):
    cfg, model = tiny_llama(seed)
    quantizer = awq_quantizer.AwqQuantizer.__new__(awq_quantizer.AwqQuantizer)
    quantizer.w_bit, quantizer.group_size, quantizer.zero_point = 4, group_size, True
    tensors, dequant = {}, {}
    for prefix, layer in linears(model):
        # AutoAWQ quantizes on the GPU in float16; torch's CPU kernels lack float16 clamp, so in float32 here
        # (from_linear then stores the scales as float16, as it does on the GPU).
        layer.weight.data, scales, zeros = quantizer.pseudo_quantize_tensor(layer.weight.data.float())
        q = awq_gemm.WQLinear_GEMM.from_linear(layer, 4, group_size, scales=scales.t().contiguous(),
                                               zeros=zeros.t().contiguous())
        for k in ["qweight", "qzeros", "scales"]:
            tensors["%s.%s" % (prefix, k)] = getattr(q, k).contiguous()
        w = dequantize_gemm(q.qweight, q.qzeros, q.scales, 4, group_size)
        dequant[prefix + ".weight"] = w.t().contiguous()
    save_case(name, cfg, model, tensors, dequant,
              {"quant_method": "awq", "bits": 4, "group_size": group_size, "zero_point": True, "version": "gemm"})


torch.set_num_threads(1)
torch.cuda.synchronize = lambda *a: None  # fasterquant times itself with it; there is no GPU here
CASES = {
    "gptq-4bit-actorder": lambda: make_gptq("gptq-4bit-actorder", 1, 4, 32, True, False),
    "gptq-8bit-sym": lambda: make_gptq("gptq-8bit-sym", 2, 8, 32, False, True),
    "gptq-2bit": lambda: make_gptq("gptq-2bit", 3, 2, 64, False, False),
    "awq-4bit": lambda: make_awq("awq-4bit", 4, 32),
    # symmetric 4-bit, group 32, no act-order: Q4_0 block for block (scale d, codes q with zero 8)
    "gptq-4bit-sym": lambda: make_gptq("gptq-4bit-sym", 5, 4, 32, False, True),
}
for name in sys.argv[3:] or CASES:
    CASES[name]()
