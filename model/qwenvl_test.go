package model

import (
	"path/filepath"
	"testing"

	"github.com/tfconv/tfconv/convert"
)

// TestQwenVLTextRuns: the text GGUFs tfconv converts from the tiny
// Qwen2_5_VLForConditionalGeneration and Qwen3VLForConditionalGeneration of
// testdata/vision (--text-only) run, on ids without an image, to
// transformers' logits (hf/text_reference.json, gen_qwenvl.text_reference):
// with the three M-RoPE positions equal the rotation is Qwen2's / Qwen3's.
// (llama.cpp d32676d7's qwen2vl graph is 2.9e-4 from transformers on the
// same ids, its qwen3vl 1.1e-5; testdata/vision/README.md.)
func TestQwenVLTextRuns(t *testing.T) {
	t.Parallel()
	for _, fam := range []string{"qwen2_5_vl", "qwen3_vl"} {
		t.Run(fam, func(t *testing.T) {
			t.Parallel()
			src := filepath.Join("..", "testdata", "vision", fam, "hf")
			var ref reference
			readJSON(t, filepath.Join(src, "text_reference.json"), &ref)
			gg := filepath.Join(t.TempDir(), fam+".gguf")
			if _, err := convert.Run(src, gg, convert.Options{OutType: convert.OutF32, Multimodal: convert.MultimodalText}); err != nil {
				t.Fatal(err)
			}
			m, err := Load(gg, LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			out, err := m.Forward(Input{Tokens: ref.InputIDs}, nil)
			if err != nil {
				t.Fatal(err)
			}
			d, _ := maxDiff(t, out.Logits, ref.Logits, nil)
			t.Logf("max |Δ| %.3g against transformers", d)
			if d > maxLogitDiffF32 {
				t.Errorf("logits differ from transformers' by %.3g (> %g)", d, maxLogitDiffF32)
			}
		})
	}
}
