package arch

import "github.com/tfconv/tfconv/tensor"

// Ernie45 is Baidu's ERNIE 4.5 (dense: Ernie4_5ForCausalLM, the newer
// llama.cpp's "ernie4_5"): LLaMA's block whose rotation turns adjacent
// pairs of each head in the Hugging Face form too (GLM's interleaved rope,
// which is ggml's normal rope: the converter permutes nothing), with head_dim
// stated. The converter writes the SentencePiece vocabulary with
// tokenizer_config.json's add_prefix_space. It follows the newer converter
// (testdata/arch/README.md).
var Ernie45 = register(&Family{
	Name:       "ernie4_5",
	HFClasses:  []string{"Ernie4_5ForCausalLM", "Ernie4_5_ForCausalLM"},
	ModelTypes: []string{"ernie4_5"},
	HFClass:    "Ernie4_5ForCausalLM", ModelType: "ernie4_5",
	Params:  withParams(baseParams(), ernieNoBias(), noRopeScaling()),
	Tensors: decoderTensors(false, LayoutSame),
	Drops:   []Drop{rotaryBuffer},
	HFConst: map[string]any{"hidden_act": "silu", "use_bias": false},
	Vocab:   VocabRules{SpacePrefixFromConfig: true},
	Graph:   Graph{Norm: RMSNorm, FFN: Gated, Activation: "silu", PairRopeHF: true},
})

// ernieNoBias refuses config.json's use_bias true: llama.cpp's ERNIE 4.5
// graphs add no output-projection or feed-forward biases (and load none of
// the latter), so the GGUF would not compute what the checkpoint does.
func ernieNoBias() Param {
	return Param{Key: "use_bias", Kind: tensor.KindBool,
		Derive: func(c Config) (tensor.Value, bool, error) {
			if b, _ := c.Bool("use_bias"); b {
				return tensor.Value{}, false, errUnsupported("config.json: use_bias true: llama.cpp's ERNIE 4.5 graph adds no projection biases")
			}
			return tensor.Value{}, false, nil
		},
		Inverse: func(Config, tensor.Value, Meta) {}}
}
