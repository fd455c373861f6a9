"""llama.cpp's IQ2_XXS and IQ2_XS of the trained tiny-fortunes model with an importance matrix, and llama.cpp's logits.

    /usr/bin/python3 testdata/quantize/gen_tiny_iq2.py LLAMA_CPP_TREE LOGITS_DUMP SHARED_FIXTURES

Runs LLAMA_CPP_TREE/build/bin/llama-imatrix on testdata/tiny-fortunes/tiny-fortunes-Q8_0.gguf (the shipped sample)
over the first 20 chunks of 128 tokens of SHARED_FIXTURES/trained/tiny-fortunes/val.txt (one thread), writing
tiny-fortunes.imatrix.dat (llama-imatrix's legacy layout); then llama-quantize --allow-requantize --imatrix (that
file, as a path relative to the repository root, which llama-quantize records) to IQ2_XXS and IQ2_XS, and
LOGITS_DUMP (testdata/arch/tools/logits_dump.cpp built against that tree) on each result with the token ids of
SHARED_FIXTURES/trained/tiny-fortunes/gguf/tiny-fortunes-f16.logits.json. Writes tiny-fortunes-IQ2.json: per type
the command, the quantized file's sha256 and tensor types, llama.cpp's logits on it; the ids and, copied from that
f16 file, llama.cpp's logits of the f16 GGUF ("f16_logits"). The quantized files are not kept. Ours: it drives the
reference tools and never runs tfconv.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tiny_requant  # noqa: E402

tree, dump, shared = sys.argv[1], sys.argv[2], sys.argv[3]
bin_dir, env = tiny_requant.bin_env(tree)
subprocess.run([os.path.join(bin_dir, "llama-imatrix"), "-m", tiny_requant.SRC, "-f",
                os.path.join(shared, "trained", "tiny-fortunes", "val.txt"), "-c", "128", "--chunks", "20", "-t", "1",
                "--no-ppl", "-o", tiny_requant.IMATRIX], check=True, capture_output=True, env=env, cwd=tiny_requant.ROOT)
tiny_requant.requant(tree, dump, shared, ["IQ2_XXS", "IQ2_XS"], "tiny-fortunes-IQ2.json")
