package arch

import "github.com/tfconv/tfconv/tensor"

// Dots1 is rednote-hilab's dots.llm1 (Dots1ForCausalLM, GGUF "dots1"):
// Qwen3's attention (per-head Q/K RMSNorm, no biases, ggml's NEOX rope)
// over DeepSeek-V3's mixture: the first first_k_dense_replace layers dense,
// then n_routed_experts experts of width moe_intermediate_size chosen by
// sigmoid score plus a per-expert bias (e_score_correction_bias, GGUF
// exp_probs_b) within the best topk_group of n_group groups, their weights
// renormalised (norm_topk_prob) and scaled by routed_scaling_factor, beside
// n_shared_experts shared experts run as one SwiGLU. The converter
// (Qwen2MoeModel's keys, then dots1's own) writes expert_gating_func from
// scoring_func and the groups from n_group/topk_group; llama.cpp's dots1
// sizes K and V by the query head count. It follows the newer converter
// (testdata/arch/README.md).
var Dots1 = register(&Family{
	Name:       "dots1",
	HFClasses:  []string{"Dots1ForCausalLM"},
	ModelTypes: []string{"dots1"},
	HFClass:    "Dots1ForCausalLM", ModelType: "dots1",
	Params: withParams(routedParams(baseParams(), "n_routed_experts"),
		noRopeScaling(), fullAttention(dots1Pattern),
		u32("expert_feed_forward_length", Required, "moe_intermediate_size"),
		u32("leading_dense_block_count", Required, "first_k_dense_replace"),
		u32("expert_shared_count", Required, "n_shared_experts"),
		f32p("expert_weights_scale", Required, "routed_scaling_factor"),
		Param{Key: "expert_weights_norm", HF: []string{"norm_topk_prob"}, Kind: tensor.KindBool, Need: Required}),
	Tensors: append(moeTensors(append(decoderTensors(false, LayoutSame),
		Tensor{GGUF: "blk.{bid}.attn_q_norm", HF: []string{hfLayer + "self_attn.q_norm"}, Shape: []Dim{DimHeadDim}},
		Tensor{GGUF: "blk.{bid}.attn_k_norm", HF: []string{hfLayer + "self_attn.k_norm"}, Shape: []Dim{DimHeadDim}}),
		moeLayout{router: "mlp.gate", experts: "mlp.experts.{xid}.", gate: "gate_proj", down: "down_proj", up: "up_proj",
			ffn: DimExpertFFN, shared: "mlp.shared_experts.", sharedFFN: DimSharedFFN}),
		expProbsB("mlp.gate.e_score_correction")),
	SuffixAliases: map[string]string{"e_score_correction_bias": "e_score_correction.bias"},
	Drops:         []Drop{rotaryBuffer},
	HFConst:       map[string]any{"hidden_act": "silu", "attention_bias": false},
	// The GGUF has no window: every layer is full attention, stated as
	// such (Dots1Config would otherwise slide past max_window_layers).
	HFRename: func(c Config, _ func(string) bool) map[string]string {
		fullLayerTypes(c)
		return nil
	},
	Graph: Graph{Norm: RMSNorm, FFN: Gated, Activation: "silu", QKNormPerHead: true, NeoxRopeGGUF: true,
		MoESigmoid: true},
	Pattern: dots1Pattern,
})

// dots1Pattern is Dots1Config's: layer_types when config.json states it,
// else sliding_window (default 4096; null: none) from layer
// max_window_layers (default 62) on; the sliding layers attend within
// sliding_window. Every layer rotates; the layers from
// first_k_dense_replace on are mixtures.
func dots1Pattern(c Config, n int) ([]Layer, error) {
	types, ok, err := LayerTypes(c, n)
	if err != nil {
		return nil, err
	}
	window, hasWindow := int64(4096), true
	if _, present := c["sliding_window"]; present {
		window, hasWindow = c.Int("sliding_window")
	}
	if !ok {
		from, ok := c.Int("max_window_layers")
		if !ok {
			from = 62
		}
		types = make([]Mixer, n)
		for i := range types {
			if hasWindow && int64(i) >= from {
				types[i] = SlidingAttention
			}
		}
	}
	first, _ := c.Int("first_k_dense_replace")
	out := make([]Layer, n)
	for i, m := range types {
		out[i] = Layer{Mixer: m, Rope: true, MoE: int64(i) >= first && c.Has("n_routed_experts")}
		switch m {
		case SlidingAttention:
			if !hasWindow || window <= 0 || window >= 1<<31 {
				return nil, errUnsupported("config.json: layer_types[%d] is sliding_attention without a sliding_window", i)
			}
			out[i].Window = int(window)
		case ChunkedAttention:
			return nil, errUnsupported("config.json: layer_types[%d] is chunked_attention, which dots1 has not", i)
		}
	}
	return out, nil
}

// expProbsB is the per-expert choice bias (GGUF exp_probs_b.bias) under the
// Hugging Face name hf + "_bias" (a buffer or parameter beside the router).
func expProbsB(hf string) Tensor {
	return Tensor{GGUF: "blk.{bid}.exp_probs_b", HF: []string{hfLayer + hf}, HFSuffix: "_bias",
		Shape: []Dim{DimExperts}, Optional: true}
}

// routedParams are the newer converter's TextModel keys of a mixture, in
// its order: expert_count read from experts (config.json's name for it)
// after the norm epsilons, the expert groups and expert_gating_func after
// expert_used_count.
func routedParams(base []Param, experts string) []Param {
	var out []Param
	for _, p := range base {
		switch p.Key {
		case "expert_count":
			p = u32("expert_count", Required, experts)
		case "expert_used_count":
			out = append(append(append(out, p), expertGroups()...), gatingFunc(Optional))
			continue
		}
		out = append(out, p)
	}
	return out
}
