"""llama.cpp mtmd's outputs for testdata/vision/mistral3 (Mistral 3.1 / Pixtral), for tfconv's runtime tests.

llama.cpp d32676d7's converter writes the mistral3 mmproj without `v.token_embd.img_break`, which its own mtmd
requires for a pixtral projector (clip.cpp: get_tensor(TN_TOK_IMG_BREAK), required): conversion/llava.py's
LlavaVisionModel means to copy row [IMG_BREAK] of the text embeddings into it (modify_tensors), but
MmprojModel.filter_tensors drops every `language_model.` tensor before modify_tensors sees it, and transformers
v4.57.6 saves the embeddings as `language_model.model.embed_tokens.weight` (as the published checkpoints hold them). So mtmd cannot load the converter's
file as it is. This script adds that one tensor as the converter's code means it (row 1001, [IMG_BREAK], of
hf/model.safetensors' embeddings, float32), with llama.cpp's own gguf-py (GGUFReader → GGUFWriter: every key and
tensor of the converter's mmproj in order, then the new tensor), and runs mtmd-dump (mtmd_dump.cpp, built against
the same llama.cpp) on the converter's text GGUF and that mmproj for each image of ../images with the prompt
"Describe this picture: <__media__> What is in it?". It writes:

  OUT/vision/mistral3/mistral3-mmproj-f32-imgbreak.gguf   the converter's mmproj + v.token_embd.img_break
  OUT/vision/mistral3/mistral3-mmproj-f16-imgbreak.gguf   the same for the converter's f16 mmproj
  mistral3/gguf/mtmd.json   per image: mtmd's preprocessed image (`pixels`, [3][tile_height][tile] float32
                            little-endian, base64), the prompt's ids (-1 at the image chunk's positions, [IMG_BREAK]
                            rows included), the image chunk's embeddings (the [IMG] rows and the [IMG_BREAK] rows
                            between the rows of the image) and the logits of the text positions after the image;
                            under "f16", the same on the f16 pair (the image chunk and the last position's logits)

OUT/vision/mistral3/ is gen_pixtral.py's output (the converter's GGUFs). Run in the trixie chroot from the
repository root:
    NEW_LLAMACPP=$L python3 testdata/vision/tools/gen_mtmd_pixtral.py /work/fixtures-out DUMP
"""
import hashlib
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
VISION = os.path.dirname(HERE)
PROMPT = "Describe this picture: <__media__> What is in it?"
IMG_BREAK = 1001  # [IMG_BREAK] in mistral3/hf's tokenizer (gen_pixtral.py's MISTRAL3_IMAGE_TOKENS)


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def add_img_break(src, dst, row):
    import numpy as np
    from gguf import GGUFReader, GGUFWriter, GGUFValueType

    r = GGUFReader(src)
    w = GGUFWriter(dst, arch=None)
    for name, field in r.fields.items():
        if name.startswith("GGUF."):
            continue
        vtype = field.types[0]
        if vtype == GGUFValueType.ARRAY:
            w.add_key_value(name, field.contents(), vtype, field.types[1])
        else:
            w.add_key_value(name, field.contents(), vtype)
    for t in r.tensors:
        shape = [int(x) for x in reversed(t.shape.tolist())]
        w.add_tensor(t.name, np.asarray(t.data).reshape(shape), raw_dtype=t.tensor_type)
    w.add_tensor("v.token_embd.img_break", row.astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    out, dump = sys.argv[1], sys.argv[2]
    sys.path.insert(0, os.path.join(os.environ["NEW_LLAMACPP"], "gguf-py"))
    from safetensors.numpy import load_file

    d = os.path.join(out, "vision", "mistral3")
    text, proj = os.path.join(d, "mistral3-text-f32.gguf"), os.path.join(d, "mistral3-mmproj-f32.gguf")
    kept = os.path.join(VISION, "mistral3", "gguf", "mmproj-mistral3-f32.gguf")
    if sha(kept) != sha(proj):
        raise RuntimeError("the converter's mmproj differs from " + kept)
    emb = load_file(os.path.join(VISION, "mistral3", "hf", "model.safetensors"))["language_model.model.embed_tokens.weight"]
    patched = os.path.join(d, "mistral3-mmproj-f32-imgbreak.gguf")
    add_img_break(proj, patched, emb[IMG_BREAK])
    rec = {"llama.cpp": "d32676d77426540327835040d5d3279728f0b4c8", "tool": "testdata/vision/tools/mtmd_dump.cpp",
           "generator": "testdata/vision/tools/gen_mtmd_pixtral.py", "text_gguf": "mistral3-text-f32.gguf",
           "text_gguf_sha256": sha(text), "mmproj_gguf": "mistral3-mmproj-f32-imgbreak.gguf",
           "mmproj_gguf_sha256": sha(patched), "prompt": PROMPT, "threads": 1, "flash_attn": False, "cases": []}
    for name in ("tall", "wide"):
        img = os.path.join(VISION, "images", name + ".png")
        r = subprocess.run([dump, text, patched, img, PROMPT], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            raise RuntimeError("mtmd-dump failed:\n" + r.stderr[-3000:])
        case = json.loads(r.stdout)
        case["image"] = "images/" + name + ".png"
        rec["cases"].append(case)
    # The f16 pair (the converter's --outtype f16 text GGUF and mmproj, the row added as float32, as the converter
    # writes 1-D tensors): mtmd's image chunk and the last position's logits.
    text16, proj16 = os.path.join(d, "mistral3-text-f16.gguf"), os.path.join(d, "mistral3-mmproj-f16.gguf")
    patched16 = os.path.join(d, "mistral3-mmproj-f16-imgbreak.gguf")
    add_img_break(proj16, patched16, emb[IMG_BREAK])
    rec["f16"] = {"text_gguf": "mistral3-text-f16.gguf", "text_gguf_sha256": sha(text16),
                  "mmproj_gguf": "mistral3-mmproj-f16-imgbreak.gguf", "mmproj_gguf_sha256": sha(patched16), "cases": []}
    for name in ("tall", "wide"):
        img = os.path.join(VISION, "images", name + ".png")
        r = subprocess.run([dump, text16, patched16, img, PROMPT], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            raise RuntimeError("mtmd-dump failed:\n" + r.stderr[-3000:])
        case = json.loads(r.stdout)
        last = max(case["logits"], key=int)
        rec["f16"]["cases"].append({"image": "images/" + name + ".png", "tokens": case["tokens"],
                                    "image_embd": case["image_embd"], "logits": {last: case["logits"][last]}})
    with open(os.path.join(VISION, "mistral3", "gguf", "mtmd.json"), "w") as f:
        json.dump(rec, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
