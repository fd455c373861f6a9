package arch

import (
	"slices"
	"strings"

	"github.com/tfconv/tfconv/tensor"
)

// GraniteHybrid is Granite 4.0-H (transformers' GraniteMoeHybridForCausalLM;
// the newer converter's GraniteHybridModel): Granite's multipliers over
// layers that are Mamba-2 mixers or attention (config.json layer_types
// "mamba" / "attention"), each followed by a mixture of experts beside a
// shared expert. GraniteMoE's input_linear holds each expert's gate rows,
// then its up rows, which the converter cuts into ffn_gate_exps and
// ffn_up_exps (the shared expert's likewise); Q and K are permuted as
// LLaMA's. Without position embeddings (position_embedding_type "nope", as
// Granite 4.0-H is published) the converter writes a context of 2²⁰ and
// rope.scaling.finetuned false, which llama.cpp reads as "no RoPE".
var GraniteHybrid = register(&Family{
	Name:       "granitehybrid",
	HFClasses:  []string{"GraniteMoeHybridForCausalLM"},
	ModelTypes: []string{"granitemoehybrid"},
	HFClass:    "GraniteMoeHybridForCausalLM", ModelType: "granitemoehybrid",
	Params: withParams(graniteHybridBase(),
		u32("vocab_size", Required, "vocab_size"), ropeDimension(),
		f32p("attention.scale", Optional, "attention_multiplier"),
		f32p("embedding_scale", Optional, "embedding_multiplier"),
		f32p("residual_scale", Optional, "residual_multiplier"),
		f32p("logit_scale", Optional, "logits_scaling"),
		u32("expert_shared_feed_forward_length", Optional, "shared_intermediate_size"),
		Param{Key: "ssm.conv_kernel", HF: []string{"conv_kernel", "d_conv", "mamba_conv_kernel", "mamba_d_conv"}, Out: "mamba_d_conv",
			Kind: tensor.KindUint32, Need: Required},
		Param{Key: "ssm.state_size", HF: []string{"state_size", "d_state", "state_dim", "ssm_state_size", "mamba_state_size",
			"mamba_d_state", "mamba_state_dim", "mamba_ssm_state_size"}, Out: "mamba_d_state", Kind: tensor.KindUint32, Need: Required},
		Param{Key: "ssm.group_count", HF: []string{"n_groups", "num_groups", "mamba_n_groups", "mamba_num_groups"}, Out: "mamba_n_groups",
			Kind: tensor.KindUint32, Need: Required},
		graniteHybridInner(),
		Param{Key: "ssm.time_step_rank", HF: []string{"n_heads", "num_heads", "mamba_n_heads", "mamba_num_heads"}, Out: "mamba_n_heads",
			Kind: tensor.KindUint32, Need: Required,
			Inverse: func(c Config, v tensor.Value, m Meta) {
				heads, _ := v.Int()
				c["mamba_n_heads"] = heads
				if inner, ok := m.Int("ssm.inner_size"); ok && heads > 0 {
					c["mamba_d_head"] = inner / heads
				}
			}},
		graniteRopeFlag(),
	),
	Tensors:       graniteHybridTensors(),
	SuffixAliases: map[string]string{".dt_bias": ".bias"},
	HFConst:       map[string]any{"hidden_act": "silu", "mamba_conv_bias": true, "mamba_proj_bias": false},
	BiasFlag:      "attention_bias",
	Graph:         Graph{Norm: RMSNorm, FFN: Gated, Activation: "silu", MoENormTopK: true},
	Pattern:       graniteHybridPattern,
})

// graniteHybridPattern reads layer_types ("mamba": a Mamba-2 mixer,
// "attention"); the attention layers rotate only with
// position_embedding_type "rope"; every layer routes to experts when the
// model has them.
func graniteHybridPattern(c Config, n int) ([]Layer, error) {
	raw, ok := c["layer_types"].([]any)
	if !ok {
		return nil, errUnsupported("config.json: granitemoehybrid without a layer_types list (attn_layer_indices, attn_layer_period) is not supported")
	}
	if len(raw) != n {
		return nil, errUnsupported("config.json: layer_types has %d entries for %d layers", len(raw), n)
	}
	experts, _ := c.Int("num_local_experts")
	pe, _ := c.Str("position_embedding_type")
	out := make([]Layer, n)
	for i, v := range raw {
		switch v {
		case "mamba":
			out[i] = Layer{Mixer: Mamba2, MoE: experts > 0}
		case "attention":
			out[i] = Layer{Mixer: FullAttention, Rope: pe == "rope", MoE: experts > 0}
		default:
			return nil, errUnsupported("config.json: layer_types[%d] %v (known: mamba, attention)", i, v)
		}
	}
	return out, nil
}

// graniteHybridBase is Granite's base keys with the context of 2²⁰ the
// converter writes without RoPE and head_count_kv as one entry per layer
// (0 in the Mamba-2 layers).
func graniteHybridBase() []Param {
	var out []Param
	for _, p := range graniteBase() {
		switch p.Key {
		case "context_length":
			p = Param{Key: p.Key, HF: []string{"max_position_embeddings"}, Kind: tensor.KindUint32,
				Derive: func(c Config) (tensor.Value, bool, error) {
					if pe, _ := c.Str("position_embedding_type"); pe != "rope" {
						return tensor.Uint32(1 << 20), true, nil
					}
					n, ok := c.Int("max_position_embeddings")
					if !ok {
						return tensor.Value{}, false, nil
					}
					return numValue(tensor.KindUint32, float64(n), []string{"max_position_embeddings"})
				},
				Inverse: func(c Config, v tensor.Value, m Meta) {
					if rope, _ := m.Get("rope.scaling.finetuned"); rope.Kind() == tensor.KindBool && boolOf(rope) {
						c["max_position_embeddings"], _ = v.Int()
					}
				}}
		case "attention.head_count_kv":
			p = Param{Key: p.Key, HF: []string{"num_key_value_heads"}, Kind: tensor.KindArray,
				Derive: func(c Config) (tensor.Value, bool, error) {
					kv, ok := c.Int("num_key_value_heads")
					if !ok {
						kv, _ = c.Int("num_attention_heads")
					}
					n, _ := c.Int("num_hidden_layers")
					if n < 0 || n > 1<<16 {
						return tensor.Value{}, false, errUnsupported("config.json: num_hidden_layers %d out of range", n)
					}
					layers, err := graniteHybridPattern(c, int(n))
					if err != nil {
						return tensor.Value{}, false, err
					}
					per := make([]int32, len(layers))
					for i, l := range layers {
						if l.Mixer.Attention() {
							per[i] = int32(kv)
						}
					}
					return tensor.ArrayOf(per), true, nil
				},
				Inverse: func(c Config, v tensor.Value, _ Meta) {
					a, ok := v.Array()
					if !ok {
						return
					}
					types := make([]any, a.Len())
					var kv int64
					for i := range types {
						n, _ := a.Index(i).Int()
						types[i] = "mamba"
						if n > 0 {
							types[i], kv = "attention", max(kv, n)
						}
					}
					c["layer_types"], c["num_key_value_heads"] = types, kv
				}}
		}
		out = append(out, p)
	}
	return out
}

// graniteHybridInner is ssm.inner_size as the converter reads it: expand
// (mamba_expand) times hidden_size.
func graniteHybridInner() Param {
	return Param{Key: "ssm.inner_size", Kind: tensor.KindUint32,
		Derive: func(c Config) (tensor.Value, bool, error) {
			e, ok1 := c.Int("expand", "num_heads", "mamba_expand", "mamba_num_heads")
			d, ok2 := c.Int("mamba_head_dim", "hidden_size", "d_model")
			if !ok1 || !ok2 {
				return tensor.Value{}, false, errUnsupported("config.json: no mamba_expand and hidden_size")
			}
			return numValue(tensor.KindUint32, float64(e*d), []string{"mamba_expand"})
		},
		Inverse: func(c Config, v tensor.Value, m Meta) {
			inner, _ := v.Int()
			if d, ok := m.Int("embedding_length"); ok && d > 0 {
				c["mamba_expand"] = inner / d
			}
		}}
}

// graniteRopeFlag is rope.scaling.finetuned, which the converter sets to
// whether the attention layers rotate (and llama.cpp's granitehybrid
// graph reads as such).
func graniteRopeFlag() Param {
	return Param{Key: "rope.scaling.finetuned", Kind: tensor.KindBool,
		Derive: func(c Config) (tensor.Value, bool, error) {
			pe, _ := c.Str("position_embedding_type")
			return tensor.Bool(pe == "rope"), true, nil
		},
		Inverse: func(c Config, v tensor.Value, _ Meta) {
			c["position_embedding_type"] = "nope"
			if b, _ := v.BoolValue(); b {
				c["position_embedding_type"] = "rope"
			}
		}}
}

// graniteHybridTensors: the llama-shaped attention (in the attention
// layers), the Mamba-2 mixer (in the others, under "mamba."), and
// GraniteMoE's experts and shared expert.
func graniteHybridTensors() []Tensor {
	var out []Tensor
	for _, t := range decoderTensors(true, LayoutSame) {
		switch t.GGUF {
		case "blk.{bid}.ffn_gate", "blk.{bid}.ffn_up", "blk.{bid}.ffn_down":
			continue
		case "blk.{bid}.attn_q", "blk.{bid}.attn_k", "blk.{bid}.attn_v", "blk.{bid}.attn_output":
			t.Optional, t.Mixers = true, []Mixer{FullAttention} // the attention layers only
		}
		out = append(out, t)
	}
	for _, t := range Mamba2Family.Tensors {
		if !slices.Contains([]string{"token_embd", "output_norm", "output", "blk.{bid}.attn_norm"}, t.GGUF) {
			t.HF = []string{strings.Replace(t.HF[0], "backbone.layers.{bid}.mixer", hfLayer+"mamba", 1)}
			t.Optional, t.Mixers = true, []Mixer{Mamba2} // the Mamba-2 layers only
			out = append(out, t)
		}
	}
	// The mixture (optional: Granite 4.0-H micro, 1B and 350M have none),
	// then shared_mlp: the shared expert beside a router (With), else the
	// dense feed-forward.
	moe, sh, router := hfLayer+"block_sparse_moe.", hfLayer+"shared_mlp.", "blk.{bid}.ffn_gate_inp"
	return append(out,
		Tensor{GGUF: router, HF: []string{moe + "router.layer"}, Shape: []Dim{DimExperts, DimHidden}, Optional: true},
		Tensor{GGUF: "blk.{bid}.ffn_gate_exps", HF: []string{moe + "input_linear"}, Shape: []Dim{DimExperts, DimExpertFFN, DimHidden},
			Split: &Split{Part: 1, Rows: true}, Optional: true},
		Tensor{GGUF: "blk.{bid}.ffn_up_exps", HF: []string{moe + "input_linear"}, Shape: []Dim{DimExperts, DimExpertFFN, DimHidden},
			Split: &Split{Part: 2, Rows: true}, Optional: true},
		Tensor{GGUF: "blk.{bid}.ffn_down_exps", HF: []string{moe + "output_linear"}, Shape: []Dim{DimExperts, DimHidden, DimExpertFFN},
			Optional: true},
		Tensor{GGUF: "blk.{bid}.ffn_gate_shexp", HF: []string{sh + "input_linear"}, Shape: []Dim{DimSharedFFN, DimHidden},
			Split: &Split{Part: 1, Rows: true}, With: router, Optional: true},
		Tensor{GGUF: "blk.{bid}.ffn_up_shexp", HF: []string{sh + "input_linear"}, Shape: []Dim{DimSharedFFN, DimHidden},
			Split: &Split{Part: 2, Rows: true}, With: router, Optional: true},
		Tensor{GGUF: "blk.{bid}.ffn_down_shexp", HF: []string{sh + "output_linear"}, Shape: []Dim{DimHidden, DimSharedFFN},
			With: router, Optional: true},
		Tensor{GGUF: "blk.{bid}.ffn_gate", HF: []string{sh + "input_linear"}, Shape: []Dim{DimFFN, DimHidden},
			Split: &Split{Part: 1, Rows: true}, Unless: router},
		Tensor{GGUF: "blk.{bid}.ffn_up", HF: []string{sh + "input_linear"}, Shape: []Dim{DimFFN, DimHidden},
			Split: &Split{Part: 2, Rows: true}, Unless: router},
		Tensor{GGUF: "blk.{bid}.ffn_down", HF: []string{sh + "output_linear"}, Shape: []Dim{DimHidden, DimFFN}, Unless: router})
}

// boolOf is a GGUF bool's value (false for another kind).
func boolOf(v tensor.Value) bool {
	b, _ := v.BoolValue()
	return b
}
