package model

import (
	"path/filepath"
	"testing"
)

// TestHunyuanMoEMatchesLlamaCpp runs llama.cpp's GGUF of the hunyuanmoe
// fixture and compares the logits with llama.cpp d32676d7's own on it
// (gguf/hunyuanmoe-f32.logits.json, 1,362 of each row's 128,167 columns);
// TestFamiliesMatchTransformers holds both forms to transformers'.
func TestHunyuanMoEMatchesLlamaCpp(t *testing.T) {
	t.Parallel()
	dir := "../testdata/arch/hunyuanmoe"
	var lc struct {
		Tokens  []int       `json:"tokens"`
		Columns []int       `json:"columns"`
		Logits  [][]float32 `json:"logits"`
	}
	readJSON(t, filepath.Join(dir, "gguf", "hunyuanmoe-f32.logits.json"), &lc)
	if len(lc.Columns) == 0 || len(lc.Logits) != len(lc.Tokens) {
		t.Fatalf("%d columns, %d rows of %d tokens", len(lc.Columns), len(lc.Logits), len(lc.Tokens))
	}
	m, err := Load(filepath.Join(dir, "gguf", "hunyuanmoe-f32.gguf"), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := m.Forward(Input{Tokens: lc.Tokens}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Logits) == 0 || len(out.Logits[0]) != 128167 {
		t.Fatalf("logits of width %d, want 128167", len(out.Logits[0]))
	}
	diff, scale := maxDiff(t, logitColumns(t, out.Logits, lc.Columns), lc.Logits, nil)
	t.Logf("max |Δ| %.3g against llama.cpp (logits up to %.3g)", diff, scale)
	if diff > maxLogitDiffGGUFvsLlamaCpp {
		t.Errorf("logits differ from llama.cpp's by %.3g (> %g)", diff, maxLogitDiffGGUFvsLlamaCpp)
	}
}
