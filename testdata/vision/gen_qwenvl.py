#!/usr/bin/env python3
"""Tiny Qwen2.5-VL (and Qwen3-VL) checkpoints made by transformers' own classes, the preprocessing and outputs of
transformers on two test images, and what llama.cpp's converter writes from them (text GGUF and mmproj GGUF).

For each family F in FAMILIES this writes testdata/vision/F/:

  hf/                       the class's random-weight checkpoint (save_pretrained, float32 safetensors), the
                            trimmed GPT-2 tokenizer of testdata/arch (from shared/fixtures/interop/gpt2) with the
                            published model's image/placeholder tokens appended as added tokens (ids 1000 on), and
                            the published preprocessor_config.json with only its pixel bounds changed (PREPROCESSOR)
  hf/reference.json         "cases", one per image: the processor's image_grid_thw, the prompt ids as the processor
                            leaves them (one <|image_pad|>) and as the model takes them (expanded), the image
                            features, and name, shape and sha256 of each tensor of reference.safetensors; eval,
                            eager attention, float32, 1 thread, no_grad
  hf/text_reference.json    transformers' logits for gen_fixtures.INPUT_IDS without an image (text_reference)
  hf/reference.safetensors  per image I: pixel_values.I (the image processor's output), image_features.I (what
                            the model's get_image_features computes: the merger's output, one row per LLM token),
                            for Qwen3-VL deepstack_features.J.I (the J-th deepstack merger's output), and logits.I
                            (the logits of the expanded prompt with the image): too large for JSON
  llamacpp.json             what convert_hf_to_gguf.py writes (text GGUF and --mmproj GGUF at f32, f16, q8_0), in
                            gen_vision.py's format (gguf_record); the GGUFs go to <out>/vision/F/ (outside the
                            repository), and the f32 projector is kept in gguf/mmproj-F-f32.gguf

The images are testdata/vision/images/qwen-*.png, drawn here (draw_images) with PIL from a fixed seed.
tfconv's code is never run. Usage, from the repository root, in the Debian trixie chroot of testdata/arch/README.md:

  OPENBLAS_CORETYPE=Prescott PYTHONPATH=testdata/arch/pyshim-trixie:$TF/src python3 testdata/vision/gen_qwenvl.py \
      $L /work/shared/fixtures /work/fixtures-out [FAMILY ...]
"""

import hashlib
import json
import os
import shutil
import sys
import zlib

import numpy as np
import torch
import transformers

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "arch"))
import gen_fixtures as g  # noqa: E402  (randomize, copy_tokenizer, add_tokens, convert, f32, dump)

torch.set_num_threads(1)

# The published Qwen2.5-VL tokenizer's vision tokens (151644…151656 there), appended after the trimmed vocabulary.
QWEN_VL_TOKENS = ["<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>",
                  "<|image_pad|>", "<|video_pad|>"]
TOK = {c: 1000 + i for i, c in enumerate(QWEN_VL_TOKENS)}

# Qwen2.5-VL-7B-Instruct's preprocessor_config.json (the nine keys it publishes), with only the pixel bounds made
# small so that the two test images give 112 and 120 patches: max_pixels 12845056 -> 28*28*32.
QWEN25_PREPROCESSOR = {
    "min_pixels": 3136,
    "max_pixels": 25088,
    "patch_size": 14,
    "temporal_patch_size": 2,
    "merge_size": 2,
    "image_mean": [0.48145466, 0.4578275, 0.40821073],
    "image_std": [0.26862954, 0.26130258, 0.27577711],
    "image_processor_type": "Qwen2VLImageProcessor",
    "processor_class": "Qwen2_5_VLProcessor",
}

# Qwen2.5-VL's shape at tiny sizes. Text: the Qwen2 decoder with M-RoPE (mrope_section over head_dim/2 = 8 pairs,
# in the published 16:24:24 proportion), GQA 4/2. Vision: 4 blocks, windowed and full in turn
# (fullatt_block_indexes [1, 3]: llama.cpp's n_wa_pattern 2; 4, not 2, because the converter maps the merger's
# visual.merger.mlp.2.* through its per-block table, which has block 2 only when depth > 2: with depth 2 it stops at
# "Can not map tensor 'visual.merger.mlp.2.bias'"), the published patch 14, temporal patch 2, merge 2 and
# window 112 (8×8 patches; llama.cpp takes 112 when the GGUF has no window size, and the converter writes none).
QWEN25_TEXT = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                   num_key_value_heads=2, vocab_size=1024, max_position_embeddings=128, rope_theta=1000000.0,
                   rms_norm_eps=1e-6, rope_scaling={"type": "mrope", "mrope_section": [2, 3, 3]},
                   use_sliding_window=False, sliding_window=None, max_window_layers=2, tie_word_embeddings=False,
                   bos_token_id=999, eos_token_id=TOK["<|im_end|>"], hidden_act="silu", attention_dropout=0.0)
QWEN25_VISION = dict(depth=4, hidden_size=32, hidden_act="silu", intermediate_size=64, num_heads=2, in_channels=3,
                     patch_size=14, spatial_merge_size=2, temporal_patch_size=2, tokens_per_second=2,
                     window_size=112, out_hidden_size=64, fullatt_block_indexes=[1, 3])

# Qwen3-VL-2B-Instruct's preprocessor_config.json (its eight keys), with only the pixel bounds made small: size
# {"longest_edge": 16777216, "shortest_edge": 65536} -> 32*32*32 and 32*32*4 (the two images give 112 and 80 patches).
QWEN3_PREPROCESSOR = {
    "size": {"longest_edge": 32768, "shortest_edge": 4096},
    "patch_size": 16,
    "temporal_patch_size": 2,
    "merge_size": 2,
    "image_mean": [0.5, 0.5, 0.5],
    "image_std": [0.5, 0.5, 0.5],
    "processor_class": "Qwen3VLProcessor",
    "image_processor_type": "Qwen2VLImageProcessorFast",
}

# Qwen3-VL's shape at tiny sizes (the published 2B's form). Text: the Qwen3 decoder (per-head q/k norms, head_dim
# 16) with interleaved M-RoPE (mrope_section [4, 2, 2] over 8 pairs, the published 24:20:20 rounded), GQA 4/2.
# Vision: 4 blocks (gelu-tanh MLPs with biases, LayerNorms), patch 16, learned position embeddings for a 16×16 grid
# (num_position_embeddings 256; the published 2304 is 48×48; interpolated to each image's grid), merge 2, and
# deepstack features taken after blocks 1 and 2 (deepstack_visual_indexes; the published [5, 11, 17] of 24),
# added to the outputs of the text model's first two layers.
QWEN3_TEXT = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, head_dim=16, vocab_size=1024, max_position_embeddings=128,
                  rope_theta=5000000.0, rms_norm_eps=1e-6,
                  rope_scaling={"rope_type": "default", "mrope_section": [4, 2, 2], "mrope_interleaved": True},
                  attention_bias=False, tie_word_embeddings=False, bos_token_id=999, eos_token_id=TOK["<|im_end|>"],
                  hidden_act="silu", attention_dropout=0.0)
QWEN3_VISION = dict(depth=4, hidden_size=32, hidden_act="gelu_pytorch_tanh", intermediate_size=64, num_heads=2,
                    in_channels=3, patch_size=16, spatial_merge_size=2, temporal_patch_size=2, out_hidden_size=64,
                    num_position_embeddings=256, deepstack_visual_indexes=[1, 2])

FAMILIES = {
    "qwen2_5_vl": dict(config="Qwen2_5_VLConfig", model="Qwen2_5_VLForConditionalGeneration",
                       kw=dict(text_config=QWEN25_TEXT, vision_config=QWEN25_VISION,
                               image_token_id=TOK["<|image_pad|>"], video_token_id=TOK["<|video_pad|>"],
                               vision_start_token_id=TOK["<|vision_start|>"],
                               vision_end_token_id=TOK["<|vision_end|>"], tie_word_embeddings=False),
                       preprocessor=QWEN25_PREPROCESSOR, processor="Qwen2VLImageProcessor"),
    "qwen3_vl": dict(config="Qwen3VLConfig", model="Qwen3VLForConditionalGeneration",
                     kw=dict(text_config=QWEN3_TEXT, vision_config=QWEN3_VISION,
                             image_token_id=TOK["<|image_pad|>"], video_token_id=TOK["<|video_pad|>"],
                             vision_start_token_id=TOK["<|vision_start|>"], vision_end_token_id=TOK["<|vision_end|>"],
                             tie_word_embeddings=False),
                     preprocessor=QWEN3_PREPROCESSOR, processor="Qwen2VLImageProcessorFast"),
}

# The two images (name, width, height): a wide one larger than max_pixels (smart_resize scales it down to 196×112)
# and a small tall one (rounded to 140×168). Both leave a partial 8×8 window.
IMAGES = [("qwen-wide", 448, 252), ("qwen-tall", 130, 170)]

# The prompt as the processor leaves it: one <|image_pad|> between <|vision_start|> and <|vision_end|>, in a
# ChatML turn (ids of the trimmed vocabulary around it).
PROMPT = [TOK["<|im_start|>"], 15, 250, 87, TOK["<|vision_start|>"], TOK["<|image_pad|>"], TOK["<|vision_end|>"],
          512, 640, 33, TOK["<|im_end|>"], 421]

OUTTYPES = ("f32", "f16", "q8_0")  # gen_vision.py's


def text_reference(family):
    """hf/text_reference.json: transformers' float32 logits for gen_fixtures.INPUT_IDS alone (no image: the three
    M-RoPE positions equal), the reference for running the text GGUF."""
    spec = FAMILIES[family]
    hf = os.path.join(HERE, family, "hf")
    model = getattr(transformers, spec["model"]).from_pretrained(hf, attn_implementation="eager").eval()
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([g.INPUT_IDS])).logits[0]
    g.dump(os.path.join(hf, "text_reference.json"),
           {"transformers": transformers.__version__, "torch": torch.__version__, "model_class": spec["model"],
            "attn_implementation": "eager", "threads": 1, "input_ids": g.INPUT_IDS, "logits": g.f32(logits)})


def draw_images():
    """Two deterministic RGB PNGs: a smooth gradient with a few filled shapes from a fixed seed."""
    from PIL import Image, ImageDraw
    d = os.path.join(HERE, "images")
    os.makedirs(d, exist_ok=True)
    paths = {}
    for k, (name, w, h) in enumerate(IMAGES):
        rng = np.random.default_rng(1234 + k)
        y, x = np.mgrid[0:h, 0:w]
        arr = np.stack([255 * x / max(w - 1, 1), 255 * y / max(h - 1, 1), 128 + 100 * np.sin((x + y) / 9.0)], -1)
        im = Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8), "RGB")
        dr = ImageDraw.Draw(im)
        for _ in range(6):
            x0, y0 = int(rng.integers(0, w - 8)), int(rng.integers(0, h - 8))
            x1, y1 = x0 + int(rng.integers(8, w // 2)), y0 + int(rng.integers(8, h // 2))
            col = tuple(int(c) for c in rng.integers(0, 256, 3))
            (dr.ellipse if rng.integers(0, 2) else dr.rectangle)([x0, y0, x1, y1], fill=col)
        p = os.path.join(d, name + ".png")
        im.save(p, optimize=False, compress_level=9)
        paths[name] = p
    return paths


def redraw_conv(model, seed):
    """randomize() knows matrices, stacked experts and vectors; the patch embedding's Conv3d weight
    [out, in, t, kh, kw] is drawn N(0, 1/fan_in), fan_in = in·t·kh·kw."""
    gen = torch.Generator().manual_seed(seed + 5)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if p.dim() == 5:
                p.copy_(torch.randn(p.shape, generator=gen) * (p[0].numel()) ** -0.5)


def top_level_architectures(hf, cls):
    """transformers v4.57.6's Qwen-VL configs forward every attribute their text_config also has to it, so
    save_pretrained writes `architectures` into text_config only; the published checkpoints (and the converter's
    --mmproj, which looks for it at the top or in vision_config) have it at the top level. Put there, as
    save_pretrained would write it (sorted keys, indent 2); text_config keeps its copy."""
    p = os.path.join(hf, "config.json")
    with open(p) as f:
        cfg = json.load(f)
    cfg.setdefault("architectures", [cls])
    with open(p, "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")


def sha(t):
    return hashlib.sha256(np.ascontiguousarray(t.detach().numpy().astype(np.float32)).tobytes()).hexdigest()


def make(family, shared, images):
    spec = FAMILIES[family]
    seed = zlib.crc32(family.encode())
    torch.manual_seed(seed)
    config = getattr(transformers, spec["config"])(**spec["kw"])
    config._attn_implementation = "eager"
    model = getattr(transformers, spec["model"])(config).eval()
    g.randomize(model, seed)
    redraw_conv(model, seed)
    root = os.path.join(HERE, family)
    hf = os.path.join(root, "hf")
    shutil.rmtree(root, ignore_errors=True)
    model.save_pretrained(hf)
    top_level_architectures(hf, spec["model"])
    g.copy_tokenizer("bpe", shared, hf, False)
    g.add_tokens(hf, QWEN_VL_TOKENS)
    with open(os.path.join(hf, "preprocessor_config.json"), "w") as f:
        json.dump(spec["preprocessor"], f, indent=2)
        f.write("\n")

    # Reload what was saved, so the references are those of the files.
    model = getattr(transformers, spec["model"]).from_pretrained(hf, attn_implementation="eager").eval()
    proc = getattr(transformers, spec["processor"]).from_pretrained(hf)
    from PIL import Image
    tensors, cases = {}, []
    merge = config.vision_config.spatial_merge_size
    for name, _, _ in IMAGES:
        im = Image.open(images[name])
        out = proc(images=[im], return_tensors="pt")
        pv, thw = out["pixel_values"], out["image_grid_thw"]
        n = int(thw.prod()) // merge ** 2
        k = PROMPT.index(config.image_token_id)
        ids = PROMPT[:k] + [config.image_token_id] * n + PROMPT[k + 1:]
        with torch.no_grad():
            feats = model.get_image_features(pv, thw)
            if isinstance(feats[0], (tuple, list)):  # Qwen3-VL: (per-image features, per-deepstack-layer features)
                feats, deep = feats
                for j, d in enumerate(deep):
                    tensors[f"deepstack_features.{j}.{name}"] = d.contiguous()
            feats = feats[0]
            logits = model(input_ids=torch.tensor([ids]), pixel_values=pv, image_grid_thw=thw).logits[0]
        tensors[f"pixel_values.{name}"] = pv.contiguous()
        tensors[f"image_features.{name}"] = feats.contiguous()
        tensors[f"logits.{name}"] = logits.contiguous()
        names = ["pixel_values", "image_features"] + sorted(k2.rsplit(".", 1)[0] for k2 in tensors
                                                             if k2.startswith("deepstack_features.") and k2.endswith(name)) + ["logits"]
        cases.append({"image": f"images/{name}.png", "width": im.size[0], "height": im.size[1],
                      "image_grid_thw": thw[0].tolist(), "image_tokens": n, "prompt_ids": PROMPT, "input_ids": ids,
                      "image_features": g.f32(feats),
                      "tensors": {k2: {"name": f"{k2}.{name}", "shape": list(tensors[f"{k2}.{name}"].shape),
                                       "sha256": sha(tensors[f"{k2}.{name}"])} for k2 in names}})
        print(f"{family} {name}: grid {thw[0].tolist()}, {n} image tokens, |logits|max {float(logits.abs().max()):.3g}")
    from safetensors.torch import save_file
    save_file(tensors, os.path.join(hf, "reference.safetensors"), metadata={"format": "pt"})
    g.dump(os.path.join(hf, "reference.json"),
           {"transformers": transformers.__version__, "torch": torch.__version__, "model_class": spec["model"],
            "image_processor": spec["processor"], "seed": seed, "attn_implementation": "eager", "threads": 1,
            "tensors_file": "reference.safetensors", "cases": cases})
    text_reference(family)


def convert(family, llamacpp, out):
    """The text GGUF and the projector at each outtype, named and recorded as gen_vision.py does for its families
    (gen_vision.gguf_record: one llamacpp.json format for every family of testdata/vision); the converter run by
    gen_fixtures.convert, which replaces get_vocab_base_pre by "gpt-2" (the trimmed GPT-2 vocabulary hashes to no
    known pre-tokenizer). The f32 projector itself is kept in F/gguf/ for the runtime's tests."""
    sys.path.insert(0, os.path.join(llamacpp, "gguf-py"))
    import gen_vision
    hf = os.path.join(HERE, family, "hf")
    dst = os.path.join(out, "vision", family)
    os.makedirs(dst, exist_ok=True)
    record = {"converter": "llama.cpp d32676d7 convert_hf_to_gguf.py", "outputs": {}}
    for outtype in OUTTYPES:
        for kind, extra in (("text", []), ("mmproj", ["--mmproj"])):
            f = os.path.join(dst, f"{family}-{kind}-{outtype}.gguf")
            g.convert(llamacpp, hf, f, outtype, "gpt-2", extra=extra)
            rec = gen_vision.gguf_record(f)
            rec["command"] = " ".join(["convert_hf_to_gguf.py", "hf", "--outtype", outtype, "--outfile",
                                       os.path.basename(f)] + extra)
            record["outputs"][f"{kind}-{outtype}"] = rec
    os.makedirs(os.path.join(HERE, family, "gguf"), exist_ok=True)
    shutil.copy(os.path.join(dst, f"{family}-mmproj-f32.gguf"),
                os.path.join(HERE, family, "gguf", f"mmproj-{family}-f32.gguf"))
    with open(os.path.join(HERE, family, "llamacpp.json"), "w") as fh:
        json.dump(record, fh, indent=1)
        fh.write("\n")


def main():
    if sys.argv[1:2] == ["text"]:  # text_reference alone, for checkpoints already made: text [FAMILY ...]
        for fam in sys.argv[2:] or list(FAMILIES):
            text_reference(fam)
        return
    llamacpp, shared, out = sys.argv[1:4]
    fams = sys.argv[4:] or list(FAMILIES)
    images = draw_images()
    for fam in fams:
        make(fam, shared, images)
        convert(fam, llamacpp, out)


if __name__ == "__main__":
    main()
