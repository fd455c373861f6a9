"""Reference outputs of image preprocessing for tfconv's vision tests.

Writes testdata/vision/preprocess/{wide,tall}.png (two small deterministic
images) and testdata/vision/preprocess/transformers.json: Pillow's
Image.resize(BILINEAR) of each to a few sizes (u8 bytes, hex) and
transformers' Gemma3ImageProcessor (slow) pixel_values at one tile size.

Run in the trixie chroot (Pillow 11.1, numpy 2.2, transformers v4.57.6 on
PYTHONPATH with testdata/arch/pyshim-trixie), from the repository root:

    PYTHONPATH=testdata/arch/pyshim-trixie:$TF/src python3 testdata/vision/preprocess/gen_preprocess.py
"""
import json
import os

import numpy as np
import PIL
from PIL import Image
import transformers
from transformers.models.gemma3.image_processing_gemma3 import Gemma3ImageProcessor

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = HERE


def make(w, h, seed):
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([x * 255 // max(w - 1, 1), y * 255 // max(h - 1, 1), (x + y) * 7 % 256], -1)
    noise = rng.integers(-40, 41, size=(h, w, 3))
    return np.clip(base + noise, 0, 255).astype(np.uint8)


def main():
    images = {"wide": make(50, 31, 1), "tall": make(13, 20, 2)}
    out = {"pillow": PIL.__version__, "transformers": transformers.__version__, "images": {}}
    for name, arr in images.items():
        path = os.path.join(OUT, name + ".png")
        Image.fromarray(arr, "RGB").save(path)
        img = Image.open(path).convert("RGB")
        rec = {"width": img.width, "height": img.height, "pil_bilinear": {}}
        for w, h in [(32, 32), (7, 9), (64, 40), (50, 17)]:
            r = np.asarray(img.resize((w, h), resample=Image.BILINEAR))
            rec["pil_bilinear"][f"{w}x{h}"] = r.tobytes().hex()
        proc = Gemma3ImageProcessor(size={"height": 16, "width": 16}, image_mean=[0.5, 0.5, 0.5],
                                    image_std=[0.5, 0.5, 0.5], do_pan_and_scan=False)
        pv = proc(images=img, return_tensors="np")["pixel_values"][0]
        rec["gemma3_pixel_values_16"] = [float(v) for v in pv.astype(np.float32).reshape(-1)]
        out["images"][name] = rec
    # A JPEG (Pillow's encoder, quality 90, 4:2:0) of the vision fixture's wide.png, and Pillow's (libjpeg's)
    # decoding of it: Go's decoder differs in its inverse DCT and colour conversion.
    src = Image.open(os.path.join(os.path.dirname(OUT), "images", "wide.png")).convert("RGB")
    jpg = os.path.join(OUT, "wide.jpg")
    src.save(jpg, quality=90)
    dec = Image.open(jpg)
    out["jpeg"] = {"file": "wide.jpg", "subsampling": "4:2:0", "width": dec.width, "height": dec.height,
                   "pillow_rgb": np.asarray(dec.convert("RGB")).tobytes().hex()}
    with open(os.path.join(OUT, "transformers.json"), "w") as f:
        json.dump(out, f, indent=None, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
