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
	Graph:   Graph{Norm: RMSNorm, FFN: Gated, Activation: "silu", AdjacentRopeHF: true},
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

// Ernie45MoE is ERNIE 4.5's mixture (21B-A3B, 300B-A47B:
// Ernie4_5_MoeForCausalLM, the newer llama.cpp's "ernie4_5-moe"): the dense
// family's attention, and from layer moe_layer_start_index on, every
// moe_layer_interval-th layer routes each token to moe_k of moe_num_experts
// experts of width moe_intermediate_size: chosen by softmax probability plus
// a per-expert bias (moe_statics.e_score_correction_bias, GGUF exp_probs_b),
// weighted by the chosen probabilities renormalised, beside
// moe_num_shared_experts shared experts that are one MLP of that many times
// the width, added without a gate. The converter writes the shared width as
// intermediate_size / num_key_value_heads (what the published checkpoints
// make it); a config where the two differ is refused.
var Ernie45MoE = register(&Family{
	Name:       "ernie4_5-moe",
	HFClasses:  []string{"Ernie4_5_MoeForCausalLM"},
	ModelTypes: []string{"ernie4_5_moe"},
	HFClass:    "Ernie4_5_MoeForCausalLM", ModelType: "ernie4_5_moe",
	Params: withParams(without(without(baseParams(), "expert_count"), "expert_used_count"),
		u32("expert_count", Required, "moe_num_experts"),
		u32("expert_used_count", Required, "moe_k"),
		u32("interleave_moe_layer_step", Required, "moe_layer_interval"),
		u32("leading_dense_block_count", Required, "moe_layer_start_index"),
		u32("expert_feed_forward_length", Optional, "moe_intermediate_size"),
		u32("expert_shared_count", Optional, "moe_num_shared_experts"),
		ernieSharedFFN(), ernieMoEEnd(), ernieNoBias(), noRopeScaling()),
	Pattern: ernieMoEPattern,
	Tensors: append(moeTensors(decoderTensors(false, LayoutSame), moeLayout{router: "mlp.gate",
		experts: "mlp.experts.{xid}.", gate: "gate_proj", down: "down_proj", up: "up_proj", ffn: DimExpertFFN,
		shared: "mlp.shared_experts.", sharedFFN: DimSharedFFN}),
		Tensor{GGUF: "blk.{bid}.exp_probs_b", HF: []string{hfLayer + "mlp.moe_statics.e_score_correction"}, HFSuffix: "_bias",
			Shape: []Dim{DimOne, DimExperts}, Optional: true}),
	SuffixAliases: map[string]string{"e_score_correction_bias": "e_score_correction.bias"},
	Drops:         []Drop{rotaryBuffer},
	// GGUF keeps no moe_layer_end_index: the mixtures run to the last
	// layer (-1), as the converter requires of the checkpoint.
	HFConst: map[string]any{"hidden_act": "silu", "use_bias": false, "moe_layer_end_index": -1},
	Vocab:   VocabRules{SpacePrefixFromConfig: true},
	Graph:   Graph{Norm: RMSNorm, FFN: Gated, Activation: "silu", AdjacentRopeHF: true, MoENormTopK: true},
})

// ernieMoEPattern: layer i is a mixture when it is moe_layer_start_index or
// later, no later than moe_layer_end_index (-1 or absent: the last layer),
// and i+1 is a multiple of moe_layer_interval, as transformers builds the
// layers (llama.cpp's graph reads the same from leading_dense_block_count
// and interleave_moe_layer_step).
func ernieMoEPattern(c Config, n int) ([]Layer, error) {
	start, _ := c.Int("moe_layer_start_index")
	step, ok := c.Int("moe_layer_interval")
	if !ok {
		step = 1
	}
	if step <= 0 {
		return nil, errUnsupported("config.json: moe_layer_interval %d", step)
	}
	end := ernieMoEEndIndex(c, n)
	out := make([]Layer, n)
	for i := range out {
		out[i] = Layer{Rope: true, MoE: int64(i) >= start && int64(i) <= end && int64(i+1)%step == 0}
	}
	return out, nil
}

// ernieMoEEndIndex is moe_layer_end_index, the last layer when -1 or absent.
func ernieMoEEndIndex(c Config, n int) int64 {
	end, ok := c.Int("moe_layer_end_index")
	if !ok || end < 0 {
		end = int64(n) - 1
	}
	return end
}

// ernieMoEEnd refuses a moe_layer_end_index before the last layer: GGUF
// keeps no end, and llama.cpp's graph routes every layer from
// leading_dense_block_count on.
func ernieMoEEnd() Param {
	return Param{Key: "moe_layer_end_index", Kind: tensor.KindUint32,
		Derive: func(c Config) (tensor.Value, bool, error) {
			n, _ := c.Int("num_hidden_layers")
			if end := ernieMoEEndIndex(c, int(n)); end != n-1 {
				return tensor.Value{}, false, errUnsupported("config.json: moe_layer_end_index %d: the GGUF runs mixtures up to the last layer (%d)", end, n-1)
			}
			return tensor.Value{}, false, nil
		},
		Inverse: func(Config, tensor.Value, Meta) {}}
}

// ernieSharedFFN is expert_shared_feed_forward_length as the converter
// writes it, intermediate_size / num_key_value_heads, when there are shared
// experts; refused when that is not the shared experts' width
// (moe_intermediate_size · moe_num_shared_experts), which llama.cpp would
// then size the tensors by.
func ernieSharedFFN() Param {
	return Param{Key: "expert_shared_feed_forward_length", Kind: tensor.KindUint32,
		Derive: func(c Config) (tensor.Value, bool, error) {
			shared, _ := c.Int("moe_num_shared_experts")
			ffn, ok1 := c.Int("intermediate_size")
			kv, ok2 := c.Int("num_key_value_heads")
			if shared <= 0 || !ok1 || !ok2 || kv <= 0 {
				return tensor.Value{}, false, nil
			}
			width, _ := c.Int("moe_intermediate_size")
			if ffn/kv != width*shared {
				return tensor.Value{}, false, errUnsupported("config.json: intermediate_size / num_key_value_heads = %d, the width the converter writes for the shared experts, is not moe_intermediate_size · moe_num_shared_experts = %d",
					ffn/kv, width*shared)
			}
			return numValue(tensor.KindUint32, float64(ffn/kv), []string{"intermediate_size"})
		},
		Inverse: func(Config, tensor.Value, Meta) {}}
}
