package verify

import (
	"fmt"
	"strings"

	"github.com/tfconv/tfconv/tensor"
)

// Thresholds are the limits a comparison must stay within: the exit code of
// tfconv verify is 0 when every one holds and 1 otherwise.
type Thresholds struct {
	// Pair names the precision pair the limits were chosen for ("f32",
	// "f16", "bf16", "q8_0", "q4"), or "custom".
	Pair string `json:"pair"`
	// MaxKLD bounds the mean KL divergence over positions.
	MaxKLD float64 `json:"max_kld"`
	// MinTop1 bounds the same-top-token rate from below.
	MinTop1 float64 `json:"min_top1"`
	// LayerNMSE bounds each block's hidden-state NMSE (rule 1 of the
	// divergence rule, see MarkDivergent).
	LayerNMSE float64 `json:"layer_nmse"`
}

// The default thresholds per precision pair, by the coarser of the two
// models' weight types (see PairFor). Each is well above what an honest
// conversion to that precision shows, measured with this package against the
// HF float32 reference: tiny-fortunes (trained; 20 chunks of val.txt, 1260
// positions) and the random-weight interop llama (12 positions):
//
//	pair  file                  mean KLD  top-1  max layer NMSE
//	f32   interop llama f32     3.6e-13   1.000  4.9e-13
//	f16   tiny-fortunes f16     1.4e-7    1.000  8.1e-8
//	q8_0  tiny-fortunes Q8_0    8.7e-5    0.992  5.5e-5
//	q8_0  interop llama Q8_0    2.1e-4    1.000  4.1e-4  (19 positions)
//	q8_0  interop llama Q8_0    2.3e-4    0.917  4.1e-4  (12 other positions)
//	q4    tiny-fortunes Q4_K_M  1.2e-2    0.914  8.1e-3
//	q4    tiny-fortunes Q4_0    1.9e-2    0.899  1.3e-2
//	q4    interop llama Q4_K    3.6e-2    0.474  7.8e-2  (19 positions)
//
// so that a correct file passes on other inputs too, and a wrong one (a
// swapped tensor, a bad scale, a perturbed row) does not. Top-1 is the
// noisiest of the three on few positions and random-weight models, whose
// distributions are nearly flat: on the interop llama Q4_K half of the top
// tokens change while the KLD stays at 0.04 nats, hence q4's low MinTop1.
var (
	// ThresholdsF32 is f32↔f32: the same numbers computed again. Logits
	// agree to summation-order rounding (~1e-6), which gives KLDs near
	// 1e-12; any real change to a weight is far above these.
	ThresholdsF32 = Thresholds{Pair: "f32", MaxKLD: 1e-9, MinTop1: 0.99, LayerNMSE: 1e-10}
	// ThresholdsF16: f16 weights keep 11 significant bits (relative
	// rounding ≤ 4.9e-4); tiny-fortunes f16 moves logits by ≤ 5e-3.
	ThresholdsF16 = Thresholds{Pair: "f16", MaxKLD: 1e-5, MinTop1: 0.98, LayerNMSE: 1e-5}
	// ThresholdsBF16: bf16 keeps 8 significant bits, 8× f16's rounding,
	// so 64× its squared error.
	ThresholdsBF16 = Thresholds{Pair: "bf16", MaxKLD: 2e-4, MinTop1: 0.95, LayerNMSE: 2e-4}
	// ThresholdsQ8_0: 8-bit blocks (Q8_0, Q8_K, I8 with scales);
	// tiny-fortunes Q8_0 moves logits by ≤ 0.16 and perplexity by 0.01 %.
	ThresholdsQ8_0 = Thresholds{Pair: "q8_0", MaxKLD: 2e-3, MinTop1: 0.90, LayerNMSE: 2e-3}
	// ThresholdsQ4 covers every type below 8 bits (Q6_K down to Q2_K and
	// the IQ types): tiny-fortunes Q4_0 raises perplexity by 16 %, which
	// is what Q4_0 does, not a bug, so the limits are wide; they still
	// catch a broken tensor, which sends the KLD to whole nats.
	ThresholdsQ4 = Thresholds{Pair: "q4", MaxKLD: 0.25, MinTop1: 0.40, LayerNMSE: 0.3}
)

// precisionRank orders the pairs from finest to coarsest.
var precisionRank = map[string]int{"f32": 0, "f16": 1, "bf16": 2, "q8_0": 3, "q4": 4}

// PairOf names the precision class of one weight dtype: "f32" for F32/F64
// (and non-float types, which are not weights), "f16", "bf16", "q8_0" for
// the 8-bit block types and I8, "q4" for every coarser type.
func PairOf(d tensor.DType) string {
	switch d {
	case tensor.F16:
		return "f16"
	case tensor.BF16:
		return "bf16"
	case tensor.Q8_0, tensor.Q8_1, tensor.Q8_K, tensor.I8, tensor.F8_E4M3, tensor.F8_E5M2,
		tensor.F8_E4M3FNUZ, tensor.F8_E5M2FNUZ:
		return "q8_0"
	}
	if d.Quantized() || d == tensor.F4 || d == tensor.F6_E2M3 || d == tensor.F6_E3M2 {
		return "q4"
	}
	return "f32"
}

// PairFor returns the default thresholds for comparing models whose weight
// dtypes are ref and cand: those of the coarsest type found in either.
func PairFor(ref, cand []tensor.DType) Thresholds {
	worst := "f32"
	for _, ds := range [][]tensor.DType{ref, cand} {
		for _, d := range ds {
			if p := PairOf(d); precisionRank[p] > precisionRank[worst] {
				worst = p
			}
		}
	}
	t, _ := NamedThresholds(worst)
	return t
}

// NamedThresholds returns the default thresholds of a pair name.
func NamedThresholds(name string) (Thresholds, error) {
	switch strings.ToLower(name) {
	case "f32":
		return ThresholdsF32, nil
	case "f16":
		return ThresholdsF16, nil
	case "bf16":
		return ThresholdsBF16, nil
	case "q8_0", "q8":
		return ThresholdsQ8_0, nil
	case "q4":
		return ThresholdsQ4, nil
	}
	return Thresholds{}, fmt.Errorf("verify: unknown precision pair %q (want f32, f16, bf16, q8_0 or q4)", name)
}
