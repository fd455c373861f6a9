package arch

// StableLM is StableLM (2, Zephyr, Epoch): the llama shape with LayerNorms
// (biases), partial rotary positions, optional Q/K/V biases, an optional
// parallel residual, in which the block has no second norm, and optional
// per-head LayerNorms of queries and keys (qk_layernorm: StableLM 2 12B),
// one tensor per head in Hugging Face's form, stacked in GGUF.
var StableLM = register(&Family{
	Name:       "stablelm",
	HFClasses:  []string{"StableLmForCausalLM", "StableLMEpochForCausalLM"},
	ModelTypes: []string{"stablelm", "stablelm_epoch"},
	HFClass:    "StableLmForCausalLM", ModelType: "stablelm",
	Params: []Param{
		u32("context_length", Required, "max_position_embeddings"),
		u32("embedding_length", Required, "hidden_size"),
		u32("block_count", Required, "num_hidden_layers"),
		u32("feed_forward_length", Required, "intermediate_size"),
		partialRotary(Required, "partial_rotary_factor", "rope_pct"),
		u32("attention.head_count", Required, "num_attention_heads"),
		u32("attention.head_count_kv", Required, "num_key_value_heads"),
		parallelResidual(),
		f32p("attention.layer_norm_epsilon", Required, "layer_norm_eps", "norm_eps"),
		{Key: FileType},
		noRopeScaling(),
	},
	Tensors: stablelmTensors(),
	Drops:   []Drop{rotaryBuffer},
	HFRename: func(c Config, has func(string) bool) map[string]string {
		c["qk_layernorm"] = has("blk.0.attn_q_norm.weight")
		return nil
	},
	HFConst:  map[string]any{"hidden_act": "silu"},
	BiasFlag: "use_qkv_bias",
	Graph:    Graph{Norm: LayerNorm, FFN: Gated, Activation: "silu", NeoxRopeGGUF: true},
})

func stablelmTensors() []Tensor {
	out := decoderTensors(false, LayoutSame)
	for i := range out {
		if out[i].GGUF == "blk.{bid}.ffn_norm" {
			out[i].Optional = true // absent with use_parallel_residual
		}
	}
	return append(out,
		Tensor{GGUF: "blk.{bid}.attn_q_norm", HF: []string{hfLayer + "self_attn.q_layernorm.norms.{xid}"},
			Shape: []Dim{DimHeadDim}, Optional: true, Stack: DimHeads},
		Tensor{GGUF: "blk.{bid}.attn_k_norm", HF: []string{hfLayer + "self_attn.k_layernorm.norms.{xid}"},
			Shape: []Dim{DimHeadDim}, Optional: true, Stack: DimKVHeads})
}
