package arch

// GPTNeoX is GPT-NeoX and Pythia: LayerNorms with biases, a fused QKV
// projection whose rows Hugging Face interleaves per head ([head][q,k,v])
// and the converter regroups ([q,k,v][head]), partial rotary positions
// (rotary_pct), a plain GELU MLP, parallel attention and MLP residuals.
var GPTNeoX = register(&Family{
	Name:       "gptneox",
	HFClasses:  []string{"GPTNeoXForCausalLM"},
	ModelTypes: []string{"gpt_neox"},
	HFClass:    "GPTNeoXForCausalLM", ModelType: "gpt_neox",
	Params: []Param{
		u32("context_length", Required, "max_position_embeddings"),
		u32("embedding_length", Required, "hidden_size"),
		u32("block_count", Required, "num_hidden_layers"),
		u32("feed_forward_length", Required, "intermediate_size"),
		partialRotary(Required, "rotary_pct"),
		u32("attention.head_count", Required, "num_attention_heads"),
		parallelResidual(),
		f32p("attention.layer_norm_epsilon", Required, "layer_norm_eps"),
		noRopeScaling(),
	},
	Tensors: []Tensor{
		{GGUF: "token_embd", HF: []string{"gpt_neox.embed_in"}, Shape: []Dim{DimVocab, DimHidden}},
		{GGUF: "output_norm", HF: []string{"gpt_neox.final_layer_norm"}, Shape: []Dim{DimHidden}},
		{GGUF: "output", HF: []string{"embed_out"}, Shape: []Dim{DimVocab, DimHidden}},
		{GGUF: "blk.{bid}.attn_norm", HF: []string{"gpt_neox.layers.{bid}.input_layernorm"}, Shape: []Dim{DimHidden}},
		{GGUF: "blk.{bid}.attn_qkv", HF: []string{"gpt_neox.layers.{bid}.attention.query_key_value"}, Shape: []Dim{DimQKV, DimHidden}, Layout: LayoutQKVGroups},
		{GGUF: "blk.{bid}.attn_output", HF: []string{"gpt_neox.layers.{bid}.attention.dense"}, Shape: []Dim{DimHidden, DimQ}},
		{GGUF: "blk.{bid}.ffn_norm", HF: []string{"gpt_neox.layers.{bid}.post_attention_layernorm"}, Shape: []Dim{DimHidden}},
		{GGUF: "blk.{bid}.ffn_up", HF: []string{"gpt_neox.layers.{bid}.mlp.dense_h_to_4h"}, Shape: []Dim{DimFFN, DimHidden}},
		{GGUF: "blk.{bid}.ffn_down", HF: []string{"gpt_neox.layers.{bid}.mlp.dense_4h_to_h"}, Shape: []Dim{DimHidden, DimFFN}},
	},
	Drops: []Drop{rotaryBuffer,
		{Suffix: ".attention.bias", Reason: "causal-mask buffer, not a weight"},
		{Suffix: ".attention.masked_bias", Reason: "causal-mask buffer, not a weight"}},
	HFConst:  map[string]any{"hidden_act": "gelu", "tie_word_embeddings": false},
	BiasFlag: "attention_bias",
	Graph:    Graph{Norm: LayerNorm, FFN: Plain, Activation: "gelu", Parallel: true, NeoxRopeGGUF: true},
})
