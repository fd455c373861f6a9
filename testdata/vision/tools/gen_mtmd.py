"""llama.cpp mtmd's outputs for testdata/vision/gemma3, for tfconv's runtime tests.

Converts gemma3/hf with llama.cpp's own convert_hf_to_gguf.py (text model and --mmproj, f32) into OUT, then runs
mtmd-dump (tools/mtmd_dump.cpp, built against the same llama.cpp) on the pair for each image of ../images with the
prompt "Describe this picture: <__media__> What is in it?" (mtmd's marker where the HF prompt has
<start_of_image>), and writes:

  gemma3/gguf/gemma3-f32.gguf   the text GGUF (the mmproj, mmproj-gemma3-f32.gguf, is already there: the same
                                converter's output of the same folder; checked byte-equal here)
  gemma3/gguf/mtmd.json         per image: mtmd's preprocessed tile (float32, base64), the prompt's ids (-1 at the
                                image), the image embeddings and the logits of the text positions after the image

For qwen2_5_vl (and qwen3_vl) it takes the GGUF pair gen_qwenvl.py made with llama.cpp's converter in
OUT/vision/F/ (the mmproj checked byte-equal to F/gguf/mmproj-F-f32.gguf; the 0.85 MB text GGUF is not kept, its
sha256 is recorded) and writes F/gguf/mtmd.json for images/qwen-wide.png and qwen-tall.png, same prompt, with
the tile as the sha256 of its float32 bytes (pixels_sha256) and its width and height (tile, tile_height).

Run in the trixie chroot from the repository root (families: gemma3 when none are named):
    NEW_LLAMACPP=$L PYTHONPATH=testdata/arch/pyshim-trixie:$TF/src \
        python3 testdata/vision/tools/gen_mtmd.py /work/fixtures-out /work/ref/mtmd-dump-d32676d7 [FAMILY ...]
"""
import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
VISION = os.path.dirname(HERE)
sys.path.insert(0, VISION)

import gen_vision  # noqa: E402  (convert)

PROMPT = "Describe this picture: <__media__> What is in it?"


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def run_dump(dump, text, proj, rec, name, prompt):
    img = os.path.join(VISION, "images", name + ".png")
    r = subprocess.run([dump, text, proj, img, prompt], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise RuntimeError("mtmd-dump failed:\n" + r.stderr[-3000:])
    case = json.loads(r.stdout)
    case["image"] = "images/" + name + ".png"
    rec["cases"].append(case)


def qwen(out, dump, family):
    """Qwen-VL: the GGUF pair gen_qwenvl.py converted with llama.cpp's converter (OUT/vision/F/F-text-f32.gguf and
    F-mmproj-f32.gguf; the text GGUF, 0.85 MB, is not kept), on images/qwen-{wide,tall}.png."""
    src = os.path.join(out, "vision", family)
    text, proj = os.path.join(src, family + "-text-f32.gguf"), os.path.join(src, family + "-mmproj-f32.gguf")
    kept = os.path.join(VISION, family, "gguf", "mmproj-" + family + "-f32.gguf")
    if sha(kept) != sha(proj):
        raise RuntimeError("the converter's mmproj differs from " + kept)
    rec = {"llama.cpp": "d32676d77426540327835040d5d3279728f0b4c8", "tool": "testdata/vision/tools/mtmd_dump.cpp",
           "converter": "gen_qwenvl.py (convert_hf_to_gguf.py hf --outtype f32 [--mmproj])",
           "text_gguf": family + "-text-f32.gguf", "text_sha256": sha(text), "mmproj_gguf": os.path.basename(kept),
           "prompt": PROMPT, "threads": 1, "flash_attn": False, "cases": []}
    for name in ("qwen-wide", "qwen-tall"):
        run_dump(dump, text, proj, rec, name, PROMPT)
        # The tile (up to 448×252 here) is kept as the sha256 of its float32 bytes: exact, and small.
        case = rec["cases"][-1]
        case["pixels_sha256"] = hashlib.sha256(base64.b64decode(case.pop("pixels"))).hexdigest()
    with open(os.path.join(VISION, family, "gguf", "mtmd.json"), "w") as f:
        json.dump(rec, f, separators=(",", ":"))
        f.write("\n")


def main():
    out, dump = sys.argv[1], sys.argv[2]
    families = sys.argv[3:] or ["gemma3"]
    for family in families:
        if family.startswith("qwen"):
            qwen(out, dump, family)
        elif family == "gemma3":
            gemma3(out, dump)
        else:
            raise SystemExit("unknown family " + family)


def gemma3(out, dump):
    llamacpp = os.environ["NEW_LLAMACPP"]
    hf = os.path.join(VISION, "gemma3", "hf")
    dst = os.path.join(out, "vlrun", "gemma3")
    os.makedirs(dst, exist_ok=True)
    text, proj = os.path.join(dst, "gemma3-text-f32.gguf"), os.path.join(dst, "gemma3-mmproj-f32.gguf")
    cmds = [gen_vision.convert(llamacpp, hf, text, "f32", []), gen_vision.convert(llamacpp, hf, proj, "f32", ["--mmproj"])]
    kept = os.path.join(VISION, "gemma3", "gguf", "mmproj-gemma3-f32.gguf")
    if sha(kept) != sha(proj):
        raise RuntimeError("the converter's mmproj differs from " + kept)
    shutil.copy(text, os.path.join(VISION, "gemma3", "gguf", "gemma3-f32.gguf"))
    rec = {"llama.cpp": "d32676d77426540327835040d5d3279728f0b4c8", "tool": "testdata/vision/tools/mtmd_dump.cpp",
           "converter": cmds, "text_gguf": "gemma3-f32.gguf", "mmproj_gguf": "mmproj-gemma3-f32.gguf",
           "prompt": PROMPT, "threads": 1, "flash_attn": False, "cases": []}
    for name in ("tall", "wide"):
        img = os.path.join(VISION, "images", name + ".png")
        r = subprocess.run([dump, text, proj, img, PROMPT], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            raise RuntimeError("mtmd-dump failed:\n" + r.stderr[-3000:])
        case = json.loads(r.stdout)
        case["image"] = "images/" + name + ".png"
        rec["cases"].append(case)
    with open(os.path.join(VISION, "gemma3", "gguf", "mtmd.json"), "w") as f:
        json.dump(rec, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
