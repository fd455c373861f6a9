package model

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/tfconv/tfconv/convert"
)

// maxLogitDiffNVFP4HF bounds llama.cpp's logits on the converter's NVFP4
// GGUF against the dequantized Hugging Face model's (tfconv reading the
// checkpoint: float32 weights and activations) and tfconv's default mode on
// the GGUF: llama.cpp rounds every product's activations to Q8_0 (its
// NVFP4 dot product's) and the GGUF holds token_embd and output at f16
// (measured 7.5e-3 ModelOpt, 5.9e-3 compressed-tensors; logits ~0.3).
const maxLogitDiffNVFP4HF = 1e-2

// TestNVFP4RunMatchesLlamaCpp: tfconv runs its GGUF of a ModelOpt and a
// compressed-tensors NVFP4 checkpoint (NVFP4 blocks with their ".scale"
// applied to each product, as llama.cpp's graph does; a Qwen3-MoE's
// stacked NVFP4 experts with each expert's own scale) to the logits
// llama.cpp d32676d7 computes on its own converter's GGUF
// (testdata/nvfp4gguf, whose tensors TestNVFP4PassThrough holds tfconv's
// to, byte for byte) within maxLogitDiffMatchLlamaCpp in the MatchLlamaCpp
// mode, and to the dequantized Hugging Face model's within
// maxLogitDiffNVFP4HF.
func TestNVFP4RunMatchesLlamaCpp(t *testing.T) {
	t.Parallel()
	for name, dir := range map[string]string{"modelopt": "../testdata/modelopt/nvfp4-ffn128", "ct": "../testdata/ct/nvfp4-ffn128",
		"modelopt-moe": "../testdata/modelopt/nvfp4-moe"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b, err := os.ReadFile(filepath.Join("..", "testdata", "nvfp4gguf", name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			var rec struct {
				IDs    []int `json:"ids"`
				Logits struct {
					Logits [][]float32 `json:"logits"`
				} `json:"logits"`
			}
			if err := json.Unmarshal(b, &rec); err != nil {
				t.Fatal(err)
			}
			want := &cppLogits{Tokens: rec.IDs, Logits: rec.Logits.Logits}
			path := filepath.Join(t.TempDir(), name+".gguf")
			if _, err := convert.Run(dir, path, convert.Options{}); err != nil {
				t.Fatal(err)
			}
			match := forwardDiff(t, path, true, want)
			def := forwardDiff(t, path, false, want)
			hf := forwardDiff(t, dir, false, want)
			t.Logf("max |Δlogit| vs llama.cpp: match mode %.3g, default %.3g; the Hugging Face model's %.3g", match, def, hf)
			if !(match <= maxLogitDiffMatchLlamaCpp) {
				t.Errorf("match mode differs from llama.cpp by %.3g > %.3g", match, maxLogitDiffMatchLlamaCpp)
			}
			if !(hf <= maxLogitDiffNVFP4HF) || !(def <= maxLogitDiffNVFP4HF) {
				t.Errorf("the Hugging Face model (%.3g) or the default mode (%.3g) differs from llama.cpp by more than %.3g", hf, def, maxLogitDiffNVFP4HF)
			}
		})
	}
}
