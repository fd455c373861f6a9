package arch

import "github.com/tfconv/tfconv/tensor"

// Bloom is BLOOM: ALiBi instead of positions, a LayerNorm on the token
// embeddings, a fused QKV projection interleaved per head in Hugging Face's
// form ([head][q,k,v], regrouped by the converter), a GELU MLP of 4·d_model
// and a head tied to the embedding, which the converter writes again as
// output.weight. BloomForCausalLM names carry "transformer.", BloomModel's
// do not.
var Bloom = register(&Family{
	Name:       "bloom",
	HFClasses:  []string{"BloomForCausalLM", "BloomModel"},
	ModelTypes: []string{"bloom"},
	HFClass:    "BloomForCausalLM", ModelType: "bloom",
	Params: []Param{
		{Key: "context_length", Kind: tensor.KindUint32, Need: Required,
			// seq_length, or (the converter's fallback) n_embed.
			Derive: func(c Config) (tensor.Value, bool, error) {
				n, ok := c.Int("seq_length", "hidden_size", "n_embed")
				if !ok {
					return tensor.Value{}, false, errUnsupported("config.json: no hidden_size")
				}
				return tensor.Uint32(uint32(n)), true, nil
			},
			Inverse: func(c Config, v tensor.Value, _ Meta) { c["seq_length"] = jsonValue(v) }},
		u32("embedding_length", Required, "hidden_size", "n_embed"),
		{Key: "feed_forward_length", Kind: tensor.KindUint32, Need: Required,
			Derive: func(c Config) (tensor.Value, bool, error) {
				n, ok := c.Int("hidden_size", "n_embed")
				if !ok {
					return tensor.Value{}, false, errUnsupported("config.json: no hidden_size")
				}
				return tensor.Uint32(uint32(4 * n)), true, nil
			},
			Inverse: func(Config, tensor.Value, Meta) {}},
		u32("block_count", Required, "n_layer", "num_hidden_layers"),
		u32("attention.head_count", Required, "n_head", "num_attention_heads"),
		{Key: "attention.head_count_kv", HF: []string{"n_head", "num_attention_heads"}, Kind: tensor.KindUint32, Need: Required,
			Inverse: func(Config, tensor.Value, Meta) {}},
		f32p("attention.layer_norm_epsilon", Required, "layer_norm_epsilon"),
		{Key: FileType},
	},
	Tensors: append(withPrefix("transformer.", []Tensor{
		{GGUF: "token_embd", HF: []string{"word_embeddings"}, Shape: []Dim{DimVocab, DimHidden}},
		{GGUF: "token_embd_norm", HF: []string{"word_embeddings_layernorm"}, Shape: []Dim{DimHidden}},
		{GGUF: "output_norm", HF: []string{"ln_f"}, Shape: []Dim{DimHidden}},
		{GGUF: "blk.{bid}.attn_norm", HF: []string{"h.{bid}.input_layernorm"}, Shape: []Dim{DimHidden}},
		{GGUF: "blk.{bid}.attn_qkv", HF: []string{"h.{bid}.self_attention.query_key_value"}, Shape: []Dim{DimQKV, DimHidden}, Layout: LayoutQKVGroups},
		{GGUF: "blk.{bid}.attn_output", HF: []string{"h.{bid}.self_attention.dense"}, Shape: []Dim{DimHidden, DimQ}},
		{GGUF: "blk.{bid}.ffn_norm", HF: []string{"h.{bid}.post_attention_layernorm"}, Shape: []Dim{DimHidden}},
		{GGUF: "blk.{bid}.ffn_up", HF: []string{"h.{bid}.mlp.dense_h_to_4h"}, Shape: []Dim{DimFFN, DimHidden}},
		{GGUF: "blk.{bid}.ffn_down", HF: []string{"h.{bid}.mlp.dense_4h_to_h"}, Shape: []Dim{DimHidden, DimFFN}},
	}, true), Tensor{GGUF: "output", HF: []string{"lm_head"}, Shape: []Dim{DimVocab, DimHidden}, Optional: true}),
	Copies: []Copy{{GGUF: "output.weight", Of: "token_embd.weight", UnlessHF: "lm_head.weight",
		Reason: "copy of token_embd.weight that llama.cpp writes; BLOOM ties its head to the embedding", HF: "lm_head.weight"}},
	HFConst: map[string]any{"tie_word_embeddings": true, "apply_residual_connection_post_layernorm": false},
	Graph:   Graph{Norm: LayerNorm, FFN: Plain, Activation: "bloom_gelu"},
})
