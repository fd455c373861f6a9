"""A stand-in for the Rust `tokenizers` package (tfconv's; not packaged for Debian): names only, so that
transformers v4.43.4's slow (pure-Python) tokenizers import and work (they need a hashable AddedToken, which
transformers' own fallback is not). Callers ask for slow tokenizers (use_fast=False); a fast one raises."""
import sys
import types

__version__ = "0.19.1"


class _Unavailable:
    def __init__(self, *args, **kwargs):
        raise NotImplementedError("tokenizers stand-in: fast tokenizers are not available; use the slow ones")


class AddedToken:
    """What transformers' slow tokenizers keep for added tokens (the real class's fields)."""

    def __init__(self, content="", single_word=False, lstrip=False, rstrip=False, normalized=True, special=False):
        self.content, self.single_word, self.lstrip, self.rstrip = content, single_word, lstrip, rstrip
        self.normalized, self.special = normalized, special

    def __str__(self):
        return self.content

    def __repr__(self):
        return f"AddedToken({self.content!r}, rstrip={self.rstrip}, lstrip={self.lstrip}, single_word={self.single_word}, normalized={self.normalized}, special={self.special})"

    def __getstate__(self):
        return self.__dict__

    def __setstate__(self, state):
        self.__dict__.update(state)

    def __eq__(self, other):
        return isinstance(other, AddedToken) and self.__dict__ == other.__dict__

    def __hash__(self):
        return hash(self.content)


Tokenizer = Regex = Encoding = _Unavailable


class _Names(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Unavailable


for _sub in ("decoders", "normalizers", "pre_tokenizers", "processors", "models", "trainers"):
    _m = _Names("tokenizers." + _sub)
    sys.modules["tokenizers." + _sub] = _m
    globals()[_sub] = _m
