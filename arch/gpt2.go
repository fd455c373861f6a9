package arch

import "github.com/tfconv/tfconv/tensor"

// GPT2 is OpenAI's GPT-2 as transformers stores it (GPT2LMHeadModel, or
// GPT2Model without the "transformer." prefix): learned positions,
// pre-LayerNorm blocks, a fused QKV projection, a GELU-tanh MLP.
//
// Conv1D: the attention and MLP projections keep their weights as [in, out];
// the converter transposes them to [out, in]. The fused c_attn (Q, K, V
// stacked) stays fused as attn_qkv. Tied head: the converter writes
// output.weight as a copy of the token embedding; GGUF → HF drops the copy.
var GPT2 = register(&Family{
	Name:       "gpt2",
	HFClasses:  []string{"GPT2LMHeadModel"},
	ModelTypes: []string{"gpt2"},
	HFClass:    "GPT2LMHeadModel", ModelType: "gpt2",
	Params: []Param{
		u32("block_count", Required, "n_layer"),
		u32("context_length", Required, "n_ctx", "n_positions"),
		u32("embedding_length", Required, "n_embd"),
		{Key: "feed_forward_length", Kind: tensor.KindUint32, Need: Required,
			// The converter writes 4·n_embd whatever n_inner says; a model
			// where that is wrong is refused rather than misdescribed.
			Derive: func(c Config) (tensor.Value, bool, error) {
				d, ok := c.Int("n_embd")
				if !ok {
					return tensor.Value{}, false, errUnsupported("config.json: no n_embd")
				}
				if inner, ok := c.Int("n_inner"); ok && inner != 4*d {
					return tensor.Value{}, false, errUnsupported("gpt2: n_inner %d is not 4·n_embd, which llama.cpp's GPT-2 assumes", inner)
				}
				return tensor.Uint32(uint32(4 * d)), true, nil
			},
			Inverse: func(c Config, v tensor.Value, m Meta) {
				ff, _ := v.Int()
				d, _ := m.Int("embedding_length")
				c["n_inner"] = nil
				if ff != 4*d {
					c["n_inner"] = ff
				}
			}},
		u32("attention.head_count", Required, "n_head"),
		f32p("attention.layer_norm_epsilon", Required, "layer_norm_epsilon"),
		{Key: FileType},
	},
	Tensors: []Tensor{
		{GGUF: "token_embd", HF: []string{"transformer.wte", "wte"}, Shape: []Dim{DimVocab, DimHidden}},
		{GGUF: "position_embd", HF: []string{"transformer.wpe", "wpe"}, Shape: []Dim{DimContext, DimHidden}},
		{GGUF: "output_norm", HF: []string{"transformer.ln_f", "ln_f"}, Shape: []Dim{DimHidden}},
		{GGUF: "output", Optional: true}, // the converter's copy of token_embd (Copies)
		{GGUF: "blk.{bid}.attn_norm", HF: []string{"transformer.h.{bid}.ln_1", "h.{bid}.ln_1"}, Shape: []Dim{DimHidden}},
		{GGUF: "blk.{bid}.attn_qkv", HF: []string{"transformer.h.{bid}.attn.c_attn", "h.{bid}.attn.c_attn"}, Shape: []Dim{DimHidden, DimQKV}, Layout: LayoutTranspose},
		{GGUF: "blk.{bid}.attn_output", HF: []string{"transformer.h.{bid}.attn.c_proj", "h.{bid}.attn.c_proj"}, Shape: []Dim{DimQ, DimHidden}, Layout: LayoutTranspose},
		{GGUF: "blk.{bid}.ffn_norm", HF: []string{"transformer.h.{bid}.ln_2", "h.{bid}.ln_2"}, Shape: []Dim{DimHidden}},
		{GGUF: "blk.{bid}.ffn_up", HF: []string{"transformer.h.{bid}.mlp.c_fc", "h.{bid}.mlp.c_fc"}, Shape: []Dim{DimHidden, DimFFN}, Layout: LayoutTranspose},
		{GGUF: "blk.{bid}.ffn_down", HF: []string{"transformer.h.{bid}.mlp.c_proj", "h.{bid}.mlp.c_proj"}, Shape: []Dim{DimFFN, DimHidden}, Layout: LayoutTranspose},
	},
	ShapeKeys: []ShapeKey{{Key: "n_positions", Tensor: "position_embd.weight", Axis: 0}},
	Copies: []Copy{{GGUF: "output.weight", Of: "token_embd.weight",
		Reason: "copy of token_embd.weight that llama.cpp writes; transformers ties lm_head to wte", HF: "lm_head.weight"}},
	Drops: []Drop{
		{Suffix: ".attn.bias", Reason: "causal-mask buffer, not a weight"},
		{Suffix: ".attn.masked_bias", Reason: "causal-mask buffer, not a weight"},
		{Name: "lm_head.weight", Reason: "GPT-2 ties lm_head to wte; output.weight is written from the embedding, as llama.cpp does"},
	},
	HFConst: map[string]any{"activation_function": "gelu_new", "tie_word_embeddings": true},
	Graph:   Graph{Norm: LayerNorm, FFN: Plain, Activation: "gelu_tanh", LearnedPositions: true},
})
