package model

import (
	"path/filepath"
	"testing"
)

// TestGemma3nMatchesLlamaCpp: the default mode computes transformers'
// forward pass on llama.cpp's GGUF (TestFamiliesMatchTransformers, 6.7e-6),
// which is 0.076 from llama.cpp's logits: llama.cpp cuts the sparse layers'
// gate at mean + z·std with the standard deviation over n − 1, transformers
// over n. MatchLlamaCpp computes llama.cpp's (4.8e-6 from its logits,
// maxLogitDiffMatchLlamaCpp); without the n − 1 it is as far off as the
// default mode.
func TestGemma3nMatchesLlamaCpp(t *testing.T) {
	dir := filepath.Join("../testdata/arch/gemma3n")
	var cpp cppLogits
	readJSON(t, filepath.Join(dir, "gguf", "gemma3n-f32.logits.json"), &cpp)
	p := filepath.Join(dir, "gguf", "gemma3n-f32.gguf")
	def := forwardDiff(t, p, false, &cpp)
	match := forwardDiff(t, p, true, &cpp)
	t.Logf("default %.3e  match-llamacpp %.3e", def, match)
	if match > maxLogitDiffMatchLlamaCpp {
		t.Errorf("match mode: logits %.3g from llama.cpp's (> %g)", match, maxLogitDiffMatchLlamaCpp)
	}
	if def < 0.05 {
		t.Errorf("default mode %.3g from llama.cpp's: the fixture no longer tells the two standard deviations apart", def)
	}
}
