package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// Bounds of TestQuantizeRunIQ4_XS, each with the figure it was set from.
const (
	// maxLogitDiffIQ4XSLlamaCpp: tfconv multiplies IQ4_XS rows, decoded
	// exactly as ggml decodes them, by float32 activations; llama.cpp first
	// rounds each activation row to Q8_K (8 bits per 256 values) for its
	// IQ4_XS and Q6_K products, and that rounding alone moves these logits
	// (up to 15.6) by 0.285 at most. 0.5 is about 3 % of the largest logit.
	maxLogitDiffIQ4XSLlamaCpp = 0.5
	// maxLogitDiffIQ4XSMatch: with --match-llamacpp tfconv rounds the
	// activations to Q8_K too and sums the integer products in ggml's AVX2
	// order (kernels.MatMulQ), so what remains is the float32 summation
	// order of norms, attention and softmax: 4.1e-6 measured. 1e-4 is the
	// bound model's match-mode tests use (maxLogitDiffMatchLlamaCpp).
	maxLogitDiffIQ4XSMatch = 1e-4
	// maxMeanKLDIQ4XS: the mean KL divergence of the IQ4_XS model's next-token
	// distribution from the f16 model's, over the 19 positions: 0.0153 for
	// tfconv's run and 0.0184 for llama.cpp's own run of the same file.
	maxMeanKLDIQ4XS = 0.03
	// minTop1IQ4XS: positions whose most likely token is the f16 model's:
	// 17 of 19 for tfconv, 18 of 19 for llama.cpp.
	minTop1IQ4XS = 16
)

// TestQuantizeRunIQ4_XS requantizes the trained tiny-fortunes model (Q8_0)
// to IQ4_XS and runs it: the file equals llama-quantize
// --allow-requantize's byte for byte, and `tfconv run` of it computes
// logits within maxLogitDiffIQ4XSLlamaCpp of llama.cpp's on that file
// (maxLogitDiffIQ4XSMatch with --match-llamacpp) and,
// against llama.cpp's logits of the model's f16 GGUF, a mean KL divergence
// under maxMeanKLDIQ4XS with the same top token at ≥ minTop1IQ4XS of the
// 19 positions (testdata/quantize/tiny-fortunes-IQ4_XS.json, made by
// gen_tiny_iq4xs.py).
func TestQuantizeRunIQ4_XS(t *testing.T) {
	b, err := os.ReadFile("../../testdata/quantize/tiny-fortunes-IQ4_XS.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		SHA256    string      `json:"sha256"`
		Tokens    []int       `json:"tokens"`
		Logits    [][]float64 `json:"logits"`
		F16Logits [][]float64 `json:"f16_logits"`
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	f := requantRun(t, requantCase{typ: "iq4_xs", src: "../../testdata/tiny-fortunes/tiny-fortunes-Q8_0.gguf",
		dst: filepath.Join(t.TempDir(), "tiny-fortunes-IQ4_XS.gguf"), args: []string{"--allow-requantize"},
		sha256: ref.SHA256, tokens: ref.Tokens, logits: ref.Logits, f16: ref.F16Logits})
	if !(f.worst <= maxLogitDiffIQ4XSLlamaCpp) {
		t.Errorf("logits differ from llama.cpp's by %.3g > %g", f.worst, maxLogitDiffIQ4XSLlamaCpp)
	}
	if !(f.match <= maxLogitDiffIQ4XSMatch) {
		t.Errorf("--match-llamacpp logits differ from llama.cpp's by %.3g > %g", f.match, maxLogitDiffIQ4XSMatch)
	}
	if !(f.kld <= maxMeanKLDIQ4XS) {
		t.Errorf("mean KLD from the f16 model %.4g > %g", f.kld, maxMeanKLDIQ4XS)
	}
	if f.top1 < minTop1IQ4XS {
		t.Errorf("same top token as the f16 model at %d positions, want ≥ %d", f.top1, minTop1IQ4XS)
	}
}
