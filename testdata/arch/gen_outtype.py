"""Records what llama.cpp's converter writes for the qwen3 and gemma3 fixtures at --outtype q8_0 and bf16: each
tensor's ggml type and the sha256 of its bytes, in outtype-llamacpp.json (convert.TestGGUFOuttype holds tfconv's
GGUF → GGUF --outtype to it). Run as gen_fixtures.py runs (the trixie chroot, the newer llama.cpp the two fixtures
were made with, its converter through gen_fixtures.convert, unmodified but for get_vocab_base_pre):

    PYTHONPATH=testdata/arch/pyshim-trixie:$TF/src python3 testdata/arch/gen_outtype.py $L
"""
import hashlib
import json
import os
import sys
import tempfile

import gen_fixtures as g

FAMILIES = ["qwen3", "gemma3"]
OUTTYPES = ["q8_0", "bf16"]


def main():
    llamacpp = sys.argv[1]
    sys.path.insert(0, os.path.join(llamacpp, "gguf-py"))
    import gguf
    out = {"llama.cpp": open(os.path.join(llamacpp, "COMMIT")).read().strip(), "files": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for fam in FAMILIES:
            pre = g.HANDMADE[fam][-1]  # both are handmade fixtures: (…, tokenizer kind, pre)
            for ot in OUTTYPES:
                path = os.path.join(tmp, f"{fam}-{ot}.gguf")
                g.convert(llamacpp, os.path.join(g.HERE, fam, "hf"), path, ot, pre)
                r = gguf.GGUFReader(path)
                out["files"][f"{fam}-{ot}"] = {
                    "command": f"convert_hf_to_gguf.py {fam}/hf --outtype {ot} --outfile {fam}-{ot}.gguf",
                    "file_type": int(r.fields["general.file_type"].contents()),
                    "tensors": {t.name: {"type": t.tensor_type.name, "sha256": hashlib.sha256(t.data.tobytes()).hexdigest()}
                                for t in r.tensors}}
    with open(os.path.join(g.HERE, "outtype-llamacpp.json"), "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
