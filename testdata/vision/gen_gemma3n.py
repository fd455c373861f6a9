#!/usr/bin/env python3
"""A tiny Gemma 3n (Gemma3nForConditionalGeneration) checkpoint made by transformers' own class — its MobileNetV5
vision tower built by timm, its Conformer audio encoder by transformers — and what llama.cpp's converter writes from
it: the text GGUF and the one mmproj holding both towers (issue 33).

The MobileNetV5 tower cannot be made small: timm's MobileNetV5Encoder fixes its output width at 2048 and the
mobilenetv5_300m_enc block list (4 stages, 16-head attention blocks of key width 96) is not a config.json setting;
only the channel multiplier and the fusion adapter's output grid are (vision_config.model_args). At channel multiplier
0.05 the class still has 6.8 M parameters (27 MB in float32), over what testdata/ may hold, so:

  OUT/vision/gemma3n/hf/          the class's save_pretrained (weights, every parameter redrawn) and the tokenizer
  OUT/vision/gemma3n/*.gguf       llama.cpp d32676d7's convert_hf_to_gguf.py outputs (text and --mmproj, f32, f16)
  testdata/vision/gemma3n/        config.json, the processor files and llamacpp.json (the record of the four GGUFs,
                                  gen_vision.gguf_record's form): what a clone holds without the weights

Usage (the Debian trixie chroot of testdata/arch/README.md, transformers v4.57.6, timm from
/work/ref/timm-aa4b5850 — huggingface/pytorch-image-models aa4b5850, timm 1.0.29.dev0: Debian has no timm —, from
the repository root):

  OPENBLAS_CORETYPE=Prescott PYTHONPATH=/work/ref/timm-aa4b5850:testdata/arch/pyshim-trixie:$TF/src \\
      python3 testdata/vision/gen_gemma3n.py $LLAMACPP /work/shared/fixtures /work/fixtures-out
"""

import json
import os
import shutil
import sys
import zlib

import timm
import torch
import transformers

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "arch"))
import gen_fixtures as gf  # noqa: E402  (randomize, dump, FAMILIES["gemma3n"]: the text model)
import gen_vision as gv  # noqa: E402  (gguf_record, redraw_vision)
import gen_llava as gl  # noqa: E402  (converter)

torch.set_num_threads(1)

FAMILY = "gemma3n"

# testdata/arch/gemma3n's text model (the shape llama.cpp computes: 2 sliding layers, hidden 64, per-layer inputs of
# 256, vocab 1024 of which the per-layer table covers 1000). Its ids 1000-1011 are the vision tower's 12 soft tokens
# (vision vocab_offset 1000, as Gemma 3n's 262144 follows its text vocabulary) and 1012-1023 the audio tower's.
TEXT = dict(gf.FAMILIES["gemma3n"][2])

# MobileNetV5 (timm mobilenetv5_300m_enc) at channel multiplier 0.05, its fusion adapter pooled to a 2 × 2 grid: a
# 64-pixel image gives 4 soft tokens (Gemma 3n's 768 pixels give 16 × 16 = 256). hidden_size 2048 is the adapter's
# width, which timm fixes.
VISION = dict(model_args={"channel_multiplier": 0.05, "msfa_output_resolution": 2}, hidden_size=2048,
              vocab_size=12, vocab_offset=1000, rms_norm_eps=1e-6)

# The Conformer audio encoder: 2 layers of width 32, 2 heads, the subsampling convolutions 8 and 4 channels wide
# (published: 12 layers of 1536, 8 heads, 128 and 32), 128 mel bins as published.
AUDIO = dict(hidden_size=32, conf_num_hidden_layers=2, conf_num_attention_heads=2, sscp_conv_channel_size=[8, 4],
             input_feat_size=128, vocab_size=12, vocab_offset=1012)

TOKENS = dict(boi_token_id=998, eoi_token_id=1000, image_token_id=1001, boa_token_id=999, eoa_token_id=1012,
              audio_token_id=1013, vision_soft_tokens_per_image=4, audio_soft_tokens_per_image=4)

# google/gemma-3n-E4B-it's preprocessor_config.json as recalled (no stored copy of it was found to read; the converter
# uses only size.height and image_seq_length) (SiglipImageProcessorFast for images, 768 × 768, no
# normalisation, image_seq_length 256; Gemma3nAudioFeatureExtractor for audio) with the image size 768 → 64 and
# image_seq_length 256 → 4; processor_config.json likewise (audio_seq_length 188 → 4). The converter reads
# size.height (clip.vision.image_size) and image_seq_length (patch size = image size / image_seq_length) from them.
PREPROCESSOR = {"crop_size": None, "data_format": "channels_first", "default_to_square": False, "device": None,
                "dither": 0.0, "do_center_crop": None, "do_convert_rgb": None, "do_normalize": False,
                "do_rescale": True, "do_resize": True, "feature_extractor_type": "Gemma3nAudioFeatureExtractor",
                "feature_size": 128, "fft_length": 1024, "fft_overdrive": True, "frame_length": 512,
                "hop_length": 160, "image_mean": [0.5, 0.5, 0.5], "image_processor_type": "SiglipImageProcessorFast",
                "image_seq_length": 4, "image_std": [0.5, 0.5, 0.5], "input_data_format": None,
                "input_scale_factor": 1.0, "max_frequency": 7600.0, "mel_floor": 1e-05, "min_frequency": 125.0,
                "padding_side": "right", "padding_value": 0.0, "per_bin_mean": None, "per_bin_stddev": None,
                "preemphasis": 0.97, "preemphasis_htk_flavor": True, "processor_class": "Gemma3nProcessor",
                "resample": 2, "rescale_factor": 0.00392156862745098, "return_attention_mask": True,
                "return_tensors": None, "sampling_rate": 16000, "size": {"height": 64, "width": 64}}
PROCESSOR = {"audio_seq_length": 4, "image_seq_length": 4, "processor_class": "Gemma3nProcessor"}


def redraw_audio(model, seed):
    """The Conformer's batch norms: running statistics drawn (mean N(0, 0.2²), variance 0.5 + U(0, 1)) so that the
    converter's folding of them into the norm's weight and bias is exercised (fresh ones are 0 and 1)."""
    g = torch.Generator().manual_seed(seed + 7)
    with torch.no_grad():
        for name, b in sorted(model.named_buffers()):
            if name.endswith("running_mean"):
                b.copy_(torch.randn(b.shape, generator=g) * 0.2)
            elif name.endswith("running_var"):
                b.copy_(0.5 + torch.rand(b.shape, generator=g))


def main():
    llamacpp, shared, outroot = sys.argv[1:4]
    sys.path.insert(0, os.path.join(llamacpp, "gguf-py"))
    seed = zlib.crc32(b"vision-gemma3n")
    torch.manual_seed(seed)
    config = transformers.Gemma3nConfig(text_config=TEXT, vision_config=VISION, audio_config=AUDIO, **TOKENS)
    config._attn_implementation = "eager"
    model = transformers.Gemma3nForConditionalGeneration(config).eval()
    gf.randomize(model, seed)
    gv.redraw_vision(model, seed)
    redraw_audio(model, seed)
    print("parameters", sum(p.numel() for p in model.parameters()))

    out = os.path.join(outroot, "vision", FAMILY)
    hf = os.path.join(out, "hf")
    shutil.rmtree(out, ignore_errors=True)
    model.save_pretrained(hf)
    # testdata/arch/gemma3n's tokenizer (the trimmed SentencePiece model of shared/fixtures/interop/llama)
    for n in ("tokenizer.model", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(os.path.join(HERE, "..", "arch", "gemma3n", "hf", n), os.path.join(hf, n))
    gf.dump(os.path.join(hf, "preprocessor_config.json"), PREPROCESSOR)
    gf.dump(os.path.join(hf, "processor_config.json"), PROCESSOR)

    rec = {"converter": "llama.cpp " + open(os.path.join(llamacpp, "COMMIT")).read().strip()[:8] +
           " convert_hf_to_gguf.py", "transformers": transformers.__version__, "timm": timm.__version__,
           "torch": torch.__version__, "seed": seed,
           "parameters": sum(p.numel() for p in model.parameters()), "outputs": {}}
    for outtype in ("f32", "f16"):
        for kind, mmproj in (("text", False), ("mmproj", True)):
            path = os.path.join(out, f"{FAMILY}-{kind}-{outtype}.gguf")
            cmd, err = gl.converter(llamacpp, hf, path, outtype, None, mmproj)
            rec["outputs"][f"{kind}-{outtype}"] = {"command": cmd, **({"refused": err} if err else gv.gguf_record(path))}
    root = os.path.join(HERE, FAMILY)
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    for n in ("config.json", "preprocessor_config.json", "processor_config.json"):
        shutil.copy(os.path.join(hf, n), os.path.join(root, n))
    with open(os.path.join(root, "llamacpp.json"), "w") as f:
        json.dump(rec, f, indent=1)
        f.write("\n")
    print(FAMILY, {k: v.get("refused", "ok") for k, v in rec["outputs"].items()})


if __name__ == "__main__":
    main()
