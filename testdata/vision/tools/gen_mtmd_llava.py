"""llama.cpp mtmd's outputs for testdata/vision/idefics3 (and, as they come, llava15, llavanext, internvl_chat and
llama4),
for tfconv's runtime tests against llama.cpp.

Takes llama.cpp's own conversion of each folder (gen_llava.py's GGUFs in OUT/vision/F/: the text GGUF at f16 and
the mmproj at f32, together under 1 MB; llama4's are gen_llama4.py's), copies the pair to F/gguf/, runs mtmd-dump (tools/mtmd_dump.cpp, built
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
    "internvl_chat": ("internvl-text-f16.gguf", "internvl-text-f32.gguf", "mmproj-internvl_chat-f32.gguf", "<IMG_CONTEXT>"),
    "llama4": ("llama4-text-f16.gguf", "llama4-text-f32.gguf", "llama4-mmproj-f32.gguf", "<|image|>"),
}
# InternVL: the text GGUFs and reference.json are internvl's (gen_internvl.py: the text GGUF converts byte for byte
# from both layouts); the mmproj is the one gen_internvl.py ships in internvl_chat/gguf (only that layout converts).
SOURCE = {"internvl_chat": "internvl"}
# The converter's f16 mmproj, where OUT has it (not shipped): its embeddings and, with the f32 text GGUF, its logits are
# recorded too ("image_embd_f16_mmproj", "logits_f16_mmproj").
MMPROJ_F16 = {"llama4": "llama4-mmproj-f16.gguf"}
IMAGES = ("vlllava-wide.png", "vlllava-tall.png")
IMAGES_OF = {"internvl_chat": ("wide.png", "tall.png"), "llama4": ("wide.png", "tall.png")}


def hf_prompt(ref, name):
    """The reference's prompt for image name (gen_llava.py's "images" map, or gen_internvl.py's "cases" list)."""
    if "images" in ref:
        return ref["images"][name]["prompt"]
    return next(c["prompt"] for c in ref["cases"] if c["image"] == "images/" + name)
LAST = 8


def main():
    out, dump = sys.argv[1], sys.argv[2]
    for fam in sys.argv[3:] or sorted(PAIRS):
        text, text32, proj, marker = PAIRS[fam]
        src = os.path.join(out, "vision", SOURCE.get(fam, fam))
        dst = os.path.join(VISION, fam, "gguf")
        os.makedirs(dst, exist_ok=True)
        for f in (text, proj):
            if os.path.exists(os.path.join(src, f)) or not os.path.exists(os.path.join(dst, f)):
                shutil.copy(os.path.join(src, f), os.path.join(dst, f))
        with open(os.path.join(VISION, SOURCE.get(fam, fam), "hf", "reference.json")) as f:
            ref = json.load(f)
        rec = {"llama.cpp": "d32676d77426540327835040d5d3279728f0b4c8", "tool": "testdata/vision/tools/mtmd_dump.cpp",
               "text_gguf": text, "text_gguf_f32": text32, "mmproj_gguf": proj, "threads": 1, "flash_attn": False, "cases": []}
        if fam in MMPROJ_F16:
            rec["mmproj_gguf_f16"] = MMPROJ_F16[fam]
        for name in IMAGES_OF.get(fam, IMAGES):
            prompt = hf_prompt(ref, name).replace(marker, "<__media__>", 1)
            runs = []
            pairs = [(os.path.join(dst, text), os.path.join(dst, proj)), (os.path.join(src, text32), os.path.join(dst, proj))]
            if fam in MMPROJ_F16:
                pairs.append((os.path.join(src, text32), os.path.join(src, MMPROJ_F16[fam])))
            for t, mm in pairs:
                r = subprocess.run([dump, t, mm, os.path.join(VISION, "images", name), prompt],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                if r.returncode != 0:
                    raise RuntimeError("mtmd-dump failed:\n" + r.stderr[-3000:])
                runs.append(json.loads(r.stdout))
            case, f32 = runs[:2]
            n = len(case["tokens"])
            if len(runs) == 3:
                if runs[2]["tokens"] != case["tokens"]:
                    raise RuntimeError("the f16 mmproj changed the ids")
                case["image_embd_f16_mmproj"] = runs[2]["image_embd"]
                case["logits_f16_mmproj"] = {k: v for k, v in runs[2]["logits"].items() if int(k) >= n - LAST}
            if f32["image_embd"] != case["image_embd"] or f32["tokens"] != case["tokens"]:
                raise RuntimeError("the f32 text model changed the image embeddings or the ids")
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
