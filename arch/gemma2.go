package arch

import "github.com/tfconv/tfconv/tensor"

// Gemma2 adds to Gemma: attention and final-logit soft-capping, a sliding
// window on every other layer (the even ones), and norms after attention
// and after the feed-forward as well as before.
var Gemma2 = register(&Family{
	Name:       "gemma2",
	HFClasses:  []string{"Gemma2ForCausalLM"},
	ModelTypes: []string{"gemma2"},
	HFClass:    "Gemma2ForCausalLM", ModelType: "gemma2",
	Params: gemma2KeyLength(gemmaParams(
		f32p("attn_logit_softcapping", Required, "attn_logit_softcapping"),
		f32p("final_logit_softcapping", Required, "final_logit_softcapping"),
		u32("attention.sliding_window", Required, "sliding_window"),
		noRopeScaling(),
	)),
	Tensors: gemma2Tensors(),
	Drops:   []Drop{rotaryBuffer, gemmaHead},
	HFConst: map[string]any{"hidden_act": "gelu_pytorch_tanh", "hidden_activation": "gelu_pytorch_tanh",
		"tie_word_embeddings": true},
	Vocab:    VocabRules{AddSpacePrefix: &no},
	BiasFlag: "attention_bias",
	Graph:    Graph{Norm: RMSNorm, FFN: Gated, Activation: "gelu_tanh", EmbedScale: true, NeoxRopeGGUF: true, Sliding: SlidingEven},
})

// gemma2KeyLength makes GGUF → HF state Gemma 2's attention scale, which
// the GGUF does not hold: llama.cpp scales queries by 1/√head_dim, or by
// 1/√(d_model/heads) for the 46-layer 27B, and transformers by
// query_pre_attn_scalar^-½ (224 when absent), so the value llama.cpp uses is
// written.
func gemma2KeyLength(params []Param) []Param { return gemmaKeyLength(params, 46) }

// gemmaKeyLength is gemma2KeyLength with the layer count of the size
// llama.cpp scales by d_model/heads (the 27B).
func gemmaKeyLength(params []Param, layers27B int64) []Param {
	for i := range params {
		if params[i].Key == "attention.key_length" {
			params[i].Inverse = func(c Config, v tensor.Value, m Meta) {
				d, _ := v.Int()
				c["head_dim"] = d
				c["query_pre_attn_scalar"] = d
				if n, _ := m.Int("block_count"); n == layers27B {
					h, _ := m.Int("embedding_length")
					heads, _ := m.Int("attention.head_count")
					if heads > 0 {
						c["query_pre_attn_scalar"] = h / heads
					}
				}
			}
		}
	}
	return params
}

// gemma2Tensors renames the llama schema's norms: HF's
// post_attention_layernorm is Gemma 2's norm after attention, and the
// pre-feed-forward norm has a name of its own.
func gemma2Tensors() []Tensor {
	var out []Tensor
	for _, t := range gemmaTensors() {
		if t.GGUF == "blk.{bid}.ffn_norm" {
			continue
		}
		out = append(out, t)
	}
	return append(out,
		Tensor{GGUF: "blk.{bid}.post_attention_norm", HF: []string{hfLayer + "post_attention_layernorm"}, Shape: []Dim{DimHidden}, Layout: LayoutNormPlusOne},
		Tensor{GGUF: "blk.{bid}.ffn_norm", HF: []string{hfLayer + "pre_feedforward_layernorm"}, Shape: []Dim{DimHidden}, Layout: LayoutNormPlusOne},
		Tensor{GGUF: "blk.{bid}.post_ffw_norm", HF: []string{hfLayer + "post_feedforward_layernorm"}, Shape: []Dim{DimHidden}, Layout: LayoutNormPlusOne},
	)
}
