"""A small pure-Python stand-in for the `safetensors` package (tfconv's; the real one is not packaged for Debian).

It reads and writes the safetensors format (8-byte little-endian header length, JSON header, raw little-endian
data) for what transformers' from_pretrained/save_pretrained and llama.cpp's converter use: safe_open with
keys()/get_tensor()/get_slice()/metadata(), and safetensors.torch.save_file/load_file.
"""
import json
import struct

import numpy as np

__version__ = "0.4.3"


class SafetensorError(Exception):
    pass


_NP = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32, "I16": np.int16,
       "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_}


def _read_header(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
    return header, 8 + n


class _Slice:
    def __init__(self, owner, name):
        self._owner, self._name = owner, name
        info = owner._header[name]
        self._shape, self._dtype = info["shape"], info["dtype"]

    def get_shape(self):
        return list(self._shape)

    def get_dtype(self):
        return self._dtype

    def __getitem__(self, idx):
        return self._owner.get_tensor(self._name)[idx]


class safe_open:
    def __init__(self, path, framework="pt", device="cpu"):
        self._path, self._framework = path, framework
        self._header, self._base = _read_header(path)
        self._meta = self._header.pop("__metadata__", None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def keys(self):
        return list(self._header.keys())

    def metadata(self):
        return self._meta

    def get_slice(self, name):
        return _Slice(self, name)

    def get_tensor(self, name):
        info = self._header[name]
        start, end = info["data_offsets"]
        with open(self._path, "rb") as f:
            f.seek(self._base + start)
            raw = f.read(end - start)
        dt, shape = info["dtype"], info["shape"]
        if self._framework in ("pt", "torch"):
            import torch
            if dt == "BF16":
                a = np.frombuffer(raw, dtype=np.int16).reshape(shape).copy()
                return torch.from_numpy(a).view(torch.bfloat16)
            return torch.from_numpy(np.frombuffer(raw, dtype=_NP[dt]).reshape(shape).copy())
        if dt == "BF16":
            raise SafetensorError("bf16 needs framework='pt'")
        return np.frombuffer(raw, dtype=_NP[dt]).reshape(shape).copy()
