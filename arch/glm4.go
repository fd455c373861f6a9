package arch

import "github.com/tfconv/tfconv/tensor"

// Glm4 is GLM-4 (Glm4ForCausalLM, GLM-4-0414; the newer llama.cpp's
// "glm4"): the llama shape with Q/K/V biases, a norm after attention
// (post_self_attn_layernorm) and after the MLP (post_mlp_layernorm) besides
// the two pre-norms, the gate and up projections fused (gate_up_proj, rows
// gate then up), and RoPE on part of each head (partial_rotary_factor,
// 0.5 when absent) turning adjacent pairs in both forms (no Q/K
// permutation). The converter takes eos, unk and bos from <|endoftext|>
// and eot from <|user|> when the tokenizer files name none. It follows the
// newer converter (testdata/arch/README.md).
var Glm4 = register(&Family{
	Name:       "glm4",
	HFClasses:  []string{"Glm4ForCausalLM"},
	ModelTypes: []string{"glm4"},
	HFClass:    "Glm4ForCausalLM", ModelType: "glm4",
	Params:   withParams(baseParams(), glmRotary(), noRopeScaling()),
	Tensors:  glm4Tensors(),
	Drops:    []Drop{rotaryBuffer},
	HFConst:  map[string]any{"hidden_act": "silu"},
	BiasFlag: "attention_bias",
	Vocab: VocabRules{SpecialTokens: []SpecialToken{
		{"eos", "<|endoftext|>"}, {"eot", "<|user|>"}, {"unknown", "<|endoftext|>"}, {"bos", "<|endoftext|>"}}},
	Graph: Graph{Norm: RMSNorm, FFN: Gated, FusedGateUp: true, Activation: "silu", AdjacentRopeHF: true},
})

// glmPartialRotary is the share of a head GLM's RoPE turns when
// config.json states no partial_rotary_factor (the converter's and
// transformers' default).
const glmPartialRotary = 0.5

// glmRotary is GLM's rope.dimension_count, written after
// general.file_type: int(head_dim · partial_rotary_factor), head_dim
// defaulting to hidden_size / num_attention_heads. GGUF → HF writes the
// factor back.
func glmRotary() Param { return headRotary(glmPartialRotary) }

// headRotary is rope.dimension_count as head_dim (or hidden_size /
// num_attention_heads) · partial_rotary_factor, def when config.json
// states no factor; GGUF → HF writes the factor back.
func headRotary(def float64) Param {
	return Param{Key: "rope.dimension_count", Kind: tensor.KindUint32, Need: Required,
		Derive: func(c Config) (tensor.Value, bool, error) {
			d, err := headDim(c)
			if err != nil {
				return tensor.Value{}, false, err
			}
			f, ok := c.Float("partial_rotary_factor")
			if !ok {
				f = def
			}
			return tensor.Uint32(uint32(int(float64(d) * f))), true, nil
		},
		Inverse: func(c Config, v tensor.Value, m Meta) {
			rd, _ := v.Int()
			d, ok := m.Int("attention.key_length")
			if !ok {
				h, _ := m.Int("embedding_length")
				if n, _ := m.Int("attention.head_count"); n > 0 {
					d = h / n
				}
			}
			if d > 0 {
				c["partial_rotary_factor"] = jsonValue(tensor.Float64(float64(rd) / float64(d)))
			}
		}}
}

func glm4Tensors() []Tensor {
	d := []Dim{DimHidden}
	var out []Tensor
	for _, t := range decoderTensors(false, LayoutSame) {
		switch t.GGUF {
		case "blk.{bid}.ffn_gate":
			continue
		case "blk.{bid}.ffn_up":
			t.HF = []string{hfLayer + "mlp.gate_up_proj"}
			t.Shape = []Dim{DimFFN2, DimHidden}
		}
		out = append(out, t)
	}
	return append(out,
		Tensor{GGUF: "blk.{bid}.post_attention_norm", HF: []string{hfLayer + "post_self_attn_layernorm"}, Shape: d},
		Tensor{GGUF: "blk.{bid}.post_ffw_norm", HF: []string{hfLayer + "post_mlp_layernorm"}, Shape: d},
	)
}
