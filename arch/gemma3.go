package arch

// Gemma3 is Gemma 3's text model (Gemma3ForCausalLM): Gemma 2's blocks
// (pre- and post-norms, (1 + w) norms, √d embedding scale, GeGLU) with a
// per-head RMSNorm on Q and K (also 1 + w), no attention soft-cap, and
// sliding-window layers except every sliding_window_pattern-th, which
// rotate with their own base (rope_local_base_freq). It follows a newer
// converter than c392e509 (testdata/arch/README.md names the commit).
var Gemma3 = register(&Family{
	Name: "gemma3",
	// Gemma3ForConditionalGeneration's text half (under language_model.);
	// its tower and projector are Gemma3Vision's, written to the mmproj.
	HFClasses:  []string{"Gemma3ForCausalLM", "Gemma3ForConditionalGeneration"},
	ModelTypes: []string{"gemma3_text", "gemma3"},
	HFClass:    "Gemma3ForCausalLM", ModelType: "gemma3_text",
	Params: gemmaKeyLength(withParams(withAfter(baseParams(), "rope.freq_base",
		f32p("rope.freq_base_swa", Optional, "rope_local_base_freq")),
		f32p("final_logit_softcapping", Optional, "final_logit_softcapping"),
		u32("attention.sliding_window", Optional, "sliding_window"),
		noRopeScaling(),
	), 62),
	Tensors: withTextPrefix(append(gemma2Tensors(),
		Tensor{GGUF: "blk.{bid}.attn_q_norm", HF: []string{hfLayer + "self_attn.q_norm"}, Shape: []Dim{DimHeadDim}, Layout: LayoutNormPlusOne},
		Tensor{GGUF: "blk.{bid}.attn_k_norm", HF: []string{hfLayer + "self_attn.k_norm"}, Shape: []Dim{DimHeadDim}, Layout: LayoutNormPlusOne})),
	Drops:    append([]Drop{rotaryBuffer, gemmaHead}, gemma3VisionDrops...),
	HFConst:  map[string]any{"hidden_activation": "gelu_pytorch_tanh", "tie_word_embeddings": true},
	BiasFlag: "attention_bias",
	Vocab:    VocabRules{AddSpacePrefix: &no},
	Graph: Graph{Norm: RMSNorm, FFN: Gated, Activation: "gelu_tanh", EmbedScale: true, QKNormPerHead: true,
		NeoxRopeGGUF: true, Sliding: SlidingPattern, LocalRopeBase: true},
})
