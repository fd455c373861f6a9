package arch

import (
	"math"

	"github.com/tfconv/tfconv/tensor"
)

// HunyuanMoE is Tencent's Hunyuan mixture (Hunyuan-A13B:
// HunYuanMoEV1ForCausalLM, the newer llama.cpp's "hunyuan-moe"): the dense
// form's attention (per-head Q/K RMSNorms after a NEOX rotation, head_dim
// stated) with a mixture in every layer: num_experts experts, moe_topk of
// them used per token with their softmax probabilities renormalised, and
// one shared MLP every token uses, added without a gate. Both are
// intermediate_size wide in transformers' class (which reads no
// moe_intermediate_size); the converter writes moe_intermediate_size[0] as
// expert_feed_forward_length and intermediate_size as the shared width.
// Its config.json states moe_topk, moe_intermediate_size and
// num_shared_expert per layer; the converter asserts every layer's is the
// same and writes the first. The router is mlp.gate.wg (float32 in the
// published checkpoints). The vocabulary is the publisher's tiktoken one
// (hy.tiktoken, tokenizer package), whose BOS the converter fixes at
// 127959 (<|bos|>) whatever config.json says. It follows the newer
// converter (testdata/arch/README.md).
var HunyuanMoE = register(&Family{
	Name:       "hunyuan-moe",
	HFClasses:  []string{"HunYuanMoEV1ForCausalLM"},
	ModelTypes: []string{"hunyuan_v1_moe"},
	HFClass:    "HunYuanMoEV1ForCausalLM", ModelType: "hunyuan_v1_moe",
	Params: hunyuanMoEParams(withParams(withOut(withHF(without(baseParams(), "expert_used_count"), "expert_count", "num_local_experts", "num_experts"), "expert_count", "num_experts"),
		u32("expert_shared_feed_forward_length", Optional, "intermediate_size"),
		perLayerSame("expert_feed_forward_length", "moe_intermediate_size"),
		perLayerSame("expert_used_count", "moe_topk"),
		perLayerSame("expert_shared_count", "num_shared_expert"))),
	Tensors: moeTensors(append(decoderTensors(false, LayoutSame), hunyuanQKNorms()...), moeLayout{router: "mlp.gate.wg",
		experts: "mlp.experts.{xid}.", gate: "gate_proj", down: "down_proj", up: "up_proj", ffn: DimFFN,
		shared: "mlp.shared_mlp.", sharedFFN: DimSharedFFN}),
	Drops:    []Drop{rotaryBuffer},
	HFConst:  map[string]any{"hidden_act": "silu"},
	BiasFlag: "attention_bias",
	Vocab:    VocabRules{SpecialIDs: []SpecialID{{"bos", 127959}}},
	Graph: Graph{Norm: RMSNorm, FFN: Gated, Activation: "silu", QKNormPerHead: true, QKNormAfterRope: true,
		NeoxRopeGGUF: true, MoENormTopK: true},
})

// hunyuanMoEParams are hunyuanParams with the MoE converter's own checks of
// the alpha scaling: it computes the rotary base from hidden_size /
// num_attention_heads (not head_dim) and asserts alpha 1000 and a head of
// 128, so a checkpoint where those differ is refused naming rope_scaling.
func hunyuanMoEParams(params []Param) []Param {
	params = hunyuanParams(params)
	for i := range params {
		if params[i].Key != "rope.freq_base" {
			continue
		}
		derive := params[i].Derive
		params[i].Derive = func(c Config) (tensor.Value, bool, error) {
			if _, ok, err := NTKAlphaBaseOf(c); err == nil && ok {
				rs, _ := c.Map("rope_scaling")
				a, _ := rs.Float("alpha")
				h, _ := c.Int("hidden_size")
				n, _ := c.Int("num_attention_heads")
				d, _ := headDim(c)
				if a != 1000 || n <= 0 || h/n != 128 || d != h/n {
					return tensor.Value{}, false, errUnsupported("config.json: rope_scaling %v with hidden_size / num_attention_heads %d and head_dim %d: the converter's alpha scaling for Hunyuan's mixture assumes alpha 1000 and heads of 128",
						map[string]any(rs), h/max(n, 1), d)
				}
			}
			return derive(c)
		}
	}
	return params
}

// withHF returns params with the config.json keys of GGUF key key set to
// hf.
func withHF(params []Param, key string, hf ...string) []Param {
	for i := range params {
		if params[i].Key == key {
			params[i].HF = hf
		}
	}
	return params
}

// perLayerSame is a uint32 GGUF key read from a config.json list of one
// value per layer (Hunyuan's moe_topk) or a plain integer; the converter
// asserts every entry is the first, so a list that differs is refused
// naming the key. GGUF → HF writes the value once per layer.
func perLayerSame(key, hf string) Param {
	return Param{Key: key, HF: []string{hf}, Kind: tensor.KindUint32,
		Derive: func(c Config) (tensor.Value, bool, error) {
			if n, ok := c.Int(hf); ok {
				return numValue(tensor.KindUint32, float64(n), []string{hf})
			}
			list, ok, err := c.Ints(hf)
			if err != nil || !ok {
				return tensor.Value{}, false, err
			}
			if len(list) == 0 {
				return tensor.Value{}, false, errUnsupported("config.json: %s is an empty list", hf)
			}
			for i, v := range list {
				if v != list[0] {
					return tensor.Value{}, false, errUnsupported("config.json: %s[%d] = %d differs from %s[0] = %d: the GGUF keeps one value for every layer",
						hf, i, v, hf, list[0])
				}
			}
			if list[0] < 0 || list[0] > math.MaxUint32 {
				return tensor.Value{}, false, errUnsupported("config.json: %s[0] = %d is out of range", hf, list[0])
			}
			return tensor.Uint32(uint32(list[0])), true, nil
		},
		Inverse: func(c Config, v tensor.Value, m Meta) {
			x, _ := v.Int()
			n, _ := m.Int("block_count")
			list := make([]any, max(n, 0))
			for i := range list {
				list[i] = x
			}
			c[hf] = list
		}}
}
