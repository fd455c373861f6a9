package checkpoint

import (
	"path/filepath"
	"testing"
)

// TestSummaryPackedExperts: gpt-oss's Hugging Face folder, whose experts are
// MXFP4 values and scales in uint8 tensors, summarises as its GGUF does:
// the same parameters, expert and active parameters, bytes and MXFP4
// tensors (the raw bytes counted one parameter each said 207,568).
func TestSummaryPackedExperts(t *testing.T) {
	dir := "../testdata/arch/gptoss"
	var sums [2]*Summary
	for i, p := range []string{filepath.Join(dir, "hf"), filepath.Join(dir, "gguf", "gptoss-f32.gguf")} {
		c, err := Open(p)
		if err != nil {
			t.Fatal(err)
		}
		if sums[i], err = Summarize(c); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	hf, gg := sums[0], sums[1]
	if hf.Params != gg.Params || hf.ExpertParams != gg.ExpertParams || hf.ActiveParams != gg.ActiveParams ||
		hf.TensorBytes != gg.TensorBytes || hf.Params != 253648 {
		t.Errorf("HF: %d params, %d expert, %d active, %d bytes; GGUF: %d, %d, %d, %d (want 253648 params)",
			hf.Params, hf.ExpertParams, hf.ActiveParams, hf.TensorBytes, gg.Params, gg.ExpertParams, gg.ActiveParams, gg.TensorBytes)
	}
	var mx int
	for _, d := range hf.DTypes {
		if d.DType == "MXFP4" {
			mx = d.Tensors
		}
	}
	if mx != 6 {
		t.Errorf("HF: %d MXFP4 tensors, want 6", mx)
	}
}
