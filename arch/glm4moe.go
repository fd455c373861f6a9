package arch

import "github.com/tfconv/tfconv/tensor"

// Glm4Moe is GLM-4.5 and GLM-4.6 (Glm4MoeForCausalLM; the newer llama.cpp's
// "glm4moe"): attention with Q/K/V biases, an optional RMSNorm over each
// query and key head (use_qk_norm), and RoPE on part of each head
// (partial_rotary_factor, 0.5 when absent) rotating halves; the norm before
// the feed-forward is post_attention_norm in GGUF (the converter's tensor
// map for glm4moe has no ffn_norm). The first first_k_dense_replace layers
// are dense SwiGLUs of intermediate_size; the others route each token to
// num_experts_per_tok of n_routed_experts experts of width
// moe_intermediate_size by sigmoid scores, chosen by score plus
// e_score_correction_bias (GGUF exp_probs_b) within the best topk_group of
// n_group groups, renormalised (norm_topk_prob) and scaled by
// routed_scaling_factor, beside n_shared_experts shared experts (one SwiGLU
// of n_shared_experts · moe_intermediate_size, unscaled) — DeepSeek-V3's
// routing, which model's shared decoder computes for both.
//
// The checkpoints end with num_nextn_predict_layers multi-token-prediction
// layers (model.layers.N from num_hidden_layers on: a decoder layer plus
// eh_proj, enorm, hnorm and shared_head.norm), which transformers does not
// build: the converter counts them in block_count and writes
// nextn_predict_layers, and llama.cpp loads them without running them, as
// tfconv does.
var Glm4Moe = register(&Family{
	Name:       "glm4moe",
	HFClasses:  []string{"Glm4MoeForCausalLM"},
	ModelTypes: []string{"glm4_moe"},
	HFClass:    "Glm4MoeForCausalLM", ModelType: "glm4_moe",
	Params: glm4MoeParams(),
	Tensors: moeTensors(glm4MoeTensors(), moeLayout{router: "mlp.gate", experts: "mlp.experts.{xid}.",
		gate: "gate_proj", down: "down_proj", up: "up_proj", ffn: DimExpertFFN,
		shared: "mlp.shared_experts.", sharedFFN: DimSharedFFN}),
	SuffixAliases: map[string]string{"e_score_correction_bias": "e_score_correction.bias"},
	Drops:         []Drop{rotaryBuffer},
	HFConst:       map[string]any{"hidden_act": "silu"},
	BiasFlag:      "attention_bias",
	HFRename: func(c Config, has func(string) bool) map[string]string {
		c["use_qk_norm"] = has("blk.0.attn_q_norm.weight")
		return nil
	},
	Vocab: VocabRules{SpecialTokens: []SpecialToken{
		{"bos", "[gMASK]"}, {"eot", "<|user|>"}, {"unknown", "<|endoftext|>"}, {"eom", "<|observation|>"}}},
	Graph: Graph{Norm: RMSNorm, FFN: Gated, Activation: "silu", QKNormPerHead: true, NeoxRopeGGUF: true,
		PreFFNNormPostAttention: true, MoESigmoid: true, MoENormTopK: true},
})

// glm4MoeParams are the converter's TextModel keys (block_count counting
// the MTP layers; the experts under n_routed_experts and their groups),
// then Glm4MoeModel's own after general.file_type.
func glm4MoeParams() []Param {
	var ps []Param
	for _, p := range baseParams() {
		switch p.Key {
		case "block_count":
			p = glmBlockCount()
		case "expert_count":
			p = Param{Key: "expert_count", HF: []string{"num_local_experts", "num_experts", "n_routed_experts"},
				Out: "n_routed_experts", Kind: tensor.KindUint32, Need: Optional}
		case "expert_used_count":
			ps = append(ps, p,
				u32("expert_group_count", Optional, "n_group"),
				u32("expert_group_used_count", Optional, "topk_group"))
			continue
		}
		ps = append(ps, p)
	}
	return append(ps,
		glmRotary(),
		u32("expert_feed_forward_length", Optional, "moe_intermediate_size"),
		u32("expert_shared_count", Optional, "n_shared_experts"),
		u32("leading_dense_block_count", Optional, "first_k_dense_replace"),
		// Glm4MoeModel writes sigmoid whatever config.json says.
		Param{Key: "expert_gating_func", Kind: tensor.KindUint32,
			Derive: func(Config) (tensor.Value, bool, error) {
				return tensor.Uint32(uint32(indexOf(gatingFuncs, "sigmoid"))), true, nil
			},
			Inverse: func(Config, tensor.Value, Meta) {}},
		f32p("expert_weights_scale", Optional, "routed_scaling_factor"),
		Param{Key: "expert_weights_norm", HF: []string{"norm_topk_prob"}, Kind: tensor.KindBool, Need: Optional},
		u32("nextn_predict_layers", Optional, "num_nextn_predict_layers"),
		noRopeScaling())
}

// glmBlockCount is block_count as GLM-4.5's converter writes it:
// num_hidden_layers plus num_nextn_predict_layers (the MTP layers, which
// follow the decoder's). GGUF → HF takes nextn_predict_layers back off.
func glmBlockCount() Param { return mtpBlockCount("num_nextn_predict_layers") }

// mtpBlockCount is block_count as num_hidden_layers plus the MTP layers
// config.json counts under key; GGUF → HF takes nextn_predict_layers back
// off.
func mtpBlockCount(key string) Param {
	return Param{Key: "block_count", Kind: tensor.KindUint32, Need: Required,
		Derive: func(c Config) (tensor.Value, bool, error) {
			n, ok := c.Int("num_hidden_layers")
			if !ok || n <= 0 {
				return tensor.Value{}, false, errUnsupported("config.json: no num_hidden_layers")
			}
			x, _ := c.Int(key)
			if x < 0 || x > 1<<16 {
				return tensor.Value{}, false, errUnsupported("config.json: %s %d", key, x)
			}
			return tensor.Uint32(uint32(n + x)), true, nil
		},
		Inverse: func(c Config, v tensor.Value, m Meta) {
			n, _ := v.Int()
			x, _ := m.Int("nextn_predict_layers")
			c["num_hidden_layers"] = n - x
		}}
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

// glm4MoeTensors is the llama-shaped schema with the pre-FFN norm named
// post_attention_norm, per-head Q/K norms, the expert-choice bias and the
// MTP layers' own tensors.
func glm4MoeTensors() []Tensor {
	var out []Tensor
	for _, t := range decoderTensors(false, LayoutSame) {
		if t.GGUF == "blk.{bid}.ffn_norm" {
			t.GGUF = "blk.{bid}.post_attention_norm"
		}
		out = append(out, t)
	}
	d := []Dim{DimHidden}
	return append(out,
		Tensor{GGUF: "blk.{bid}.attn_q_norm", HF: []string{hfLayer + "self_attn.q_norm"}, Shape: []Dim{DimHeadDim}, Optional: true},
		Tensor{GGUF: "blk.{bid}.attn_k_norm", HF: []string{hfLayer + "self_attn.k_norm"}, Shape: []Dim{DimHeadDim}, Optional: true},
		Tensor{GGUF: "blk.{bid}.exp_probs_b", HF: []string{hfLayer + "mlp.gate.e_score_correction"}, HFSuffix: "_bias",
			Shape: []Dim{DimExperts}, Optional: true},
		Tensor{GGUF: "blk.{bid}.nextn.eh_proj", HF: []string{hfLayer + "eh_proj"}, Shape: []Dim{DimHidden, DimHidden2}, Optional: true},
		Tensor{GGUF: "blk.{bid}.nextn.enorm", HF: []string{hfLayer + "enorm"}, Shape: d, Optional: true},
		Tensor{GGUF: "blk.{bid}.nextn.hnorm", HF: []string{hfLayer + "hnorm"}, Shape: d, Optional: true},
		Tensor{GGUF: "blk.{bid}.nextn.embed_tokens", HF: []string{hfLayer + "embed_tokens"}, Shape: []Dim{DimVocab, DimHidden}, Optional: true},
		Tensor{GGUF: "blk.{bid}.nextn.shared_head_head", HF: []string{hfLayer + "shared_head.head"}, Shape: []Dim{DimVocab, DimHidden}, Optional: true},
		Tensor{GGUF: "blk.{bid}.nextn.shared_head_norm", HF: []string{hfLayer + "shared_head.norm"}, Shape: d, Optional: true},
	)
}
