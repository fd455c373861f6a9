package arch

// Starcoder2 is the llama shape with LayerNorms (weight and bias), biases
// on every projection, a plain GELU MLP (c_fc → ffn_up, c_proj →
// ffn_down) and a tied head by default.
var Starcoder2 = register(&Family{
	Name:       "starcoder2",
	HFClasses:  []string{"Starcoder2ForCausalLM"},
	ModelTypes: []string{"starcoder2"},
	HFClass:    "Starcoder2ForCausalLM", ModelType: "starcoder2",
	Params:   withOut(withParams(baseParams(), noRopeScaling()), "attention.layer_norm_epsilon", "norm_epsilon"),
	Tensors:  starcoder2Tensors(),
	Drops:    []Drop{rotaryBuffer},
	HFConst:  map[string]any{"hidden_act": "gelu_pytorch_tanh"},
	BiasFlag: "use_bias",
	Graph:    Graph{Norm: LayerNorm, FFN: Plain, Activation: "gelu_tanh", NeoxRopeGGUF: true},
})

func starcoder2Tensors() []Tensor {
	var out []Tensor
	for _, t := range decoderTensors(false, LayoutSame) {
		switch t.GGUF {
		case "blk.{bid}.ffn_gate":
			continue
		case "blk.{bid}.ffn_up":
			t.HF = []string{hfLayer + "mlp.c_fc"}
		case "blk.{bid}.ffn_down":
			t.HF = []string{hfLayer + "mlp.c_proj"}
		}
		out = append(out, t)
	}
	return out
}
