package arch

// Qwen3 is Qwen3 (dense): Qwen2's shape without the Q/K/V biases, with an
// RMSNorm over each query and key head before the rotation. It follows a
// newer converter than the other families (Qwen3 postdates llama.cpp
// c392e509): testdata/arch/README.md names the commit.
var Qwen3 = register(&Family{
	Name:       "qwen3",
	HFClasses:  []string{"Qwen3ForCausalLM"},
	ModelTypes: []string{"qwen3"},
	HFClass:    "Qwen3ForCausalLM", ModelType: "qwen3",
	Params: withParams(baseParams(), noRopeScaling()),
	Tensors: append(decoderTensors(false, LayoutSame),
		Tensor{GGUF: "blk.{bid}.attn_q_norm", HF: []string{hfLayer + "self_attn.q_norm"}, Shape: []Dim{DimHeadDim}},
		Tensor{GGUF: "blk.{bid}.attn_k_norm", HF: []string{hfLayer + "self_attn.k_norm"}, Shape: []Dim{DimHeadDim}}),
	Drops:    []Drop{rotaryBuffer},
	HFConst:  map[string]any{"hidden_act": "silu"},
	BiasFlag: "attention_bias",
	Graph:    Graph{Norm: RMSNorm, FFN: Gated, Activation: "silu", QKNormPerHead: true, NeoxRopeGGUF: true},
})
