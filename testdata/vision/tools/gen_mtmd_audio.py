"""llama.cpp mtmd's outputs for testdata/vision/qwen2audio, for tfconv's audio runtime tests.

Runs mtmd-dump (tools/mtmd_dump.cpp, built against llama.cpp d32676d7 with libmtmd) on llama.cpp's own conversion
of qwen2audio/hf — the f32 text GGUF and the f32 mmproj that gen_audio.py writes to OUT/vision/qwen2audio/ — with
audio/chirp.wav and audio/tones.wav and the prompt "<__media__>What is this sound?" (mtmd's marker where the HF prompt has
<|audio_bos|><|AUDIO|><|audio_eos|>; mtmd puts <|audio_bos|> and <|audio_eos|> around the clip itself), and writes

  qwen2audio/gguf/mtmd.json   the two GGUFs' names and sha256, per clip the prompt's ids (-1 at the clip's 750 positions: one
                              30 s window, encoded whole), the audio embeddings [750][64] as float32 little-endian
                              (base64, "audio_embd_f32"), and the logits of the text positions after the clip

Needs only Python's standard library (run it on the host or in the chroot), from the repository root:
    python3 testdata/vision/tools/gen_mtmd_audio.py /work/fixtures-out /work/ref/mtmd-dump-d32676d7
"""
import base64
import hashlib
import json
import os
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
VISION = os.path.dirname(HERE)

PROMPT = "<__media__>What is this sound?"
AUDIOS = ("audio/chirp.wav", "audio/tones.wav")


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def main():
    out, dump = sys.argv[1], sys.argv[2]
    src = os.path.join(out, "vision", "qwen2audio")
    text, proj = os.path.join(src, "qwen2audio-text-f32.gguf"), os.path.join(src, "qwen2audio-mmproj-f32.gguf")
    cases = []
    for name in AUDIOS:
        r = subprocess.run([dump, text, proj, os.path.join(VISION, name), PROMPT], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            raise RuntimeError("mtmd-dump failed:\n" + r.stderr[-3000:])
        case = json.loads(r.stdout)
        if not case.get("audio"):
            raise RuntimeError("mtmd-dump did not read the file as audio")
        embd = case.pop("image_embd")
        for k in ("image_width", "image_height", "tile", "pixels", "audio"):
            case.pop(k, None)
        flat = [x for row in embd for x in row]
        case["audio"] = name
        case["audio_embd_rows"] = len(embd)
        case["audio_embd_f32"] = base64.b64encode(struct.pack("<%df" % len(flat), *flat)).decode()
        cases.append(case)
    rec = {"llama.cpp": "d32676d77426540327835040d5d3279728f0b4c8", "tool": "testdata/vision/tools/mtmd_dump.cpp",
           "source": "gen_audio.py's llama.cpp conversion of qwen2audio/hf (OUT/vision/qwen2audio/)",
           "text_gguf": os.path.basename(text), "text_sha256": sha(text),
           "mmproj_gguf": os.path.basename(proj), "mmproj_sha256": sha(proj),
           "prompt": PROMPT, "threads": 1, "flash_attn": False, "cases": cases}
    dst = os.path.join(VISION, "qwen2audio", "gguf", "mtmd.json")
    with open(dst, "w") as f:
        json.dump(rec, f, separators=(",", ":"))
        f.write("\n")
    for c in cases:
        print(f"{dst}: {c['audio']}: {len(c['tokens'])} ids, {c['audio_embd_rows']} audio rows, "
              f"logits of {len(c['logits'])} positions")


if __name__ == "__main__":
    main()
