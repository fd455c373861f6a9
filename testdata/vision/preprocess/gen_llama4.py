"""Reference tilings of transformers' Llama4ImageProcessorFast for tfconv's vision tests.

Writes testdata/vision/preprocess/llama4.json: for each image (this folder's wide.png 50×31 and tall.png 13×20,
../images/wide.png 96×40 and tall.png 45×77) and each processor setting (tile size, max_patches,
resize_to_max_canvas false: v4.57.6 fails on true, an unbound
target_size_without_distortion), the processor's aspect_ratios (canvas rows, cols in tiles), pixel_values' shape and its
values as bfloat16 bits (the processor normalises in bfloat16), hex, 4 digits each, in pixel_values' order. The
settings are small tiles so that the images are upscaled, downscaled, fit unscaled and tiled several ways.

Run in the trixie chroot (torch 2.6, torchvision, transformers v4.57.6 on PYTHONPATH with
testdata/arch/pyshim-trixie), from the repository root:

    PYTHONPATH=testdata/arch/pyshim-trixie:$TF/src python3 testdata/vision/preprocess/gen_llama4.py
"""
import json
import os

import torch
import torchvision
import transformers
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
IMAGES = [os.path.join(HERE, "wide.png"), os.path.join(HERE, "tall.png"),
          os.path.join(HERE, "..", "images", "wide.png"), os.path.join(HERE, "..", "images", "tall.png")]
SETTINGS = [(14, 16, False), (14, 4, False), (28, 2, False), (14, 1, False)]


def main():
    torch.set_num_threads(1)
    out = {"transformers": transformers.__version__, "torch": torch.__version__,
           "torchvision": torchvision.__version__, "cpu_capability": torch.backends.cpu.get_cpu_capability(),
           "cases": []}
    for path in IMAGES:
        img = Image.open(path).convert("RGB")
        for tile, maxp, canvas in SETTINGS:
            proc = transformers.Llama4ImageProcessorFast(size={"height": tile, "width": tile}, max_patches=maxp,
                                                         resize_to_max_canvas=canvas)
            r = proc(images=img, return_tensors="pt")
            pv = r["pixel_values"]
            assert pv.dtype == torch.bfloat16, pv.dtype
            bits = pv.contiguous().view(torch.int16).reshape(-1).tolist()
            out["cases"].append({"image": os.path.relpath(path, HERE), "tile": tile, "max_patches": maxp,
                                 "resize_to_max_canvas": canvas,
                                 "aspect_ratio": r["aspect_ratios"][0].tolist(), "shape": list(pv.shape),
                                 "bf16": "".join("%04x" % (b & 0xffff) for b in bits)})
    with open(os.path.join(HERE, "llama4.json"), "w") as f:
        json.dump(out, f, indent=None, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
