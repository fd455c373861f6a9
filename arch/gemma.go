package arch

import "github.com/tfconv/tfconv/tensor"

// gemmaParams are GemmaModel's keys, in its order (no rope.freq_base:
// llama.cpp's default 10000 is Gemma's).
func gemmaParams(extra ...Param) []Param {
	return withParams([]Param{
		u32("context_length", Required, "max_position_embeddings"),
		u32("embedding_length", Required, "hidden_size"),
		u32("block_count", Required, "num_hidden_layers"),
		u32("feed_forward_length", Required, "intermediate_size"),
		u32("attention.head_count", Required, "num_attention_heads"),
		{Key: "attention.head_count_kv", HF: []string{"num_key_value_heads"}, Kind: tensor.KindUint32, Need: Required,
			Derive: func(c Config) (tensor.Value, bool, error) {
				n, ok := c.Int("num_key_value_heads", "num_attention_heads")
				if !ok {
					return tensor.Value{}, false, errUnsupported("config.json: no num_attention_heads")
				}
				return tensor.Uint32(uint32(n)), true, nil
			}},
		f32p("attention.layer_norm_rms_epsilon", Required, "rms_norm_eps"),
		u32("attention.key_length", Required, "head_dim"),
		{Key: "attention.value_length", HF: []string{"head_dim"}, Kind: tensor.KindUint32, Need: Required,
			Inverse: func(Config, tensor.Value, Meta) {}},
		{Key: FileType},
	}, extra...)
}

// gemmaTensors is the llama schema with every norm weight + 1 and no head
// (Gemma ties it; the converter skips an lm_head.weight).
func gemmaTensors(extra ...Tensor) []Tensor {
	var out []Tensor
	for _, t := range decoderTensors(false, LayoutNormPlusOne) {
		if t.GGUF != "output" {
			out = append(out, t)
		}
	}
	return append(out, extra...)
}

var gemmaHead = Drop{Name: "lm_head.weight", Reason: "Gemma ties the head to the token embedding; llama.cpp's converter skips a stored lm_head"}

// Gemma is Gemma 1: the llama shape with embeddings scaled by √d_model,
// norm weights applied as (1 + w) (stored + 1 in GGUF), GeGLU with tanh
// GELU, a tied head, and head_dim stated.
var Gemma = register(&Family{
	Name:       "gemma",
	HFClasses:  []string{"GemmaForCausalLM"},
	ModelTypes: []string{"gemma"},
	HFClass:    "GemmaForCausalLM", ModelType: "gemma",
	Params:  gemmaParams(noRopeScaling()),
	Tensors: gemmaTensors(),
	Drops:   []Drop{rotaryBuffer, gemmaHead},
	HFConst: map[string]any{"hidden_act": "gelu_pytorch_tanh", "hidden_activation": "gelu_pytorch_tanh", "tie_word_embeddings": true},
	// The converter also sets CodeGemma's prefix/suffix/middle/fsep ids, but
	// gguf-py (c392e509) has no keys for them, so only eot is written.
	Vocab:    VocabRules{AddSpacePrefix: &no, SpecialIDs: []SpecialID{{"eot", 107}}},
	BiasFlag: "attention_bias",
	Graph:    Graph{Norm: RMSNorm, FFN: Gated, Activation: "gelu_tanh", EmbedScale: true, NeoxRopeGGUF: true},
})
