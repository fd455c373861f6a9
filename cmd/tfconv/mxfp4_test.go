package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Bounds of tfconv's run of the mixtral fixture's MXFP4_MOE file against
// llama.cpp d32676d7's run of the same file (newer-mxfp4-logits.json) and
// against llama.cpp's logits of the f32 model.
const (
	// tfconv's --match-llamacpp rounds the activations of the Q8_0
	// tensors to Q8_0 as llama.cpp does, but not those of the MXFP4 experts
	// (ggml multiplies MXFP4 by Q8_0 activations; tfconv has no MXFP4
	// integer dot yet), so the experts differ by that rounding: measured
	// 0.058, logits up to 4.
	maxLogitDiffMXFP4Match = 0.1
	// Without it every activation stays float32; at one of the 12
	// positions (the last) that moves the logits by 1.77, elsewhere by at
	// most 0.071: a jump, not a drift, as when the top-2 expert choice
	// tips (not instrumented).
	maxLogitDiffMXFP4 = 2.0
	// Mean KL divergence from the f32 model's logits: measured 0.0202
	// (llama.cpp's own run of the file: 0.0108), the same top token at 11
	// of 12 positions (llama.cpp: 12).
	maxMeanKLDMXFP4 = 0.03
	minTop1MXFP4    = 11
)

// tfconv quantize --type mxfp4_moe of the mixtral fixture equals newer
// llama-quantize's file byte for byte; inspect and check read it, and run
// computes llama.cpp's logits within the bounds above.
func TestQuantizeRunMXFP4MoE(t *testing.T) {
	b, err := os.ReadFile("../../testdata/quantize/newer-mxfp4-logits.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		SHA256 string      `json:"sha256"`
		Tokens []int       `json:"tokens"`
		Logits [][]float64 `json:"logits"`
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	b, err = os.ReadFile("../../testdata/arch/mixtral/gguf/mixtral-f32.logits.json")
	if err != nil {
		t.Fatal(err)
	}
	var f32 struct {
		Tokens []int       `json:"tokens"`
		Logits [][]float64 `json:"logits"`
	}
	if err := json.Unmarshal(b, &f32); err != nil {
		t.Fatal(err)
	}
	if len(f32.Tokens) != len(ref.Tokens) {
		t.Fatalf("%d and %d tokens", len(f32.Tokens), len(ref.Tokens))
	}
	for i := range ref.Tokens {
		if f32.Tokens[i] != ref.Tokens[i] {
			t.Fatalf("token %d: %d and %d", i, f32.Tokens[i], ref.Tokens[i])
		}
	}
	dst := filepath.Join(t.TempDir(), "mixtral-mxfp4.gguf")
	f := requantRun(t, requantCase{typ: "mxfp4_moe", src: "../../testdata/arch/mixtral/gguf/mixtral-f32.gguf", dst: dst,
		sha256: ref.SHA256, tokens: ref.Tokens, logits: ref.Logits, f16: f32.Logits})
	if f.match > maxLogitDiffMXFP4Match || f.worst > maxLogitDiffMXFP4 || f.kld > maxMeanKLDMXFP4 || f.top1 < minTop1MXFP4 {
		t.Errorf("max |Δ| %.3g (--match-llamacpp %.3g), mean KLD %.4g, top-1 %d: want ≤ %g (%g), ≤ %g, ≥ %d",
			f.worst, f.match, f.kld, f.top1, maxLogitDiffMXFP4, maxLogitDiffMXFP4Match, maxMeanKLDMXFP4, minTop1MXFP4)
	}
	code, out, errs := run(t, "inspect", dst)
	if code != 0 || !strings.Contains(out, "MXFP4\t6\t196608\t104448\t4.250") {
		t.Errorf("inspect: exit %d: %s%s", code, out, errs)
	}
	if code, out, errs := run(t, "check", dst); code != 0 || !strings.Contains(out, "0 error(s), 0 warning(s)") {
		t.Errorf("check: exit %d: %s%s", code, out, errs)
	}
}
