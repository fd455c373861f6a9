"""Tests of the tfconv Python package, run against the installed wheel (CI: a fresh venv with
--system-site-packages for Debian's numpy). TFCONV_TESTDATA names the repository's testdata directory."""

import json
import os
import shutil
import tempfile
import unittest

import tfconv

TESTDATA = os.environ.get("TFCONV_TESTDATA") or os.path.join(os.path.dirname(__file__), "..", "..", "testdata")
QWEN2_HF = os.path.join(TESTDATA, "arch", "qwen2", "hf")
QWEN2_GGUF = os.path.join(TESTDATA, "arch", "qwen2", "gguf", "qwen2-f32.gguf")  # llama.cpp's converter's
QWEN2MOE_HF = os.path.join(TESTDATA, "arch", "qwen2moe", "hf")
QWEN2MOE_Q4 = os.path.join(TESTDATA, "arch", "qwen2moe", "gguf", "qwen2moe-q4_0.gguf")
FP8 = os.path.join(TESTDATA, "fp8", "ct-tensor")

try:
    import numpy as np
except ImportError:  # the API works without numpy; tensors() needs it
    np = None


class API(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="tfconv-py-")

    def tearDown(self):
        shutil.rmtree(self.tmp, True)

    def test_binary_is_the_wheels(self):
        # The wheel puts the binary among the environment's scripts; --version names the package's version
        # and the revision it was built from.
        import sysconfig

        p = tfconv.run("--version")
        self.assertTrue(p.stdout.startswith("tfconv %s revision " % tfconv.__version__), p.stdout)
        if not os.environ.get("TFCONV_BINARY"):
            self.assertTrue(os.path.samefile(os.path.dirname(tfconv.binary()), sysconfig.get_path("scripts")),
                            tfconv.binary())

    def test_inspect(self):
        s = tfconv.inspect(QWEN2_GGUF)
        self.assertEqual(s["architecture"], "qwen2")
        self.assertEqual(s["format"], "gguf")
        self.assertEqual(s["layers"], 2)
        self.assertEqual(s["hidden_size"], 64)
        self.assertEqual(s["tensor_count"], len(s["tensors"]))
        with open(os.path.join(QWEN2_HF, "config.json")) as f:
            cfg = json.load(f)
        self.assertEqual(s["vocab_size"], cfg["vocab_size"])

    def test_errors_carry_tfconv_message(self):
        missing = os.path.join(self.tmp, "nothing.gguf")
        with self.assertRaises(tfconv.TfconvError) as cm:
            tfconv.inspect(missing)
        self.assertEqual(cm.exception.returncode, 2)
        self.assertIn("nothing.gguf", str(cm.exception))
        with self.assertRaises(tfconv.TfconvError) as cm:
            tfconv.quantize(QWEN2_GGUF, os.path.join(self.tmp, "x.gguf"), type="q9_9")
        self.assertIn("q9_9", cm.exception.message)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "x.gguf")))

    def test_convert_quantize_verify(self):
        gguf = os.path.join(self.tmp, "qwen2.gguf")
        r = tfconv.convert(QWEN2_HF, gguf, outtype="f32")
        self.assertTrue(os.path.isfile(gguf))
        self.assertEqual(tfconv.inspect(gguf)["tensor_count"], tfconv.inspect(QWEN2_GGUF)["tensor_count"])
        self.assertIsInstance(r, dict)
        q8 = os.path.join(self.tmp, "qwen2-q8_0.gguf")
        tfconv.quantize(gguf, q8, type="q8_0")
        self.assertEqual(tfconv.inspect(q8)["file_type"], "Q8_0")
        v = tfconv.verify(gguf, q8, tokens="1,15,250,999,3,87,512,640,33,998,421,77")
        self.assertTrue(v["pass"])
        self.assertEqual(v["tokens"], [1, 15, 250, 999, 3, 87, 512, 640, 33, 998, 421, 77])
        self.assertGreater(v["max_abs"], 0)  # Q8_0 rounds: the logits move, a little
        self.assertLess(v["max_abs"], 1)
        self.assertGreater(v["cosine_min"], 0.99)
        with self.assertRaises(tfconv.TfconvError):
            tfconv.quantize(gguf, q8, type="q8_0")  # exists: needs force
        tfconv.quantize(gguf, q8, type="q4_0", force=True)
        self.assertEqual(tfconv.inspect(q8)["file_type"], "Q4_0")

    @unittest.skipIf(np is None, "numpy not installed")
    def test_tensors_mapped(self):
        hf = tfconv.tensors(QWEN2_HF)
        gg = tfconv.tensors(QWEN2_GGUF)
        emb = gg["token_embd.weight"]
        self.assertIsInstance(emb, np.memmap)
        self.assertEqual(emb.dtype, np.float32)
        # llama.cpp's converter copies float32 as it is: the same numbers under GGUF's name.
        np.testing.assert_array_equal(np.asarray(emb), np.asarray(hf["model.embed_tokens.weight"]))
        self.assertEqual(set(hf), {t["name"] for t in tfconv.inspect(QWEN2_HF)["tensors"]})

    @unittest.skipIf(np is None, "numpy not installed")
    def test_tensors_dequantized(self):
        q = tfconv.tensors(QWEN2MOE_Q4)
        ref = tfconv.tensors(QWEN2MOE_HF)["model.embed_tokens.weight"]
        got = q["token_embd.weight"]
        self.assertEqual(got.dtype, np.float32)
        self.assertEqual(got.shape, ref.shape)
        # Q4_0: 16 levels per block of 32 → error at most half a step of the block's max/8.
        err = np.abs(np.asarray(got) - np.asarray(ref)).max()
        self.assertLessEqual(err, np.abs(ref).max() / 8)
        self.assertGreater(err, 0)
        raw = tfconv.tensors(QWEN2MOE_Q4, dequantize=False)["token_embd.weight"]
        self.assertEqual(raw.dtype, np.uint8)

    @unittest.skipIf(np is None, "numpy not installed")
    def test_tensors_fp8(self):
        # testdata/fp8: dequant.safetensors is llama.cpp's converter's float32 of the FP8 weights.
        got = tfconv.tensors(FP8)
        want = tfconv.tensors(os.path.join(FP8, "dequant.safetensors"))
        for name, w in want.items():
            np.testing.assert_array_equal(np.asarray(got[name]), np.asarray(w), err_msg=name)


if __name__ == "__main__":
    unittest.main()
