package arch

import (
	"slices"

	"github.com/tfconv/tfconv/tensor"
)

// LFM2MoE is Liquid AI's LFM2 with mixtures of experts (Lfm2MoeForCausalLM,
// d32676d7's conversion/lfm2.py LFM2MoeModel): LFM2's layers (short
// convolutions and attention by layer_types, model.embedding_norm last),
// the first num_dense_layers with LFM2's SwiGLU feed-forward of
// intermediate_size as stated, the others num_experts experts of width
// moe_intermediate_size chosen by sigmoid score plus a per-expert bias
// (feed_forward.expert_bias, GGUF exp_probs_b), num_experts_per_tok of them
// used with their weights renormalised. llama.cpp's lfm2moe always
// renormalises, scales by nothing and has no separate head, so a config.json
// saying otherwise is refused.
var LFM2MoE = register(&Family{
	Name:       "lfm2moe",
	HFClasses:  []string{"Lfm2MoeForCausalLM"},
	ModelTypes: []string{"lfm2_moe"},
	HFClass:    "Lfm2MoeForCausalLM", ModelType: "lfm2_moe",
	Params: lfm2MoEParams(),
	Tensors: append(moeTensors(slices.DeleteFunc(lfm2Tensors(), func(t Tensor) bool { return t.GGUF == "output" }),
		moeLayout{router: "feed_forward.gate", experts: "feed_forward.experts.{xid}.", gate: "w1", down: "w2", up: "w3",
			ffn: DimExpertFFN}),
		expProbsB("feed_forward.expert")),
	SuffixAliases: map[string]string{"expert_bias": "expert.bias"},
	Drops:         []Drop{rotaryBuffer},
	HFConst: map[string]any{"conv_bias": false, "use_expert_bias": true, "norm_topk_prob": true,
		"routed_scaling_factor": 1.0, "tie_word_embeddings": true},
	Graph: Graph{Norm: RMSNorm, FFN: Gated, Activation: "silu", QKNormPerHead: true, NeoxRopeGGUF: true,
		FinalNorm: "token_embd_norm", MoESigmoid: true, MoENormTopK: true},
	Pattern: lfm2MoEPattern,
})

// lfm2MoEParams are LFM2MoeModel.set_gguf_parameters: the base keys
// (expert_count from num_experts, norm_eps, head_count_kv per layer), then
// the mixture's and LFM2's own.
func lfm2MoEParams() []Param {
	var ps []Param
	for _, p := range baseParams() {
		switch p.Key {
		case "attention.head_count_kv":
			p = lfm2KVHeads()
		case "attention.layer_norm_rms_epsilon":
			p.HF, p.Out = []string{"rms_norm_eps", "norm_eps"}, "norm_eps"
		case "expert_count":
			p.HF, p.Out = []string{"num_local_experts", "num_experts", "n_routed_experts"}, "num_experts"
		}
		ps = append(ps, p)
	}
	return append(ps, noRopeScaling(), lfm2ConvBias(), lfm2MoERouting(),
		u32("expert_feed_forward_length", Required, "moe_intermediate_size"),
		u32("leading_dense_block_count", Required, "num_dense_layers"),
		Param{Key: "expert_gating_func", Kind: tensor.KindUint32, Need: Required,
			Derive: func(Config) (tensor.Value, bool, error) {
				return tensor.Uint32(uint32(slices.Index(gatingFuncs, "sigmoid"))), true, nil
			},
			Inverse: func(Config, tensor.Value, Meta) {}},
		u32("vocab_size", Required, "vocab_size"),
		u32("shortconv.l_cache", Required, "conv_L_cache"))
}

// lfm2MoERouting refuses what llama.cpp's lfm2moe graph does not compute:
// weights not renormalised, scaled (routed_scaling_factor), or chosen
// without the expert bias.
func lfm2MoERouting() Param {
	return Param{Key: "expert_weights_norm", Kind: tensor.KindBool,
		Derive: func(c Config) (tensor.Value, bool, error) {
			if v, ok := c.Bool("norm_topk_prob"); ok && !v {
				return tensor.Value{}, false, errUnsupported("config.json: norm_topk_prob false: llama.cpp's lfm2moe renormalises the chosen experts' weights")
			}
			if v, ok := c.Float("routed_scaling_factor"); ok && v != 1 {
				return tensor.Value{}, false, errUnsupported("config.json: routed_scaling_factor %v: llama.cpp's lfm2moe scales by nothing", v)
			}
			if v, ok := c.Bool("use_expert_bias"); ok && !v {
				return tensor.Value{}, false, errUnsupported("config.json: use_expert_bias false: llama.cpp's lfm2moe requires the expert bias")
			}
			return tensor.Value{}, false, nil
		},
		Inverse: func(Config, tensor.Value, Meta) {}}
}

// lfm2MoEPattern is LFM2's pattern with the layers from num_dense_layers on
// routing to experts.
func lfm2MoEPattern(c Config, n int) ([]Layer, error) {
	ls, err := lfm2Pattern(c, n)
	if err != nil {
		return nil, err
	}
	first, ok := c.Int("num_dense_layers")
	if !ok {
		return nil, errUnsupported("config.json: no num_dense_layers")
	}
	for i := range ls {
		ls[i].MoE = int64(i) >= first
	}
	return ls, nil
}
