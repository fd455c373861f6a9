"""tfconv from Python: the tfconv binary this package carries, and a small API over it.

Each function runs the binary with ``--json`` and returns what it printed as a dict; a failure raises
:class:`TfconvError` with tfconv's own message and exit code. :func:`tensors` maps a checkpoint's tensors into
numpy arrays without copying where the file holds them in a numpy type.
"""

import json
import os
import subprocess
import sys
import sysconfig

__all__ = ["TfconvError", "binary", "run", "inspect", "convert", "quantize", "verify", "tensors"]
__version__ = "0.0.0"  # the release script writes the release's version here

_EXE = "tfconv.exe" if sys.platform == "win32" else "tfconv"


class TfconvError(Exception):
    """A tfconv run that failed: ``message`` is what tfconv said, ``returncode`` its exit code
    (1: a check found a difference, 2: usage or input error), ``args_`` the command line."""

    def __init__(self, message, returncode, args_):
        super().__init__(message)
        self.message = message
        self.returncode = returncode
        self.args_ = args_


def binary():
    """The path of the tfconv binary: $TFCONV_BINARY, else the one the wheel installed beside this
    interpreter's scripts, else the first on PATH."""
    env = os.environ.get("TFCONV_BINARY")
    if env:
        return env
    for scheme in (None, "posix_user", "nt_user", "osx_framework_user"):
        try:
            d = sysconfig.get_path("scripts", scheme) if scheme else sysconfig.get_path("scripts")
        except KeyError:
            continue
        if d and os.path.isfile(os.path.join(d, _EXE)):
            return os.path.join(d, _EXE)
    for d in os.environ.get("PATH", "").split(os.pathsep):
        p = os.path.join(d, _EXE)
        if d and os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    raise FileNotFoundError("tfconv binary not found: install the tfconv wheel or set TFCONV_BINARY")


def run(*args, check=True):
    """Runs ``tfconv ARGS...`` and returns the CompletedProcess (text mode). With check, a non-zero exit
    raises TfconvError carrying tfconv's stderr."""
    argv = [binary()] + [os.fspath(a) for a in args]
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if check and p.returncode != 0:
        msg = p.stderr.strip() or p.stdout.strip() or "tfconv exited with status %d" % p.returncode
        raise TfconvError(msg, p.returncode, argv)
    return p


def _flags(opts):
    """Turns keyword options into flags: outtype="q8_0" -> --outtype q8_0, force=True -> --force,
    tensor_type=["a=q8_0", "b=f16"] -> --tensor-type a=q8_0 --tensor-type b=f16; None and False are left out."""
    out = []
    for k, v in opts.items():
        flag = "--" + k.replace("_", "-")
        if v is None or v is False:
            continue
        if v is True:
            out.append(flag)
        elif isinstance(v, (list, tuple)):
            for x in v:
                out += [flag, os.fspath(x) if hasattr(x, "__fspath__") else str(x)]
        else:
            out += [flag, os.fspath(v) if hasattr(v, "__fspath__") else str(v)]
    return out


def _json(*args, **opts):
    p = run(*args, *_flags(opts), "--json", check=False)
    if p.returncode not in (0, 1):
        raise TfconvError(p.stderr.strip() or p.stdout.strip(), p.returncode, args)
    try:
        out = json.loads(p.stdout)
    except ValueError:
        raise TfconvError(p.stderr.strip() or "tfconv printed no JSON", p.returncode, args) from None
    if p.returncode == 1 and isinstance(out, dict):
        out.setdefault("exit_code", 1)
    return out


def inspect(path, **opts):
    """``tfconv inspect PATH --json``: the checkpoint's summary (architecture, tensors, metadata, ...).
    Options are inspect's flags: ctx=4096 for the memory estimate, full=True, ..."""
    return _json("inspect", path, **opts)


def convert(src, dst, **opts):
    """``tfconv convert SRC DST --json``: options are convert's flags (outtype="q8_0", to="gguf", force=True, ...)."""
    return _json("convert", src, dst, **opts)


def quantize(src, dst, type, **opts):
    """``tfconv quantize SRC DST --type TYPE --json`` (type as llama-quantize names it: "q4_k_m")."""
    return _json("quantize", src, dst, type=type, **opts)


def verify(reference, candidate, **opts):
    """``tfconv verify REFERENCE CANDIDATE --json``. A verification that finds the candidate out of its
    thresholds returns the report with "exit_code": 1 rather than raising."""
    return _json("verify", reference, candidate, **opts)


# The dtypes numpy holds as they are in the file (inspect's names).
_NUMPY = {"F32": "<f4", "F64": "<f8", "F16": "<f2", "I8": "i1", "I16": "<i2", "I32": "<i4", "I64": "<i8",
          "U8": "u1", "U16": "<u2", "U32": "<u4", "U64": "<u8", "BOOL": "?"}


def tensors(path, dequantize=True):
    """The checkpoint's tensors by name, as numpy arrays (numpy must be installed).

    Tensors the file holds in a numpy type (F32, F16, F64, the integers) are memory-mapped read-only, no
    copy. BF16 is widened to float32. A tensor in a block-quantized type (Q4_K, MXFP4, ...) is dequantized
    to float32 by tfconv itself (``quantize --type f32`` of a GGUF, ``convert --outtype f32`` of the rest,
    into a temporary directory that is then mapped) when dequantize is true, else returned as its raw bytes
    (uint8). A GPTQ, AWQ or FP8 checkpoint is dequantized whole (its packed weights are not the floats
    inspect lists). Names are the file's own (GGUF's blk.N..., Hugging Face's model.layers.N...)."""
    import numpy as np

    summary = inspect(path)
    if summary.get("quantized"):
        if not dequantize:
            raise TfconvError("%s: %s weights are packed; tensors() maps them only dequantized"
                              % (path, summary["quantized"].get("method")), 2, ["tensors", path])
        return tensors(_dequantized(path, summary), dequantize=False)
    out, pending = {}, []
    for t in summary.get("tensors", []):
        dt, shape = t["dtype"], tuple(t["shape"])
        if dt in _NUMPY:
            out[t["name"]] = np.memmap(t["file"], dtype=_NUMPY[dt], mode="r", offset=t["offset"], shape=shape)
        elif dt == "BF16":
            raw = np.memmap(t["file"], dtype="<u2", mode="r", offset=t["offset"], shape=shape)
            out[t["name"]] = (raw.astype(np.uint32) << 16).view(np.float32)
        elif dequantize:
            pending.append(t["name"])
        else:
            out[t["name"]] = np.memmap(t["file"], dtype="u1", mode="r", offset=t["offset"], shape=(t["bytes"],))
    if pending:
        f32 = tensors(_dequantized(path, summary), dequantize=False)
        for name in pending:
            if name not in f32:
                raise TfconvError("%s: tensor %s: not in tfconv's float32 form of the file" % (path, name), 2,
                                  ["tensors", path])
            out[name] = f32[name]
    return out


def _dequantized(path, summary):
    """A float32 copy of path made by tfconv in a temporary directory (removed at exit), with the same
    tensor names."""
    import atexit
    import shutil
    import tempfile

    tmp = tempfile.mkdtemp(prefix="tfconv-tensors-")
    atexit.register(shutil.rmtree, tmp, True)
    if summary.get("format") == "gguf":
        dst = os.path.join(tmp, "f32.gguf")
        run("quantize", path, dst, "--type", "f32")
    else:
        dst = os.path.join(tmp, "f32")
        run("convert", path, dst, "--to", "safetensors", "--outtype", "f32")
    return dst
