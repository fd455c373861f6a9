package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
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
	if len(ref.Tokens) == 0 || len(ref.Logits) != len(ref.Tokens) || len(ref.F16Logits) != len(ref.Tokens) {
		t.Fatalf("reference: %d tokens, %d and %d logit rows", len(ref.Tokens), len(ref.Logits), len(ref.F16Logits))
	}
	dst := filepath.Join(t.TempDir(), "tiny-fortunes-IQ4_XS.gguf")
	if code, _, errs := run(t, "quantize", "../../testdata/tiny-fortunes/tiny-fortunes-Q8_0.gguf", dst,
		"--type", "iq4_xs", "--allow-requantize"); code != 0 {
		t.Fatalf("quantize: exit %d: %s", code, errs)
	}
	data, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != ref.SHA256 {
		t.Errorf("sha256 %x, llama-quantize's %s", sum, ref.SHA256)
	}
	ids := make([]string, len(ref.Tokens))
	for i, id := range ref.Tokens {
		ids[i] = fmt.Sprint(id)
	}
	runLogits := func(flags ...string) [][]float64 {
		t.Helper()
		code, out, errs := run(t, append([]string{"run", dst, "--tokens", strings.Join(ids, ","), "--json"}, flags...)...)
		if code != 0 {
			t.Fatalf("run %v: exit %d: %s", flags, code, errs)
		}
		var got struct {
			Logits [][]float64 `json:"logits"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatal(err)
		}
		if len(got.Logits) != len(ref.Tokens) {
			t.Fatalf("run %v gave %d logit rows for %d tokens", flags, len(got.Logits), len(ref.Tokens))
		}
		for i, row := range got.Logits {
			if len(row) != len(ref.Logits[i]) || len(row) != len(ref.F16Logits[i]) {
				t.Fatalf("position %d: %d logits, llama.cpp %d", i, len(row), len(ref.Logits[i]))
			}
		}
		return got.Logits
	}
	maxDiff := func(a, b [][]float64) float64 {
		var d float64
		for i := range a {
			for j := range a[i] {
				d = max(d, math.Abs(a[i][j]-b[i][j]))
			}
		}
		return d
	}
	logits := runLogits()
	worst := maxDiff(logits, ref.Logits)
	match := maxDiff(runLogits("--match-llamacpp"), ref.Logits)
	var kld float64
	top1 := 0
	for i, row := range logits {
		kld += klDivergence(ref.F16Logits[i], row)
		if argmax(row) == argmax(ref.F16Logits[i]) {
			top1++
		}
	}
	kld /= float64(len(logits))
	t.Logf("max |Δ| from llama.cpp on the IQ4_XS file %.3g (--match-llamacpp %.3g); against llama.cpp's f16 logits: mean KLD %.4g, same top token at %d of %d",
		worst, match, kld, top1, len(logits))
	if !(worst <= maxLogitDiffIQ4XSLlamaCpp) {
		t.Errorf("logits differ from llama.cpp's by %.3g > %g", worst, maxLogitDiffIQ4XSLlamaCpp)
	}
	if !(match <= maxLogitDiffIQ4XSMatch) {
		t.Errorf("--match-llamacpp logits differ from llama.cpp's by %.3g > %g", match, maxLogitDiffIQ4XSMatch)
	}
	if !(kld <= maxMeanKLDIQ4XS) {
		t.Errorf("mean KLD from the f16 model %.4g > %g", kld, maxMeanKLDIQ4XS)
	}
	if top1 < minTop1IQ4XS {
		t.Errorf("same top token as the f16 model at %d positions, want ≥ %d", top1, minTop1IQ4XS)
	}
}

// klDivergence is KL(softmax(p) ‖ softmax(q)) in nats.
func klDivergence(p, q []float64) float64 {
	lp, lq := logSoftmax(p), logSoftmax(q)
	var s float64
	for i := range lp {
		s += math.Exp(lp[i]) * (lp[i] - lq[i])
	}
	return s
}

func logSoftmax(x []float64) []float64 {
	m := x[argmax(x)]
	var z float64
	for _, v := range x {
		z += math.Exp(v - m)
	}
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = v - m - math.Log(z)
	}
	return out
}

func argmax(x []float64) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}
