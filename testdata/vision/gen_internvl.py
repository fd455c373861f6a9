#!/usr/bin/env python3
"""A tiny InternVL 3 checkpoint made by transformers' own InternVLForConditionalGeneration (the layout of the
published OpenGVLab/InternVL3-*-hf checkpoints), transformers' preprocessing and outputs on the two test images,
and what llama.cpp's converter writes from it (text GGUF and --mmproj GGUF).

This writes testdata/vision/internvl/:

  hf/                       the class's random-weight checkpoint (save_pretrained, float32 safetensors) with
                            vision_config.architectures ["InternVisionModel"] and text_config.architectures
                            ["Qwen2ForCausalLM"], as the published -hf checkpoints carry them (transformers'
                            convert_internvl_weights_to_hf.py keeps the original vision config's architectures;
                            llama.cpp's converter picks its classes from these two entries); the trimmed GPT-2
                            tokenizer of testdata/arch (shared/fixtures/interop/gpt2) plus the published tokenizer's
                            ChatML and InternVL tokens as special added tokens from id 1000 and the
                            extra_special_tokens naming <img>, </img>, <IMG_CONTEXT>, <video>; preprocessor_config.json
                            and processor_config.json as GotOcr2ImageProcessorFast and InternVLProcessor save them
                            with the arguments transformers' conversion script gives them for InternVL3, only the
                            tile size 448 -> 56 and image_seq_length 256 -> 4 changed
  hf/reference.json         per image: the processor's input_ids, the number of tiles, image_features (what
                            get_image_features gives the text model, one row per <IMG_CONTEXT>) and name, shape and
                            sha256 of each tensor of reference.safetensors; eval, eager, float32, 1 thread
  hf/reference.safetensors  per image I: pixel_values.I ([tiles, 3, 56, 56]), vision_last_hidden_state.I,
                            image_features.I and logits.I (the expanded prompt with the image)
  llamacpp.json             what convert_hf_to_gguf.py writes (text GGUF and --mmproj GGUF at f32, f16, q8_0), in
                            gen_vision.py's format (gguf_record); the GGUFs go to <out>/vision/internvl/ (outside
                            the repository), and the f32 projector is kept in gguf/mmproj-internvl-f32.gguf

tfconv's code is never run. Usage, from the repository root, in the Debian trixie chroot of testdata/arch/README.md:

  OPENBLAS_CORETYPE=Prescott PYTHONPATH=testdata/arch/pyshim-trixie:$TF/src python3 testdata/vision/gen_internvl.py \
      $L /work/shared/fixtures /work/fixtures-out
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

FAMILY = "internvl"

# The published tokenizer's ChatML turn tokens and InternVL's image tokens, in their published order (there
# <|im_start|> 151644, <|im_end|> 151645, <img> 151665 … </box> 151673), appended after the trimmed vocabulary;
# <video> is named by the published tokenizer_config's extra_special_tokens.
TOKENS = ["<|im_start|>", "<|im_end|>", "<img>", "</img>", "<IMG_CONTEXT>", "<quad>", "</quad>", "<ref>", "</ref>",
          "<box>", "</box>", "<video>"]
TOK = {c: 1000 + i for i, c in enumerate(TOKENS)}
EXTRA_SPECIAL = {"start_image_token": "<img>", "end_image_token": "</img>", "context_image_token": "<IMG_CONTEXT>",
                 "video_token": "<video>"}

# InternVL3-1B's shape at tiny sizes. Vision: InternViT-300M's form (LayerNorm, qkv bias, no q/k norm, GELU, layer
# scale, learned absolute positions with a class token), hidden 32, 2 heads, tile 56 with patch 14 (4×4 patches);
# 4 layers, not 2: the converter maps the projector's mlp1.3 (linear_2) through its per-block tensor table, built
# for the tower's num_hidden_layers blocks. Text: Qwen2.5's decoder (Q/K/V biases), GQA 4/2, untied head.
VISION = dict(hidden_size=32, num_hidden_layers=4, num_attention_heads=2, intermediate_size=64, attention_bias=True,
              use_qk_norm=False, hidden_act="gelu", norm_type="layer_norm", layer_norm_eps=1e-6, image_size=[56, 56],
              patch_size=[14, 14], num_channels=3, use_mask_token=False, use_absolute_position_embeddings=True,
              layer_scale_init_value=0.1, use_mean_pooling=True, architectures=["InternVisionModel"])
TEXT = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
            vocab_size=1024, max_position_embeddings=128, rope_theta=1000000.0, rms_norm_eps=1e-6,
            use_sliding_window=False, sliding_window=None, max_window_layers=2, tie_word_embeddings=False,
            bos_token_id=999, eos_token_id=TOK["<|im_end|>"], hidden_act="silu", attention_dropout=0.0,
            architectures=["Qwen2ForCausalLM"])
IMAGE_SEQ_LENGTH = 4  # (56 / 14)² patches, pixel-shuffled by downsample_ratio 0.5: 2×2 tokens a tile

# The arguments transformers' convert_internvl_weights_to_hf.py (write_image_processor) gives the image processor
# of the InternVL3 -hf checkpoints, the size made 56.
IMAGE_PROCESSOR = dict(do_resize=True, size={"height": 56, "width": 56}, do_rescale=True, rescale_factor=1 / 255,
                       do_normalize=True, image_mean=[0.485, 0.456, 0.406], image_std=[0.229, 0.224, 0.225],
                       do_convert_rgb=True)

IMAGES = ["wide", "tall"]  # images/wide.png (96×40) and images/tall.png (45×77): gen_vision.py's

# A ChatML user turn holding the image placeholder once, as the -hf chat template writes it ("<IMG_CONTEXT>\n");
# the processor expands it to <img> + image_seq_length × tiles <IMG_CONTEXT> + </img>.
PROMPT = "<|im_start|>user\n<IMG_CONTEXT>\nDescribe this picture.<|im_end|>\n<|im_start|>assistant\n"

OUTTYPES = ("f32", "f16", "q8_0")


def redraw_conv(model, seed):
    """randomize() reads a 4-D weight as a norm's; the patch convolution [out, in, kh, kw] is drawn
    N(0, 1/fan_in), fan_in = in·kh·kw."""
    gen = torch.Generator().manual_seed(seed + 5)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if p.dim() == 4:
                p.copy_(torch.randn(p.shape, generator=gen) * (p[0].numel()) ** -0.5)


def write_tokenizer(hf, shared):
    g.copy_tokenizer("bpe", shared, hf, False)
    g.add_tokens(hf, TOKENS)
    p = os.path.join(hf, "tokenizer_config.json")
    with open(p) as f:
        tc = json.load(f)
    tc["extra_special_tokens"] = EXTRA_SPECIAL
    tc["processor_class"] = "InternVLProcessor"
    with open(p, "w") as f:
        json.dump(tc, f, indent=2)
        f.write("\n")


def sha(t):
    return hashlib.sha256(np.ascontiguousarray(t.detach().numpy().astype(np.float32)).tobytes()).hexdigest()


def processor_files(hf):
    """preprocessor_config.json as GotOcr2ImageProcessorFast saves it for InternVLProcessor, and
    processor_config.json in the published checkpoints' form: InternVLProcessor's one setting and its class."""
    ip = transformers.GotOcr2ImageProcessorFast(**IMAGE_PROCESSOR)
    ip._set_processor_class("InternVLProcessor")
    ip.save_pretrained(hf)
    with open(os.path.join(hf, "processor_config.json"), "w") as f:
        json.dump({"image_seq_length": IMAGE_SEQ_LENGTH, "processor_class": "InternVLProcessor"}, f, indent=2,
                  sort_keys=True)
        f.write("\n")


def make(shared):
    seed = zlib.crc32(("vision-" + FAMILY).encode())
    torch.manual_seed(seed)
    config = transformers.InternVLConfig(vision_config=VISION, text_config=TEXT, image_token_id=TOK["<IMG_CONTEXT>"],
                                         image_seq_length=IMAGE_SEQ_LENGTH, downsample_ratio=0.5,
                                         projector_hidden_act="gelu", vision_feature_layer=-1,
                                         vision_feature_select_strategy="default")
    config._attn_implementation = "eager"
    model = transformers.InternVLForConditionalGeneration(config).eval()
    g.randomize(model, seed)
    redraw_conv(model, seed)
    root = os.path.join(HERE, FAMILY)
    hf = os.path.join(root, "hf")
    shutil.rmtree(root, ignore_errors=True)
    model.save_pretrained(hf)
    write_tokenizer(hf, shared)
    processor_files(hf)

    # Reload what was saved, so the references are those of the files.
    model = transformers.InternVLForConditionalGeneration.from_pretrained(hf, attn_implementation="eager").eval()
    proc = transformers.AutoProcessor.from_pretrained(hf, use_fast=False)
    ip = transformers.AutoImageProcessor.from_pretrained(hf)
    proc.image_processor = ip
    from PIL import Image
    tensors, cases = {}, []
    for name in IMAGES:
        im = Image.open(os.path.join(HERE, "images", name + ".png")).convert("RGB")
        out = proc(text=[PROMPT], images=[im], return_tensors="pt")
        pv, ids = out["pixel_values"], out["input_ids"]
        with torch.no_grad():
            vis = model.model.vision_tower(pixel_values=pv).last_hidden_state
            feats = model.get_image_features(pv)
            feats = feats.reshape(-1, feats.shape[-1])
            logits = model(input_ids=ids, pixel_values=pv, attention_mask=out["attention_mask"]).logits[0]
        n = int((ids[0] == config.image_token_id).sum())
        assert n == feats.shape[0], (n, feats.shape)
        tensors[f"pixel_values.{name}"] = pv.contiguous()
        tensors[f"vision_last_hidden_state.{name}"] = vis.contiguous()
        tensors[f"image_features.{name}"] = feats.contiguous()
        tensors[f"logits.{name}"] = logits.contiguous()
        keys = ["pixel_values", "vision_last_hidden_state", "image_features", "logits"]
        cases.append({"image": f"images/{name}.png", "width": im.size[0], "height": im.size[1],
                      "tiles": int(pv.shape[0]), "image_tokens": n, "prompt": PROMPT,
                      "input_ids": ids[0].tolist(), "image_features": g.f32(feats),
                      "tensors": {k: {"name": f"{k}.{name}", "shape": list(tensors[f"{k}.{name}"].shape),
                                      "sha256": sha(tensors[f"{k}.{name}"])} for k in keys}})
        print(f"{FAMILY} {name}: {pv.shape[0]} tiles, {n} image tokens, {ids.shape[1]} ids, "
              f"|logits|max {float(logits.abs().max()):.3g}")
    from safetensors.torch import save_file
    save_file(tensors, os.path.join(hf, "reference.safetensors"), metadata={"format": "pt"})
    g.dump(os.path.join(hf, "reference.json"),
           {"transformers": transformers.__version__, "torch": torch.__version__,
            "model_class": "InternVLForConditionalGeneration",
            "processor": "InternVLProcessor(GotOcr2ImageProcessorFast, GPT2Tokenizer slow), crop_to_patches "
                         "(the processor's default for images)", "seed": seed, "attn_implementation": "eager",
            "threads": 1, "tensors_file": "reference.safetensors", "cases": cases})


def convert(llamacpp, out, family):
    """The text GGUF and the projector at each outtype, recorded as gen_qwenvl.convert does (gen_fixtures.convert
    names the trimmed vocabulary's pre-tokenizer "gpt-2")."""
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
    if family != FAMILY:  # the -hf layout's projector has no tensors (README)
        os.makedirs(os.path.join(HERE, family, "gguf"), exist_ok=True)
        shutil.copy(os.path.join(dst, f"{family}-mmproj-f32.gguf"),
                    os.path.join(HERE, family, "gguf", f"mmproj-{family}-f32.gguf"))
    with open(os.path.join(HERE, family, "llamacpp.json"), "w") as fh:
        json.dump(record, fh, indent=1)
        fh.write("\n")


# The original (remote-code) layout OpenGVLab publishes beside the -hf one (OpenGVLab/InternVL3-1B): tensor names
# of its InternVLChatModel (vision_model.*, mlp1.*, language_model.*, one fused attn.qkv) — the inverse of
# transformers' convert_internvl_weights_to_hf.py renaming — and its config.json (InternVLChatConfig: llm_config,
# vision_config of model_type intern_vit_6b, the dynamic-tiling keys), with the sizes of VISION and TEXT.
REMOTE_VISION_RENAMES = [("vision_tower.embeddings.cls_token", "vision_model.embeddings.class_embedding"),
                         ("vision_tower.embeddings.patch_embeddings.projection.", "vision_model.embeddings.patch_embedding."),
                         ("vision_tower.embeddings.position_embeddings", "vision_model.embeddings.position_embedding"),
                         ("vision_tower.encoder.layer.", "vision_model.encoder.layers."),
                         (".attention.projection_layer.", ".attn.proj."), (".lambda_1", ".ls1"), (".lambda_2", ".ls2"),
                         (".layernorm_before.", ".norm1."), (".layernorm_after.", ".norm2."),
                         ("multi_modal_projector.layer_norm.", "mlp1.0."), ("multi_modal_projector.linear_1.", "mlp1.1."),
                         ("multi_modal_projector.linear_2.", "mlp1.3.")]


def remote_config(config):
    """InternVL3-1B's config.json (InternVLChatConfig, as its published file and model.config print it: the
    stored-copy id 23730699571 of the find_string tool), the sizes made tiny, the text model's entries transformers'
    Qwen2Config saves."""
    llm = config.text_config.to_dict()
    for k in ("_name_or_path", "dtype", "torch_dtype", "transformers_version"):
        llm.pop(k, None)
    llm["architectures"] = ["Qwen2ForCausalLM"]
    v = VISION
    return {
        "architectures": ["InternVLChatModel"],
        "auto_map": {"AutoConfig": "configuration_internvl_chat.InternVLChatConfig",
                     "AutoModel": "modeling_internvl_chat.InternVLChatModel",
                     "AutoModelForCausalLM": "modeling_internvl_chat.InternVLChatModel"},
        "downsample_ratio": 0.5, "dynamic_image_size": True, "force_image_size": v["image_size"][0],
        "hidden_size": TEXT["hidden_size"], "image_fold": None, "llm_config": llm,
        "max_dynamic_patch": 12, "min_dynamic_patch": 1, "model_type": "internvl_chat", "output_attentions": False,
        "pad2square": False, "ps_version": "v2", "select_layer": -1, "system_message": None,
        "template": "internvl2_5", "tie_word_embeddings": False, "torch_dtype": "float32",
        "transformers_version": None, "use_backbone_lora": 0, "use_llm_lora": 0, "use_thumbnail": True,
        "vision_config": {
            "architectures": ["InternVisionModel"], "attention_dropout": 0.0,
            "auto_map": {"AutoConfig": "configuration_intern_vit.InternVisionConfig",
                         "AutoModel": "modeling_intern_vit.InternVisionModel"},
            "drop_path_rate": 0.0, "dropout": 0.0, "hidden_act": v["hidden_act"], "hidden_size": v["hidden_size"],
            "image_size": v["image_size"][0], "initializer_factor": 0.1, "initializer_range": 1e-10,
            "intermediate_size": v["intermediate_size"], "layer_norm_eps": v["layer_norm_eps"],
            "model_type": "intern_vit_6b", "norm_type": v["norm_type"],
            "num_attention_heads": v["num_attention_heads"], "num_channels": 3,
            "num_hidden_layers": v["num_hidden_layers"], "patch_size": v["patch_size"][0],
            "qk_normalization": v["use_qk_norm"], "qkv_bias": v["attention_bias"], "torch_dtype": "float32",
            "use_flash_attn": False},
    }


def make_remote():
    """testdata/vision/internvl_chat/hf: hf/'s weights (the same bytes) in the remote-code layout, with its config
    and the same tokenizer; preprocessor_config.json in the CLIPFeatureExtractor form those repositories ship
    (tile size 56, InternVL's ImageNet mean/std)."""
    from safetensors.torch import load_file, save_file
    src = os.path.join(HERE, FAMILY, "hf")
    dst = os.path.join(HERE, FAMILY + "_chat", "hf")
    shutil.rmtree(os.path.dirname(dst), ignore_errors=True)
    os.makedirs(dst)
    sd = load_file(os.path.join(src, "model.safetensors"))
    out, qkv = {}, {}
    for k, t in sd.items():
        n = k
        for a, b in REMOTE_VISION_RENAMES:
            n = n.replace(a, b)
        if ".attention." in n and n.startswith("vision_model."):
            layer, _, proj, kind = n.rsplit(".", 3)
            qkv.setdefault((layer, kind), {})[proj] = t
            continue
        out[n] = t.contiguous()
    for (layer, kind), parts in qkv.items():
        out[f"{layer}.attn.qkv.{kind}"] = torch.cat([parts["q_proj"], parts["k_proj"], parts["v_proj"]], 0).contiguous()
    save_file(out, os.path.join(dst, "model.safetensors"), metadata={"format": "pt"})
    config = transformers.InternVLConfig.from_pretrained(src)
    with open(os.path.join(dst, "config.json"), "w") as f:
        json.dump(remote_config(config), f, indent=2, sort_keys=True)
        f.write("\n")
    for n in ("vocab.json", "merges.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
              "generation_config.json"):
        shutil.copy(os.path.join(src, n), os.path.join(dst, n))
    side = VISION["image_size"][0]
    with open(os.path.join(dst, "preprocessor_config.json"), "w") as f:
        json.dump({"crop_size": side, "do_center_crop": True, "do_normalize": True, "do_resize": True,
                   "feature_extractor_type": "CLIPFeatureExtractor", "image_mean": IMAGE_PROCESSOR["image_mean"],
                   "image_std": IMAGE_PROCESSOR["image_std"], "resample": 3, "size": side}, f, indent=2)
        f.write("\n")


def main():
    llamacpp, shared, out = sys.argv[1:4]
    if sys.argv[4:5] != ["convert"]:
        make(shared)
    make_remote()
    convert(llamacpp, out, FAMILY)
    convert(llamacpp, out, FAMILY + "_chat")


if __name__ == "__main__":
    main()
