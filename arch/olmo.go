package arch

import "github.com/tfconv/tfconv/tensor"

// Olmo is OLMo (1): the llama shape with LayerNorms that have no weights
// at all (so no norm tensors), optional clipping of Q/K/V, and the Q/K
// weights permuted as LLaMA's.
var Olmo = register(&Family{
	Name:       "olmo",
	HFClasses:  []string{"OlmoForCausalLM", "OLMoForCausalLM"},
	ModelTypes: []string{"olmo"},
	HFClass:    "OlmoForCausalLM", ModelType: "olmo",
	Params: withParams(baseParams(),
		Param{Key: "attention.layer_norm_epsilon", Kind: tensor.KindFloat32,
			Derive:  func(Config) (tensor.Value, bool, error) { return tensor.Float32(1e-5), true, nil },
			Inverse: func(Config, tensor.Value, Meta) {}},
		f32p("attention.clamp_kqv", Optional, "clip_qkv"),
		noRopeScaling(),
	),
	Tensors:  olmoTensors(),
	Drops:    []Drop{rotaryBuffer},
	HFConst:  map[string]any{"hidden_act": "silu"},
	BiasFlag: "attention_bias",
	Graph:    Graph{Norm: LayerNorm, FFN: Gated, Activation: "silu"},
})

// olmoTensors is the llama schema without norm tensors.
func olmoTensors() []Tensor {
	var out []Tensor
	for _, t := range decoderTensors(true, LayoutSame) {
		switch t.GGUF {
		case "output_norm", "blk.{bid}.attn_norm", "blk.{bid}.ffn_norm":
			continue
		}
		out = append(out, t)
	}
	return out
}
