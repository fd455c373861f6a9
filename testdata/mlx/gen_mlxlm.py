"""Runs mlx-lm's own conversion and save code on tfconv's fixtures and records what it wrote.

mlx-lm (ml-explore/mlx-lm d78bf58) and MLX (ml-explore/mlx 846d176, its Python bindings built from the fetched
source: testdata/mlx/README.md) are not tfconv's: this script only calls mlx_lm.convert.convert, the function
behind `mlx_lm.convert`, unmodified, and then reads the directories it wrote with the safetensors library.

Run in the Debian trixie chroot, from a tfconv checkout:

    PYTHONPATH=/work/ref/mlx-846d176/py:/work/ref/mlx-lm-d78bf58:testdata/arch/pyshim-trixie:/work/ref/transformers-v4.57.6/src \\
        python3 testdata/mlx/gen_mlxlm.py OUT_DIR testdata/mlx/mlxlm.json

OUT_DIR receives one directory per case (kept outside the repository; the test compares tfconv's output with the
hashes printed here). A case's directory may also be copied into testdata/mlx (say so in the README).
"""

import hashlib
import json
import shutil
import sys
from pathlib import Path

import transformers
import mlx_lm.tokenizer_utils
import mlx_lm.utils
from mlx_lm.convert import convert  # mlx-lm's own code


class _SlowAutoTokenizer:
    """The chroot's transformers runs without the `tokenizers` library (testdata/arch/README.md: slow tokenizers), so
    mlx-lm's tokenizer load is given use_fast=False, and saving it (which the slow class cannot do with the stand-in
    `tokenizers` module's AddedToken) copies the source's tokenizer files instead. The tokenizer only decides the
    tokenizer files in mlx-lm's output, which nothing here records: the weights and config.json are written by
    mlx-lm's own code, untouched."""

    @staticmethod
    def from_pretrained(path, **kw):
        tok = transformers.AutoTokenizer.from_pretrained(path, use_fast=False, **kw)

        def save_pretrained(dst, **_):
            for f in Path(path).glob("*"):
                if f.name.startswith(("tokenizer", "vocab", "merges", "special_tokens")):
                    shutil.copy(f, dst)

        tok.save_pretrained = save_pretrained
        return tok


mlx_lm.tokenizer_utils.AutoTokenizer = _SlowAutoTokenizer
# The model card (README.md) needs huggingface_hub's ModelCard, which the stand-in module lacks; it is not recorded.
mlx_lm.utils.create_model_card = lambda *a, **k: None

ROOT = Path(__file__).resolve().parents[2]

# name, fixture, mlx_lm.convert keyword arguments; the tfconv command the test runs for the same result
CASES = [
    ("smollm3-q4g64", "testdata/arch/smollm3/hf", dict(quantize=True, q_bits=4, q_group_size=64),
     "quantize SRC DIR --to mlx --bits 4 --group-size 64"),
    ("smollm3-q8g32", "testdata/arch/smollm3/hf", dict(quantize=True, q_bits=8, q_group_size=32),
     "quantize SRC DIR --to mlx --bits 8 --group-size 32"),
    ("smollm3-mxfp4", "testdata/arch/smollm3/hf", dict(quantize=True, q_mode="mxfp4"),
     "quantize SRC DIR --to mlx --mode mxfp4"),
    ("smollm3-nvfp4", "testdata/arch/smollm3/hf", dict(quantize=True, q_mode="nvfp4"),
     "quantize SRC DIR --to mlx --mode nvfp4"),
    ("smollm3-mxfp8", "testdata/arch/smollm3/hf", dict(quantize=True, q_mode="mxfp8"),
     "quantize SRC DIR --to mlx --mode mxfp8"),
    ("qwen3moe-q4g32", "testdata/arch/qwen3moe/hf", dict(quantize=True, q_bits=4, q_group_size=32),
     "quantize SRC DIR --to mlx --bits 4 --group-size 32"),
    ("gptoss", "testdata/arch/gptoss/hf", dict(),
     "convert SRC DIR --to mlx"),
]


def tensors(d):
    """Each tensor's dtype, shape and the sha256 of its bytes as stored, from the safetensors header (the format's
    own layout: 8-byte little-endian header length, JSON header, data)."""
    out, meta = {}, None
    for f in sorted(d.glob("*.safetensors")):
        raw = f.read_bytes()
        n = int.from_bytes(raw[:8], "little")
        header = json.loads(raw[8:8 + n])
        meta = header.pop("__metadata__", meta)
        for k, v in header.items():
            a, b = v["data_offsets"]
            out[k] = {"dtype": v["dtype"], "shape": v["shape"],
                      "sha256": hashlib.sha256(raw[8 + n + a:8 + n + b]).hexdigest()}
    return out, meta


def main():
    dst = Path(sys.argv[1])
    dst.mkdir(parents=True, exist_ok=True)
    record = {"mlx_lm": "d78bf58e217c904ec282ed8da9b947491f78c022", "mlx": "846d176227a0ac13d2667e58d2bb68b322109ab0",
              "cases": {}}
    for name, fixture, kw, command in CASES:
        out = dst / name
        if out.exists():
            shutil.rmtree(out)
        convert(str(ROOT / fixture), mlx_path=str(out), **kw)
        ts, meta = tensors(out)
        cfg = json.loads((out / "config.json").read_text())
        record["cases"][name] = {
            "fixture": fixture,
            "mlx_lm_convert": kw,
            "tfconv": command,
            "metadata": meta,
            "quantization": cfg.get("quantization"),
            "quantization_config": cfg.get("quantization_config"),
            "tensors": ts,
        }
    with open(sys.argv[2], "w") as f:  # mlx-lm prints its progress on stdout
        json.dump(record, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
