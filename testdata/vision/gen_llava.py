#!/usr/bin/env python3
"""Tiny LLaVA-1.5, LLaVA-NeXT and SmolVLM (Idefics3) checkpoints made by their own transformers classes, their
processors' outputs on two images, and what llama.cpp's converters write from them (issue 33).

For each family F in FAMILIES this writes testdata/vision/F/:

  hf/                    the class's save_pretrained (float32 safetensors, every parameter redrawn by
                         testdata/arch's randomize(), then the tower's patch convolution N(0, 1/fan_in) by
                         gen_vision's redraw_vision()), a trimmed 1000-entry tokenizer from shared/fixtures/interop
                         plus the image tokens the published tokenizer adds, and the published model's
                         preprocessor_config.json / processor_config.json with only the sizes changed (PREPROCESSOR)
  hf/reference.json      per image of images/: the processor's input_ids and pixel_values, the image features the
                         model computes (get_image_features, projector output) and the logits of the prompt with the
                         image (eval, eager attention, 1 thread, no_grad)
  llamacpp.json          what llama.cpp d32676d7's converters write from hf/ (text GGUF and projector GGUF, f32 and
                         f16), in gen_vision.gguf_record's form: every metadata key in order with its value, every
                         tensor's name, type, shape and sha256; or the converter's refusal ("refused") and, for the
                         LLaVA projectors it refuses, its legacy path's output ("mmproj-legacy-f32"): a clone without
                         the GGUFs is held to them

The GGUFs themselves go to OUT/vision/F/ (outside the repository). tfconv is never run. Usage (the Debian trixie
chroot of testdata/arch/README.md, transformers v4.57.6, from the repository root):

  OPENBLAS_CORETYPE=Prescott PYTHONPATH=testdata/arch/pyshim-trixie:$TF/src python3 testdata/vision/gen_llava.py \
      $LLAMACPP /work/shared/fixtures /work/fixtures-out [FAMILY ...]

Numbers are written as the shortest decimal that reads back as the same float32 (testdata/arch's f32()).
"""

import json
import os
import shutil
import subprocess
import sys
import zlib

import numpy as np
import torch
import transformers
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "arch"))
import gen_fixtures as gf  # noqa: E402  (randomize, f32, dump, copy_tokenizer, convert: one place for each)
import gen_vision as gv  # noqa: E402  (gguf_record: the one llamacpp.json form, which convert's tests read; redraw_vision)

torch.set_num_threads(1)

# The two images every family is run on (made by make_images(); vlllava- tells them from the other helpers').
# wide: 80×48, larger than every tiny tower's input, so LLaVA-NeXT and SmolVLM tile it; tall: 36×60.
IMAGES = {"vlllava-wide.png": (80, 48, 1), "vlllava-tall.png": (36, 60, 2)}

# The text model of every fixture: testdata/arch's tiny LLaMA (hidden 64, 2 layers, 4 heads), untied.
TEXT = dict(model_type="llama", architectures=["LlamaForCausalLM"], hidden_size=64, intermediate_size=128,
            num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=256,
            rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=False, bos_token_id=1, eos_token_id=2)

# CLIP ViT as in openai/clip-vit-large-patch14-336 (quick_gelu, pre-layernorm, eps 1e-5), 2 layers of width 32,
# 32-pixel images in 8-pixel patches (16 patches + the class embedding).
CLIP = dict(model_type="clip_vision_model", hidden_size=32, intermediate_size=64, num_hidden_layers=2,
            num_attention_heads=4, image_size=32, patch_size=8, projection_dim=32, hidden_act="quick_gelu",
            layer_norm_eps=1e-5)

CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073]
CLIP_STD = [0.26862954, 0.26130258, 0.27577711]

# The published preprocessor_config.json / processor_config.json, sizes scaled to the tiny towers (336 → 32).
# llava-hf/llava-1.5-7b-hf: CLIPImageProcessor of openai/clip-vit-large-patch14-336 (resize shortest edge 336,
# bicubic, centre crop 336) and LlavaProcessor (patch 14, strategy "default", one additional token: the class
# embedding the strategy drops).
PREPROCESSOR = {
    "llava15": ({"crop_size": {"height": 32, "width": 32}, "do_center_crop": True, "do_convert_rgb": True,
                 "do_normalize": True, "do_rescale": True, "do_resize": True, "image_mean": CLIP_MEAN,
                 "image_processor_type": "CLIPImageProcessor", "image_std": CLIP_STD,
                 "processor_class": "LlavaProcessor", "resample": 3, "rescale_factor": 0.00392156862745098,
                 "size": {"shortest_edge": 32}},
                {"image_token": "<image>", "num_additional_image_tokens": 1, "patch_size": 8,
                 "processor_class": "LlavaProcessor", "vision_feature_select_strategy": "default"}),
    # llava-hf/llava-v1.6-vicuna-7b-hf: LlavaNextImageProcessor (any-res: the best of image_grid_pinpoints, padded,
    # cut in 336-pixel tiles after a resized whole), LlavaNextProcessor.
    "llavanext": ({"aspect_ratio_setting": "anyres", "crop_size": {"height": 32, "width": 32}, "do_center_crop": True,
                   "do_convert_rgb": True, "do_normalize": True, "do_pad": True, "do_rescale": True, "do_resize": True,
                   "image_grid_pinpoints": [[32, 64], [64, 32], [64, 64], [96, 32], [32, 96]],
                   "image_mean": CLIP_MEAN, "image_processor_type": "LlavaNextImageProcessor", "image_std": CLIP_STD,
                   "processor_class": "LlavaNextProcessor", "resample": 3, "rescale_factor": 0.00392156862745098,
                   "size": {"shortest_edge": 32}},
                  {"image_token": "<image>", "num_additional_image_tokens": 1, "patch_size": 8,
                   "processor_class": "LlavaNextProcessor", "vision_feature_select_strategy": "default"}),
    # HuggingFaceTB/SmolVLM-256M-Instruct: Idefics3ImageProcessor (longest edge 2048, then tiles of 512 and the
    # whole image at 512; Lanczos), Idefics3Processor with image_seq_len 64 = (512/16)² / 4²; here 128, 32 and
    # (32/8)² / 2² = 4.
    "idefics3": ({"do_convert_rgb": True, "do_image_splitting": True, "do_normalize": True, "do_pad": True,
                  "do_rescale": True, "do_resize": True, "image_mean": [0.5, 0.5, 0.5],
                  "image_processor_type": "Idefics3ImageProcessor", "image_std": [0.5, 0.5, 0.5],
                  "max_image_size": {"longest_edge": 32}, "processor_class": "Idefics3Processor", "resample": 1,
                  "rescale_factor": 0.00392156862745098, "size": {"longest_edge": 128}},
                 {"image_seq_len": 4, "processor_class": "Idefics3Processor"}),
    # HuggingFaceTB/SmolVLM2-256M-Video-Instruct: SmolVLMImageProcessor (the same splitting as Idefics3's: longest
    # edge 2048, tiles of 512 and the whole image at 512, Lanczos; plus its video sampling, which images do not
    # use), SmolVLMProcessor with image_seq_len 64; sizes scaled as idefics3's.
    "smolvlm": ({"do_convert_rgb": True, "do_image_splitting": True, "do_normalize": True, "do_pad": True,
                 "do_rescale": True, "do_resize": True, "image_mean": [0.5, 0.5, 0.5],
                 "image_processor_type": "SmolVLMImageProcessor", "image_std": [0.5, 0.5, 0.5],
                 "max_image_size": {"longest_edge": 32}, "processor_class": "SmolVLMProcessor", "resample": 1,
                 "rescale_factor": 0.00392156862745098, "size": {"longest_edge": 128},
                 "video_sampling": {"fps": 1, "max_frames": 64, "video_size": {"longest_edge": 32}}},
                {"image_seq_len": 4, "processor_class": "SmolVLMProcessor"}),
}

PROMPT = {"llava15": "USER: <image>\nWhat is shown here? ASSISTANT:",
          "llavanext": "USER: <image>\nWhat is shown here? ASSISTANT:",
          "idefics3": "<|im_start|>User:<image>What is shown here?<end_of_utterance>\nAssistant:",
          "smolvlm": "<|im_start|>User:<image>What is shown here?<end_of_utterance>\nAssistant:"}

# SmolVLM's added tokens in the published order (<global-img> 49152, <row_1_col_1> … <row_6_col_6>,
# <fake_token_around_image> 49189, <image> 49190, <end_of_utterance> 49279), here from id 1000 on.
SMOLVLM_TOKENS = (["<global-img>"] + [f"<row_{i}_col_{j}>" for i in range(1, 7) for j in range(1, 7)] +
                  ["<fake_token_around_image>", "<image>", "<end_of_utterance>"])

# SigLIP as in SmolVLM's tower (gelu tanh, eps 1e-6, no class embedding), 2 layers of width 32, 32-pixel tiles in
# 8-pixel patches; the connector's pixel shuffle (scale_factor 2) makes 4 tokens of a tile's 16 patches.
SIGLIP = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, image_size=32,
              patch_size=8, hidden_act="gelu_pytorch_tanh", layer_norm_eps=1e-6)

# family -> (config, model class, tokenizer kind, added tokens from id 1000 on, pre-tokenizer for BPE)
FAMILIES = {
    # LLaVA-1.5 (llava-hf/llava-1.5-7b-hf's layout): vicuna (LLaMA) text model, <image> = 1000 and <pad> = 1001
    # after the trimmed SentencePiece vocabulary as 32000/32001 after LLaMA's; the projector a 2-layer MLP with
    # GELU over the second-to-last layer's patch features (the class embedding dropped).
    "llava15": (lambda: transformers.LlavaConfig(
        vision_config=CLIP, text_config=dict(TEXT, vocab_size=1002), image_token_index=1000,
        projector_hidden_act="gelu", vision_feature_select_strategy="default", vision_feature_layer=-2,
        image_seq_length=16, pad_token_id=1001, tie_word_embeddings=False),
        "LlavaForConditionalGeneration", "spm", ["<image>", "<pad>"], None),
    # LLaVA-NeXT (llava-hf/llava-v1.6-vicuna-7b-hf's layout): LLaVA-1.5's model plus image_newline, any-res tiles
    # over image_grid_pinpoints scaled 336 → 32.
    "llavanext": (lambda: transformers.LlavaNextConfig(
        vision_config=CLIP, text_config=dict(TEXT, vocab_size=1002), image_token_index=1000,
        projector_hidden_act="gelu", vision_feature_select_strategy="default", vision_feature_layer=-2,
        image_grid_pinpoints=[[32, 64], [64, 32], [64, 64], [96, 32], [32, 96]], image_seq_length=16,
        pad_token_id=1001, tie_word_embeddings=False),
        "LlavaNextForConditionalGeneration", "spm", ["<image>", "<pad>"], None),
    # SmolVLM (HuggingFaceTB/SmolVLM-256M-Instruct's layout, Idefics3ForConditionalGeneration): SigLIP tower,
    # pixel-shuffle connector, LLaMA text model (text_config.architectures VLlama3ForCausalLM, as published); the
    # trimmed GPT-2 BPE vocabulary plus SmolVLM's image tokens.
    "idefics3": (lambda: transformers.Idefics3Config(
        vision_config=SIGLIP, scale_factor=2, image_token_id=1038,
        text_config=dict(TEXT, architectures=["VLlama3ForCausalLM"], vocab_size=1040, pad_token_id=2),
        pad_token_id=2, tie_word_embeddings=False),
        "Idefics3ForConditionalGeneration", "bpe", SMOLVLM_TOKENS, "gpt-2"),
    # SmolVLM2 (HuggingFaceTB/SmolVLM2-256M-Video-Instruct's layout, SmolVLMForConditionalGeneration: transformers'
    # own class for it since 4.50): the same tower, connector and text model as idefics3 under the smolvlm names.
    "smolvlm": (lambda: transformers.SmolVLMConfig(
        vision_config=SIGLIP, scale_factor=2, image_token_id=1038,
        text_config=dict(TEXT, architectures=["VLlama3ForCausalLM"], vocab_size=1040, pad_token_id=2),
        pad_token_id=2, tie_word_embeddings=False),
        "SmolVLMForConditionalGeneration", "bpe", SMOLVLM_TOKENS, "gpt-2"),
}


# family -> the prefixes of its vision tower's parameter names (transformers v4.57.6's classes)
TOWERS = {"llava15": ("model.vision_tower.",), "llavanext": ("model.vision_tower.",),
          "idefics3": ("model.vision_model.",), "smolvlm": ("model.vision_model.",)}


def make_images():
    """Two deterministic RGB PNGs: smooth gradients with a few blocks of colour, so resizing filters matter."""
    out = {}
    for name, (w, h, seed) in IMAGES.items():
        g = np.random.default_rng(seed)
        y, x = np.mgrid[0:h, 0:w].astype(np.float64)
        img = np.stack([255 * x / (w - 1), 255 * y / (h - 1), 127.5 + 127.5 * np.sin((x + 2 * y) / 5.0)], -1)
        for _ in range(6):
            x0, y0 = int(g.integers(0, w - 8)), int(g.integers(0, h - 8))
            img[y0:y0 + int(g.integers(4, 12)), x0:x0 + int(g.integers(4, 12))] = g.integers(0, 256, 3)
        path = os.path.join(HERE, "images", name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        Image.fromarray(np.clip(np.rint(img), 0, 255).astype(np.uint8), "RGB").save(path, optimize=False)
        out[name] = path
    return out


def add_spm_tokens(dst, contents):
    """Appends special added tokens to a copied SentencePiece tokenizer (tokenizer_config.json's
    added_tokens_decoder, as transformers saves them), from id 1000 on."""
    p = os.path.join(dst, "tokenizer_config.json")
    with open(p) as f:
        tc = json.load(f)
    for i, c in enumerate(contents):
        tc["added_tokens_decoder"][str(1000 + i)] = {"content": c, "lstrip": False, "normalized": False,
                                                     "rstrip": False, "single_word": False, "special": True}
    with open(p, "w") as f:
        json.dump(tc, f, indent=2)
        f.write("\n")


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    return r.returncode, r.stdout, r.stderr


def converter(llamacpp, hf, out, outtype, pre, mmproj):
    """convert_hf_to_gguf.py as testdata/arch's convert() runs it (module imported, get_vocab_base_pre given the
    trimmed BPE vocabulary's source name), with --mmproj for the projector. Returns (command, error or None)."""
    args = [hf, "--outtype", outtype, "--outfile", out] + (["--mmproj"] if mmproj else [])
    cmd = " ".join(["convert_hf_to_gguf.py", os.path.relpath(hf, os.path.join(HERE, "..", "..")), "--outtype",
                    outtype, "--outfile", "OUT/vision/" + os.path.join(os.path.basename(os.path.dirname(out)),
                                                                        os.path.basename(out))]
                   + (["--mmproj"] if mmproj else []))
    if not mmproj:
        try:
            gf.convert(llamacpp, hf, out, outtype, pre)
        except RuntimeError as e:
            return cmd, str(e).strip().splitlines()[-1]
        return cmd, None
    code = ("import sys; sys.argv = sys.argv[1:]; sys.path.insert(0, %r); sys.path.insert(0, %r); "
            "import convert_hf_to_gguf as c; c.main()") % (os.path.join(llamacpp, "gguf-py"), llamacpp)
    rc, _, err = run([sys.executable, "-c", code, "convert_hf_to_gguf.py"] + args)
    if rc != 0:
        return cmd, err.strip().splitlines()[-1]
    return cmd, None


def legacy_llava_mmproj(llamacpp, hf, work, outtype, extra_vit):
    """llama.cpp's documented LLaVA path (docs/multimodal/llava.md, "LLaVA 1.6 gguf conversion", which takes
    llava-hf checkpoints too): tools/mtmd/legacy-models/llava_surgery_v2.py -C on a copy of the checkpoint (it
    splits off llava.clip and llava.projector), llava.clip as vit/pytorch_model.bin beside the CLIP vision config,
    then convert_image_encoder_to_gguf.py --clip-model-is-vision --llava-projector. Returns (commands, gguf path)."""
    legacy = os.path.join(llamacpp, "tools", "mtmd", "legacy-models")
    env = dict(os.environ, PYTHONPATH=os.path.join(llamacpp, "gguf-py") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    shutil.rmtree(work, ignore_errors=True)
    model = os.path.join(work, "model")
    shutil.copytree(hf, model)
    cmds = []
    rc, out, err = run([sys.executable, os.path.join(legacy, "llava_surgery_v2.py"), "-C", "-m", model], env=env)
    if rc != 0:
        raise RuntimeError("llava_surgery_v2.py failed:\n" + err[-3000:])
    cmds.append("llava_surgery_v2.py -C -m model")
    vit = os.path.join(work, "vit")
    os.makedirs(vit)
    shutil.copy(os.path.join(model, "llava.clip"), os.path.join(vit, "pytorch_model.bin"))
    shutil.copy(os.path.join(model, "llava.projector"), os.path.join(vit, "llava.projector"))
    with open(os.path.join(hf, "config.json")) as f:
        vc = dict(json.load(f)["vision_config"], architectures=["CLIPVisionModel"], **extra_vit)
    with open(os.path.join(vit, "config.json"), "w") as f:
        json.dump(vc, f, indent=2)
    args = ["-m", vit, "--llava-projector", os.path.join(vit, "llava.projector"), "--output-dir", vit,
            "--clip-model-is-vision"] + (["--use-f32"] if outtype == "f32" else [])
    rc, out, err = run([sys.executable, os.path.join(legacy, "convert_image_encoder_to_gguf.py")] + args, env=env)
    if rc != 0:
        raise RuntimeError("convert_image_encoder_to_gguf.py failed:\n" + err[-3000:])
    cmds.append("convert_image_encoder_to_gguf.py -m vit --llava-projector vit/llava.projector --output-dir vit "
                "--clip-model-is-vision" + (" --use-f32" if outtype == "f32" else ""))
    return cmds, os.path.join(vit, f"mmproj-model-{outtype}.gguf")


# Logits kept per image: the prompt's last rows (the text after the image, which attends to every image token), so
# that reference.json stays small.
LOGIT_ROWS = 8


def reference(family, hf, images):
    """The processor's outputs and the model's image features and logits for each image."""
    model_cls = getattr(transformers, FAMILIES[family][1])
    model = model_cls.from_pretrained(hf, attn_implementation="eager").eval()
    proc = transformers.AutoProcessor.from_pretrained(hf, use_fast=False)
    # The processor finds its token's id as encode(token)[0]; the slow SentencePiece tokenizer (the fast one needs
    # the Rust package) puts "▁" before a leading special token (legacy false), so the id is looked up directly.
    if hasattr(proc, "image_token_id"):
        proc.image_token_id = proc.tokenizer.convert_tokens_to_ids(proc.image_token)
    out = {}
    for name, path in images.items():
        img = Image.open(path)
        inp = proc(images=img, text=PROMPT[family], return_tensors="pt")
        with torch.no_grad():
            kw = {k: v for k, v in inp.items() if k not in ("input_ids", "attention_mask")}
            if family == "llava15":
                feats = model.get_image_features(pixel_values=inp["pixel_values"],
                                                 vision_feature_layer=model.config.vision_feature_layer,
                                                 vision_feature_select_strategy=model.config.vision_feature_select_strategy)
            elif family == "llavanext":
                # packed as the text model gets them: the base tile's features, then the tiles' unpadded grid with
                # image_newline after each row
                feats = model.get_image_features(pixel_values=inp["pixel_values"], image_sizes=inp["image_sizes"],
                                                 vision_feature_layer=model.config.vision_feature_layer,
                                                 vision_feature_select_strategy=model.config.vision_feature_select_strategy)
            else:
                # one row of image_seq_len connector outputs per tile (the tiles row by row, the whole image last)
                feats = model.get_image_features(pixel_values=inp["pixel_values"],
                                                 pixel_attention_mask=inp["pixel_attention_mask"])
            feats = torch.cat([f.reshape(-1, f.shape[-1]) for f in (feats if isinstance(feats, (list, tuple)) else [feats])])
            logits = model(input_ids=inp["input_ids"], attention_mask=inp["attention_mask"], **kw).logits[0]
        pv = inp["pixel_values"]
        out[name] = {"image_size": list(img.size), "prompt": PROMPT[family],
                     "input_ids": inp["input_ids"][0].tolist(),
                     "pixel_values_shape": list(pv.shape), "pixel_values": gf.f32(pv.reshape(-1)),
                     **{k: v.tolist() for k, v in inp.items() if k == "image_sizes"},
                     "image_features_shape": list(feats.shape), "image_features": gf.f32(feats),
                     "logits_shape": list(logits.shape), "logits_rows": list(range(logits.shape[0] - LOGIT_ROWS, logits.shape[0])),
                     "logits": gf.f32(logits[-LOGIT_ROWS:])}
    return out


def make(family, llamacpp, shared, outroot, images):
    mk, model_cls, tok, added, pre = FAMILIES[family]
    seed = zlib.crc32(family.encode())
    torch.manual_seed(seed)
    config = mk()
    config._attn_implementation = "eager"
    model = getattr(transformers, model_cls)(config).eval()
    gf.randomize(model, seed)
    # the patch convolution N(0, 1/fan_in) as gen_vision's towers (randomize draws it as a norm, 1 + N(0, 0.2²),
    # which makes the tower's residual stream O(150) and float32 summation order visible at 1e-5)
    gv.redraw_vision(model, seed, towers=TOWERS[family], norms=False)
    root = os.path.join(HERE, family)
    hf = os.path.join(root, "hf")
    shutil.rmtree(root, ignore_errors=True)
    model.save_pretrained(hf)
    gf.copy_tokenizer(tok, shared, hf, False)
    if tok == "spm":
        add_spm_tokens(hf, added)
    else:
        gf.add_tokens(hf, added)
    pp, pc = PREPROCESSOR[family]
    gf.dump(os.path.join(hf, "preprocessor_config.json"), pp)
    gf.dump(os.path.join(hf, "processor_config.json"), pc)

    versions = {"transformers": transformers.__version__, "torch": torch.__version__, "model_class": model_cls,
                "seed": seed, "attn_implementation": "eager", "threads": 1}
    gf.dump(os.path.join(hf, "reference.json"), dict(versions, images=reference(family, hf, images)))

    # llama.cpp's converters, into OUT/vision/F/; the record into testdata.
    out = os.path.join(outroot, "vision", family)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    rec = {"converter": "llama.cpp " + open(os.path.join(llamacpp, "COMMIT")).read().strip()[:8] +
           " convert_hf_to_gguf.py (mmproj-legacy: its tools/mtmd/legacy-models)", "outputs": {}}
    for outtype in ("f32", "f16"):
        text = os.path.join(out, f"{family}-{outtype}.gguf")
        cmd, err = converter(llamacpp, hf, text, outtype, pre, False)
        rec["outputs"][f"text-{outtype}"] = {"command": cmd, **({"refused": err} if err else gv.gguf_record(text))}
        proj = os.path.join(out, f"mmproj-{family}-{outtype}.gguf")
        cmd, err = converter(llamacpp, hf, proj, outtype, pre, True)
        rec["outputs"][f"mmproj-{outtype}"] = {"command": cmd, **({"refused": err} if err else gv.gguf_record(proj))}
        if err is not None and family in LEGACY_VIT:
            cmds, g = legacy_llava_mmproj(llamacpp, hf, os.path.join(out, f"legacy-{outtype}"), outtype,
                                          LEGACY_VIT[family])
            shutil.copy(g, os.path.join(out, f"mmproj-{family}-{outtype}.legacy.gguf"))
            rec["outputs"][f"mmproj-legacy-{outtype}"] = {"command": " && ".join(cmds), **gv.gguf_record(g)}
    with open(os.path.join(root, "llamacpp.json"), "w") as f:
        json.dump(rec, f, indent=1)
        f.write("\n")
    print(family, {k: v.get("refused", "ok") for k, v in rec["outputs"].items()})


# Families whose projector the newest converter refuses and llama.cpp's legacy LLaVA path writes instead: the keys
# the vit/config.json of that path adds to the CLIP vision config (none for LLaVA-1.5).
# LLaVA-NeXT's: the any-res keys of liuhaotian/llava-v1.6-vicuna-7b's config.json that the script copies into the
# projector GGUF and llama.cpp's clip reads (image_grid_pinpoints, scaled as the model's; image_aspect_ratio anyres;
# mm_patch_merge_type spatial_unpad; mm_projector_type mlp2x_gelu).
LEGACY_VIT = {"llava15": {},
              "llavanext": {"image_grid_pinpoints": [[32, 64], [64, 32], [64, 64], [96, 32], [32, 96]],
                            "image_aspect_ratio": "anyres", "mm_patch_merge_type": "spatial_unpad",
                            "mm_projector_type": "mlp2x_gelu"}}


def main():
    llamacpp, shared, outroot = sys.argv[1:4]
    sys.path.insert(0, os.path.join(llamacpp, "gguf-py"))  # gen_vision.gguf_record reads the GGUFs with its gguf-py
    fams = sys.argv[4:] or sorted(FAMILIES)
    images = make_images()
    for fam in fams:
        make(fam, llamacpp, shared, outroot, images)


if __name__ == "__main__":
    main()
