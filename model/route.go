package model

import (
	"fmt"
	"math"
	"slices"

	spec "github.com/tfconv/tfconv/arch"
	"github.com/tfconv/tfconv/kernels"
	"github.com/tfconv/tfconv/tensor"
)

// routing is how a mixture of experts turns a token's router logits into
// the weights of the experts it goes to, for every family with a router
// (Mixtral's softmax top-k, DeepSeek-V3's biased sigmoid choice within
// expert groups, dots.llm1's and MiniMax-M2's the same):
//
//	p      = softmax(logits)  or  σ(logits)                (sigmoid)
//	s      = p + b                                          (b: the per-expert choice bias, when present)
//	groups: keep the topGroups of groups groups by the sum of each one's two best s, s = 0 elsewhere
//	chosen = top-k of s
//	w_e    = p_e / Σ_chosen p   (normTopK)  ·  scale        (scale after the norm where scaleAfterNorm)
//
// The bias only chooses; the weights are the unbiased p.
type routing struct {
	sigmoid bool
	// normTopK renormalises the chosen weights to sum 1; scaleAfterNorm
	// multiplies them by scale even then (llama.cpp's rule, DeepSeek-V3's;
	// DeepSeek-V2's code scales only weights it did not renormalise).
	normTopK, scaleAfterNorm bool
	scale                    float32
	// groups, topGroups: the choice is made within the topGroups best of
	// groups equal expert groups (groups ≤ 1: among all experts).
	groups, topGroups int
}

// routingOf reads family f's mixture routing from config.json c (or the
// one f derives from GGUF keys): scoring_func (sigmoid, softmax; absent:
// f's Graph.MoESigmoid), norm_topk_prob (absent: normTopK),
// routed_scaling_factor where f's GGUF carries it (expert_weights_scale:
// MiniMax-M2's class and graph never scale), and n_group/topk_group, which
// need at least two experts a group.
func routingOf(c spec.Config, f *spec.Family, experts int, normTopK bool, path string) (routing, error) {
	r := routing{sigmoid: f.Graph.MoESigmoid, normTopK: normTopK, scaleAfterNorm: true, scale: 1}
	switch s, _ := c.Str("scoring_func"); s {
	case "":
	case "softmax":
		r.sigmoid = false
	case "sigmoid":
		r.sigmoid = true
	default:
		return r, tensor.Unsupported("model: %s: scoring_func %q is not supported (softmax, sigmoid)", path, s)
	}
	if v, ok := c.Bool("norm_topk_prob"); ok {
		r.normTopK = v
	}
	if v, ok := c.Float("routed_scaling_factor"); ok && f.HasParam("expert_weights_scale") {
		r.scale = float32(v)
	}
	groups, ok1 := c.Int("n_group")
	top, ok2 := c.Int("topk_group")
	if ok1 && groups > 1 {
		if !ok2 {
			top = groups
		}
		if top <= 0 || top > groups || int64(experts)%groups != 0 || int64(experts)/groups < 2 {
			return r, fmt.Errorf("model: %s: %d experts in %d groups (%d chosen): want at least 2 experts per group",
				path, experts, groups, top)
		}
		r.groups, r.topGroups = int(groups), int(top)
	}
	return r, nil
}

// weights sets weight[T][n] to each token's expert weights (0: not
// chosen) from the router logits scores[T][n] (overwritten by the
// scores); bias is the choice bias (nil: none).
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
// of p plus bias (p alone without one), within the best topGroups groups by
// the sum of each group's two best, the other groups' scores taken as 0
// (as DeepSeek's masked_fill does).
func (r *routing) choose(p, bias []float32, k int) []int {
	if bias == nil && r.groups <= 1 {
		return kernels.TopK(p, k)
	}
	sel := slices.Clone(p)
	for i := range bias {
		sel[i] += bias[i]
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
