package arch

// MiniMaxM2 is MiniMax-M2 (MiniMaxM2ForCausalLM, GGUF "minimax-m2"): a
// mixture in every layer (block_sparse_moe: num_local_experts experts w1/w3/
// w2 of width intermediate_size, Mixtral's names) routed as DeepSeek-V3
// does without groups: sigmoid scores (scoring_func) chosen by score plus
// e_score_correction_bias (GGUF exp_probs_b), the chosen weights
// renormalised; RMSNorms over the whole Q and K projections (use_qk_norm),
// head_dim of which rotary_dim dimensions rotate (ggml's NEOX rope), no
// biases. The newer converter writes TextModel's keys, then
// expert_feed_forward_length (intermediate_size) and rope.dimension_count
// (rotary_dim); llama.cpp's minimax-m2 always renormalises and never
// scales the weights. It follows the newer converter
// (testdata/arch/README.md).
var MiniMaxM2 = register(&Family{
	Name:       "minimax-m2",
	HFClasses:  []string{"MiniMaxM2ForCausalLM"},
	ModelTypes: []string{"minimax_m2"},
	HFClass:    "MiniMaxM2ForCausalLM", ModelType: "minimax_m2",
	Params: withParams(routedParams(baseParams(), "num_local_experts"), noRopeScaling(), fullAttention(minimaxM2Pattern),
		u32("expert_feed_forward_length", Required, "intermediate_size"),
		u32("rope.dimension_count", Required, "rotary_dim")),
	Tensors: append(moeTensors(append(decoderTensors(false, LayoutSame),
		Tensor{GGUF: "blk.{bid}.attn_q_norm", HF: []string{hfLayer + "self_attn.q_norm"}, Shape: []Dim{DimQ}},
		Tensor{GGUF: "blk.{bid}.attn_k_norm", HF: []string{hfLayer + "self_attn.k_norm"}, Shape: []Dim{DimKV}}),
		moeLayout{router: "block_sparse_moe.gate", experts: "block_sparse_moe.experts.{xid}.",
			gate: "w1", down: "w2", up: "w3", ffn: DimFFN}),
		expProbsB("block_sparse_moe.e_score_correction")),
	SuffixAliases: map[string]string{"e_score_correction_bias": "e_score_correction.bias"},
	Drops:         []Drop{rotaryBuffer},
	HFConst:       map[string]any{"hidden_act": "silu", "qk_norm_type": "per_layer"},
	// The publisher's class reads use_qk_norm and use_routing_bias: stated
	// from the tensors present.
	HFRename: func(c Config, has func(string) bool) map[string]string {
		c["use_qk_norm"] = has("blk.0.attn_q_norm.weight")
		c["use_routing_bias"] = has("blk.0.exp_probs_b.bias")
		return nil
	},
	Graph: minimaxM2Graph,
	// The publisher's class (Mixtral's model) masks keys beyond
	// sliding_window, when set, in every layer; llama.cpp's graph has no
	// window, so such a config.json is refused on conversion.
	Pattern: minimaxM2Pattern,
})

var minimaxM2Graph = Graph{Norm: RMSNorm, FFN: Gated, Activation: "silu", NeoxRopeGGUF: true, MoESigmoid: true,
	MoENormTopK: true}

func minimaxM2Pattern(c Config, n int) ([]Layer, error) {
	return windowEveryLayer(minimaxM2Graph, c, n)
}
