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

// Bounds of TestQuantizeRunIQ2, each with the figures it was set from
// (IQ2_XXS, IQ2_XS).
const (
	// maxLogitDiffIQ2LlamaCpp: tfconv multiplies the IQ2 and Q2_K rows,
	// decoded exactly as ggml decodes them, by float32 activations;
	// llama.cpp first rounds each activation row to Q8_K (8 bits per 256
	// values) for those products, which moves these logits (up to 12) by
	// 0.414 and 0.394 at most. 0.6 is 5 % of the largest logit.
	maxLogitDiffIQ2LlamaCpp = 0.6
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
// llama.cpp's on that file, at a mean KL divergence from llama.cpp's f16
// model no more than maxKLDExcessIQ2 above llama.cpp's own run's
// (testdata/quantize/tiny-fortunes-IQ2.json, made by gen_tiny_iq2.py).
func TestQuantizeRunIQ2(t *testing.T) {
	b, err := os.ReadFile("../../testdata/quantize/tiny-fortunes-IQ2.json")
	if err != nil {
		t.Fatal(err)
	}
	type file struct {
		SHA256 string      `json:"sha256"`
		Logits [][]float64 `json:"logits"`
	}
	var ref struct {
		Tokens    []int       `json:"tokens"`
		F16Logits [][]float64 `json:"f16_logits"`
		IQ2XXS    file        `json:"IQ2_XXS"`
		IQ2XS     file        `json:"IQ2_XS"`
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	// llama-quantize records the imatrix path as given: run from the
	// repository root with the path gen_tiny_iq2.py gave it.
	tmp := t.TempDir()
	t.Chdir("../..")
	ids := make([]string, len(ref.Tokens))
	for i, id := range ref.Tokens {
		ids[i] = fmt.Sprint(id)
	}
	for typ, want := range map[string]file{"iq2_xxs": ref.IQ2XXS, "iq2_xs": ref.IQ2XS} {
		if len(ref.Tokens) == 0 || len(want.Logits) != len(ref.Tokens) || len(ref.F16Logits) != len(ref.Tokens) {
			t.Fatalf("%s reference: %d tokens, %d and %d logit rows", typ, len(ref.Tokens), len(want.Logits), len(ref.F16Logits))
		}
		dst := filepath.Join(tmp, "tiny-fortunes-"+typ+".gguf")
		if code, _, errs := run(t, "quantize", "testdata/tiny-fortunes/tiny-fortunes-Q8_0.gguf", dst, "--type", typ,
			"--allow-requantize", "--imatrix", "testdata/quantize/tiny-fortunes.imatrix.dat"); code != 0 {
			t.Fatalf("%s: quantize: exit %d: %s", typ, code, errs)
		}
		data, err := os.ReadFile(dst)
		if err != nil {
			t.Fatal(err)
		}
		if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != want.SHA256 {
			t.Errorf("%s: sha256 %x, llama-quantize's %s", typ, sum, want.SHA256)
		}
		code, out, errs := run(t, "run", dst, "--tokens", strings.Join(ids, ","), "--json")
		if code != 0 {
			t.Fatalf("%s: run: exit %d: %s", typ, code, errs)
		}
		var got struct {
			Logits [][]float64 `json:"logits"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatal(err)
		}
		if len(got.Logits) != len(ref.Tokens) {
			t.Fatalf("%s: %d logit rows for %d tokens", typ, len(got.Logits), len(ref.Tokens))
		}
		var worst, kld, kldLlama float64
		for i, row := range got.Logits {
			if len(row) != len(want.Logits[i]) || len(row) != len(ref.F16Logits[i]) {
				t.Fatalf("%s: position %d: %d logits, llama.cpp %d", typ, i, len(row), len(want.Logits[i]))
			}
			for j := range row {
				worst = max(worst, math.Abs(row[j]-want.Logits[i][j]))
			}
			kld += klDivergence(ref.F16Logits[i], row)
			kldLlama += klDivergence(ref.F16Logits[i], want.Logits[i])
		}
		kld /= float64(len(got.Logits))
		kldLlama /= float64(len(got.Logits))
		t.Logf("%s: max |Δ| from llama.cpp on the file %.3g; mean KLD from llama.cpp's f16 logits %.4g (llama.cpp's own run %.4g)",
			typ, worst, kld, kldLlama)
		if !(worst <= maxLogitDiffIQ2LlamaCpp) {
			t.Errorf("%s: logits differ from llama.cpp's by %.3g > %g", typ, worst, maxLogitDiffIQ2LlamaCpp)
		}
		if !(kld <= kldLlama+maxKLDExcessIQ2) {
			t.Errorf("%s: mean KLD %.4g, llama.cpp's %.4g", typ, kld, kldLlama)
		}
	}
}
