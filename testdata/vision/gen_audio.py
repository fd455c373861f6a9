#!/usr/bin/env python3
"""A tiny audio-language checkpoint (Qwen2-Audio), made by the reference tools themselves (never by tfconv).

It writes, beside gen_vision.py's families:

  audio/chirp.wav        0.4 s of 16 kHz mono PCM 16-bit: a linear chirp 200 → 3000 Hz plus a 440 Hz tone, drawn
                         here with numpy and written with Python's wave module (deterministic, not downloaded)
  audio/tones.wav        21917 samples (1.37 s) of 16 kHz mono PCM 16-bit: 330 Hz and 1250 Hz tones under a 3 Hz
                         swell plus seeded noise; its 137 frames give an odd 69 encoder positions (the pool drops
                         the last) and 34 audio tokens
  qwen2audio/hf/         transformers' Qwen2AudioForConditionalGeneration with random weights (gen_fixtures.randomize,
                         then the encoder's LayerNorms 1 + N(0, 0.2²) and its convolutions N(0, 1/fan_in)), saved by
                         save_pretrained (float32 safetensors); the trimmed byte-level BPE tokenizer of
                         testdata/arch/qwen2 plus Qwen2-Audio's three audio tokens; Qwen/Qwen2-Audio-7B-Instruct's
                         published preprocessor_config.json (WhisperFeatureExtractor) unchanged: its sizes are the
                         input's (128 mel bins, 30 s windows), not the tower's
  qwen2audio/hf/reference.json
                         for audio/chirp.wav and audio/tones.wav: the feature extractor's input_features (the frames that hold audio and
                         the few after; every later frame is the one padding value, recorded), the processor's
                         input_ids for PROMPT, the encoder's hidden states over the audio's positions, its output,
                         the projected audio features and the prompt's logits (eval, eager, float32, 1 thread)
  qwen2audio/llamacpp.json
                         llama.cpp's convert_hf_to_gguf.py outputs of hf/ (text GGUF and --mmproj GGUF at f32, f16,
                         q8_0; the GGUFs themselves in OUT/vision/qwen2audio/), recorded as gen_vision.gguf_record does

Usage (from the repository root, in the Debian trixie chroot; testdata/vision/README.md says how):

  OPENBLAS_CORETYPE=Prescott NEW_LLAMACPP=$L PYTHONPATH=testdata/arch/pyshim-trixie:$TF/src python3 testdata/vision/gen_audio.py OUT
"""

import json
import os
import shutil
import sys
import wave
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "arch"))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402

import gen_fixtures as G  # noqa: E402  (randomize, convert, f32, dump)
import gen_vision as V  # noqa: E402  (gguf_record, OUTTYPES)

torch.set_num_threads(1)

RATE = 16000
WAV = "audio/chirp.wav"
WAV2 = "audio/tones.wav"

# Qwen/Qwen2-Audio-7B-Instruct's preprocessor_config.json as published (README.md says where it was read).
QWEN2AUDIO_PREPROCESSOR = {
    "chunk_length": 30, "feature_extractor_type": "WhisperFeatureExtractor", "feature_size": 128, "hop_length": 160,
    "n_fft": 400, "n_samples": 480000, "nb_max_frames": 3000, "padding_side": "right", "padding_value": 0.0,
    "processor_class": "Qwen2AudioProcessor", "return_attention_mask": True, "sampling_rate": 16000}

# Qwen2-Audio's audio tokens as its tokenizer names them (there 151646-151648, added tokens after the BPE vocabulary;
# here after the trimmed vocabulary's 1000, in the same order).
QWEN2AUDIO_TOKENS = ["<|AUDIO|>", "<|audio_bos|>", "<|audio_eos|>"]

SPEC = dict(
    # testdata/arch/qwen2's text model (2 layers, hidden 64, 4 heads / 2 KV heads), vocab 1003
    text_config=dict(model_type="qwen2", vocab_size=1003, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                     num_attention_heads=4, num_key_value_heads=2, hidden_act="silu", max_position_embeddings=128,
                     rms_norm_eps=1e-6, rope_theta=1000000.0, tie_word_embeddings=False, use_sliding_window=False,
                     bos_token_id=999, eos_token_id=999),
    # a Whisper-style encoder: 128 mel bins (the published extractor's), 3 layers of width 64, 2 heads, FFN 128;
    # max_source_positions stays 1500: the encoder takes exactly 30 s (3000 frames), as the real one does. 3 layers,
    # not 2: the converter maps conv1/conv2 through "audio_tower.conv{bid}" with bid < the block count, so with 2
    # layers it cannot name audio_tower.conv2 ("Can not map tensor")
    audio_config=dict(model_type="qwen2_audio_encoder", num_mel_bins=128, encoder_layers=3, encoder_attention_heads=2,
                      encoder_ffn_dim=128, d_model=64, max_source_positions=1500, activation_function="gelu",
                      scale_embedding=False),
    audio_token_index=1000)
PROMPT = "<|audio_bos|><|AUDIO|><|audio_eos|>What is this sound?"


def write_wav():
    """0.4 s, 16 kHz, mono, 16-bit: a linear chirp 200 → 3000 Hz (amplitude 0.4) plus a 440 Hz tone (0.25), with
    10 ms linear fades at both ends; samples rounded to the nearest int16."""
    n = RATE * 4 // 10
    t = np.arange(n, dtype=np.float64) / RATE
    f0, f1, dur = 200.0, 3000.0, n / RATE
    chirp = np.sin(2 * np.pi * (f0 * t + (f1 - f0) / (2 * dur) * t * t))
    x = 0.4 * chirp + 0.25 * np.sin(2 * np.pi * 440.0 * t)
    fade = np.minimum(1.0, np.minimum(np.arange(n) + 1, n - np.arange(n)) / (RATE / 100))
    pcm = np.round(x * fade * 32767).astype("<i2")
    path = os.path.join(HERE, WAV)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(pcm.tobytes())
    return path


def write_wav2():
    """21917 samples (1.37 s), 16 kHz, mono, 16-bit: 330 Hz (amplitude 0.3) and 1250 Hz (0.15) tones under a 3 Hz
    swell 0.6 + 0.4·sin, plus N(0, 0.02²) noise from numpy's default_rng(7), 10 ms linear fades; rounded to int16.
    Its length is not a multiple of the hop: ⌈21917/160⌉ = 137 frames, 69 encoder positions (odd), 34 tokens."""
    n = 21917
    t = np.arange(n, dtype=np.float64) / RATE
    swell = 0.6 + 0.4 * np.sin(2 * np.pi * 3.0 * t)
    x = swell * (0.3 * np.sin(2 * np.pi * 330.0 * t) + 0.15 * np.sin(2 * np.pi * 1250.0 * t))
    x += 0.02 * np.random.default_rng(7).standard_normal(n)
    fade = np.minimum(1.0, np.minimum(np.arange(n) + 1, n - np.arange(n)) / (RATE / 100))
    pcm = np.round(np.clip(x * fade, -1, 1) * 32767).astype("<i2")
    path = os.path.join(HERE, WAV2)
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(pcm.tobytes())
    return path


def read_wav(path):
    """The WAV's samples as float32 in [-1, 1): int16 / 32768, as miniaudio (llama.cpp's mtmd) decodes them."""
    with wave.open(path, "rb") as w:
        assert w.getnchannels() == 1 and w.getsampwidth() == 2 and w.getframerate() == RATE
        pcm = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
    return pcm.astype(np.float32) / 32768.0


def write_tokenizer(hf):
    """testdata/arch/qwen2's trimmed tokenizer plus the audio tokens as special added tokens (ids 1000 on), in both
    tokenizer_config.json and tokenizer.json."""
    src = os.path.join(HERE, "..", "arch", "qwen2", "hf")
    for n in ("vocab.json", "merges.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(os.path.join(src, n), os.path.join(hf, n))
    p = os.path.join(hf, "tokenizer_config.json")
    with open(p) as f:
        tc = json.load(f)
    for i, c in enumerate(QWEN2AUDIO_TOKENS):
        tc["added_tokens_decoder"][str(1000 + i)] = {"content": c, "lstrip": False, "normalized": False,
                                                      "rstrip": False, "single_word": False, "special": True}
    tc["processor_class"] = "Qwen2AudioProcessor"
    with open(p, "w") as f:
        json.dump(tc, f, indent=2)
        f.write("\n")
    p = os.path.join(hf, "tokenizer.json")
    with open(p) as f:
        tj = json.load(f)
    for i, c in enumerate(QWEN2AUDIO_TOKENS):
        tj["added_tokens"].append({"id": 1000 + i, "content": c, "single_word": False, "lstrip": False,
                                   "rstrip": False, "normalized": False, "special": True})
    with open(p, "w") as f:
        json.dump(tj, f, indent=2, ensure_ascii=False)
        f.write("\n")


def redraw_audio(model, seed):
    """After gen_fixtures.randomize: the encoder's convolutions [out, in, kernel] N(0, 1/(in·kernel)) (randomize
    reads 3-D weights as stacked experts) — its LayerNorms are already 1 + N(0, 0.2²)."""
    g = torch.Generator().manual_seed(seed + 5)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if name.startswith("audio_tower.") and p.dim() == 3:
                p.copy_(torch.randn(p.shape, generator=g) * (p.shape[1] * p.shape[2]) ** -0.5)


def reference_case(model, processor, name, path):
    """The processor's inputs for PROMPT with the clip at path, and transformers' encoder states, features and
    logits for them."""
    audio = read_wav(path)
    inputs = processor(text=PROMPT, audio=audio, sampling_rate=RATE, return_tensors="pt")
    feats = inputs["input_features"][0]  # [128, 3000]
    frames = int(inputs["feature_attention_mask"][0].sum())
    keep = frames + 4
    tail = feats[:, keep:]
    pad = float(tail[0, 0])
    assert bool((tail == tail[0, 0]).all()), "the frames after the audio are not one value"
    _, out_len = model.audio_tower._get_feat_extract_output_lengths(torch.tensor(frames))
    out_len = int(out_len)
    conv_len = (frames - 1) // 2 + 1
    with torch.no_grad():
        logits = model(**inputs).logits[0]
        # the encoder as forward runs it: keys past the audio's conv positions masked
        n = inputs["input_features"].shape[-1] // 2
        mask = torch.zeros(1, 1, n, n)
        mask[..., conv_len:] = float("-inf")
        enc = model.audio_tower(inputs["input_features"], attention_mask=mask, output_hidden_states=True)
        features = model.multi_modal_projector(enc.last_hidden_state)[0, :out_len]
    return {"audio": name, "samples": int(audio.shape[0]), "sampling_rate": RATE,
            "input_ids": inputs["input_ids"][0].tolist(),
            "feature_frames": frames, "input_features_kept": keep, "input_features_pad": G.f32(pad),
            "input_features": G.f32(feats[:, :keep]),
            "encoder_positions": conv_len, "audio_tokens": out_len,
            "audio_hidden_states": [G.f32(h[0, :conv_len]) for h in enc.hidden_states[:-1]],
            "audio_last_hidden_state": G.f32(enc.last_hidden_state[0, :out_len]),
            "audio_features": G.f32(features),
            "logits": G.f32(logits)}


FAMILY = "qwen2audio"


def make(out):
    make_hf()
    convert(out)


def make_hf():
    """hf/ and its reference.json (no conversion: convert() makes the GGUFs and llamacpp.json from hf/)."""
    family = FAMILY
    seed = zlib.crc32(("vision-" + family).encode())
    torch.manual_seed(seed)
    config = transformers.Qwen2AudioConfig(**SPEC)
    config._attn_implementation = "eager"
    model = transformers.Qwen2AudioForConditionalGeneration(config).eval()
    G.randomize(model, seed)
    redraw_audio(model, seed)
    root = os.path.join(HERE, family)
    hf = os.path.join(root, "hf")
    # hf/ only: the folder also holds files other tools made (mtmd-mel.json, gguf/mtmd.json; tools/README.md)
    shutil.rmtree(hf, ignore_errors=True)
    model.save_pretrained(hf)
    write_tokenizer(hf)
    with open(os.path.join(hf, "preprocessor_config.json"), "w") as f:
        json.dump(QWEN2AUDIO_PREPROCESSOR, f, indent=2)
        f.write("\n")

    model = transformers.Qwen2AudioForConditionalGeneration.from_pretrained(hf, attn_implementation="eager").eval()
    tok = transformers.AutoTokenizer.from_pretrained(hf, use_fast=False)
    fe = transformers.WhisperFeatureExtractor.from_pretrained(hf)
    processor = transformers.Qwen2AudioProcessor(feature_extractor=fe, tokenizer=tok)
    cases = [reference_case(model, processor, WAV, write_wav()), reference_case(model, processor, WAV2, write_wav2())]
    for c in cases:
        print(f"{family}: {c['audio']}: {c['feature_frames']} frames, {c['audio_tokens']} audio tokens, "
              f"{len(c['input_ids'])} ids, pad {c['input_features_pad']}")
    versions = {"transformers": transformers.__version__, "torch": torch.__version__,
                "model_class": "Qwen2AudioForConditionalGeneration", "seed": seed, "attn_implementation": "eager",
                "threads": 1, "prompt": PROMPT,
                "processor": "Qwen2AudioProcessor(WhisperFeatureExtractor, GPT2Tokenizer slow)"}
    G.dump(os.path.join(hf, "reference.json"), dict(versions, cases=cases))


def convert(out):
    """llama.cpp's conversion of hf/ into OUT/vision/qwen2audio/ and its record, llamacpp.json."""
    family = FAMILY
    root = os.path.join(HERE, family)
    hf = os.path.join(root, "hf")

    llamacpp = os.environ["NEW_LLAMACPP"]
    sys.path.insert(0, os.path.join(llamacpp, "gguf-py"))
    dst = os.path.join(out, "vision", family)
    os.makedirs(dst, exist_ok=True)
    record = {"converter": "llama.cpp d32676d7 convert_hf_to_gguf.py", "outputs": {}}
    for outtype in V.OUTTYPES:
        for kind, extra in (("text", []), ("mmproj", ["--mmproj"])):
            f = os.path.join(dst, f"{family}-{kind}-{outtype}.gguf")
            # the trimmed vocabulary hashes to no pre-tokenizer: named as testdata/arch/qwen2's ("gpt-2")
            cmd = G.convert(llamacpp, hf, f, outtype, "gpt-2", extra)
            rec = V.gguf_record(f)
            rec["command"] = cmd
            record["outputs"][f"{kind}-{outtype}"] = rec
    with open(os.path.join(root, "llamacpp.json"), "w") as fh:
        json.dump(record, fh, indent=1)
        fh.write("\n")


if __name__ == "__main__":
    make(sys.argv[1])
