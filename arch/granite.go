package arch

// Granite is the llama shape with four multipliers: embeddings, the
// residual branches, the attention scale and the logits (divided by). The
// converter ignores head_dim for it.
var Granite = register(&Family{
	Name:       "granite",
	HFClasses:  []string{"GraniteForCausalLM"},
	ModelTypes: []string{"granite"},
	HFClass:    "GraniteForCausalLM", ModelType: "granite",
	Params: withParams(graniteBase(),
		u32("vocab_size", Required, "vocab_size"), ropeDimension(),
		ropeScalingLinear()[0], ropeScalingLinear()[1],
		f32p("attention.scale", Optional, "attention_multiplier"),
		f32p("embedding_scale", Optional, "embedding_multiplier"),
		f32p("residual_scale", Optional, "residual_multiplier"),
		f32p("logit_scale", Optional, "logits_scaling"),
	),
	Tensors:  decoderTensors(true, LayoutSame),
	Drops:    []Drop{rotaryBuffer},
	HFConst:  map[string]any{"hidden_act": "silu", "mlp_bias": false},
	BiasFlag: "attention_bias",
	Graph:    Graph{Norm: RMSNorm, FFN: Gated, Activation: "silu"},
})

// graniteBase is baseParams without head_dim (GraniteModel pops it).
func graniteBase() []Param {
	var out []Param
	for _, p := range baseParams() {
		if p.Key != "attention.key_length" && p.Key != "attention.value_length" {
			out = append(out, p)
		}
	}
	return out
}
