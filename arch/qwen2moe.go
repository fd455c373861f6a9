package arch

// Qwen2MoE is Qwen1.5-MoE and Qwen2-57B-A14B: Qwen2's attention (Q/K/V
// biases) with a mixture in every layer: num_experts experts of width
// moe_intermediate_size, num_experts_per_tok used per token with their
// softmax probabilities as they are (norm_topk_prob false), and a shared
// expert of width shared_expert_intermediate_size that every token uses,
// scaled by sigmoid(shared_expert_gate · x).
var Qwen2MoE = register(&Family{
	Name:       "qwen2moe",
	HFClasses:  []string{"Qwen2MoeForCausalLM"},
	ModelTypes: []string{"qwen2_moe"},
	HFClass:    "Qwen2MoeForCausalLM", ModelType: "qwen2_moe",
	Params: withParams(without(baseParams(), "expert_count"),
		u32("expert_count", Optional, "num_experts"),
		u32("expert_feed_forward_length", Optional, "moe_intermediate_size"),
		u32("expert_shared_feed_forward_length", Optional, "shared_expert_intermediate_size"),
		noRopeScaling()),
	Tensors: moeTensors(decoderTensors(false, LayoutSame), moeLayout{router: "mlp.gate",
		experts: "mlp.experts.{xid}.", gate: "gate_proj", down: "down_proj", up: "up_proj", ffn: DimExpertFFN,
		shared: "mlp.shared_expert.", sharedGate: "mlp.shared_expert_gate", sharedFFN: DimSharedFFN,
		mlx: "mlp.switch_mlp."}), // mlx-lm d78bf58 models/qwen2_moe.py sanitize
	Drops:   []Drop{rotaryBuffer},
	HFConst: map[string]any{"hidden_act": "silu", "use_sliding_window": false, "norm_topk_prob": false},
	Graph:   Graph{Norm: RMSNorm, FFN: Gated, Activation: "silu", NeoxRopeGGUF: true},
})
