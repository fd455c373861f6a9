package arch

import (
	"encoding/json"
	"math"
	"strings"

	"github.com/tfconv/tfconv/tensor"
)

// GptOss is OpenAI's gpt-oss (GptOssForCausalLM, GGUF "gpt-oss"; the newer
// llama.cpp's converter, testdata/arch/README.md): Q/K/V/O biases, a
// learned per-head logit in each softmax's denominator (attention sinks),
// layers alternating between a sliding window and full attention (the
// first slides), YaRN, NEOX rotation, and a mixture in every layer: a
// router with a bias, the chosen experts' logits softmaxed, experts with
// biases whose gated unit is clamped (Graph.ClampedGLU). Hugging Face keeps
// each layer's experts in three tensors, gate and up rows alternating in
// one, the matrices as MXFP4 blocks and scales (Packed); the GGUF holds
// them as MXFP4, the blocks copied. The pre-FFN norm is
// post_attention_norm in the GGUF, as Seed-OSS's.
var GptOss = register(&Family{
	Name:       "gpt-oss",
	HFClasses:  []string{"GptOssForCausalLM"},
	ModelTypes: []string{"gpt_oss"},
	HFClass:    "GptOssForCausalLM", ModelType: "gpt_oss",
	Params: withParams(withAfterAll(baseParams(), "attention.head_count_kv", yarnParams()),
		gptOssWindow(),
		u32("expert_feed_forward_length", Optional, "intermediate_size")),
	Pattern: gptOssPattern,
	Tensors: gptOssTensors(),
	Packed: []Packed{
		{HF: hfLayer + "mlp.experts.gate_up_proj", GGUF: []Role{"blk.{bid}.ffn_gate_exps", "blk.{bid}.ffn_up_exps"},
			Blocks: tensor.MXFP4, BiasSuffix: "_bias", DenseTransposed: true,
			MLX: []Role{hfLayer + "mlp.experts.gate_proj", hfLayer + "mlp.experts.up_proj"}},
		{HF: hfLayer + "mlp.experts.down_proj", GGUF: []Role{"blk.{bid}.ffn_down_exps"}, Blocks: tensor.MXFP4, BiasSuffix: "_bias",
			DenseTransposed: true, MLX: []Role{hfLayer + "mlp.experts.down_proj"}},
	},
	// self_attn.sinks has no suffix in Hugging Face's form.
	SuffixAliases: map[string]string{"self_attn.sinks": "self_attn.weight"},
	Drops:         []Drop{rotaryBuffer},
	HFConst:       map[string]any{"hidden_act": "silu", "attention_bias": true},
	HFRename: func(c Config, has func(string) bool) map[string]string {
		if has("blk.0.ffn_gate_exps.weight") {
			// The experts are written back as MXFP4 blocks (Packed), as
			// the published checkpoints keep them.
			c["quantization_config"] = map[string]any{"quant_method": "mxfp4", "modules_to_not_convert": []string{
				"model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"}}
		}
		return nil
	},
	Graph: Graph{Norm: RMSNorm, FFN: Gated, Activation: "silu", NeoxRopeGGUF: true, PreFFNNormPostAttention: true,
		MoENormTopK: true, ClampedGLU: &ClampedGLU{Alpha: 1.702, Limit: 7}},
})

// withAfterAll returns params with ps inserted, in order, after the param
// of GGUF key key.
func withAfterAll(params []Param, key string, ps []Param) []Param {
	for i := len(ps) - 1; i >= 0; i-- {
		params = withAfter(params, key, ps[i])
	}
	return params
}

func gptOssTensors() []Tensor {
	var out []Tensor
	for _, t := range decoderTensors(false, LayoutSame) {
		switch t.GGUF {
		case "blk.{bid}.ffn_gate", "blk.{bid}.ffn_up", "blk.{bid}.ffn_down":
			continue
		case "blk.{bid}.ffn_norm":
			t.GGUF = "blk.{bid}.post_attention_norm"
		}
		out = append(out, t)
	}
	return append(out,
		Tensor{GGUF: "blk.{bid}.attn_sinks", HF: []string{hfLayer + "self_attn"}, HFSuffix: ".sinks", Shape: []Dim{DimHeads}},
		// mlx-lm's quant_predicate gives the router 8 bits, group 64 (d78bf58 gpt_oss.py).
		Tensor{GGUF: "blk.{bid}.ffn_gate_inp", HF: []string{hfLayer + "mlp.router"}, Shape: []Dim{DimExperts, DimHidden}, MLXBits: 8, MLXGroup: 64},
		Tensor{GGUF: "blk.{bid}.ffn_gate_exps", Shape: []Dim{DimExperts, DimExpertFFN, DimHidden}},
		Tensor{GGUF: "blk.{bid}.ffn_up_exps", Shape: []Dim{DimExperts, DimExpertFFN, DimHidden}},
		Tensor{GGUF: "blk.{bid}.ffn_down_exps", Shape: []Dim{DimExperts, DimHidden, DimExpertFFN}})
}

// floatJSON is F32 written with a decimal point (32.0, not 32):
// transformers checks that rope_scaling's beta_fast and beta_slow are
// floats.
func floatJSON(x float32) json.Number {
	n := F32(x)
	if !strings.ContainsAny(string(n), ".eEnN") {
		n += ".0"
	}
	return n
}

// gptOssPattern: config.json's layer_types (transformers' default and
// llama.cpp's fixed pattern: even layers slide, odd ones attend fully),
// sliding_window the window; every layer rotates and is a mixture.
func gptOssPattern(c Config, n int) ([]Layer, error) {
	types, ok, err := LayerTypes(c, n)
	if err != nil {
		return nil, err
	}
	w, _ := c.Int("sliding_window")
	out := make([]Layer, n)
	for i := range out {
		m := FullAttention
		if (ok && types[i] == SlidingAttention) || (!ok && i%2 == 0) {
			m = SlidingAttention
		}
		if m == SlidingAttention && (w <= 0 || w >= 1<<31) {
			return nil, errUnsupported("config.json: layer %d slides, but sliding_window is %v", i, c["sliding_window"])
		}
		if m != SlidingAttention && m != FullAttention {
			return nil, errUnsupported("config.json: layer_types[%d] %v: gpt-oss has sliding and full attention only", i, m)
		}
		out[i] = Layer{Mixer: m, Rope: true, MoE: true}
		if m == SlidingAttention {
			out[i].Window = int(w)
		}
	}
	return out, nil
}

// gptOssWindow is attention.sliding_window. The GGUF keeps no layer list:
// llama.cpp slides the even layers and attends fully in the odd ones, so
// a config.json layer_types of another pattern is refused naming it.
func gptOssWindow() Param {
	p := u32("attention.sliding_window", Optional, "sliding_window")
	p.Derive = func(c Config) (tensor.Value, bool, error) {
		n, _ := c.Int("num_hidden_layers")
		if n < 0 || n > 1<<16 {
			return tensor.Value{}, false, errUnsupported("config.json: num_hidden_layers %d out of range", n)
		}
		ls, err := gptOssPattern(c, int(n))
		if err != nil {
			return tensor.Value{}, false, err
		}
		for i, l := range ls {
			if (l.Mixer == SlidingAttention) != (i%2 == 0) {
				return tensor.Value{}, false, errUnsupported("config.json: layer_types %v: a gpt-oss GGUF slides the even layers only", c["layer_types"])
			}
		}
		w, ok := c.Int("sliding_window")
		if !ok {
			return tensor.Value{}, false, nil
		}
		return numValue(tensor.KindUint32, float64(w), []string{"sliding_window"})
	}
	return p
}

// YaRNOf reads a config.json rope_scaling of type yarn (rope_type or
// type) as transformers' _compute_yarn_parameters does: the frequencies'
// YaRN and the factor cos and sin are multiplied by (attention_factor, or
// 0.1·ln(factor) + 1, or DeepSeek's mscale ratio when both mscales are
// stated). ok is false when config.json has no yarn rope_scaling. A GGUF's
// rebuilt config (yarnParams' Inverse) says truncate true, as ggml
// computes.
func YaRNOf(c Config) (y YaRN, attnFactor float64, ok bool, err error) {
	rs, ok := c.Map("rope_scaling")
	if !ok {
		return y, 0, false, nil
	}
	if t, _ := rs.Str("rope_type", "type"); t != "yarn" {
		return y, 0, false, nil
	}
	f, ok := rs.Float("factor")
	if !ok {
		return y, 0, false, errUnsupported("config.json: rope_scaling %v has no factor", map[string]any(rs))
	}
	y.Factor = f
	if y.OriginalContext, ok = rs.Float("original_max_position_embeddings"); !ok {
		if y.OriginalContext, ok = c.Float("max_position_embeddings"); !ok {
			return y, 0, false, errUnsupported("config.json: rope_scaling %v has no original_max_position_embeddings", map[string]any(rs))
		}
	}
	y.BetaFast, y.BetaSlow = 32, 1
	if v, ok := rs.Float("beta_fast"); ok && v != 0 {
		y.BetaFast = v
	}
	if v, ok := rs.Float("beta_slow"); ok && v != 0 {
		y.BetaSlow = v
	}
	if tr, ok := rs.Bool("truncate"); ok {
		y.NoTruncate = !tr
	}
	if e, ok := rs.Float("extrapolation_factor"); ok && e != 1 {
		return y, 0, false, errUnsupported("config.json: rope_scaling extrapolation_factor %v (only 1 is supported)", e)
	}
	mscale := func(m float64) float64 {
		if f <= 1 {
			return 1
		}
		return 0.1*m*math.Log(f) + 1
	}
	attnFactor = mscale(1)
	ms, ok1 := rs.Float("mscale")
	msAll, ok2 := rs.Float("mscale_all_dim")
	if ok1 && ok2 && ms != 0 && msAll != 0 {
		attnFactor = mscale(ms) / mscale(msAll)
	}
	if a, ok := rs.Float("attention_factor"); ok {
		attnFactor = a
	}
	return y, attnFactor, true, nil
}

// yarnParams are the newer converter's rope_scaling keys of type yarn
// (TextModel.set_gguf_parameters): the type, factor and original context,
// and the extrapolation factor, attention factor and ramp bounds when
// config.json states them. Another rope_scaling type is refused.
func yarnParams() []Param {
	typ := Param{Key: "rope.scaling.type", Kind: tensor.KindString,
		Derive: func(c Config) (tensor.Value, bool, error) {
			rs, ok := c.Map("rope_scaling")
			if !ok {
				return tensor.Value{}, false, nil
			}
			t, _ := rs.Str("rope_type", "type")
			if _, ok := rs.Float("factor"); t != "yarn" || !ok {
				return tensor.Value{}, false, errUnsupported("config.json: rope_scaling %v (only yarn with a factor is supported)", map[string]any(rs))
			}
			return tensor.String("yarn"), true, nil
		},
		Inverse: func(c Config, v tensor.Value, m Meta) {
			if t, _ := v.Str(); t != "yarn" {
				return
			}
			rs := map[string]any{"rope_type": "yarn", "truncate": true}
			f, _ := m.Float("rope.scaling.factor")
			rs["factor"] = floatJSON(float32(f))
			if n, ok := m.Int("rope.scaling.original_context_length"); ok {
				rs["original_max_position_embeddings"] = n
			}
			for key, hf := range map[string]string{"rope.scaling.yarn_ext_factor": "extrapolation_factor",
				"rope.scaling.yarn_attn_factor": "attention_factor", "rope.scaling.yarn_beta_fast": "beta_fast",
				"rope.scaling.yarn_beta_slow": "beta_slow"} {
				if x, ok := m.Float(key); ok {
					rs[hf] = floatJSON(float32(x))
				}
			}
			c["rope_scaling"] = rs
		}}
	opt := func(key string, k tensor.Kind, hf ...string) Param {
		return Param{Key: key, Kind: k, Inverse: func(Config, tensor.Value, Meta) {},
			Derive: func(c Config) (tensor.Value, bool, error) {
				rs, ok := c.Map("rope_scaling")
				if !ok {
					return tensor.Value{}, false, nil
				}
				for _, h := range hf {
					if f, ok := rs.Float(h); ok {
						return numValue(k, f, []string{"rope_scaling." + h})
					}
				}
				return tensor.Value{}, false, nil
			}}
	}
	ps := []Param{typ,
		yarnValue("rope.scaling.factor", tensor.KindFloat32, "factor", 1),
		yarnValue("rope.scaling.original_context_length", tensor.KindUint32, "original_max_position_embeddings", 1),
		opt("rope.scaling.yarn_ext_factor", tensor.KindFloat32, "extrapolation_factor"),
		opt("rope.scaling.yarn_attn_factor", tensor.KindFloat32, "attention_factor", "attn_factor"),
		opt("rope.scaling.yarn_beta_fast", tensor.KindFloat32, "beta_fast"),
		opt("rope.scaling.yarn_beta_slow", tensor.KindFloat32, "beta_slow")}
	return ps
}
