package arch

// Qwen2 is Qwen2 and Qwen2.5: the llama shape with Q/K/V biases, no Q/K
// permutation (ggml's NEOX rope), and only the base hyper-parameters.
var Qwen2 = register(&Family{
	Name:       "qwen2",
	HFClasses:  []string{"Qwen2ForCausalLM"},
	ModelTypes: []string{"qwen2"},
	HFClass:    "Qwen2ForCausalLM", ModelType: "qwen2",
	Params:  withParams(baseParams(), noRopeScaling()),
	Tensors: decoderTensors(false, LayoutSame),
	Drops:   []Drop{rotaryBuffer},
	HFConst: map[string]any{"hidden_act": "silu", "use_sliding_window": false},
	Graph:   Graph{Norm: RMSNorm, FFN: Gated, Activation: "silu", NeoxRopeGGUF: true},
})
