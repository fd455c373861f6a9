package arch

import "github.com/tfconv/tfconv/tensor"

// OLMoE is OLMoE (1B-7B): the llama attention with RMSNorms over the whole
// Q and K projections and a mixture in every layer: num_experts experts of
// width intermediate_size, num_experts_per_tok used per token with their
// softmax probabilities as they are (norm_topk_prob false), no shared
// expert. The converter (c392e509) writes the RMSNorm epsilon itself, 1e-5,
// after the file type; it raises on a config.json that states
// rms_norm_eps (a duplicate key), where tfconv writes the stated value in
// that place.
var OLMoE = register(&Family{
	Name:       "olmoe",
	HFClasses:  []string{"OlmoeForCausalLM"},
	ModelTypes: []string{"olmoe"},
	HFClass:    "OlmoeForCausalLM", ModelType: "olmoe",
	Params: withParams(without(without(baseParams(), "attention.layer_norm_rms_epsilon"), "expert_count"),
		Param{Key: "attention.layer_norm_rms_epsilon", HF: []string{"rms_norm_eps"}, Kind: tensor.KindFloat32, Need: Default, Default: 1e-5},
		u32("expert_count", Optional, "num_experts"),
		noRopeScaling()),
	Tensors: moeTensors(append(decoderTensors(false, LayoutSame),
		Tensor{GGUF: "blk.{bid}.attn_q_norm", HF: []string{hfLayer + "self_attn.q_norm"}, Shape: []Dim{DimQ}},
		Tensor{GGUF: "blk.{bid}.attn_k_norm", HF: []string{hfLayer + "self_attn.k_norm"}, Shape: []Dim{DimKV}}),
		// mlx-lm d78bf58 models/olmoe.py sanitize
		moeLayout{router: "mlp.gate", experts: "mlp.experts.{xid}.", gate: "gate_proj", down: "down_proj", up: "up_proj", ffn: DimFFN,
			mlx: "mlp.switch_mlp."}),
	Drops:    []Drop{rotaryBuffer},
	HFConst:  map[string]any{"hidden_act": "silu", "norm_topk_prob": false},
	BiasFlag: "attention_bias",
	Graph:    Graph{Norm: RMSNorm, FFN: Gated, Activation: "silu", NeoxRopeGGUF: true},
})
