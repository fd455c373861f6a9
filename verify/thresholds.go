package verify

import (
	"fmt"
	"math"
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

// The anchors of the derived thresholds: the bits per weight at which
// ThresholdsQ4 and ThresholdsQ8_0 were measured (Q4_0/Q4_K and Q8_0).
const (
	anchorQ4Bits  = 4.5
	anchorQ8Bits  = 8.5
	minTop1Floor  = 0.05 // a 1–2-bit model still agrees on some top tokens; below this, noise
	maxLayerNMSE  = 1.0  // an NMSE of 1 is an error as large as the signal
	maxDerivedKLD = 3.0  // nats; a wrong tensor gives several more (see ForType)
)

// ForType returns the default thresholds of models whose coarsest weight
// type is d. F32/F64, F16, BF16 and the 8-bit types (Q8_0, Q8_K, I8, FP8)
// have the pairs above; every type below 8 bits (Q6_K down to IQ1_S, the
// ternary and FP4/FP6 types) gets limits derived from its bits per weight b
// through the two measured anchors, q4 at 4.5 bits and q8_0 at 8.5:
//
//	max KLD    = q4.MaxKLD · (q8_0.MaxKLD/q4.MaxKLD)^((b−4.5)/4)     (≤ 3 nats)
//	layer NMSE = q4.LayerNMSE · (q8_0.LayerNMSE/q4.LayerNMSE)^((b−4.5)/4) (≤ 1)
//	min top-1  = q4.MinTop1 + (q8_0.MinTop1 − q4.MinTop1)·(b−4.5)/4   (≥ 0.05)
//
// — a quantization error that grows by a constant factor for each bit
// taken away (3.3× per bit for the KLD), as llama.cpp's published KLDs of
// the k-quants do. Measured against the HF float32 tiny-fortunes on 4
// chunks of val.txt (252 positions; quantized from the f16 GGUF with the
// repo's imatrix), each sits 8–30× under its derived limit:
//
//	type    bits    mean KLD  limit   top-1  limit  max layer NMSE  limit
//	Q6_K    6.5625  8.5e-4    0.021   0.984  0.66   5.4e-4          0.023
//	Q5_K_M  5.5     2.6e-3    0.075   0.968  0.53   2.0e-3          0.087
//	Q3_K_S  3.4375  0.043     0.90    0.853  0.27   0.041           1
//	Q2_K    2.625   0.133     2.4     0.802  0.17   0.106           1
//	IQ3_XXS 3.0625  0.073     1.4     0.813  0.22   0.055           1
//	IQ2_XXS 2.0625  0.249     3       0.706  0.10   0.192           1
//	IQ1_S   1.5625  0.387     3       0.639  0.05   0.318           1
//
// (the 3-nat cap leaves 8–12× to the 1–2-bit types; a swapped or zeroed
// tensor costs several nats).
// The pair's name is the type's lower-case name ("q6_k", "iq2_xxs").
func ForType(d tensor.DType) Thresholds {
	switch p := PairOf(d); p {
	case "f32", "f16", "bf16", "q8_0":
		t, _ := NamedThresholds(p)
		return t
	}
	b := d.BitsPerElement()
	switch d {
	case tensor.F4:
		b = 4
	case tensor.F6_E2M3, tensor.F6_E3M2:
		b = 6
	}
	q4, q8 := ThresholdsQ4, ThresholdsQ8_0
	x := (b - anchorQ4Bits) / (anchorQ8Bits - anchorQ4Bits)
	return Thresholds{
		Pair:      strings.ToLower(d.String()),
		MaxKLD:    min(maxDerivedKLD, q4.MaxKLD*math.Pow(q8.MaxKLD/q4.MaxKLD, x)),
		MinTop1:   min(q8.MinTop1, max(minTop1Floor, q4.MinTop1+(q8.MinTop1-q4.MinTop1)*x)),
		LayerNMSE: min(maxLayerNMSE, q4.LayerNMSE*math.Pow(q8.LayerNMSE/q4.LayerNMSE, x)),
	}
}

// PairOf names the precision class of one weight dtype: "f32" for F32/F64
// (and non-float types, which are not weights), "f16", "bf16", "q8_0" for
// the 8-bit block types and I8, "q4" for every coarser type (whose
// thresholds ForType derives from its bits per weight).
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
// dtypes are ref and cand: those of the coarsest type found in either
// (ForType; the loosest limits, which grow as the bits fall).
func PairFor(ref, cand []tensor.DType) Thresholds {
	worst := ThresholdsF32
	for _, ds := range [][]tensor.DType{ref, cand} {
		for _, d := range ds {
			if t := ForType(d); t.MaxKLD > worst.MaxKLD {
				worst = t
			}
		}
	}
	return worst
}

// NamedThresholds returns the default thresholds of a pair name: f32, f16,
// bf16, q8_0, q4, or a weight type's name (ForType: "q6_k", "iq2_xxs").
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
	if d, ok := tensor.Parse(name); ok && d.Float() {
		return ForType(d), nil
	}
	return Thresholds{}, fmt.Errorf("verify: unknown precision pair %q (want f32, f16, bf16, q8_0, q4 or a weight type such as q6_k or iq2_xxs)", name)
}
