#!/usr/bin/env python3
"""LoRA adapters made by PEFT itself, and what the reference tools compute from them.

The base models are testdata/arch fixtures (transformers' own classes with random weights, whose f32 GGUFs there were
written by llama.cpp's convert_hf_to_gguf.py): mistral-headdim and qwen2. For each case C in CASES this writes testdata/lora/C/:

  adapter/               PEFT's LoraConfig(init_lora_weights=False: A and B both drawn, so B·A is not zero) on that
                         model, saved by save_pretrained (adapter_config.json, adapter_model.safetensors, README.md)
  adapter-bin/           the same adapter saved with safe_serialization=False (adapter_model.bin)
  merged/                PEFT's merge_and_unload() of it, saved by save_pretrained (float32 safetensors; the
                         tokenizer files copied from the base)
  reference.json         float32 logits for INPUT_IDS of the adapted model (PEFT's LoRA layers, unmerged) and of
                         the merged model as reloaded from merged/ (eval, eager attention, 1 thread, no_grad)
  C-f32.gguf, C-f16.gguf llama.cpp's convert_lora_to_gguf.py ADAPTER --base BASE --outtype f32|f16, unmodified
  C-bin-f32.gguf         the same from adapter-bin/ (torch.load's dict order: the tensors in module order)
  C-f32.logits.json      llama.cpp's logits for INPUT_IDS on the base GGUF with C-f32.gguf attached
                         (tools/lora_logits.cpp), at the scale given in CASES

tfconv's code is never run. Usage, from the repository root:

  PYTHONPATH=testdata/arch/pyshim:<transformers v4.43.4>/src:<accelerate v0.33.0>/src:<peft v0.12.0>/src \
      /usr/bin/python3 testdata/lora/gen.py <llama.cpp tree> <lora-logits binary> [CASE ...]
"""

import json
import math
import os
import shutil
import subprocess
import sys
import zlib

import numpy as np
import torch
import transformers
import peft

HERE = os.path.dirname(os.path.abspath(__file__))
ARCH = os.path.join(os.path.dirname(HERE), "arch")
INPUT_IDS = [1, 15, 250, 999, 3, 87, 512, 640, 33, 998, 421, 77]
ALL = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]

torch.set_num_threads(1)

# save_pretrained also writes a model card (README.md), through huggingface_hub's ModelCard, which the pyshim
# stand-in does not have; gguf-py would copy its YAML (base_model, tags) into general.* keys, which tfconv does not
# read from model cards (convert/doc.go). The adapters are saved without it.
peft.PeftModel.create_or_update_model_card = lambda self, output_dir: None

# case -> LoraConfig kwargs. llama.cpp scales an adapter by alpha/rank; PEFT's rsLoRA by alpha/sqrt(rank), and
# convert_lora_to_gguf.py writes lora_alpha as it is, so the rslora case's llama.cpp logits are taken at a user
# scale of sqrt(rank) (llama_set_adapter_lora), which makes llama.cpp's scale PEFT's.
# case -> (base family in testdata/arch, its transformers class, LoraConfig kwargs).
CASES = {
    "mistral-r4": ("mistral-headdim", "MistralForCausalLM", dict(r=4, lora_alpha=8, target_modules=ALL)),
    "mistral-rslora": ("mistral-headdim", "MistralForCausalLM",
                       dict(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj", "down_proj"], use_rslora=True)),
    # Qwen2: Q/K/V biases (left alone by LoRA) and no Q/K row permutation in llama.cpp (NEOX rope).
    "qwen2-r2": ("qwen2", "Qwen2ForCausalLM", dict(r=2, lora_alpha=3, target_modules=["q_proj", "k_proj", "o_proj", "up_proj"])),
}


def f32(x):
    """Nested lists of float32 values as Python floats that print as the shortest float32 repr."""
    a = np.asarray(x, dtype=np.float32)
    if a.ndim == 0:
        return float(str(a[()]))
    return [f32(v) for v in a]


def dump(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, separators=(",", ":"))
        f.write("\n")


def base_model(family, cls):
    return getattr(transformers, cls).from_pretrained(os.path.join(ARCH, family, "hf"), attn_implementation="eager").eval()


def convert_lora(llamacpp, family, adapter, out, outtype):
    """Runs convert_lora_to_gguf.py unmodified (main module executed as a script). Debian's torch 1.13 predates the
    float8 dtypes that convert_hf_to_gguf's dtype table names; no tensor here has them, so placeholders let it
    import."""
    script = os.path.join(llamacpp, "convert_lora_to_gguf.py")
    code = ("import sys, runpy, torch; sys.argv = sys.argv[1:]; sys.path.insert(0, %r); sys.path.insert(0, %r); "
            "[setattr(torch, n, torch.float32) for n in ('float8_e4m3fn', 'float8_e5m2') if not hasattr(torch, n)]; "
            "runpy.run_path(%r, run_name='__main__')") % (os.path.join(llamacpp, "gguf-py"), llamacpp, script)
    args = [adapter, "--base", os.path.join(ARCH, family, "hf"), "--outtype", outtype, "--outfile", out]
    r = subprocess.run([sys.executable, "-c", code, "convert_lora_to_gguf.py"] + args,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise RuntimeError("convert_lora_to_gguf.py failed:\n" + r.stderr[-3000:])
    rel = lambda p: os.path.relpath(p, os.path.dirname(os.path.dirname(HERE)))
    return " ".join(["convert_lora_to_gguf.py", rel(adapter), "--base", rel(args[2]), "--outtype", outtype,
                     "--outfile", rel(out)])


def make(case, llamacpp, lora_bin):
    family, cls, kw = CASES[case]
    seed = zlib.crc32(case.encode())
    root = os.path.join(HERE, case)
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    torch.manual_seed(seed)
    model = base_model(family, cls)
    cfg = peft.LoraConfig(task_type="CAUSAL_LM", lora_dropout=0.0, init_lora_weights=False, **kw)
    pm = peft.get_peft_model(model, cfg).eval()
    # The adapter's recorded base: a relative path, as a local base would be (the converter is given --base).
    pm.peft_config["default"].base_model_name_or_path = family
    adapter = os.path.join(root, "adapter")
    pm.save_pretrained(adapter)
    pm.save_pretrained(os.path.join(root, "adapter-bin"), safe_serialization=False)

    # Reload the adapter from its files so every reference is that of the files.
    pm = peft.PeftModel.from_pretrained(base_model(family, cls), adapter).eval()
    ids = torch.tensor([INPUT_IDS])
    with torch.no_grad():
        adapted = pm(ids).logits[0]
    merged_model = pm.merge_and_unload()
    merged = os.path.join(root, "merged")
    merged_model.save_pretrained(merged)
    for n in sorted(os.listdir(os.path.join(ARCH, family, "hf"))):
        if n.startswith(("tokenizer", "special_tokens", "vocab", "merges")):
            shutil.copy(os.path.join(ARCH, family, "hf", n), os.path.join(merged, n))
    mm = getattr(transformers, cls).from_pretrained(merged, attn_implementation="eager").eval()
    with torch.no_grad():
        merged_logits = mm(ids).logits[0]

    cmds = [convert_lora(llamacpp, family, adapter, os.path.join(root, f"{case}-{t}.gguf"), t) for t in ("f32", "f16")]
    cmds.append(convert_lora(llamacpp, family, os.path.join(root, "adapter-bin"), os.path.join(root, f"{case}-bin-f32.gguf"), "f32"))
    scale = math.sqrt(kw["r"]) if kw.get("use_rslora") else 1.0
    out = subprocess.run([lora_bin, os.path.join(ARCH, family, "gguf", f"{family}-f32.gguf"), os.path.join(root, f"{case}-f32.gguf"),
                          repr(scale), ",".join(map(str, INPUT_IDS))], check=True, capture_output=True, text=True).stdout
    lc = json.loads(out)
    dump(os.path.join(root, f"{case}-f32.logits.json"), {"tokens": lc["tokens"], "scale": scale, "logits": f32(lc["logits"])})
    lcd = float(np.max(np.abs(np.asarray(lc["logits"], np.float32) - merged_logits.numpy())))
    amd = float(np.max(np.abs(adapted.numpy() - merged_logits.numpy())))
    versions = {"base": family, "model_class": cls, "transformers": transformers.__version__, "torch": torch.__version__, "peft": peft.__version__,
                "seed": seed, "attn_implementation": "eager", "threads": 1, "lora_config": kw}
    dump(os.path.join(root, "reference.json"), dict(versions, input_ids=INPUT_IDS, adapted_logits=f32(adapted),
                                                    merged_logits=f32(merged_logits)))
    print(f"{case}: llama.cpp base+adapter vs PEFT merged max|d| = {lcd:.3g}; PEFT adapted vs merged = {amd:.3g}")
    return {"case": case, "llamacpp_vs_merged_max_abs": lcd, "adapted_vs_merged_max_abs": amd, "convert": cmds}


def main():
    if os.environ.get("PYTHONHASHSEED") != "0":
        # PEFT saves target_modules from a set: a fixed hash seed keeps adapter_config.json's order stable.
        os.execve(sys.executable, [sys.executable] + sys.argv, dict(os.environ, PYTHONHASHSEED="0"))
    llamacpp, lora_bin = sys.argv[1], sys.argv[2]
    cases = sys.argv[3:] or list(CASES)
    summary = [make(c, llamacpp, lora_bin) for c in cases]
    dump(os.path.join(HERE, "summary.json"), summary)


if __name__ == "__main__":
    main()
