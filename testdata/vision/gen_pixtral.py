#!/usr/bin/env python3
"""Tiny Mistral 3.1 (Pixtral) and InternVL 3 checkpoints, made by transformers' own classes (never by tfconv).

gen_vision.py's companion (vlpix's file; gen_vision.py is Gemma 3's): the same shape of output, its helpers
(gguf_record, convert) and gen_fixtures.py's (randomize, add_tokens, f32, dump). For each family F in VISION:

  testdata/vision/F/hf/             the class's tiny checkpoint (float32 safetensors) with the published
                                    preprocessor_config.json / processor_config.json, only the sizes changed
  testdata/vision/F/hf/reference.json  per image of testdata/vision/images/{wide,tall}.png: the processor's
                                    input_ids, pixel_values and image_sizes, the vision tower's hidden states, the
                                    projected image features and the prompt's logits (eval, eager, 1 thread)
  testdata/vision/F/llamacpp.json   llama.cpp's convert_hf_to_gguf.py outputs (text GGUF and --mmproj) at f32, f16
                                    and q8_0: metadata and per-tensor type, shape, sha256 (the GGUFs go to OUT)

Usage (from the repository root, in the Debian trixie chroot; testdata/vision/README.md):

  OPENBLAS_CORETYPE=Prescott NEW_LLAMACPP=$L PYTHONPATH=testdata/arch/pyshim-trixie:$TF/src \\
      python3 testdata/vision/gen_pixtral.py OUT [F ...]
"""

import json
import os
import shutil
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "arch"))
sys.path.insert(0, HERE)

import torch  # noqa: E402
import transformers  # noqa: E402
from PIL import Image  # noqa: E402

import gen_fixtures as G  # noqa: E402
import gen_vision as V  # noqa: E402  (gguf_record, convert, redraw_vision)

torch.set_num_threads(1)

IMAGES = ("wide.png", "tall.png")  # gen_vision.py's two images (96×40 and 45×77)
OUTTYPES = ("f32", "f16", "q8_0")

# mistralai/Mistral-Small-3.1-24B-Instruct-2503's preprocessor_config.json and processor_config.json (README.md says
# where they were read), with size.longest_edge 1540 → 84 (the tiny tower's image_size: 6 patches of 14 a side).
MISTRAL3_PREPROCESSOR = {
    "crop_size": None, "data_format": "channels_first", "default_to_square": True, "device": None,
    "do_center_crop": None, "do_convert_rgb": True, "do_normalize": True, "do_rescale": True, "do_resize": True,
    "image_mean": [0.48145466, 0.4578275, 0.40821073], "image_processor_type": "PixtralImageProcessor",
    "image_std": [0.26862954, 0.26130258, 0.27577711], "input_data_format": None,
    "patch_size": {"height": 14, "width": 14}, "processor_class": "PixtralProcessor", "resample": 3,
    "rescale_factor": 0.00392156862745098, "return_tensors": None, "size": {"longest_edge": 1540}}
MISTRAL3_PROCESSOR = {"image_break_token": "[IMG_BREAK]", "image_end_token": "[IMG_END]", "image_token": "[IMG]",
                      "patch_size": 14, "processor_class": "PixtralProcessor", "spatial_merge_size": 2}
# Mistral 3's image tokens (Tekken ids 10, 12, 13 in the published tokenizer); here added tokens 1000-1002 after the
# trimmed 1000-entry BPE vocabulary of testdata/arch/mistral3.
MISTRAL3_IMAGE_TOKENS = ["[IMG]", "[IMG_BREAK]", "[IMG_END]"]

VISION = {
    # Mistral 3.1 (Mistral3ForConditionalGeneration): testdata/arch/mistral3's text model (hidden 64, 2 layers, GQA
    # 4/2 of head_dim 32, rope 1e9, untied) with vocab 1003, a Pixtral tower of 3 layers (the converter maps multi_modal_projector.linear_{1,2} by block index, so fewer than 3 cannot convert), width 32, 2 heads of 16
    # (2-D RoPE, theta 1e4), on images up to 84×84 in 14×14 patches, merged 2×2 (spatial_merge_size 2).
    "mistral3": dict(
        cls="Mistral3ForConditionalGeneration", config="Mistral3Config",
        spec=dict(text_config=dict(model_type="mistral", vocab_size=1003, hidden_size=64, intermediate_size=128,
                                   num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=32,
                                   hidden_act="silu", max_position_embeddings=128, rms_norm_eps=1e-6,
                                   rope_theta=1000000000.0, sliding_window=None, pad_token_id=999,
                                   bos_token_id=999, eos_token_id=999, tie_word_embeddings=False),
                  vision_config=dict(model_type="pixtral", hidden_size=32, intermediate_size=64,
                                     num_hidden_layers=3, num_attention_heads=2, head_dim=16, image_size=84,
                                     patch_size=14, rope_theta=10000.0, hidden_act="silu"),
                  image_token_index=1000, spatial_merge_size=2, projector_hidden_act="gelu",
                  multimodal_projector_bias=False, vision_feature_layer=-1, tie_word_embeddings=False),
        prompt="Describe this picture: [IMG] What is in it?", pre="gpt-2"),
}


def write_mistral3_tokenizer(hf):
    src = os.path.join(HERE, "..", "arch", "mistral3", "hf")
    for n in ("vocab.json", "merges.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(os.path.join(src, n), os.path.join(hf, n))
    G.add_tokens(hf, MISTRAL3_IMAGE_TOKENS)
    p = os.path.join(hf, "tokenizer_config.json")
    with open(p) as f:
        tc = json.load(f)
    tc["processor_class"] = "PixtralProcessor"
    with open(p, "w") as f:
        json.dump(tc, f, indent=2)
        f.write("\n")


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")


def make_mistral3(family, hf, model_cls):
    side = VISION[family]["spec"]["vision_config"]["image_size"]
    write_mistral3_tokenizer(hf)
    write_json(os.path.join(hf, "preprocessor_config.json"), dict(MISTRAL3_PREPROCESSOR, size={"longest_edge": side}))
    write_json(os.path.join(hf, "processor_config.json"), MISTRAL3_PROCESSOR)
    model = model_cls.from_pretrained(hf, attn_implementation="eager").eval()
    tok = transformers.AutoTokenizer.from_pretrained(hf, use_fast=False)
    improc = transformers.PixtralImageProcessor.from_pretrained(hf)
    processor = transformers.PixtralProcessor(image_processor=improc, tokenizer=tok, **{
        k: v for k, v in MISTRAL3_PROCESSOR.items() if k != "processor_class"})
    cases = []
    for name in IMAGES:
        path = os.path.join(HERE, "images", name)
        image = Image.open(path)
        inputs = processor(text=VISION[family]["prompt"], images=image, return_tensors="pt")
        pv, sizes = inputs["pixel_values"], inputs["image_sizes"]
        with torch.no_grad():
            vis = model.model.vision_tower(pv, image_sizes=sizes, output_hidden_states=True)
            features = model.model.get_image_features(pv, image_sizes=sizes, vision_feature_layer=-1)
            logits = model(**inputs).logits[0]
        feats = torch.cat(list(features), 0) if isinstance(features, (list, tuple)) else features
        cases.append({"image": "images/" + name, "width": image.width, "height": image.height,
                      "input_ids": inputs["input_ids"][0].tolist(), "image_sizes": sizes[0].tolist(),
                      "pixel_values": G.f32(pv[0]),
                      "vision_hidden_states": [G.f32(h[0]) for h in vis.hidden_states],
                      "vision_last_hidden_state": G.f32(vis.last_hidden_state[0]),
                      "image_features": G.f32(feats), "logits": G.f32(logits)})
        print(f"{family} {name}: {len(cases[-1]['input_ids'])} tokens, pixels {tuple(pv.shape)}, "
              f"features {tuple(feats.shape)}")
    return cases, "PixtralProcessor(PixtralImageProcessor, GPT2Tokenizer slow)"


def make(family, out):
    spec = VISION[family]
    seed = zlib.crc32(("vision-" + family).encode())
    torch.manual_seed(seed)
    config = getattr(transformers, spec["config"])(**spec["spec"])
    config._attn_implementation = "eager"
    model_cls = getattr(transformers, spec["cls"])
    model = model_cls(config).eval()
    G.randomize(model, seed)
    V.redraw_vision(model, seed)
    root = os.path.join(HERE, family)
    hf = os.path.join(root, "hf")
    shutil.rmtree(root, ignore_errors=True)
    model.save_pretrained(hf)
    cases, proc = {"mistral3": make_mistral3}[family](family, hf, model_cls)
    versions = {"transformers": transformers.__version__, "torch": torch.__version__, "model_class": spec["cls"],
                "seed": seed, "attn_implementation": "eager", "threads": 1, "prompt": spec["prompt"],
                "processor": proc}
    G.dump(os.path.join(hf, "reference.json"), dict(versions, cases=cases))

    llamacpp = os.environ["NEW_LLAMACPP"]
    sys.path.insert(0, os.path.join(llamacpp, "gguf-py"))
    dst = os.path.join(out, "vision", family)
    os.makedirs(dst, exist_ok=True)
    record = {"converter": "llama.cpp d32676d7 convert_hf_to_gguf.py", "outputs": {}}
    for outtype in OUTTYPES:
        for kind, extra in (("text", []), ("mmproj", ["--mmproj"])):
            f = os.path.join(dst, f"{family}-{kind}-{outtype}.gguf")
            if extra:
                cmd = V.convert(llamacpp, hf, f, outtype, extra)
            else:
                # the trimmed BPE vocabulary's pre-tokenizer named as testdata/arch's fixtures name it
                G.convert(llamacpp, hf, f, outtype, spec["pre"])
                cmd = " ".join(["convert_hf_to_gguf.py", os.path.relpath(hf, HERE), "--outtype", outtype,
                                "--outfile", os.path.basename(f)])
            rec = V.gguf_record(f)
            rec["command"] = cmd
            record["outputs"][f"{kind}-{outtype}"] = rec
    os.makedirs(os.path.join(root, "gguf"), exist_ok=True)
    shutil.copy(os.path.join(dst, f"{family}-mmproj-f32.gguf"), os.path.join(root, "gguf", f"mmproj-{family}-f32.gguf"))
    with open(os.path.join(root, "llamacpp.json"), "w") as fh:
        json.dump(record, fh, indent=1)
        fh.write("\n")
    return {"family": family, "seed": seed, "transformers": transformers.__version__, "torch": torch.__version__}


def main():
    out = sys.argv[1]
    fams = sys.argv[2:] or sorted(VISION)
    print(json.dumps({f: make(f, out) for f in fams}, indent=1))


if __name__ == "__main__":
    main()
