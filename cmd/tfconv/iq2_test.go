package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// Bounds of TestQuantizeRunIQ2, each with the figures it was set from
// (IQ2_XXS, IQ2_XS).
const (
	// maxLogitDiffIQ2LlamaCpp: tfconv multiplies the IQ2 and Q2_K rows,
	// decoded exactly as ggml decodes them, by float32 activations;
	// llama.cpp first rounds each activation row to Q8_K (8 bits per 256
	// values) for those products, which moves these logits (up to 12) by
	// 0.414 and 0.394 at most. 0.6 is 5 % of the largest logit.
	maxLogitDiffIQ2LlamaCpp = 0.6
	// maxLogitDiffIQ2XXSMatch: with --match-llamacpp tfconv rounds the
	// activations to Q8_K too and sums the integer products as ggml's AVX2
	// IQ2 dots do (kernels.MatMulQ), leaving the float32 summation order of
	// norms, attention and softmax: 7.8e-6 measured on IQ2_XXS.
	maxLogitDiffIQ2XXSMatch = 1e-4
	// maxLogitDiffIQ2XSMatch: on IQ2_XS the same run is within 6e-6 up to
	// position 13 and 0.089 from position 14 on. Every row dot of the
	// file's IQ2_XS tensors equals ggml's bit for bit (the kernels'
	// TestMatMulQMatchesGGML checks ggml's IQ2_XS dots); at position 14 one
	// activation of a 256-wide input times its Q8_K inverse scale is exactly
	// 70.5 in tfconv's float32 order, a tie that rounds to even, so one ulp
	// of llama.cpp's own order rounds it to 71: one 8-bit step, carried on
	// through attention to the later positions (found by printing the
	// activations within 2e-5 of a tie; not checked inside llama.cpp).
	maxLogitDiffIQ2XSMatch = 0.15
	// maxKLDExcessIQ2: the mean KL divergence of tfconv's run of the file
	// from llama.cpp's f16 model, less that of llama.cpp's own run of the
	// same file: 0.3455 − 0.3489 and 0.2047 − 0.2016 (the activations'
	// rounding moves it either way).
	maxKLDExcessIQ2 = 0.02
)

// TestQuantizeRunIQ2 requantizes the trained tiny-fortunes model (Q8_0)
// to IQ2_XXS and IQ2_XS with a llama-imatrix importance matrix: each file
// equals llama-quantize --allow-requantize --imatrix's byte for byte, and
// `tfconv run` of it computes logits within maxLogitDiffIQ2LlamaCpp of
// llama.cpp's on that file (and, with --match-llamacpp,
// maxLogitDiffIQ2XXSMatch / maxLogitDiffIQ2XSMatch), at a mean KL divergence from llama.cpp's f16
// model no more than maxKLDExcessIQ2 above llama.cpp's own run's
// (testdata/quantize/tiny-fortunes-IQ2.json, made by gen_tiny_iq2.py).
func TestQuantizeRunIQ2(t *testing.T) {
	ref := readRequantRef(t, "../../testdata/quantize/tiny-fortunes-IQ2.json", "IQ2_XXS", "IQ2_XS")
	// llama-quantize records the imatrix path as given: run from the
	// repository root with the path gen_tiny_iq2.py gave it.
	tmp := t.TempDir()
	t.Chdir("../..")
	matchBound := map[string]float64{"iq2_xxs": maxLogitDiffIQ2XXSMatch, "iq2_xs": maxLogitDiffIQ2XSMatch}
	for _, key := range []string{"IQ2_XXS", "IQ2_XS"} {
		typ := strings.ToLower(key)
		f := ref.run(t, key, "testdata/tiny-fortunes/tiny-fortunes-Q8_0.gguf", filepath.Join(tmp, "tiny-fortunes-"+typ+".gguf"),
			"--allow-requantize", "--imatrix", "testdata/quantize/tiny-fortunes.imatrix.dat")
		if !(f.match <= matchBound[typ]) {
			t.Errorf("%s: --match-llamacpp logits differ from llama.cpp's by %.3g > %g", typ, f.match, matchBound[typ])
		}
		if !(f.worst <= maxLogitDiffIQ2LlamaCpp) {
			t.Errorf("%s: logits differ from llama.cpp's by %.3g > %g", typ, f.worst, maxLogitDiffIQ2LlamaCpp)
		}
		if !(f.kld <= f.llamaKLD+maxKLDExcessIQ2) {
			t.Errorf("%s: mean KLD %.4g, llama.cpp's %.4g", typ, f.kld, f.llamaKLD)
		}
	}
}
