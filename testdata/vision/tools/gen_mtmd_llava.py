"""llama.cpp mtmd's outputs for testdata/vision/idefics3 (and, as they come, llava15 and llavanext), for tfconv's
runtime tests against llama.cpp.

Takes llama.cpp's own conversion of each folder (gen_llava.py's GGUFs in OUT/vision/F/: the text GGUF at f16 and
the mmproj at f32, together under 1 MB), copies the pair to F/gguf/, runs mtmd-dump (tools/mtmd_dump.cpp, built
against the same llama.cpp) on it, and again with the f32 text GGUF left in OUT, for both images of gen_llava.py with the HF prompt's image token replaced by mtmd's
marker <__media__>, and writes F/gguf/mtmd.json: per image the sha256 of each of mtmd's tiles (float32 little-endian
[3][S][S], the slices row by row then the overview: a bit-for-bit check without shipping the pixels), the grid, the prompt's ids (-1 at the image), the image embeddings of every image
chunk in turn, and the logits of the prompt's last 8 positions (the text after the whole image): "logits" with the f16 text
GGUF, "logits_f32_text" with the f32 one.

    python3 testdata/vision/tools/gen_mtmd_llava.py /work/fixtures-out MTMD_DUMP [idefics3]
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

# family: (text GGUF shipped, text GGUF at f32, mmproj GGUF, the HF prompt's image token) as gen_llava.py names them
PAIRS = {
    "idefics3": ("idefics3-f16.gguf", "idefics3-f32.gguf", "mmproj-idefics3-f32.gguf", "<image>"),
    "llava15": ("llava15-f16.gguf", "llava15-f32.gguf", "mmproj-llava15-f32.legacy.gguf", "<image>"),
    "llavanext": ("llavanext-f16.gguf", "llavanext-f32.gguf", "mmproj-llavanext-f32.legacy.gguf", "<image>"),
}
IMAGES = ("vlllava-wide.png", "vlllava-tall.png")
LAST = 8


def main():
    out, dump = sys.argv[1], sys.argv[2]
    for fam in sys.argv[3:] or sorted(PAIRS):
        text, text32, proj, marker = PAIRS[fam]
        src = os.path.join(out, "vision", fam)
        dst = os.path.join(VISION, fam, "gguf")
        os.makedirs(dst, exist_ok=True)
        for f in (text, proj):
            shutil.copy(os.path.join(src, f), os.path.join(dst, f))
        with open(os.path.join(VISION, fam, "hf", "reference.json")) as f:
            ref = json.load(f)
        rec = {"llama.cpp": "d32676d77426540327835040d5d3279728f0b4c8", "tool": "testdata/vision/tools/mtmd_dump.cpp",
               "text_gguf": text, "text_gguf_f32": text32, "mmproj_gguf": proj, "threads": 1, "flash_attn": False, "cases": []}
        for name in IMAGES:
            prompt = ref["images"][name]["prompt"].replace(marker, "<__media__>", 1)
            runs = []
            for t in (os.path.join(dst, text), os.path.join(src, text32)):
                r = subprocess.run([dump, t, os.path.join(dst, proj), os.path.join(VISION, "images", name), prompt],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                if r.returncode != 0:
                    raise RuntimeError("mtmd-dump failed:\n" + r.stderr[-3000:])
                runs.append(json.loads(r.stdout))
            case, f32 = runs
            if f32["image_embd"] != case["image_embd"] or f32["tokens"] != case["tokens"]:
                raise RuntimeError("the f32 text model changed the image embeddings or the ids")
            n = len(case["tokens"])
            case["logits"] = {k: v for k, v in case["logits"].items() if int(k) >= n - LAST}
            case["logits_f32_text"] = {k: v for k, v in f32["logits"].items() if int(k) >= n - LAST}
            tiles = case.pop("tiles", [case["pixels"]])  # a fixed-size projector's one tile is "pixels"
            case["tiles_sha256"] = [hashlib.sha256(base64.b64decode(t)).hexdigest() for t in tiles]
            del case["pixels"]
            case["image"] = "images/" + name
            case["prompt"] = prompt
            rec["cases"].append(case)
        with open(os.path.join(dst, "mtmd.json"), "w") as f:
            json.dump(rec, f, separators=(",", ":"))
            f.write("\n")


if __name__ == "__main__":
    main()
