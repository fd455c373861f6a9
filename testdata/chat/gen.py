#!/usr/bin/env python3
"""Renders every template in templates/ over every conversation of
conversations.json with transformers' own chat template code, and writes
expected.json, which TestChatTemplateRenders (tokenizer/chatrender_test.go)
compares our renderer against byte for byte.

Usage (transformers v4.57.6, its chat_template_utils.py unmodified):

    git -C TRANSFORMERS_GIT show v4.57.6:src/transformers/utils/chat_template_utils.py > /tmp/chat_template_utils.py
    python3 testdata/chat/gen.py /tmp/chat_template_utils.py

transformers' package __init__ needs torch, tokenizers and huggingface_hub;
render_jinja_template itself needs only jinja2. So the file is loaded as the
module transformers.utils.chat_template_utils with the three things it imports
from its package (logging.get_logger, is_jinja_available, is_torch_available,
is_vision_available) and packaging.version.parse given by small stand-ins
below. The rendering (the sandboxed environment, trim_blocks, lstrip_blocks,
loopcontrols, raise_exception, strftime_now, tojson) is transformers' code.

The special tokens are passed as apply_chat_template passes
tokenizer.special_tokens_map (template_kwargs = {**special_tokens_map,
**kwargs}); strftime_now reads a fixed clock, CLOCK, so that the renderings
do not depend on the day they were made.
"""

import datetime as _dt
import importlib.util
import json
import logging
import os
import sys
import types

CLOCK = _dt.datetime(2026, 3, 14, 9, 26, 53)
HERE = os.path.dirname(os.path.abspath(__file__))


def stub(name, **attrs):
    m = types.ModuleType(name)
    m.__path__ = []
    m.__dict__.update(attrs)
    sys.modules[name] = m
    return m


def parse_version(s):
    return tuple(int(p) for p in s.split(".")[:3] if p.isdigit())


def load(path):
    stub("packaging")
    sys.modules["packaging"].version = stub("packaging.version", parse=parse_version)
    stub("transformers")
    stub("transformers.utils")
    stub("transformers.utils.logging", get_logger=logging.getLogger)
    stub(
        "transformers.utils.import_utils",
        is_jinja_available=lambda: True,
        is_torch_available=lambda: False,
        is_vision_available=lambda: False,
    )
    spec = importlib.util.spec_from_file_location("transformers.utils.chat_template_utils", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)

    class Clock(_dt.datetime):
        @classmethod
        def now(cls, tz=None):
            return CLOCK

    mod.datetime = Clock  # the module did "from datetime import datetime"
    return mod


def main():
    import jinja2

    ctu = load(sys.argv[1])
    with open(os.path.join(HERE, "conversations.json"), encoding="utf-8") as f:
        convs = json.load(f)
    with open(os.path.join(HERE, "special_tokens.json"), encoding="utf-8") as f:
        special = json.load(f)
    out = []
    for name in sorted(special):
        with open(os.path.join(HERE, "templates", name + ".jinja"), encoding="utf-8", newline="") as f:
            tpl = f.read()
        for c in convs:
            rec = {"template": name, "conversation": c["name"]}
            try:
                rendered, _ = ctu.render_jinja_template(
                    conversations=[c["messages"]],
                    chat_template=tpl,
                    add_generation_prompt=c["add_generation_prompt"],
                    **special[name],
                )
                rec["text"] = rendered[0]
            except jinja2.exceptions.TemplateError as e:
                rec["error"] = str(e)
            out.append(rec)
    meta = {
        "generator": "testdata/chat/gen.py",
        "jinja2": jinja2.__version__,
        "python": sys.version.split()[0],
        "clock": CLOCK.isoformat(),
    }
    with open(os.path.join(HERE, "expected.json"), "w", encoding="utf-8") as f:
        json.dump({"meta": meta, "renderings": out}, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
