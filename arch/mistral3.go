package arch

import "github.com/tfconv/tfconv/tensor"

// Mistral3 is the text model of Mistral3ForConditionalGeneration (Mistral
// Small 3.1 and 3.2), as the newer llama.cpp converts it (its
// Ministral3Model, a LlamaModel under GGUF "mistral3"; testdata/arch/README.md):
// LLaMA's block and keys (Q/K rows permuted, vocab_size, rope.dimension_count
// from head_dim, add_space_prefix from tokenizer_config.json) for the
// Mistral text model in text_config. The vision tower (Pixtral) and its
// projection are PixtralVision's, written to the mmproj GGUF (--mmproj);
// --text-only leaves them out, said in a warning. GGUF → HF gives the
// text model as transformers' MistralForCausalLM.
//
// llama.cpp's mistral3 graph has no sliding window, and the converter
// writes YaRN and attention-temperature keys only for a ministral3 text
// model; a text_config with a window, rope scaling or another model_type
// is refused naming the key (mistral3Text).
var Mistral3 = register(&Family{
	Name:       "mistral3",
	HFClasses:  []string{"Mistral3ForConditionalGeneration"},
	ModelTypes: []string{"mistral3"},
	HFClass:    "MistralForCausalLM", ModelType: "mistral",
	Params:  withParams(baseParams(), u32("vocab_size", Required, "vocab_size"), ropeDimension(), mistral3Text()),
	Tensors: withTextPrefix(decoderTensors(true, LayoutSame)),
	Drops:   append([]Drop{rotaryBuffer}, pixtralDrops...),
	// transformers' MistralConfig defaults to a window of 4096: null is
	// none, as llama.cpp's graph computes.
	HFConst: map[string]any{"hidden_act": "silu", "sliding_window": nil},
	Vocab:   VocabRules{SpacePrefixFromConfig: true},
	Graph:   Graph{Norm: RMSNorm, FFN: Gated, Activation: "silu"},
})

// mistral3Text refuses the text models llama.cpp's mistral3 GGUF would
// compute otherwise, and writes no key.
func mistral3Text() Param {
	return Param{Key: "mistral3.text", Kind: tensor.KindUint32,
		Derive: func(c Config) (tensor.Value, bool, error) {
			if mt, ok := c.Str("model_type"); ok && mt != "mistral" && mt != "mistral3" {
				return tensor.Value{}, false, errUnsupported("config.json: text_config model_type %q: only a Mistral text model (mistral) converts as mistral3 here", mt)
			}
			if w, ok := c.Int("sliding_window"); ok && w > 0 {
				return tensor.Value{}, false, errUnsupported("config.json: sliding_window %d: llama.cpp's mistral3 graph attends without a window and the GGUF cannot state one", w)
			}
			if rs, ok := c.Map("rope_scaling"); ok {
				return tensor.Value{}, false, errUnsupported("config.json: rope_scaling %v: not converted for mistral3 (the GGUF would rotate unscaled)", map[string]any(rs))
			}
			return tensor.Value{}, false, nil
		},
		Inverse: func(Config, tensor.Value, Meta) {}}
}
