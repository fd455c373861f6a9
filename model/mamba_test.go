package model

import (
	"path/filepath"
	"testing"
)

// maxLogitDiffMambaLlamaCpp bounds tfconv's Mamba and Jamba logits against
// llama.cpp d32676d7's on its own GGUF of the fixture (mamba 5.4e-6
// measured, jamba 6.4e-6; transformers' float32 mamba logits are 6.6e-6
// from llama.cpp's and 6.9e-6 from its own in float64, so the three differ
// by float32 rounding alone).
const maxLogitDiffMambaLlamaCpp = 1e-5

// TestMambaMatchesLlamaCpp runs the mamba and jamba fixtures (HF and
// llama.cpp's GGUF) against llama.cpp's logits, and checks that the recurrent state matters:
// dropping it between tokens moves the logits by far more than the bound.
func TestMambaMatchesLlamaCpp(t *testing.T) {
	t.Parallel()
	for _, fam := range []string{"mamba", "jamba"} {
		t.Run(fam, func(t *testing.T) { matchesLlamaCpp(t, fam) })
	}
}

func matchesLlamaCpp(t *testing.T, fam string) {
	dir := filepath.Join("..", "testdata", "arch", fam)
	var cpp cppLogits
	readJSON(t, filepath.Join(dir, "gguf", fam+"-f32.logits.json"), &cpp)
	for _, p := range []string{filepath.Join(dir, "hf"), filepath.Join(dir, "gguf", fam+"-f32.gguf")} {
		m, err := Load(p, LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out, err := m.Forward(Input{Tokens: cpp.Tokens}, nil)
		if err != nil {
			t.Fatal(err)
		}
		diff, scale := maxDiff(t, out.Logits, cpp.Logits, nil)
		t.Logf("%s: max |Δ| %.3g against llama.cpp (logits up to %.3g)", filepath.Base(p), diff, scale)
		if diff > maxLogitDiffMambaLlamaCpp {
			t.Errorf("%s: logits differ from llama.cpp's by %.3g (> %g)", p, diff, maxLogitDiffMambaLlamaCpp)
		}
		// Each token in a fresh session: no state carried.
		var moved float64
		for i, tok := range cpp.Tokens[1:] {
			got, err := m.NewSession().Step([]int{tok})
			if err != nil {
				t.Fatal(err)
			}
			d, _ := maxDiff(t, [][]float32{got}, cpp.Logits[i+1:i+2], nil)
			moved = max(moved, d)
		}
		if moved < 100*maxLogitDiffMambaLlamaCpp {
			t.Errorf("%s: without the state the logits move by %.3g only", p, moved)
		}
		t.Logf("%s: without the state: %.3g", filepath.Base(p), moved)
	}
}
