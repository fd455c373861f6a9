#!/usr/bin/env python3
"""Reference outputs for model/'s padding-mask, token-type and BLOOM (ALiBi) tests.

Everything written here is computed by Hugging Face transformers itself (v4.43.4 on torch 1.13, float32, eager
attention, 1 thread, torch.no_grad); tfconv's code is never run. It writes

  masked/<arch>.json   for the hf-tiny checkpoints in hf-tiny/ (gpt2, llama, bert, marian, bart, t5): the outputs
                       with an attention_mask that contains zeros (and BERT token_type_ids), one entry per case
  bloom/               a tiny random BloomForCausalLM saved by save_pretrained (config.json, generation_config.json,
                       model.safetensors), its logits (reference.json: plain, right- and left-padded, and the ALiBi
                       slopes of transformers' build_alibi_tensor for many head counts) and generate() ids
                       (generate.json)

Run from anywhere (paths are relative to this file):

  PYTHONPATH=<dir with safetensors>:<transformers v4.43.4>/src python3 testdata/model/gen_references.py

Numbers are written as the shortest decimal that reads back as the same float32 (numpy's repr), so they are exact.
"""

import json
import math
import os
import struct
import sys

import numpy as np
import torch
import transformers
from transformers import AutoModel, AutoModelForCausalLM, AutoModelForSeq2SeqLM, BloomConfig, BloomForCausalLM
from transformers.models.bloom.modeling_bloom import build_alibi_tensor

HERE = os.path.dirname(os.path.abspath(__file__))
COMMAND = "PYTHONPATH=/work/xcheck/shim:/work/xcheck/tf/src /usr/bin/python3 testdata/model/gen_references.py"

torch.set_num_threads(1)


def f32(x):
    """Nested lists of float32 values as Python floats that print as the shortest float32 repr."""
    a = np.asarray(x, dtype=np.float32)
    if a.ndim == 0:
        # str(np.float32) is the shortest decimal that reads back as this float32 (numpy's Dragon4).
        return float(str(a[()]))
    return [f32(v) for v in a]


def dump(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {os.path.relpath(path, HERE)} ({os.path.getsize(path)} bytes)")


def versions():
    return {"transformers": transformers.__version__, "torch": torch.__version__, "command": COMMAND}


def rows(t, positions):
    return f32(t[0, positions].float().numpy())


# ---------------------------------------------------------------------------------------------------------------
# Padding masks and token types on the hf-tiny checkpoints.

def run_decoder_only(arch):
    d = os.path.join(HERE, "hf-tiny", arch)
    m = AutoModelForCausalLM.from_pretrained(d, attn_implementation="eager", torch_dtype=torch.float32).eval()
    ref = json.load(open(os.path.join(d, "reference.json")))
    ids = ref["input_ids"]
    T = len(ids)
    cases = []
    for name, mask, note in [
        ("right_pad", [1] * (T - 3) + [0] * 3,
         "last 3 positions padded; every query row sees at least key 0, so all rows (padded ones included) are compared"),
        ("left_pad", [0] * 3 + [1] * (T - 3),
         "first 3 positions padded; their query rows see no unmasked key (transformers then averages over keys whose "
         "scores are all finfo.min, a meaningless value), so only the unpadded rows are kept"),
    ]:
        with torch.no_grad():
            out = m(torch.tensor([ids]), attention_mask=torch.tensor([mask]))
        pos = list(range(T)) if name == "right_pad" else [i for i in range(T) if mask[i]]
        cases.append({"name": name, "attention_mask": mask, "positions": pos, "note": note,
                      "logits": rows(out.logits, pos)})
    obj = {"arch": arch, "class": type(m).__name__, "checkpoint": f"hf-tiny/{arch}", "input_ids": ids,
           "output_name": "logits",
           "call": "model(input_ids, attention_mask=mask) (no position_ids: positions are 0..n-1 as the forward "
                   "pass defaults to, whatever the mask)",
           "cases": cases}
    obj.update(versions())
    dump(os.path.join(HERE, "masked", arch + ".json"), obj)


def run_bert():
    d = os.path.join(HERE, "hf-tiny", "bert")
    m = AutoModel.from_pretrained(d, attn_implementation="eager", torch_dtype=torch.float32).eval()
    ref = json.load(open(os.path.join(d, "reference.json")))
    ids = ref["input_ids"]
    T = len(ids)
    types = [0] * 5 + [1] * (T - 5)
    padded_types = [0] * 5 + [1] * (T - 8) + [0] * 3  # padding carries type 0, as tokenizers pad it
    cases = []
    for name, mask, tt in [
        ("token_types", [1] * T, types),
        ("right_pad_token_types", [1] * (T - 3) + [0] * 3, padded_types),
        ("right_pad", [1] * (T - 3) + [0] * 3, None),
    ]:
        kw = {"attention_mask": torch.tensor([mask])}
        if tt is not None:
            kw["token_type_ids"] = torch.tensor([tt])
        with torch.no_grad():
            out = m(torch.tensor([ids]), **kw)
        pos = list(range(T))
        cases.append({"name": name, "attention_mask": mask, "token_type_ids": tt, "positions": pos,
                      "last_hidden_state": rows(out.last_hidden_state, pos),
                      "pooler_output": f32(out.pooler_output[0].numpy())})
    obj = {"arch": "bert", "class": type(m).__name__, "checkpoint": "hf-tiny/bert", "input_ids": ids,
           "output_name": "last_hidden_state",
           "call": "model(input_ids, attention_mask=mask[, token_type_ids=types]); token_type_ids null = not passed "
                   "(zeros); every row is compared: padded queries still see the unpadded keys",
           "cases": cases}
    obj.update(versions())
    dump(os.path.join(HERE, "masked", "bert.json"), obj)


def run_seq2seq(arch):
    d = os.path.join(HERE, "hf-tiny", arch)
    m = AutoModelForSeq2SeqLM.from_pretrained(d, attn_implementation="eager", torch_dtype=torch.float32).eval()
    ref = json.load(open(os.path.join(d, "reference.json")))
    ids, dec = ref["input_ids"], ref["decoder_input_ids"]
    T, U = len(ids), len(dec)
    enc_mask = [1] * (T - 3) + [0] * 3
    dec_mask = [1] * (U - 2) + [0] * 2
    cases = []
    for name, dm in [("encoder_pad", None), ("encoder_and_decoder_pad", dec_mask)]:
        kw = {"attention_mask": torch.tensor([enc_mask]), "decoder_input_ids": torch.tensor([dec])}
        if dm is not None:
            kw["decoder_attention_mask"] = torch.tensor([dm])
        with torch.no_grad():
            out = m(torch.tensor([ids]), **kw)
        pos = list(range(U))
        cases.append({"name": name, "attention_mask": enc_mask, "decoder_attention_mask": dm, "positions": pos,
                      "logits": rows(out.logits, pos)})
    obj = {"arch": arch, "class": type(m).__name__, "checkpoint": f"hf-tiny/{arch}", "input_ids": ids,
           "decoder_input_ids": dec, "output_name": "logits",
           "call": "model(input_ids, attention_mask=enc_mask, decoder_input_ids=dec[, decoder_attention_mask=dm]); "
                   "the encoder mask applies to encoder self-attention and decoder cross-attention; every decoder "
                   "row is compared",
           "cases": cases}
    obj.update(versions())
    dump(os.path.join(HERE, "masked", arch + ".json"), obj)


# ---------------------------------------------------------------------------------------------------------------
# A tiny BLOOM.

BLOOM_SEED = 20240817
# No id equals pad_token_id (3): generate() would otherwise derive an attention_mask hiding it from the prompt.
BLOOM_IDS = [1, 15, 250, 999, 4, 87, 512, 640, 33, 998, 421, 77, 5, 260]
SLOPE_HEADS = list(range(1, 17)) + [20, 24, 32, 40, 48, 64, 96, 112]


def save_file(tensors, path, metadata=None):
    """safetensors layout: u64 header length, JSON header (tensors sorted by name, contiguous data offsets, padded
    with spaces to 8 bytes), then the little-endian tensor bytes. The /work/xcheck safetensors shim is read-only, so
    save_pretrained's writer is this function; which tensors are saved (the tied lm_head is not) is transformers'."""
    names = sorted(tensors)
    header, blobs, off = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for n in names:
        t = tensors[n].detach().contiguous()
        assert t.dtype == torch.float32, (n, t.dtype)
        b = t.numpy().astype("<f4").tobytes()
        header[n] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def make_bloom(out_dir):
    cfg = BloomConfig(vocab_size=1000, hidden_size=48, n_layer=2, n_head=6, layer_norm_epsilon=1e-5,
                      bos_token_id=1, eos_token_id=2, pad_token_id=3, apply_residual_connection_post_layernorm=False,
                      attn_implementation="eager")
    torch.manual_seed(BLOOM_SEED)
    m = BloomForCausalLM(cfg).eval()
    # Wide random weights (the default init, std 0.02, leaves attention almost uniform and hides mistakes):
    # matrices N(0, 1/sqrt(in)), biases N(0, 0.1), LayerNorm weights 1 + N(0, 0.1).
    g = torch.Generator().manual_seed(BLOOM_SEED)
    with torch.no_grad():
        for name, p in sorted(m.named_parameters()):
            if p.dim() == 2:
                p.copy_(torch.randn(p.shape, generator=g) / math.sqrt(p.shape[-1]))
            elif "layernorm" in name or "ln_f" in name:
                if name.endswith("weight"):
                    p.copy_(1 + 0.1 * torch.randn(p.shape, generator=g))
                else:
                    p.copy_(0.1 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.1 * torch.randn(p.shape, generator=g))
    import transformers.modeling_utils as mu
    mu.safe_save_file = save_file
    m.save_pretrained(out_dir, safe_serialization=True)
    return m


def run_bloom():
    out_dir = os.path.join(HERE, "bloom")
    os.makedirs(out_dir, exist_ok=True)
    made = make_bloom(out_dir)
    # Everything below runs the checkpoint as from_pretrained reads it back.
    m = AutoModelForCausalLM.from_pretrained(out_dir, attn_implementation="eager", torch_dtype=torch.float32).eval()
    assert type(m).__name__ == "BloomForCausalLM"
    with torch.no_grad():
        for (n1, p1), (n2, p2) in zip(sorted(made.state_dict().items()), sorted(m.state_dict().items())):
            assert n1 == n2 and torch.equal(p1, p2), n1
    ids = BLOOM_IDS
    T = len(ids)
    with torch.no_grad():
        plain = m(torch.tensor([ids]))
    cases = []
    for name, mask in [("right_pad", [1] * (T - 3) + [0] * 3), ("left_pad", [0] * 3 + [1] * (T - 3))]:
        with torch.no_grad():
            out = m(torch.tensor([ids]), attention_mask=torch.tensor([mask]))
        pos = list(range(T)) if name == "right_pad" else [i for i in range(T) if mask[i]]
        cases.append({"name": name, "attention_mask": mask, "positions": pos, "logits": rows(out.logits, pos)})
    slopes = {}
    for h in SLOPE_HEADS:
        # alibi[h, 0, j] = slope_h · j for an all-ones mask: position 1 is the slope itself.
        a = build_alibi_tensor(torch.ones(1, 2, dtype=torch.long), h, torch.float32).reshape(h, 2)
        slopes[str(h)] = f32(a[:, 1].numpy())
    ref = {"arch": "bloom", "class": type(m).__name__, "input_ids": ids, "output_name": "logits",
           "positions": list(range(T)), "logits": rows(plain.logits, list(range(T))), "masked": cases,
           "masked_note": "model(input_ids, attention_mask=mask): ALiBi key positions are cumsum(mask)-1 "
                          "(build_alibi_tensor); left_pad keeps only the unpadded rows (the padded ones see no key)",
           "alibi_slopes": slopes,
           "alibi_slopes_note": "build_alibi_tensor(ones(1, 2), heads, float32)[:, 0, 1] for each head count",
           "seed": BLOOM_SEED}
    ref.update(versions())
    dump(os.path.join(out_dir, "reference.json"), ref)

    prompt = ids[:6]
    settings = {"max_new_tokens": 8, "min_new_tokens": 8, "do_sample": False, "pad_token_id": 3, "eos_token_id": None}
    gen = {"model_type": "bloom", "transformers": transformers.__version__, "torch": torch.__version__,
           "prompt_ids": prompt, "max_new_tokens": 8}
    with torch.no_grad():
        gen["greedy"] = m.generate(torch.tensor([prompt]), num_beams=1, **settings)[0].tolist()
        for lp in (1.0, 0.6):
            o = m.generate(torch.tensor([prompt]), num_beams=4, length_penalty=lp, early_stopping=True,
                           output_scores=True, return_dict_in_generate=True, **settings)
            gen[f"beam4_lp{lp}"] = {"ids": o.sequences[0].tolist(), "score": float(o.sequences_scores[0])}
    gen["settings"] = settings
    gen["note"] = ("transformers generate(): greedy = num_beams 1; beams with early_stopping=True; prompt = first 6 "
                   "input_ids, eos disabled, exactly max_new_tokens new tokens")
    gen["command"] = COMMAND
    dump(os.path.join(out_dir, "generate.json"), gen)


def main():
    for a in ("gpt2", "llama"):
        run_decoder_only(a)
    run_bert()
    for a in ("marian", "bart", "t5"):
        run_seq2seq(a)
    run_bloom()


if __name__ == "__main__":
    sys.exit(main())
