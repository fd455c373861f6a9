package model

import (
	"math"
	"slices"

	"github.com/tfconv/tfconv/kernels"
)

// routing is how a mixture of experts turns a token's router logits into
// the weights of its chosen experts, shared by the llama-shaped decoder and
// DeepSeek-2:
//
//	p      = softmax(logits), or σ(logits) elementwise (sigmoid)
//	chosen = top-k of p (+ bias, when the layer has one: DeepSeek-V3's and
//	         GLM-4.5's e_score_correction_bias), within the topGroups of
//	         groups expert groups ranked by the sum of their two best
//	         biased scores (the other groups' scores taken as 0)
//	w_e    = p_e / Σ_chosen p (normTopK) · scale (when not normTopK, or
//	         scaleAfterNorm)
//
// The bias chooses the experts; it never weights them.
type routing struct {
	sigmoid, normTopK, scaleAfterNorm bool
	scale                             float32
	// groups, topGroups: the group-limited choice; groups ≤ 1 chooses
	// among all experts.
	groups, topGroups int
}

// weights sets weight[T][n] to each token's routing weights (0 for the
// experts not chosen) from its router logits scores[T][n], which it
// overwrites with the scores p; k experts are chosen per token.
func (r *routing) weights(weight, scores, bias []float32, T, n, k int) {
	clear(weight[:T*n])
	for t := 0; t < T; t++ {
		p := scores[t*n : (t+1)*n]
		if r.sigmoid {
			for i, x := range p {
				p[i] = float32(1 / (1 + math.Exp(-float64(x))))
			}
		} else {
			kernels.Softmax(p)
		}
		chosen := r.choose(p, bias, k)
		var sum float32
		for _, e := range chosen {
			sum += p[e]
		}
		for _, e := range chosen {
			wt := p[e]
			if r.normTopK {
				wt /= sum + 1e-20
			}
			if !r.normTopK || r.scaleAfterNorm {
				wt *= r.scale
			}
			weight[t*n+e] = wt
		}
	}
}

// choose returns the k experts a token with scores p goes to: the k best
// scores, or of the scores plus bias, within the best topGroups groups by
// the sum of each group's two best biased scores, the others' scores taken
// as 0 (as DeepSeek's and transformers' masked_fill does).
func (r *routing) choose(p, bias []float32, k int) []int {
	if bias == nil {
		return kernels.TopK(p, k)
	}
	sel := make([]float32, len(p))
	for i := range p {
		sel[i] = p[i] + bias[i]
	}
	if r.groups > 1 {
		per := len(p) / r.groups
		gs := make([]float32, r.groups)
		for g := range gs {
			two := kernels.TopK(sel[g*per:(g+1)*per], 2)
			gs[g] = sel[g*per+two[0]] + sel[g*per+two[1]]
		}
		keep := kernels.TopK(gs, r.topGroups)
		for g := range gs {
			if !slices.Contains(keep, g) {
				clear(sel[g*per : (g+1)*per])
			}
		}
	}
	return kernels.TopK(sel, k)
}
