#!/usr/bin/env python3
"""Tiny vision-language checkpoints, made by the reference tools themselves (never by tfconv).

For each family F in VISION this writes testdata/vision/F/:

  hf/                 transformers' own multimodal class with random weights (redrawn as gen_fixtures.randomize
                      does, the vision tower's LayerNorms around 1 and its patch convolution N(0, 1/fan_in)), saved
                      by save_pretrained (float32 safetensors), with the trimmed 1000-entry SentencePiece tokenizer
                      of testdata/arch/gemma3 plus the family's image tokens, and the published
                      preprocessor_config.json / processor_config.json with only the image size (and the tokens per
                      image) changed to the tiny tower's
  hf/reference.json   for each image of images/: the processor's pixel_values, input_ids and token_type_ids of
                      PROMPT, the vision tower's hidden states (embeddings, every layer, post-layernorm), the
                      projected image features (get_image_features) and the logits of the prompt (eval, eager
                      attention, float32, 1 thread, no_grad)
  images/*.png        two test images drawn here with PIL (a gradient with shapes), of different sizes and aspect
                      ratios

and, in OUT (outside the repository), llama.cpp's convert_hf_to_gguf.py outputs of hf/: the text GGUF and the
--mmproj GGUF at each outtype of OUTTYPES, plus llamacpp.json in testdata/vision/F/ (per tensor of each: type and
sha256 of its bytes; and every metadata key, in order, with its value), which the tests compare with.

Usage (from the repository root, in the Debian trixie chroot; testdata/arch/README.md describes it):

  OPENBLAS_CORETYPE=Prescott NEW_LLAMACPP=$L PYTHONPATH=testdata/arch/pyshim-trixie:$TF/src python3 testdata/vision/gen_vision.py OUT [F ...]

Numbers are written as the shortest decimal that reads back as the same float32 (numpy's repr).
"""

import hashlib
import json
import os
import shutil
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "arch"))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from PIL import Image, ImageDraw  # noqa: E402

import gen_fixtures as G  # noqa: E402  (randomize, convert, f32, dump)

torch.set_num_threads(1)

# Two images: a landscape one and a portrait one, neither the tower's size, so that the processor resizes both
# (up in one direction and down in the other).
IMAGES = {"wide.png": (96, 40), "tall.png": (45, 77)}
OUTTYPES = ("f32", "f16", "q8_0")

# google/gemma-3-4b-it's published preprocessor_config.json and processor_config.json (README.md says where they
# were read), with size and image_seq_length set to the tiny tower's.
GEMMA3_PREPROCESSOR = {
    "do_convert_rgb": None, "do_normalize": True, "do_pan_and_scan": None, "do_rescale": True, "do_resize": True,
    "image_mean": [0.5, 0.5, 0.5], "image_processor_type": "Gemma3ImageProcessor", "image_seq_length": 256,
    "image_std": [0.5, 0.5, 0.5], "pan_and_scan_max_num_crops": None, "pan_and_scan_min_crop_size": None,
    "pan_and_scan_min_ratio_to_activate": None, "processor_class": "Gemma3Processor", "resample": 2,
    "rescale_factor": 0.00392156862745098, "size": {"height": 896, "width": 896}}
GEMMA3_PROCESSOR = {"image_seq_length": 256, "processor_class": "Gemma3Processor"}

# Gemma 3's image tokens as the published tokenizer names them (there <start_of_image> 255999 and <end_of_image>
# 256000 are pieces of the SentencePiece model and <image_soft_token> 262144 an added token; here all three are
# added tokens after the trimmed vocabulary's 1000, in that order).
GEMMA3_IMAGE_TOKENS = ["<start_of_image>", "<end_of_image>", "<image_soft_token>"]

VISION = {
    # Gemma 3 (Gemma3ForConditionalGeneration, the class of every Gemma 3 from 4B up): the text model of
    # testdata/arch/gemma3 (6 layers, window 4 on layers 0-4), a SigLIP tower of 2 layers, width 32, on 64×64
    # images in 16×16 patches (16 patches), pooled 2×2 to mm_tokens_per_image 4.
    "gemma3": dict(
        text_config=dict(vocab_size=1003, hidden_size=64, intermediate_size=128, num_hidden_layers=6,
                         num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                         hidden_activation="gelu_pytorch_tanh", query_pre_attn_scalar=16, sliding_window=4,
                         sliding_window_pattern=6, rope_theta=1000000.0, rope_local_base_freq=10000.0,
                         rms_norm_eps=1e-6, max_position_embeddings=128, final_logit_softcapping=None,
                         attn_logit_softcapping=None, attention_bias=False, rope_scaling=None,
                         bos_token_id=1, eos_token_id=2, pad_token_id=0),
        vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                           num_channels=3, image_size=64, patch_size=16, hidden_act="gelu_pytorch_tanh",
                           layer_norm_eps=1e-6, vision_use_head=False),
        mm_tokens_per_image=4, boi_token_index=1000, eoi_token_index=1001, image_token_index=1002,
        initializer_range=0.02),
}
PROMPT = "Describe this picture: <start_of_image> What is in it?"


def draw(name, size):
    """A deterministic RGB test image: a two-way colour gradient with a disc, a box and a diagonal line."""
    w, h = size
    x = np.arange(w, dtype=np.float64)[None, :] / max(w - 1, 1)
    y = np.arange(h, dtype=np.float64)[:, None] / max(h - 1, 1)
    r = 255 * x + 0 * y
    g = 255 * y + 0 * x
    b = 255 * (1 - x) * (1 - y)
    img = Image.fromarray(np.stack([r, g, b], -1).round().astype(np.uint8), "RGB")
    d = ImageDraw.Draw(img)
    d.ellipse([w // 5, h // 5, w // 5 + min(w, h) // 2, h // 5 + min(w, h) // 2], fill=(250, 240, 20))
    d.rectangle([w // 2, h // 2, w - 3, h - 3], fill=(20, 30, 160), outline=(255, 255, 255))
    d.line([0, h - 1, w - 1, 0], fill=(0, 0, 0), width=2)
    path = os.path.join(HERE, "images", name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    img.save(path, format="PNG", optimize=False, compress_level=9)
    return path


VISION_TOWERS = ("model.vision_tower.", "vision_tower.")


def redraw_vision(model, seed, towers=VISION_TOWERS, norms=True):
    """After gen_fixtures.randomize (which draws every norm of a Gemma class around 0, for Gemma's (1 + w)): the
    SigLIP tower's LayerNorms scale by w itself, so theirs are drawn 1 + N(0, 0.2²); its patch convolution
    [out, channels, patch, patch] N(0, 1/fan_in) with fan_in channels·patch² (randomize reads 4-D weights as norms:
    1 + N(0, 0.2²) sums a patch's pixels coherently and leaves the tower's residual stream O(100)).

    towers: the prefixes of the tower's parameter names; norms False keeps randomize's norms (a class whose norms
    randomize already draws around 1, as LLaVA's CLIP and Idefics3's SigLIP), redrawing the convolution alone."""
    g = torch.Generator().manual_seed(seed + 5)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if not name.startswith(towers):
                continue
            if norms and "norm" in name and name.endswith("weight"):
                p.copy_(1.0 + torch.randn(p.shape, generator=g) * 0.2)
            elif p.dim() == 4:
                p.copy_(torch.randn(p.shape, generator=g) * (p.shape[1] * p.shape[2] * p.shape[3]) ** -0.5)


def write_tokenizer(hf, tokens):
    """The trimmed SentencePiece tokenizer of testdata/arch/gemma3 plus the image tokens as special added tokens
    (ids 1000 on), named in tokenizer_config.json's extra_special_tokens as Gemma 3's published tokenizer does."""
    src = os.path.join(HERE, "..", "arch", "gemma3", "hf")
    for n in ("tokenizer.model", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(os.path.join(src, n), os.path.join(hf, n))
    p = os.path.join(hf, "tokenizer_config.json")
    with open(p) as f:
        tc = json.load(f)
    for i, c in enumerate(tokens):
        tc["added_tokens_decoder"][str(1000 + i)] = {"content": c, "lstrip": False, "normalized": False,
                                                      "rstrip": False, "single_word": False, "special": True}
    tc["extra_special_tokens"] = {"boi_token": tokens[0], "eoi_token": tokens[1], "image_token": tokens[2]}
    tc["processor_class"] = "Gemma3Processor"
    with open(p, "w") as f:
        json.dump(tc, f, indent=2)
        f.write("\n")


def gguf_record(path):
    """Every metadata key (in order) with its value, and every tensor's type, shape and sha256 of its bytes."""
    import gguf
    r = gguf.GGUFReader(path)
    kv = []
    for f in r.fields.values():
        if f.name.startswith("GGUF."):
            continue
        t = f.types[0]
        if t == gguf.GGUFValueType.ARRAY:
            vals = [f.parts[i].tolist()[0] if f.types[-1] != gguf.GGUFValueType.STRING else
                    bytes(f.parts[i]).decode("utf-8", "replace") for i in f.data]
            if f.name.startswith("tokenizer.") and len(vals) > 16:
                vals = {"len": len(vals), "sha256": hashlib.sha256(json.dumps(vals).encode()).hexdigest()}
            kv.append([f.name, "array", vals])
        elif t == gguf.GGUFValueType.STRING:
            kv.append([f.name, "string", bytes(f.parts[f.data[0]]).decode("utf-8")])
        else:
            kv.append([f.name, t.name.lower(), f.parts[f.data[0]].tolist()[0]])
    tensors = [{"name": t.name, "type": t.tensor_type.name, "shape": [int(x) for x in t.shape],
                "sha256": hashlib.sha256(bytes(t.data)).hexdigest()} for t in r.tensors]
    return {"metadata": kv, "tensors": tensors}


def make(family, out):
    spec = VISION[family]
    seed = zlib.crc32(("vision-" + family).encode())
    torch.manual_seed(seed)
    config = transformers.Gemma3Config(**spec)
    config._attn_implementation = "eager"
    model = transformers.Gemma3ForConditionalGeneration(config).eval()
    G.randomize(model, seed)
    redraw_vision(model, seed)
    root = os.path.join(HERE, family)
    hf = os.path.join(root, "hf")
    shutil.rmtree(root, ignore_errors=True)
    model.save_pretrained(hf)
    write_tokenizer(hf, GEMMA3_IMAGE_TOKENS)
    n = spec["mm_tokens_per_image"]
    side = spec["vision_config"]["image_size"]
    pre = dict(GEMMA3_PREPROCESSOR, image_seq_length=n, size={"height": side, "width": side})
    proc = dict(GEMMA3_PROCESSOR, image_seq_length=n)
    for name, obj in (("preprocessor_config.json", pre), ("processor_config.json", proc)):
        with open(os.path.join(hf, name), "w") as f:
            json.dump(obj, f, indent=2)
            f.write("\n")

    # Reload what was saved, so the references are those of the files. The processor is what AutoProcessor
    # builds from these files, with the slow (pure-Python) tokenizer (the Rust one is not available here).
    model = transformers.Gemma3ForConditionalGeneration.from_pretrained(hf, attn_implementation="eager").eval()
    tok = transformers.AutoTokenizer.from_pretrained(hf, use_fast=False)
    improc = transformers.Gemma3ImageProcessor.from_pretrained(hf)
    processor = transformers.Gemma3Processor(image_processor=improc, tokenizer=tok, image_seq_length=n)
    cases = []
    for name, size in sorted(IMAGES.items()):
        path = draw(name, size)
        image = Image.open(path)
        inputs = processor(text=PROMPT, images=image, return_tensors="pt")
        with torch.no_grad():
            vis = model.model.vision_tower(pixel_values=inputs["pixel_values"], output_hidden_states=True)
            features = model.get_image_features(inputs["pixel_values"])
            logits = model(**inputs).logits[0]
        cases.append({"image": "images/" + name, "width": size[0], "height": size[1],
                      "input_ids": inputs["input_ids"][0].tolist(),
                      "token_type_ids": inputs["token_type_ids"][0].tolist(),
                      "pixel_values": G.f32(inputs["pixel_values"][0]),
                      "vision_hidden_states": [G.f32(h[0]) for h in vis.hidden_states],
                      "vision_last_hidden_state": G.f32(vis.last_hidden_state[0]),
                      "image_features": G.f32(features[0]),
                      "logits": G.f32(logits)})
        print(f"{family} {name}: {len(cases[-1]['input_ids'])} tokens, features {tuple(features.shape)}")
    versions = {"transformers": transformers.__version__, "torch": torch.__version__,
                "model_class": "Gemma3ForConditionalGeneration", "seed": seed, "attn_implementation": "eager",
                "threads": 1, "prompt": PROMPT, "processor": "Gemma3Processor(Gemma3ImageProcessor, "
                "LlamaTokenizer slow)"}
    G.dump(os.path.join(hf, "reference.json"), dict(versions, cases=cases))

    llamacpp = os.environ["NEW_LLAMACPP"]
    sys.path.insert(0, os.path.join(llamacpp, "gguf-py"))
    dst = os.path.join(out, "vision", family)
    os.makedirs(dst, exist_ok=True)
    record = {"converter": "llama.cpp d32676d7 convert_hf_to_gguf.py", "outputs": {}}
    for outtype in OUTTYPES:
        for kind, extra in (("text", []), ("mmproj", ["--mmproj"])):
            f = os.path.join(dst, f"{family}-{kind}-{outtype}.gguf")
            cmd = convert(llamacpp, hf, f, outtype, extra)
            rec = gguf_record(f)
            rec["command"] = cmd
            record["outputs"][f"{kind}-{outtype}"] = rec
    # The f32 projector itself is small: kept beside the record, for the runtime's tests against llama.cpp's own file.
    os.makedirs(os.path.join(root, "gguf"), exist_ok=True)
    shutil.copy(os.path.join(dst, f"{family}-mmproj-f32.gguf"), os.path.join(root, "gguf", f"mmproj-{family}-f32.gguf"))
    with open(os.path.join(root, "llamacpp.json"), "w") as fh:
        json.dump(record, fh, indent=1)
        fh.write("\n")
    return {"family": family, "seed": seed, "transformers": transformers.__version__, "torch": torch.__version__}


def convert(llamacpp, hf, out, outtype, extra):
    """gen_fixtures.convert with extra arguments (--mmproj): the converter unmodified, run as a module."""
    import subprocess
    code = ("import sys; sys.argv = sys.argv[1:]; sys.path.insert(0, %r); sys.path.insert(0, %r); "
            "import transformers; _ft = transformers.AutoTokenizer.from_pretrained; "
            "transformers.AutoTokenizer.from_pretrained = lambda *a, **k: _ft(*a, **dict(k, use_fast=False)); "
            "import convert_hf_to_gguf as c; c.main()") % (os.path.join(llamacpp, "gguf-py"), llamacpp)
    cmd = [sys.executable, "-c", code, "convert_hf_to_gguf.py", hf, "--outtype", outtype, "--outfile", out] + extra
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise RuntimeError("convert_hf_to_gguf.py failed:\n" + r.stderr[-3000:])
    return " ".join(["convert_hf_to_gguf.py", os.path.relpath(hf, HERE), "--outtype", outtype, "--outfile",
                     os.path.basename(out)] + extra)


def main():
    out = sys.argv[1]
    fams = sys.argv[2:] or sorted(VISION)
    summary = {f: make(f, out) for f in fams}
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
