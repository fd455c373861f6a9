package arch

import "github.com/tfconv/tfconv/tensor"

// SmolLM3 is LLaMA (convert_hf_to_gguf.py's LlamaModel: Q/K rows
// permuted, the same keys under "smollm3.") with no rotary position in
// every fourth layer: transformers reads config.json's no_rope_layers (1
// rotates, 0 does not; no_rope_layer_interval 4 makes it), llama.cpp's
// graph fixes the step at 4 and the GGUF says nothing of it. It follows
// the newer converter (testdata/arch/README.md).
var SmolLM3 = register(&Family{
	Name:       "smollm3",
	HFClasses:  []string{"SmolLM3ForCausalLM"},
	ModelTypes: []string{"smollm3"},
	HFClass:    "SmolLM3ForCausalLM", ModelType: "smollm3",
	Params: withParams(baseParams(),
		append([]Param{u32("vocab_size", Required, "vocab_size"), ropeDimension(), noRopeEvery(4)},
			ropeScalingLinear()...)...),
	Tensors:   decoderTensors(true, LayoutSame),
	Drops:     []Drop{rotaryBuffer},
	Generated: []Generated{ropeFreqs},
	HFConst:   map[string]any{"hidden_act": "silu", "mlp_bias": false},
	BiasFlag:  "attention_bias",
	Vocab:     VocabRules{SpacePrefixFromConfig: true},
	Graph:     Graph{Norm: RMSNorm, FFN: Gated, Activation: "silu", NoRopeStep: 4},
})

// noRopeEvery checks config.json's no_rope_layers against the fixed step
// the GGUF runtime uses (llama.cpp's n_no_rope_layer_step) and writes no
// key: a list of another pattern would make the GGUF compute something
// else than the checkpoint, so it is refused rather than dropped.
func noRopeEvery(step int) Param {
	return Param{Key: "no_rope_layers", Kind: tensor.KindUint32,
		Derive: func(c Config) (tensor.Value, bool, error) {
			list, ok, err := c.Ints("no_rope_layers")
			if err != nil || !ok {
				return tensor.Value{}, false, err
			}
			n, _ := c.Int("num_hidden_layers")
			if int64(len(list)) != n {
				return tensor.Value{}, false, errUnsupported("config.json: no_rope_layers has %d entries for %d layers", len(list), n)
			}
			g := Graph{NoRopeStep: step}
			for i, v := range list {
				if (v != 0) != g.RopeLayer(i, nil) {
					return tensor.Value{}, false, errUnsupported("config.json: no_rope_layers %v: the GGUF runtime leaves out RoPE in every %dth layer only (layer %d differs)", list, step, i)
				}
			}
			return tensor.Value{}, false, nil
		},
		Inverse: func(Config, tensor.Value, Meta) {}}
}
