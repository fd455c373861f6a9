#!/usr/bin/python3
"""Writes the PyTorch checkpoint fixtures of testdata/pytorch.

Run from the repository root with Debian's torch (python3-torch 1.13):

    /usr/bin/python3 testdata/pytorch/gen.py

It writes, next to itself:

  zip/pytorch_model.bin         torch.save(state_dict) (zip format, prefix "pytorch_model/")
  archive.bin                   the same state dict saved through a BytesIO (prefix "archive/")
  legacy.bin                    the same, _use_new_zipfile_serialization=False
  floats/pytorch_model.bin      the state dict's F32/F16/BF16 tensors only (what Hugging Face output takes)
  sharded/                      the same float tensors as pytorch_model-0000{1,2}-of-00002.bin
                                + pytorch_model.bin.index.json
  params.bin                    a dict of nn.Parameter objects (torch._utils._rebuild_parameter)
  expected.json                 every tensor of the state dict in order: name, tfconv dtype,
                                shape, and its bytes as torch gives them (base64 of
                                t.contiguous().numpy().tobytes(), bf16 through .view(torch.int16))
  hostile/*.bin                 hand-written pickles and damaged archives every reader must refuse

Nothing here depends on randomness: values are fixed arithmetic sequences.
"""

import base64
import collections
import io
import json
import os
import shutil
import struct
import zipfile

import torch
from torch import nn

OUT = os.path.dirname(os.path.abspath(__file__))

# The file the hostile payloads would create if anything executed them. The
# Go tests check that it never appears.
MARKER = "/tmp/tfconv-pytorch-pwned"


class Tiny(nn.Module):
    """Every storage dtype, a tied weight, views with offsets and strides."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(6, 4)
        self.lm_head = nn.Linear(4, 6, bias=False)
        self.lm_head.weight = self.emb.weight  # tied: two names, one storage
        self.norm = nn.LayerNorm(4)
        with torch.no_grad():
            self.emb.weight.copy_(torch.arange(24, dtype=torch.float32).reshape(6, 4) / 8 - 1)
            self.norm.weight.copy_(torch.tensor([1.0, 0.5, -0.25, 2.0]))
            self.norm.bias.copy_(torch.tensor([0.0, 0.125, -3.0, 1e-3]))
        self.register_buffer("h16", (torch.arange(5, dtype=torch.float32) / 3 - 0.5).half())
        self.register_buffer("b16", (torch.arange(6, dtype=torch.float32).reshape(2, 3) / 7 + 0.1).bfloat16())
        self.register_buffer("f64", torch.tensor([1 / 3, -2.5, 1e-300], dtype=torch.float64))
        self.register_buffer("i64", torch.tensor([-(2**40), -1, 0, 2**62], dtype=torch.int64))
        self.register_buffer("i32", torch.tensor([-(2**31), 7, 2**31 - 1], dtype=torch.int32))
        self.register_buffer("i16", torch.tensor([-32768, 1, 32767], dtype=torch.int16))
        self.register_buffer("i8", torch.tensor([[-128, 0], [5, 127]], dtype=torch.int8))
        self.register_buffer("u8", torch.tensor([0, 1, 200, 255], dtype=torch.uint8))
        self.register_buffer("mask", torch.tensor([True, False, True, True, False, False]))
        base = torch.arange(15, dtype=torch.float32).reshape(3, 5)
        self.register_buffer("base", base)
        self.register_buffer("base_t", base.t())  # a strided view of base's storage
        self.register_buffer("base_row", base[1])  # storage offset 5
        # Non-contiguous with a storage of its own, larger than the view.
        self.register_buffer("strided", torch.arange(24, dtype=torch.float16).reshape(4, 6)[1:, ::2])
        self.register_buffer("scalar", torch.tensor(2.5))
        self.register_buffer("empty", torch.zeros(0, 3))


DTYPES = {
    torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.float64: "F64",
    torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8",
    torch.uint8: "U8", torch.bool: "BOOL",
}


def tensor_bytes(t):
    t = t.contiguous()
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    return t.numpy().tobytes()


def expected(sd):
    out = []
    for name, t in sd.items():
        out.append({"name": name, "dtype": DTYPES[t.dtype], "shape": list(t.shape),
                    "data": base64.b64encode(tensor_bytes(t)).decode()})
    return out


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=1)
        f.write("\n")


def zip_members(path):
    with zipfile.ZipFile(path) as z:
        return [(i.filename, z.read(i.filename)) for i in z.infolist()]


def write_zip(path, members, compress=zipfile.ZIP_STORED):
    with zipfile.ZipFile(path, "w", compression=compress) as z:
        for name, data in members:
            z.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), data, compress_type=compress)


# --- hand-written pickles ---------------------------------------------------

def short_unicode(s):
    b = s.encode()
    return b"\x8c" + bytes([len(b)]) + b


def reduce_call(module, name, arg):
    """GLOBAL module.name, called with one string argument, then STOP."""
    return (b"\x80\x02" + b"c" + module.encode() + b"\n" + name.encode() + b"\n"
            + b"X" + struct.pack("<I", len(arg)) + arg.encode() + b"\x85" + b"R" + b".")


def legacy_prefix():
    """The three small pickles before a legacy checkpoint's main pickle."""
    import pickle
    b = pickle.dumps(0x1950a86a20f9469cfc6c, protocol=2)
    b += pickle.dumps(1001, protocol=2)
    b += pickle.dumps({"protocol_version": 1001, "little_endian": True,
                       "type_sizes": {"short": 2, "int": 4, "long": 4}}, protocol=2)
    return b


def zip_with_pickle(pkl):
    buf = io.BytesIO()
    write_zip(buf, [("archive/data.pkl", pkl), ("archive/version", b"3\n")])
    return buf.getvalue()


def hostile(sd):
    d = os.path.join(OUT, "hostile")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    cmd = "touch " + MARKER
    files = {
        # Code execution through REDUCE, in the zip and the legacy format.
        "posix-system.bin": zip_with_pickle(reduce_call("posix", "system", cmd)),
        "os-system.bin": zip_with_pickle(reduce_call("os", "system", cmd)),
        "legacy-posix-system.bin": legacy_prefix() + reduce_call("posix", "system", cmd),
        "builtins-eval.bin": zip_with_pickle(reduce_call("builtins", "eval", "__import__('os').system('" + cmd + "')")),
        # STACK_GLOBAL (protocol 4) naming the same function.
        "stack-global.bin": zip_with_pickle(b"\x80\x04" + short_unicode("os") + short_unicode("system") + b"\x93"
                                            + short_unicode(cmd) + b"\x85R."),
        # Several disallowed globals: check lists them all.
        "many-globals.bin": zip_with_pickle(
            b"\x80\x02(" + b"cposix\nsystem\n" + b"cbuiltins\nexec\n" + b"csubprocess\nPopen\n" + b"l."),
        # Deeply nested lists: 20,000 EMPTY_LIST then as many APPENDs.
        "recursion-bomb.bin": zip_with_pickle(b"\x80\x02" + b"]" * 20_000 + b"a" * 19_999 + b"."),
        # Nested 10,000 deep through the memo with a stack of one: the
        # result is a valid pickle that nothing may walk recursively.
        "memo-nesting.bin": zip_with_pickle(b"\x80\x02]q\x000" + b"]h\x00aq\x000" * 10_000 + b"h\x00."),
        # A list that holds itself.
        "self-cycle.bin": zip_with_pickle(b"\x80\x02]q\x00h\x00a."),
        # A LONG4 that claims 2 GiB of digits.
        "long4-huge.bin": zip_with_pickle(b"\x80\x02\x8b" + struct.pack("<i", 0x7FFFFFFF) + b"\x01\x02."),
        # A BINUNICODE8 that claims 2^62 bytes.
        "unicode8-huge.bin": zip_with_pickle(b"\x80\x04\x8d" + struct.pack("<Q", 1 << 62) + b"abc."),
    }
    # A real checkpoint, cut in half.
    with open(os.path.join(OUT, "zip", "pytorch_model.bin"), "rb") as f:
        whole = f.read()
    files["truncated.bin"] = whole[: len(whole) // 2]
    # A storage record shorter than its tensors need.
    members = zip_members(os.path.join(OUT, "zip", "pytorch_model.bin"))
    short = [(n, b[:3] if n.endswith("/data/0") else b) for n, b in members]
    buf = io.BytesIO()
    write_zip(buf, short)
    files["storage-short.bin"] = buf.getvalue()
    # The same records deflated: torch never compresses them.
    buf = io.BytesIO()
    write_zip(buf, members, zipfile.ZIP_DEFLATED)
    files["compressed.bin"] = buf.getvalue()
    # A legacy checkpoint whose last storage runs past the end of the file.
    with open(os.path.join(OUT, "legacy.bin"), "rb") as f:
        leg = f.read()
    files["legacy-truncated.bin"] = leg[:-7]
    for name, data in files.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
    return sorted(files)


def main():
    torch.manual_seed(0)
    m = Tiny()
    sd = m.state_dict()
    os.makedirs(os.path.join(OUT, "zip"), exist_ok=True)
    torch.save(sd, os.path.join(OUT, "zip", "pytorch_model.bin"))
    buf = io.BytesIO()
    torch.save(sd, buf)
    with open(os.path.join(OUT, "archive.bin"), "wb") as f:
        f.write(buf.getvalue())
    torch.save(sd, os.path.join(OUT, "legacy.bin"), _use_new_zipfile_serialization=False)
    params = collections.OrderedDict((k, nn.Parameter(v.clone(), requires_grad=False) if v.is_floating_point() else v)
                                     for k, v in sd.items() if k in ("norm.weight", "norm.bias", "i64"))
    torch.save(params, os.path.join(OUT, "params.bin"))

    floats = collections.OrderedDict((k, v) for k, v in sd.items()
                                     if v.dtype in (torch.float32, torch.float16, torch.bfloat16))
    os.makedirs(os.path.join(OUT, "floats"), exist_ok=True)
    torch.save(floats, os.path.join(OUT, "floats", "pytorch_model.bin"))

    # Sharded as transformers writes it (modeling_utils.shard_checkpoint).
    sh = os.path.join(OUT, "sharded")
    shutil.rmtree(sh, ignore_errors=True)
    os.makedirs(sh)
    names = list(floats.keys())
    half = len(names) // 2
    parts = [names[:half], names[half:]]
    weight_map, total = {}, 0
    for i, part in enumerate(parts):
        fname = "pytorch_model-%05d-of-%05d.bin" % (i + 1, len(parts))
        shard = collections.OrderedDict((k, floats[k]) for k in part)
        torch.save(shard, os.path.join(sh, fname))
        for k in part:
            weight_map[k] = fname
            total += floats[k].numel() * floats[k].element_size()
    write_json(os.path.join(sh, "pytorch_model.bin.index.json"),
               {"metadata": {"total_size": total}, "weight_map": weight_map})

    write_json(os.path.join(OUT, "expected.json"),
               {"torch": torch.__version__, "tensors": expected(sd),
                "floats": expected(floats),
                "params": expected(collections.OrderedDict((k, v.detach()) for k, v in params.items())),
                "hostile": hostile(sd), "marker": MARKER})


if __name__ == "__main__":
    main()
