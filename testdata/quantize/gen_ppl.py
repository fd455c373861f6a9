"""Perplexity of tiny-fortunes per quantization type, with and without an importance matrix, as llama.cpp measures it.

    PYTHONPATH=testdata/arch/pyshim:<transformers v4.43.4>/src /usr/bin/python3 testdata/quantize/gen_ppl.py \
        LLAMA_CPP_TREE SHARED_FIXTURES

shared/fixtures' trained tiny-fortunes (hf/) is converted by the tree's convert_hf_to_gguf.py --outtype f32, then
quantized by its build/bin/llama-quantize to each type below, once without and once with
testdata/imatrix/tiny-fortunes.c392e509.dat (llama-imatrix on calib.txt, the first 4207 bytes of val.txt), and each
file's perplexity is measured by its build/bin/llama-perplexity on the rest of val.txt (eval text: val.txt from byte
4207 on, so the imatrix never saw it), 128-token chunks, f32 KV cache, 1 thread. ppl.json records per run the
command, file size, sha256, bits per weight and llama.cpp's PPL; TestPerplexityTable quantizes the same way with
tfconv, checks the file is llama-quantize's byte for byte, and compares `tfconv perplexity` with llama.cpp's. Ours:
it drives the reference tools and never runs tfconv.

    /usr/bin/python3 testdata/quantize/gen_ppl.py LLAMA_CPP_TREE SHARED_FIXTURES --f32 F32_GGUF --only TYPE...

runs only the given types (with and without the imatrix, as above) on F32_GGUF instead of converting, after checking
that llama-quantize's Q8_0 of it is byte for byte the Q8_0 file ppl.json records (so F32_GGUF is convert_hf_to_gguf's
file in all llama-quantize reads), and replaces those types' runs in ppl.json, keeping the others and TYPES' order.
"""
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile

tree, shared = sys.argv[1], sys.argv[2]
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "arch"))
root = os.path.normpath(os.path.join(here, "..", ".."))
binDir = os.path.join(tree, "build", "bin")
CALIB_BYTES = 4207
IMATRIX = "testdata/imatrix/tiny-fortunes.c392e509.dat"
TYPES = ["Q8_0", "Q6_K", "Q5_K_M", "Q5_K_S", "Q5_1", "Q5_0", "Q4_K_M", "Q4_K_S", "Q4_1", "Q4_0", "IQ4_XS", "IQ4_NL",
         "Q3_K_L", "Q3_K_M", "Q3_K_S", "IQ3_M", "IQ3_S", "IQ3_XS", "IQ3_XXS", "Q2_K", "Q2_K_S", "IQ2_M", "IQ2_S", "IQ2_XS",
         "IQ2_XXS", "IQ1_M", "IQ1_S", "TQ2_0", "TQ1_0"]
# llama-quantize refuses these without an imatrix: up front (Q2_K_S, IQ2_XXS/XS/S, IQ1_S/M) or at the first IQ2_S
# tensor it has no entry for (IQ2_M's and IQ3_XXS's attn_q/attn_k).
NEEDS_IMATRIX = {"Q2_K_S", "IQ2_M", "IQ2_S", "IQ2_XS", "IQ2_XXS", "IQ3_XXS", "IQ1_M", "IQ1_S"}


def main():
    tmp = tempfile.mkdtemp()
    f32 = os.path.join(tmp, "tiny-fortunes-f32.gguf")
    only = None
    if len(sys.argv) > 5 and sys.argv[3] == "--f32" and sys.argv[5] == "--only":
        old = json.load(open(os.path.join(here, "ppl.json")))
        only = sys.argv[6:]
        assert all(t in TYPES for t in only), only
        f32 = os.path.abspath(sys.argv[4])
        q8 = os.path.join(tmp, "check-Q8_0.gguf")
        subprocess.run([os.path.join(binDir, "llama-quantize"), f32, q8, "Q8_0", "1"], check=True,
                       capture_output=True, cwd=root)
        want = [r["sha256"] for r in old["runs"] if r["type"] == "Q8_0" and not r["imatrix"]]
        assert [hashlib.sha256(open(q8, "rb").read()).hexdigest()] == want, "F32_GGUF is not convert_hf_to_gguf's"
        os.remove(q8)
    else:
        from gen_fixtures import convert  # convert_hf_to_gguf.py run as testdata/arch does (needs torch)
        convert(tree, os.path.join(shared, "trained", "tiny-fortunes", "hf"), f32, "f32", None)
    val = open(os.path.join(shared, "trained", "tiny-fortunes", "val.txt"), "rb").read()
    calib = open(os.path.join(root, "testdata", "imatrix", "calib.txt"), "rb").read()
    assert val[:CALIB_BYTES] == calib and len(calib) == CALIB_BYTES
    evalf = os.path.join(tmp, "eval.txt")
    open(evalf, "wb").write(val[CALIB_BYTES:])

    def ppl(model):
        r = subprocess.run([os.path.join(binDir, "llama-perplexity"), "-m", model, "-f", evalf, "-c", "128",
                            "-ctk", "f32", "-ctv", "f32", "-t", "1"], check=True, capture_output=True, text=True)
        return float(re.search(r"Final estimate: PPL = ([\d.]+)", r.stdout + r.stderr).group(1))

    n_params = None
    out = {"llama.cpp": "c392e5094deaf2d1a7c18683214f007fad3fe42b", "eval": "val.txt[%d:]" % CALIB_BYTES,
           "imatrix": IMATRIX, "f32_ppl": ppl(f32), "runs": []}
    if only:
        assert out["f32_ppl"] == old["f32_ppl"], (out["f32_ppl"], old["f32_ppl"])
    for typ in TYPES:
        if only and typ not in only:
            out["runs"] += [r for r in old["runs"] if r["type"] == typ]
            continue
        for imat in ([False, True] if typ not in NEEDS_IMATRIX else [True]):
            dst = os.path.join(tmp, typ + ("-imat" if imat else "") + ".gguf")
            src = f32 if not only else os.path.join(tmp, "tiny-fortunes-f32.gguf")
            if only and not os.path.exists(src):
                os.symlink(f32, src)  # llama-quantize's command line as recorded
            args = [os.path.join(binDir, "llama-quantize")] + (["--imatrix", IMATRIX] if imat else []) + [src, dst, typ, "1"]
            subprocess.run(args, check=True, capture_output=True, cwd=root)
            data = open(dst, "rb").read()
            out["runs"].append({"type": typ, "imatrix": imat, "bytes": len(data),
                                "sha256": hashlib.sha256(data).hexdigest(), "ppl": ppl(dst),
                                "command": " ".join(["llama-quantize"] + args[1:]).replace(tmp + "/", "")})
            os.remove(dst)
            print(typ, imat, out["runs"][-1]["ppl"], flush=True)
    with open(os.path.join(here, "ppl.json"), "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
