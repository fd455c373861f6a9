package arch

// Qwen3MoE is Qwen3's mixture of experts (30B-A3B, 235B-A22B): Qwen3's
// attention (per-head Q/K RMSNorm, no biases) with a mixture in every
// layer: num_experts experts of width moe_intermediate_size,
// num_experts_per_tok used per token with their weights renormalised
// (norm_topk_prob), no shared expert. Like Qwen3 it follows the newer
// converter (testdata/arch/README.md names the commit).
var Qwen3MoE = register(&Family{
	Name:       "qwen3moe",
	HFClasses:  []string{"Qwen3MoeForCausalLM"},
	ModelTypes: []string{"qwen3_moe"},
	HFClass:    "Qwen3MoeForCausalLM", ModelType: "qwen3_moe",
	Params: withParams(
		withAfter(without(baseParams(), "expert_count"), "attention.layer_norm_epsilon",
			u32("expert_count", Optional, "num_experts")),
		u32("expert_feed_forward_length", Optional, "moe_intermediate_size"),
		noRopeScaling()),
	Tensors: moeTensors(append(decoderTensors(false, LayoutSame),
		Tensor{GGUF: "blk.{bid}.attn_q_norm", HF: []string{hfLayer + "self_attn.q_norm"}, Shape: []Dim{DimHeadDim}},
		Tensor{GGUF: "blk.{bid}.attn_k_norm", HF: []string{hfLayer + "self_attn.k_norm"}, Shape: []Dim{DimHeadDim}}),
		// mlx-lm d78bf58 models/qwen3_moe.py: sanitize stacks the experts
		// into mlp.switch_mlp; quant_predicate gives mlp.gate 8 bits, group 64
		moeLayout{router: "mlp.gate", experts: "mlp.experts.{xid}.", gate: "gate_proj", down: "down_proj", up: "up_proj", ffn: DimExpertFFN,
			mlx: "mlp.switch_mlp.", mlxRouter: [2]int{8, 64}}),
	Drops:    []Drop{rotaryBuffer},
	HFConst:  map[string]any{"hidden_act": "silu", "norm_topk_prob": true},
	BiasFlag: "attention_bias",
	Graph:    Graph{Norm: RMSNorm, FFN: Gated, Activation: "silu", QKNormPerHead: true, NeoxRopeGGUF: true, MoENormTopK: true},
})
