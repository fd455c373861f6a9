package verify

import (
	"fmt"
	"math"

	"github.com/tfconv/tfconv/model"
)

// Layer compares the hidden states after one block.
type Layer struct {
	Layer int `json:"layer"` // block index, from 0 as in the checkpoint's tensor names
	// Kind is the block's mixers as the reference model states them
	// (model.Trace.Kinds: "full_attention", "mamba", "conv" …); empty for
	// architectures without a per-layer pattern.
	Kind string `json:"kind,omitempty"`
	// Cosine is the mean over positions of the per-position cosine similarity.
	Cosine float64 `json:"cosine"`
	// NMSE is Σ(cand − ref)² / Σ ref² over every position and feature.
	NMSE   float64 `json:"nmse"`
	MaxAbs float64 `json:"max_abs"`
	// Departs is set on layers whose error the divergence rule flags (see
	// FirstDivergent).
	Departs bool `json:"departs,omitempty"`
}

// CompareLayers compares per-block hidden states, ref[l][t] and cand[l][t]
// being the state after block l at position t. Both must have the same shape.
func CompareLayers(ref, cand [][][]float32) ([]Layer, error) {
	if len(ref) != len(cand) {
		return nil, fmt.Errorf("verify: reference has %d layers, candidate %d", len(ref), len(cand))
	}
	out := make([]Layer, len(ref))
	for l := range ref {
		if len(ref[l]) != len(cand[l]) {
			return nil, fmt.Errorf("verify: layer %d: reference has %d positions, candidate %d", l, len(ref[l]), len(cand[l]))
		}
		var se, sr, cos float64
		ly := Layer{Layer: l}
		for t := range ref[l] {
			r, c := ref[l][t], cand[l][t]
			if len(r) != len(c) {
				return nil, fmt.Errorf("verify: layer %d position %d: reference has %d features, candidate %d", l, t, len(r), len(c))
			}
			var dot, nr, nc float64
			for i := range r {
				a, b := float64(r[i]), float64(c[i])
				d := b - a
				se += d * d
				sr += a * a
				dot += a * b
				nr += a * a
				nc += b * b
				if ad := math.Abs(d); ad > ly.MaxAbs || math.IsNaN(ad) {
					ly.MaxAbs = ad
				}
			}
			cos += cosine(dot, nr, nc)
		}
		if n := len(ref[l]); n > 0 {
			ly.Cosine = cos / float64(n)
		} else {
			ly.Cosine = 1
		}
		switch {
		case se == 0:
			ly.NMSE = 0
		case sr == 0:
			ly.NMSE = math.Inf(1)
		default:
			ly.NMSE = se / sr
		}
		out[l] = ly
	}
	return out, nil
}

// compareTraces is CompareLayers of two traces' hidden states, each layer
// named by the reference's kind.
func compareTraces(ref, cand *model.Trace) ([]Layer, error) {
	ls, err := CompareLayers(ref.Layers, cand.Layers)
	if err != nil {
		return nil, err
	}
	if len(ref.Kinds) == len(ls) {
		for i := range ls {
			ls[i].Kind = ref.Kinds[i]
		}
	}
	return ls, nil
}

// The divergence rule. A block "departs" when either
//
//  1. its NMSE exceeds the layer limit of the precision pair in force
//     (Thresholds.LayerNMSE): more error than the weights' precision
//     explains; or
//  2. it multiplies the error it received by LayerJumpRatio or more
//     (NMSE_l ≥ LayerJumpRatio · NMSE_{l−1}, for l ≥ 1 with NMSE_{l−1} > 0),
//     and NMSE_l ≥ LayerJumpMinFraction · LayerNMSE: a block that is
//     itself the cause, seen before the error has grown past the limit.
//
// FirstDivergent returns the first departing block, or nil when none does.
const (
	// LayerJumpRatio: quantization noise grows by about 1–3× per block as
	// it propagates (measured on the interop and tiny-fortunes fixtures); a
	// block that multiplies it by 10 or more adds error of its own.
	LayerJumpRatio = 10
	// LayerJumpMinFraction keeps rule 2 away from rounding noise: a jump
	// from 1e-16 to 1e-14 in an f32 pair is not a cause.
	LayerJumpMinFraction = 0.01
)

// MarkDivergent applies the divergence rule with the given layer limit,
// setting Departs on each layer, and returns the first departing block's
// index, or nil.
func MarkDivergent(layers []Layer, layerNMSE float64) *int {
	var first *int
	for i := range layers {
		l := &layers[i]
		nm := l.NMSE
		l.Departs = nm > layerNMSE || math.IsNaN(nm)
		if !l.Departs && i > 0 {
			prev := layers[i-1].NMSE
			l.Departs = prev > 0 && nm >= LayerJumpRatio*prev && nm >= LayerJumpMinFraction*layerNMSE
		}
		if l.Departs && first == nil {
			v := l.Layer
			first = &v
		}
	}
	return first
}
