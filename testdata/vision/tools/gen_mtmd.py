"""llama.cpp mtmd's outputs for testdata/vision/gemma3, for tfconv's runtime tests.

Converts gemma3/hf with llama.cpp's own convert_hf_to_gguf.py (text model and --mmproj, f32) into OUT, then runs
mtmd-dump (tools/mtmd_dump.cpp, built against the same llama.cpp) on the pair for each image of ../images with the
prompt "Describe this picture: <__media__> What is in it?" (mtmd's marker where the HF prompt has
<start_of_image>), and writes:

  gemma3/gguf/gemma3-f32.gguf   the text GGUF (the mmproj, mmproj-gemma3-f32.gguf, is already there: the same
                                converter's output of the same folder; checked byte-equal here)
  gemma3/gguf/mtmd.json         per image: mtmd's preprocessed tile (float32, base64), the prompt's ids (-1 at the
                                image), the image embeddings and the logits of the text positions after the image

Run in the trixie chroot from the repository root:
    NEW_LLAMACPP=$L PYTHONPATH=testdata/arch/pyshim-trixie:$TF/src \
        python3 testdata/vision/tools/gen_mtmd.py /work/fixtures-out /work/ref/mtmd-dump-d32676d7
"""
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


def main():
    out, dump = sys.argv[1], sys.argv[2]
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
