"""llama.cpp's IQ1_S and IQ1_M of the trained tiny-fortunes model with an importance matrix, and llama.cpp's logits.

    /usr/bin/python3 testdata/quantize/gen_tiny_iq1.py LLAMA_CPP_TREE LOGITS_DUMP SHARED_FIXTURES

Runs LLAMA_CPP_TREE/build/bin/llama-quantize --allow-requantize --imatrix testdata/quantize/tiny-fortunes.imatrix.dat
(llama-imatrix's matrix that gen_tiny_iq2.py wrote, as a path relative to the repository root, which llama-quantize
records) on testdata/tiny-fortunes/tiny-fortunes-Q8_0.gguf (the shipped sample) to IQ1_S and IQ1_M, and LOGITS_DUMP
(testdata/arch/tools/logits_dump.cpp built against that tree) on each result with the token ids of
SHARED_FIXTURES/trained/tiny-fortunes/gguf/tiny-fortunes-f16.logits.json. Writes tiny-fortunes-IQ1.json: per type
the command, the quantized file's sha256 and tensor types, llama.cpp's logits on it; the ids and, copied from that
f16 file, llama.cpp's logits of the f16 GGUF ("f16_logits"). The quantized files are not kept. Ours: it drives the
reference tools and never runs tfconv.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tiny_requant  # noqa: E402

tiny_requant.requant(sys.argv[1], sys.argv[2], sys.argv[3], ["IQ1_S", "IQ1_M"], "tiny-fortunes-IQ1.json")
