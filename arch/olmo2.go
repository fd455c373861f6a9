package arch

// Olmo2 is OLMo 2: blocks without pre-norms, RMSNorms over the whole Q and
// K projections, and norms after attention and after the MLP; otherwise the
// llama shape, with no Q/K permutation and the base hyper-parameters.
var Olmo2 = register(&Family{
	Name:       "olmo2",
	HFClasses:  []string{"Olmo2ForCausalLM"},
	ModelTypes: []string{"olmo2"},
	HFClass:    "Olmo2ForCausalLM", ModelType: "olmo2",
	Params:   withParams(baseParams(), noRopeScaling()),
	Tensors:  olmo2Tensors(),
	Drops:    []Drop{rotaryBuffer},
	HFConst:  map[string]any{"hidden_act": "silu"},
	BiasFlag: "attention_bias",
	Graph:    Graph{Norm: RMSNorm, FFN: Gated, Activation: "silu", NoPreNorm: true, NeoxRopeGGUF: true},
})

func olmo2Tensors() []Tensor { return postNormTensors(DimQ, DimKV) }

// postNormTensors is the decoder schema without pre-norms, with norms after
// attention and after the MLP and RMSNorms of Q and K over q and k (the
// whole projections, OLMo 2; each head, EXAONE 4).
func postNormTensors(q, k Dim) []Tensor {
	var out []Tensor
	for _, t := range decoderTensors(false, LayoutSame) {
		switch t.GGUF {
		case "blk.{bid}.attn_norm", "blk.{bid}.ffn_norm":
			continue
		}
		out = append(out, t)
	}
	return append(out,
		Tensor{GGUF: "blk.{bid}.attn_q_norm", HF: []string{hfLayer + "self_attn.q_norm"}, Shape: []Dim{q}},
		Tensor{GGUF: "blk.{bid}.attn_k_norm", HF: []string{hfLayer + "self_attn.k_norm"}, Shape: []Dim{k}},
		Tensor{GGUF: "blk.{bid}.post_attention_norm", HF: []string{hfLayer + "post_attention_layernorm"}, Shape: []Dim{DimHidden}},
		Tensor{GGUF: "blk.{bid}.post_ffw_norm", HF: []string{hfLayer + "post_feedforward_layernorm"}, Shape: []Dim{DimHidden}},
	)
}
