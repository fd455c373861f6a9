package arch

// Qwen2 is Qwen2 and Qwen2.5: the llama shape with Q/K/V biases, no Q/K
// permutation (ggml's NEOX rope), and only the base hyper-parameters.
var Qwen2 = register(&Family{
	Name: "qwen2",
	// Qwen2AudioForConditionalGeneration's text half (under
	// language_model.); its audio tower and projector are Qwen2Audio's,
	// written to the mmproj. InternVL's two classes (InternVL3-1B … 78B:
	// Qwen2.5) likewise, their tower InternVLVision's; the text model is
	// under language_model. (model.language_model. as transformers holds
	// it), and one whose text_config names another class is refused.
	HFClasses:  []string{"Qwen2ForCausalLM", "Qwen2AudioForConditionalGeneration", "InternVLForConditionalGeneration", "InternVLChatModel"},
	ModelTypes: []string{"qwen2", "qwen2_audio"},
	HFClass:    "Qwen2ForCausalLM", ModelType: "qwen2",
	Params:  withParams(baseParams(), noRopeScaling(), textClass("InternVL", "Qwen2ForCausalLM")),
	Tensors: withLanguageModelPrefix(withTextPrefix(decoderTensors(false, LayoutSame))),
	Drops:   append(append([]Drop{rotaryBuffer}, qwen2AudioDrops...), mmprojDrops(internVLPrefixes)...),
	HFConst: map[string]any{"hidden_act": "silu", "use_sliding_window": false},
	Graph:   Graph{Norm: RMSNorm, FFN: Gated, Activation: "silu", NeoxRopeGGUF: true},
})
