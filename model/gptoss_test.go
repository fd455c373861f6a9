package model

import (
	"path/filepath"
	"testing"
)

// TestGptOssMatchesLlamaCpp: llama.cpp multiplies gpt-oss's MXFP4 experts
// by activations rounded to Q8_0 (ggml_vec_dot_mxfp4_q8_0), which puts its
// logits 0.064 from transformers' on the fixture; run as llama.cpp computes
// (--match-llamacpp), tfconv on llama.cpp's GGUF gives llama.cpp's logits,
// and without it transformers' (TestFamiliesMatchTransformers).
func TestGptOssMatchesLlamaCpp(t *testing.T) {
	dir := "../testdata/arch/gptoss"
	var lc struct {
		Tokens []int       `json:"tokens"`
		Logits [][]float32 `json:"logits"`
	}
	readJSON(t, filepath.Join(dir, "gguf", "gptoss-f32.logits.json"), &lc)
	for _, src := range []string{filepath.Join(dir, "gguf", "gptoss-f32.gguf"), filepath.Join(dir, "hf")} {
		m, err := Load(src, LoadOptions{MatchLlamaCpp: true})
		if err != nil {
			t.Fatal(err)
		}
		out, err := m.Forward(Input{Tokens: lc.Tokens}, nil)
		if err != nil {
			t.Fatal(err)
		}
		diff, scale := maxDiff(t, out.Logits, lc.Logits, nil)
		t.Logf("%s: max |Δ| %.3g against llama.cpp (logits up to %.3g)", src, diff, scale)
		if diff > maxLogitDiffGGUFvsLlamaCpp {
			t.Errorf("%s: logits differ from llama.cpp's by %.3g (> %g)", src, diff, maxLogitDiffGGUFvsLlamaCpp)
		}
	}
}
