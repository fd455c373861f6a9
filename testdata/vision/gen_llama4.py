#!/usr/bin/env python3
"""A tiny Llama 4 (Llama4ForConditionalGeneration) checkpoint made by transformers' own class, its processor's
outputs on the two images of images/ (wide.png, tall.png), and what llama.cpp's converter writes from it (issue 33).

Writes testdata/vision/llama4/:

  hf/                    Llama4ForConditionalGeneration.save_pretrained (float32 safetensors, every parameter redrawn
                         by testdata/arch's randomize()); the trimmed GPT-2 BPE tokenizer of testdata/arch plus the
                         six image tokens Llama4Processor writes, from id 1000; meta-llama/Llama-4-Scout-17B-16E-
                         Instruct's preprocessor_config.json / processor_config.json with only the tile size changed
                         (336 → 56)
  hf/reference.json      per image: the processor's input_ids, aspect_ratios and pixel_values, the vision model's
                         output (pixel shuffle + MLP: get_image_features), the projected image features
                         (multi_modal_projector, what the text model receives) and the last 8 rows of the prompt's
                         logits (eval, eager attention, 1 thread, no_grad)
  llamacpp.json          what llama.cpp d32676d7's convert_hf_to_gguf.py writes from hf/ (text GGUF and --mmproj, f32
                         and f16), in gen_vision.gguf_record's form

The GGUFs go to OUT/vision/llama4/ (outside the repository). tfconv is never run. Usage (the Debian trixie chroot of
testdata/arch/README.md, transformers v4.57.6 with python3-torchvision, which Llama4ImageProcessorFast needs — it has
no slow processor —, from the repository root):

  OPENBLAS_CORETYPE=Prescott PYTHONPATH=testdata/arch/pyshim-trixie:$TF/src python3 testdata/vision/gen_llama4.py \
      $LLAMACPP /work/shared/fixtures /work/fixtures-out
"""

import json
import os
import shutil
import sys
import zlib

import torch
import transformers
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "arch"))
import gen_fixtures as gf  # noqa: E402  (randomize, f32, dump, copy_tokenizer, add_tokens, LLAMA4_TEXT)
import gen_vision as gv  # noqa: E402  (gguf_record: the one llamacpp.json form)
import gen_llava as gl  # noqa: E402  (converter: convert_hf_to_gguf.py with and without --mmproj; LOGIT_ROWS)

torch.set_num_threads(1)

FAMILY = "llama4"
IMAGES = ("wide.png", "tall.png")

# The six tokens Llama4Processor writes around and between an image's patches (Scout's tokenizer has them at
# 200080 and up), here from id 1000 on; <|patch|> is the placeholder the model fills (config.json's
# image_token_index), <|image|> the marker before the global tile.
IMAGE_TOKENS = ["<|image_start|>", "<|image_end|>", "<|tile_x_separator|>", "<|tile_y_separator|>", "<|image|>",
                "<|patch|>"]
BOI, EOI, PATCH = 1000, 1001, 1005

# testdata/arch's Llama 4 text model (LLAMA4_TEXT: 4 layers, chunked attention in layers 0-2, MoE in 1 and 3) with
# the chunk and the temperature floor llama.cpp's llama4 graph fixes (8192: the GGUF has no key for either, so tfconv
# refuses other values) and the image tokens in the vocabulary.
TEXT = dict(gf.LLAMA4_TEXT, attention_chunk_size=8192, floor_scale=8192, vocab_size=1000 + len(IMAGE_TOKENS))

# Scout's vision tower (llama4_vision_model: 2-D RoPE ViT with a class embedding, LayerNorms eps 1e-5, GELU; its
# vision adapter pixel-shuffles by 0.5 then a 2-layer GELU MLP; the projector one linear map) at 56-pixel tiles of
# 14-pixel patches: 16 patches (+ the class embedding) → 4 tokens a tile. intermediate_size is 4 × hidden_size as
# Scout's 5632 = 4 × 1408 (the adapter's fc1 reads the shuffled 4 × hidden channels through it). 3 layers, not 2:
# gguf-py's tensor map names the adapter's vision_adapter.mlp.fc{bid} → mm.model.mlp.{bid} for bid below the block
# count, so with 2 layers the converter cannot map fc2 ("Can not map tensor").
VISION = dict(hidden_size=32, intermediate_size=128, num_hidden_layers=3, num_attention_heads=2, image_size=56,
              patch_size=14, pixel_shuffle_ratio=0.5, projector_input_dim=64, projector_output_dim=64,
              vision_output_dim=64, norm_eps=1e-5, rope_theta=10000, hidden_act="gelu",
              vision_feature_select_strategy="default")

# meta-llama/Llama-4-Scout-17B-16E-Instruct's preprocessor_config.json (Llama4ImageProcessorFast: tiles of 336,
# max_patches 16, no resize to the max canvas, bilinear, mean = std = 0.5) and processor_config.json, size 336 → 56.
PREPROCESSOR = {"crop_size": None, "data_format": "channels_first", "default_to_square": True, "device": None,
                "do_center_crop": None, "do_convert_rgb": True, "do_normalize": True, "do_rescale": True,
                "do_resize": True, "image_mean": [0.5, 0.5, 0.5], "image_processor_type": "Llama4ImageProcessorFast",
                "image_std": [0.5, 0.5, 0.5], "input_data_format": None, "max_patches": 16,
                "processor_class": "Llama4Processor", "resample": 2, "rescale_factor": 0.00392156862745098,
                "resize_to_max_canvas": False, "return_tensors": None, "size": {"height": 56, "width": 56}}
PROCESSOR = {"fake_image_token": "<|image|>", "image_token": "<|image|>", "patch_size": 14,
             "processor_class": "Llama4Processor"}

PROMPT = "What is in <|image|> this picture? It is"


def reference(hf):
    model = transformers.Llama4ForConditionalGeneration.from_pretrained(hf, attn_implementation="eager").eval()
    # Built by hand rather than AutoProcessor: the slow (pure-Python) tokenizer, the Rust one not being installed.
    tok = transformers.AutoTokenizer.from_pretrained(hf, use_fast=False)
    ip = transformers.Llama4ImageProcessorFast.from_pretrained(hf)
    proc = transformers.Llama4Processor(image_processor=ip, tokenizer=tok, patch_size=14, pixel_shuffle_ratio=0.5)
    out = {}
    for name in IMAGES:
        img = Image.open(os.path.join(HERE, "images", name))
        inp = proc(images=img, text=PROMPT, return_tensors="pt")
        # Llama4ImageProcessorFast rescales and normalises in bfloat16, as Meta's implementation does; the
        # float32 model gets those values exactly (bfloat16 → float32 is exact).
        pv = inp["pixel_values"].float()
        with torch.no_grad():
            vis = model.get_image_features(pixel_values=pv,
                                           vision_feature_select_strategy="default")
            feats = model.multi_modal_projector(vis.reshape(-1, vis.shape[-1]))
            logits = model(input_ids=inp["input_ids"], attention_mask=inp["attention_mask"], pixel_values=pv).logits[0]
        rows = gl.LOGIT_ROWS
        out[name] = {"image_size": list(img.size), "prompt": PROMPT, "input_ids": inp["input_ids"][0].tolist(),
                     "pixel_values_shape": list(pv.shape), "pixel_values": gf.f32(pv.reshape(-1)),
                     "vision_output_shape": list(vis.shape), "vision_output": gf.f32(vis.reshape(-1)),
                     "image_features_shape": list(feats.shape), "image_features": gf.f32(feats),
                     "logits_shape": list(logits.shape),
                     "logits_rows": list(range(logits.shape[0] - rows, logits.shape[0])),
                     "logits": gf.f32(logits[-rows:])}
    return out


def main():
    llamacpp, shared, outroot = sys.argv[1:4]
    sys.path.insert(0, os.path.join(llamacpp, "gguf-py"))
    seed = zlib.crc32(b"vision-llama4")
    torch.manual_seed(seed)
    config = transformers.Llama4Config(text_config=TEXT, vision_config=VISION, boi_token_index=BOI,
                                       eoi_token_index=EOI, image_token_index=PATCH, tie_word_embeddings=False)
    config._attn_implementation = "eager"
    model = transformers.Llama4ForConditionalGeneration(config).eval()
    gf.randomize(model, seed)
    root = os.path.join(HERE, FAMILY)
    hf = os.path.join(root, "hf")
    shutil.rmtree(root, ignore_errors=True)
    model.save_pretrained(hf)
    gf.copy_tokenizer("bpe", shared, hf, False)
    gf.add_tokens(hf, IMAGE_TOKENS)
    gf.dump(os.path.join(hf, "preprocessor_config.json"), PREPROCESSOR)
    gf.dump(os.path.join(hf, "processor_config.json"), PROCESSOR)

    versions = {"transformers": transformers.__version__, "torch": torch.__version__,
                "model_class": "Llama4ForConditionalGeneration", "seed": seed, "attn_implementation": "eager",
                "threads": 1}
    gf.dump(os.path.join(hf, "reference.json"), dict(versions, images=reference(hf)))

    out = os.path.join(outroot, "vision", FAMILY)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    rec = {"converter": "llama.cpp " + open(os.path.join(llamacpp, "COMMIT")).read().strip()[:8] +
           " convert_hf_to_gguf.py", "outputs": {}}
    for outtype in ("f32", "f16"):
        for kind, mmproj in (("text", False), ("mmproj", True)):
            path = os.path.join(out, f"{FAMILY}-{kind}-{outtype}.gguf")  # the name convert's tests look for
            cmd, err = gl.converter(llamacpp, hf, path, outtype, "gpt-2", mmproj)
            rec["outputs"][f"{kind}-{outtype}"] = {"command": cmd, **({"refused": err} if err else gv.gguf_record(path))}
    with open(os.path.join(root, "llamacpp.json"), "w") as f:
        json.dump(rec, f, indent=1)
        f.write("\n")
    print(FAMILY, {k: v.get("refused", "ok") for k, v in rec["outputs"].items()})


if __name__ == "__main__":
    main()
