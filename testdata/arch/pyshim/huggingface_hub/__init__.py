"""A stand-in for `huggingface_hub` (tfconv's; not packaged for Debian): enough for transformers v4.43.4 to import
and to load and save checkpoints in local folders. Nothing here reaches a network; any Hub call raises."""
import sys
import types

__version__ = "0.24.0"


class _Offline(Exception):
    pass


def _nope(*args, **kwargs):
    raise _Offline("huggingface_hub stand-in: no Hub access here (local folders only)")


class _Anything(types.ModuleType):
    """A module whose unknown attributes are classes/functions that refuse to reach the Hub."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        if name[:1].isupper() and not name.isupper():
            cls = type(name, (Exception,), {})
            setattr(self, name, cls)
            return cls
        if name.isupper():
            return ""
        return _nope


def _module(name, **attrs):
    m = _Anything(name)
    m.__dict__.update(attrs)
    sys.modules[name] = m
    return m


constants = _module("huggingface_hub.constants", HF_HUB_DISABLE_TELEMETRY=True, HF_HUB_OFFLINE=True,
                    HUGGINGFACE_CO_RESOLVE_ENDPOINT="https://huggingface.co", HF_HUB_CACHE="/nonexistent",
                    HF_HOME="/nonexistent", HUGGINGFACE_HUB_CACHE="/nonexistent", ENDPOINT="https://huggingface.co",
                    HF_HUB_ENABLE_HF_TRANSFER=False, REPO_TYPES=["model", "dataset", "space"], HF_TOKEN_PATH="/nonexistent",
                    DEFAULT_REVISION="main", SAFETENSORS_SINGLE_FILE="model.safetensors",
                    HF_HUB_ETAG_TIMEOUT=10, HF_HUB_DOWNLOAD_TIMEOUT=10)
utils = _module("huggingface_hub.utils", are_progress_bars_disabled=lambda: True, disable_progress_bars=lambda: None,
                enable_progress_bars=lambda: None, is_torch_available=lambda: True)
_module("huggingface_hub.utils._deprecation", _deprecate_method=lambda *a, **k: (lambda f: f))
_module("huggingface_hub.utils.logging")
file_download = _module("huggingface_hub.file_download", REGEX_COMMIT_HASH=__import__("re").compile(r"^[0-9a-f]{40}$"))
_module("huggingface_hub.errors")
_module("huggingface_hub.hf_api")
_module("huggingface_hub.repocard")
_module("huggingface_hub.serialization")


def try_to_load_from_cache(*args, **kwargs):
    return None


class _Split:
    def __init__(self, sd, filename):
        self.is_sharded = False
        self.metadata = {}
        self.filename_to_tensors = {filename: list(sd.keys())}
        self.tensor_to_filename = {k: filename for k in sd}


def split_torch_state_dict_into_shards(state_dict, filename_pattern="model{suffix}.safetensors", max_shard_size=None):
    return _Split(state_dict, filename_pattern.format(suffix=""))


def __getattr__(name):
    if name[:1].isupper():
        cls = type(name, (Exception,), {})
        globals()[name] = cls
        return cls
    return _nope
