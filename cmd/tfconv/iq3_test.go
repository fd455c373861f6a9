package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// Bounds of TestQuantizeRunIQ3, each with the figure it was set from.
const (
	// maxLogitDiffIQ3LlamaCpp: tfconv multiplies the IQ3 rows, decoded
	// exactly as ggml decodes them, by float32 activations; llama.cpp first
	// rounds each activation row to Q8_K (8 bits per 256 values) for its
	// IQ3_XXS, IQ3_S and Q6_K products. Measured: 0.251 (IQ3_XS) and 0.277
	// (IQ3_S) on logits up to 15.9; 0.5 is about 3 % of the largest.
	maxLogitDiffIQ3LlamaCpp = 0.5
	// maxLogitDiffIQ3Match: with --match-llamacpp tfconv rounds the
	// activations to Q8_K too and sums the integer products in ggml's AVX2
	// order (kernels.MatMulQ), so what remains is the float32 summation
	// order of norms, attention and softmax: 6.2e-6 (IQ3_XS) and 4.3e-6
	// (IQ3_S) measured. 1e-4 is the bound model's match-mode tests use
	// (maxLogitDiffMatchLlamaCpp).
	maxLogitDiffIQ3Match = 1e-4
	// maxMeanKLDIQ3: the mean KL divergence of an IQ3 model's next-token
	// distribution from the f16 model's over the 19 positions: 0.0647
	// (IQ3_XS) and 0.0790 (IQ3_S) for tfconv's run, 0.0659 and 0.0795 for
	// llama.cpp's own run of the same files.
	maxMeanKLDIQ3 = 0.12
	// minTop1IQ3: positions whose most likely token is the f16 model's: 12
	// (IQ3_XS) and 13 (IQ3_S) of 19, for tfconv and llama.cpp alike.
	minTop1IQ3 = 11
)

// TestQuantizeRunIQ3 requantizes the trained tiny-fortunes model (Q8_0)
// to IQ3_XS (IQ3_S with IQ3_XXS attn_q, attn_k and middle ffn_gate/ffn_up)
// and to IQ3_S and runs each: the file equals llama-quantize
// --allow-requantize's byte for byte, and `tfconv run` of it computes
// logits within maxLogitDiffIQ3LlamaCpp of llama.cpp's on that file
// (maxLogitDiffIQ3Match with --match-llamacpp) and,
// against llama.cpp's logits of the model's f16 GGUF, a mean KL divergence
// under maxMeanKLDIQ3 with the same top token at ≥ minTop1IQ3 of the 19
// positions (testdata/quantize/tiny-fortunes-IQ3.json, made by
// gen_tiny_iq3.py).
func TestQuantizeRunIQ3(t *testing.T) {
	ref := readRequantRef(t, "../../testdata/quantize/tiny-fortunes-IQ3.json", "IQ3_XS", "IQ3_S")
	for _, key := range []string{"IQ3_XS", "IQ3_S"} {
		typ := strings.ToLower(key)
		f := ref.run(t, key, "../../testdata/tiny-fortunes/tiny-fortunes-Q8_0.gguf",
			filepath.Join(t.TempDir(), "tiny-fortunes-"+typ+".gguf"), "--allow-requantize")
		if !(f.worst <= maxLogitDiffIQ3LlamaCpp) {
			t.Errorf("%s: logits differ from llama.cpp's by %.3g > %g", typ, f.worst, maxLogitDiffIQ3LlamaCpp)
		}
		if !(f.match <= maxLogitDiffIQ3Match) {
			t.Errorf("%s: --match-llamacpp logits differ from llama.cpp's by %.3g > %g", typ, f.match, maxLogitDiffIQ3Match)
		}
		if !(f.kld <= maxMeanKLDIQ3) {
			t.Errorf("%s: mean KLD from the f16 model %.4g > %g", typ, f.kld, maxMeanKLDIQ3)
		}
		if f.top1 < minTop1IQ3 {
			t.Errorf("%s: same top token as the f16 model at %d positions, want ≥ %d", typ, f.top1, minTop1IQ3)
		}
	}
}
