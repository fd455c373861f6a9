"""safetensors.torch stand-in: save_file and load_file over torch tensors (see safetensors/__init__.py)."""
import json
import struct

import torch

from . import safe_open

_DT = {torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.int64: "I64",
       torch.int32: "I32", torch.int16: "I16", torch.int8: "I8", torch.uint8: "U8", torch.bool: "BOOL"}


def _bytes(t):
    t = t.detach().contiguous().cpu()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().tobytes()
    return t.numpy().tobytes()


def save_file(tensors, filename, metadata=None):
    header, blobs, off = {}, [], 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name in sorted(tensors):
        t = tensors[name]
        b = _bytes(t)
        header[name] = {"dtype": _DT[t.dtype], "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(filename, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def load_file(filename, device="cpu"):
    with safe_open(filename, framework="pt") as f:
        return {k: f.get_tensor(k) for k in f.keys()}


def _storage(t):
    # torch 1.13 (Debian's) has storage(); newer ones untyped_storage().
    return t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()


def storage_ptr(t):
    return _storage(t).data_ptr()


def storage_size(t):
    s = _storage(t)
    return s.nbytes() if hasattr(s, "nbytes") else s.size() * t.element_size()


def save_model(model, filename, metadata=None, force_contiguous=False):
    save_file({k: v.contiguous() if force_contiguous else v for k, v in model.state_dict().items()}, filename, metadata)


def load_model(model, filename, strict=True, device="cpu"):
    # Imported by accelerate (which PEFT imports); returns (missing, unexpected) as the real one does.
    r = model.load_state_dict(load_file(filename, device), strict=strict)
    return r.missing_keys, r.unexpected_keys
