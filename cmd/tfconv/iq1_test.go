package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// Bounds of TestQuantizeRunIQ1, each with the figures it was set from
// (IQ1_S, IQ1_M).
const (
	// maxLogitDiffIQ1LlamaCpp: tfconv multiplies the IQ1, IQ2_XXS, Q2_K and Q5_K
	// rows, decoded exactly as ggml decodes them, by float32 activations;
	// llama.cpp first rounds each activation row to Q8_K for those
	// products, which moves these logits (up to 15.3) by 0.471 and 0.320 at
	// most. 0.6 is 4 % of the largest logit.
	maxLogitDiffIQ1LlamaCpp = 0.6
	// maxLogitDiffIQ1SMatch: with --match-llamacpp tfconv rounds the
	// activations to Q8_K too and sums the integer products as ggml's AVX2
	// IQ1 dots do (kernels' dotIQ1), leaving the float32 summation order of
	// norms, attention and softmax: 7.1e-6 measured on IQ1_S.
	maxLogitDiffIQ1SMatch = 1e-4
	// maxLogitDiffIQ1MMatch: on IQ1_M the same run is within 5.1e-6 up to
	// position 15 and 0.073 from position 16 on. Every row dot of the
	// file's IQ1_M tensors (and IQ1_S's) equals ggml_vec_dot_iq1_m_q8_K's
	// bit for bit on random activations (a one-off ctypes check over all
	// 8704 rows), so, as with IQ2_XS in iq2_test.go, the step is in the
	// activations, most likely one Q8_K rounding tie tipped by llama.cpp's
	// own float32 order; not traced further.
	maxLogitDiffIQ1MMatch = 0.15
	// maxKLDExcessIQ1: the mean KL divergence of tfconv's run of the file
	// from llama.cpp's f16 model, less that of llama.cpp's own run of the
	// same file: 0.5323 − 0.5376 and 0.4775 − 0.4751.
	maxKLDExcessIQ1 = 0.02
)

// TestQuantizeRunIQ1 requantizes the trained tiny-fortunes model (Q8_0)
// to IQ1_S and IQ1_M with a llama-imatrix importance matrix: each file
// equals llama-quantize --allow-requantize --imatrix's byte for byte, and
// `tfconv run` of it computes logits within maxLogitDiffIQ1LlamaCpp of
// llama.cpp's on that file (and, with --match-llamacpp,
// maxLogitDiffIQ1SMatch / maxLogitDiffIQ1MMatch), at a mean KL divergence
// from llama.cpp's f16 model no more than maxKLDExcessIQ1 above llama.cpp's
// own run's (testdata/quantize/tiny-fortunes-IQ1.json, made by
// gen_tiny_iq1.py).
func TestQuantizeRunIQ1(t *testing.T) {
	ref := readRequantRef(t, "../../testdata/quantize/tiny-fortunes-IQ1.json", "IQ1_S", "IQ1_M")
	// llama-quantize records the imatrix path as given: run from the
	// repository root with the path gen_tiny_iq1.py gave it.
	tmp := t.TempDir()
	t.Chdir("../..")
	matchBound := map[string]float64{"iq1_s": maxLogitDiffIQ1SMatch, "iq1_m": maxLogitDiffIQ1MMatch}
	for _, key := range []string{"IQ1_S", "IQ1_M"} {
		typ := strings.ToLower(key)
		f := ref.run(t, key, "testdata/tiny-fortunes/tiny-fortunes-Q8_0.gguf", filepath.Join(tmp, "tiny-fortunes-"+typ+".gguf"),
			"--allow-requantize", "--imatrix", "testdata/quantize/tiny-fortunes.imatrix.dat")
		if !(f.match <= matchBound[typ]) {
			t.Errorf("%s: --match-llamacpp logits differ from llama.cpp's by %.3g > %g", typ, f.match, matchBound[typ])
		}
		if !(f.worst <= maxLogitDiffIQ1LlamaCpp) {
			t.Errorf("%s: logits differ from llama.cpp's by %.3g > %g", typ, f.worst, maxLogitDiffIQ1LlamaCpp)
		}
		if !(f.kld <= f.llamaKLD+maxKLDExcessIQ1) {
			t.Errorf("%s: mean KLD %.4g, llama.cpp's %.4g", typ, f.kld, f.llamaKLD)
		}
	}
}
