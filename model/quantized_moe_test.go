package model

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
)

// maxLogitDiffQuantized bounds tfconv's run of a quantized GGUF against
// transformers on the exact dequantization of the same weights: the
// products are the same numbers summed in another order (and the block
// decodes are exact), so only float32 rounding differs.
const maxLogitDiffQuantized = 1e-4

// TestQuantizedMixtures runs the mixture-of-experts GGUFs llama-quantize
// made (testdata/arch/gen_quant.py: Q4_0 and Q4_K_M's mix of types, expert
// stacks included; and Mamba-2's Q4_K_M) and compares with transformers' logits on gguf-py's
// dequantization of their weights.
func TestQuantizedMixtures(t *testing.T) {
	files, err := filepath.Glob("../testdata/arch/*/gguf/*-q[0-9]*.gguf")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 3 {
		t.Fatalf("%d quantized fixtures, want 3 (testdata/arch/gen_quant.py)", len(files))
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			var ref reference
			readJSON(t, strings.TrimSuffix(path, ".gguf")+".reference.json", &ref)
			m, err := Load(path, LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			out, err := m.Forward(Input{Tokens: ref.InputIDs}, nil)
			if err != nil {
				t.Fatal(err)
			}
			var worst, top float64
			for i := range ref.Logits {
				for j, w := range ref.Logits[i] {
					worst = max(worst, math.Abs(float64(out.Logits[i][j]-w)))
					top = max(top, math.Abs(float64(w)))
				}
			}
			t.Logf("max |Δ| %.3g against transformers on the dequantized weights (logits up to %.3g)", worst, top)
			if worst > maxLogitDiffQuantized {
				t.Errorf("logits differ by %g (> %g)", worst, maxLogitDiffQuantized)
			}
		})
	}
}
