package arch

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/tfconv/tfconv/tensor"
)

// DeepSeek2 is DeepSeek-V2 (and V2-Lite, V2.5) and DeepSeek-V3 (and R1),
// which the converter writes as the same GGUF architecture: multi-head latent
// attention (MLA) and a mixture of experts with shared experts.
//
// Attention: each head's query is qk_nope_head_dim position-free elements
// then qk_rope_head_dim rotated ones, projected from the hidden state
// directly (q_proj, V2-Lite: q_lora_rank null) or through a q_lora_rank
// bottleneck with its RMSNorm (q_a_proj, q_a_layernorm, q_b_proj). Keys and
// values come from one kv_lora_rank latent per token plus one rotated key
// shared by all heads (kv_a_proj_with_mqa), the latent RMS-normalised and
// expanded per head into qk_nope_head_dim key and v_head_dim value elements
// (kv_b_proj). Hugging Face stores the rotated elements as adjacent pairs,
// as ggml rotates them: no permutation.
//
// Feed-forward: the first first_k_dense_replace layers are dense (SwiGLU of
// intermediate_size), the rest route each token to num_experts_per_tok of
// n_routed_experts experts of width moe_intermediate_size (softmax scores,
// or sigmoid: scoring_func), renormalised (norm_topk_prob) or scaled by
// routed_scaling_factor, beside n_shared_experts shared experts that are
// one SwiGLU of n_shared_experts · moe_intermediate_size. DeepSeek-V3
// chooses its experts by score plus a per-expert bias
// (e_score_correction_bias, GGUF exp_probs_b) within the best topk_group of
// n_group groups (topk_method noaux_tc); GGUF keeps the bias, not the
// groups (llama.cpp c392e509 chooses among all experts).
//
// Rope: YaRN as DeepSeek applies it (rope_scaling type yarn): the
// converter keeps factor, the original context and 0.1·mscale_all_dim
// (yarn_log_multiplier); it drops beta_fast/beta_slow (llama.cpp uses 32
// and 1, DeepSeek's values) and mscale (llama.cpp takes it equal to
// mscale_all_dim, as DeepSeek's checkpoints state it).
var DeepSeek2 = register(&Family{
	Name:       "deepseek2",
	HFClasses:  []string{"DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM"},
	ModelTypes: []string{"deepseek_v2", "deepseek_v3", "kimi_k2"},
	HFClass:    "DeepseekV2ForCausalLM", ModelType: "deepseek_v2",
	Params: append(withParams(without(without(without(baseParams(), "expert_count"), "attention.key_length"), "attention.value_length"),
		u32("leading_dense_block_count", Required, "first_k_dense_replace"),
		u32("vocab_size", Required, "vocab_size"),
		u32("attention.q_lora_rank", Optional, "q_lora_rank"),
		u32("attention.kv_lora_rank", Required, "kv_lora_rank"),
		Param{Key: "attention.key_length", Kind: tensor.KindUint32, Need: Required,
			Derive: func(c Config) (tensor.Value, bool, error) {
				nope, ok1 := c.Int("qk_nope_head_dim")
				rope, ok2 := c.Int("qk_rope_head_dim")
				if !ok1 || !ok2 || nope < 0 || rope < 0 || nope+rope > math.MaxUint32 {
					return tensor.Value{}, false, errUnsupported("config.json: no qk_nope_head_dim or qk_rope_head_dim")
				}
				return tensor.Uint32(uint32(nope + rope)), true, nil
			},
			Inverse: func(c Config, v tensor.Value, m Meta) {
				k, _ := v.Int()
				if mla, ok := m.Int("attention.key_length_mla"); ok {
					k = mla // the newer converter's form: key_length is the latent's
				}
				rope, _ := m.Int("rope.dimension_count")
				c["qk_nope_head_dim"] = k - rope
			}},
		Param{Key: "attention.value_length", HF: []string{"v_head_dim"}, Kind: tensor.KindUint32, Need: Required,
			Inverse: func(c Config, v tensor.Value, m Meta) {
				if mla, ok := m.Int("attention.value_length_mla"); ok {
					v = tensor.Uint32(uint32(mla))
				}
				c["v_head_dim"] = jsonValue(v)
			}},
		u32("expert_feed_forward_length", Required, "moe_intermediate_size"),
		u32("expert_count", Required, "n_routed_experts"),
		u32("expert_shared_count", Required, "n_shared_experts"),
		f32p("expert_weights_scale", Required, "routed_scaling_factor"),
		Param{Key: "expert_weights_norm", HF: []string{"norm_topk_prob"}, Kind: tensor.KindBool, Need: Required},
		gatingFunc(Required),
		u32("rope.dimension_count", Required, "qk_rope_head_dim"),
		yarnType(),
		yarnValue("rope.scaling.factor", tensor.KindFloat32, "factor", 1),
		yarnValue("rope.scaling.original_context_length", tensor.KindUint32, "original_max_position_embeddings", 1),
		yarnValue("rope.scaling.yarn_log_multiplier", tensor.KindFloat32, "mscale_all_dim", 0.1)),
		// Read from the newer converter's GGUFs, never written: the form
		// written here (c392e509's) keeps no expert groups.
		readOnly(expertGroups()...)...),
	Tensors: moeTensors(deepseek2Tensors(), moeLayout{router: "mlp.gate", experts: "mlp.experts.{xid}.",
		gate: "gate_proj", down: "down_proj", up: "up_proj", ffn: DimExpertFFN,
		shared: "mlp.shared_experts.", sharedFFN: DimSharedFFN}),
	SuffixAliases: map[string]string{"e_score_correction_bias": "e_score_correction.bias"},
	Drops:         []Drop{rotaryBuffer},
	// A GGUF with the expert-choice bias is DeepSeek-V3's (noaux_tc).
	HFRename: func(c Config, has func(string) bool) map[string]string {
		first, _ := c.Int("first_k_dense_replace")
		if has(expand("blk.{bid}.exp_probs_b", int(first)) + ".bias") {
			c["architectures"], c["model_type"], c["topk_method"] = []string{"DeepseekV3ForCausalLM"}, "deepseek_v3", "noaux_tc"
		}
		return nil
	},
	// DeepseekV2Config defaults q_lora_rank to 1536: a GGUF without query
	// compression says null. The routing keys GGUF does not keep are
	// V2-Lite's (greedy over one group).
	HFConst: map[string]any{"hidden_act": "silu", "q_lora_rank": nil, "attention_bias": false,
		"topk_method": "greedy", "n_group": 1, "topk_group": 1, "moe_layer_freq": 1},
	HFWarning: "GGUF keeps no topk_method, n_group or topk_group (written as greedy routing, or V3's noaux_tc, over one group), " +
		"nor YaRN's beta_fast/beta_slow/mscale (written as 32, 1 and mscale_all_dim, what llama.cpp computes with)",
	Graph: Graph{Norm: RMSNorm, FFN: Gated, Activation: "silu"},
})

// deepseek2Tensors is the llama-shaped schema with MLA's projections in
// place of Q/K/V.
func deepseek2Tensors() []Tensor {
	var out []Tensor
	for _, t := range decoderTensors(false, LayoutSame) {
		switch t.GGUF {
		case "blk.{bid}.attn_q", "blk.{bid}.attn_k", "blk.{bid}.attn_v":
			continue
		case "blk.{bid}.attn_output":
			t.Shape = []Dim{DimHidden, DimVO}
		}
		out = append(out, t)
	}
	a := hfLayer + "self_attn."
	return append(out,
		Tensor{GGUF: "blk.{bid}.attn_q", HF: []string{a + "q_proj"}, Shape: []Dim{DimQK, DimHidden}, Unless: "blk.{bid}.attn_q_a"},
		Tensor{GGUF: "blk.{bid}.attn_q_a", HF: []string{a + "q_a_proj"}, Shape: []Dim{DimQLora, DimHidden}, Optional: true},
		Tensor{GGUF: "blk.{bid}.attn_q_a_norm", HF: []string{a + "q_a_layernorm"}, Shape: []Dim{DimQLora}, Optional: true},
		Tensor{GGUF: "blk.{bid}.attn_q_b", HF: []string{a + "q_b_proj"}, Shape: []Dim{DimQK, DimQLora}, Optional: true},
		Tensor{GGUF: "blk.{bid}.attn_kv_a_mqa", HF: []string{a + "kv_a_proj_with_mqa"}, Shape: []Dim{DimKVA, DimHidden}},
		Tensor{GGUF: "blk.{bid}.attn_kv_a_norm", HF: []string{a + "kv_a_layernorm"}, Shape: []Dim{DimKVLora}},
		Tensor{GGUF: "blk.{bid}.attn_kv_b", HF: []string{a + "kv_b_proj"}, Shape: []Dim{DimKVB, DimKVLora}},
		Tensor{GGUF: "blk.{bid}.exp_probs_b", HF: []string{hfLayer + "mlp.gate.e_score_correction"}, HFSuffix: "_bias",
			Shape: []Dim{DimExperts}, Optional: true})
}

// yarnType is rope.scaling.type for DeepSeek's rope_scaling: "yarn" when
// it has a factor; other types are refused (the converter would drop them),
// and so is a yarn whose ramp or cos/sin scale this GGUF form cannot say:
// it keeps neither beta_fast/beta_slow (llama.cpp computes with 32 and 1)
// nor mscale (taken equal to mscale_all_dim, DeepSeek's default mscale
// being 1). Kimi K2's beta_fast 1 is such a one.
func yarnType() Param {
	return Param{Key: "rope.scaling.type", Kind: tensor.KindString,
		Derive: func(c Config) (tensor.Value, bool, error) {
			rs, ok := c.Map("rope_scaling")
			if !ok {
				return tensor.Value{}, false, nil
			}
			typ, _ := rs.Str("type")
			if _, ok := rs.Float("factor"); typ != "yarn" || !ok {
				return tensor.Value{}, false, errUnsupported("rope_scaling %v (only yarn with a factor is supported)", map[string]any(rs))
			}
			for _, k := range []struct {
				key  string
				want float64
			}{{"beta_fast", 32}, {"beta_slow", 1}} {
				if v, ok := rs.Float(k.key); ok && v != k.want {
					return tensor.Value{}, false, errUnsupported("config.json: rope_scaling.%s %v: the deepseek2 GGUF keeps no YaRN ramp (llama.cpp computes with beta_fast 32, beta_slow 1)", k.key, v)
				}
			}
			ms, ok := rs.Float("mscale")
			if !ok {
				ms = 1
			}
			if all, ok := rs.Float("mscale_all_dim"); ok && ms != all {
				return tensor.Value{}, false, errUnsupported("config.json: rope_scaling.mscale %v ≠ mscale_all_dim %v: the deepseek2 GGUF keeps mscale_all_dim only", ms, all)
			}
			return tensor.String("yarn"), true, nil
		},
		Inverse: func(c Config, v tensor.Value, m Meta) {
			if typ, _ := v.Str(); typ != "yarn" {
				return
			}
			f, _ := m.Float("rope.scaling.factor")
			n, _ := m.Int("rope.scaling.original_context_length")
			lm, _ := m.Float("rope.scaling.yarn_log_multiplier")
			ms := mscaleOf(float32(lm))
			rs := map[string]any{"type": "yarn", "factor": F32(float32(f)),
				"original_max_position_embeddings": n, "mscale": ms, "mscale_all_dim": ms,
				"beta_fast": 32, "beta_slow": 1}
			// The newer converter keeps the ramp (Kimi K2's beta_fast 1).
			for key, gguf := range map[string]string{"beta_fast": "rope.scaling.yarn_beta_fast", "beta_slow": "rope.scaling.yarn_beta_slow"} {
				if b, ok := m.Float(gguf); ok {
					rs[key] = F32(float32(b))
				}
			}
			c["rope_scaling"] = rs
		}}
}

// mscaleOf is the shortest decimal m with float32(0.1·m) = lm: the
// mscale_all_dim the converter wrote yarn_log_multiplier lm from.
func mscaleOf(lm float32) json.Number {
	x := float64(lm) / 0.1
	for p := 1; p < 17; p++ {
		s := strconv.FormatFloat(x, 'g', p, 64)
		if m, err := strconv.ParseFloat(s, 64); err == nil && float32(0.1*m) == lm {
			return json.Number(s)
		}
	}
	return json.Number(strconv.FormatFloat(x, 'g', -1, 64))
}

// yarnValue is the rope_scaling entry key times scale as a GGUF value of
// kind k, when rope_scaling is present (its absence in a yarn
// rope_scaling is an error, as in the converter).
func yarnValue(gguf string, k tensor.Kind, key string, scale float64) Param {
	return Param{Key: gguf, Kind: k,
		Derive: func(c Config) (tensor.Value, bool, error) {
			rs, ok := c.Map("rope_scaling")
			if !ok {
				return tensor.Value{}, false, nil
			}
			f, ok := rs.Float(key)
			if !ok {
				return tensor.Value{}, false, errUnsupported("config.json: rope_scaling has no %s", key)
			}
			return numValue(k, scale*f, []string{"rope_scaling." + key})
		},
		Inverse: func(Config, tensor.Value, Meta) {}}
}

// YaRN is DeepSeek's rope_scaling of type yarn as the GGUF keeps it.
type YaRN struct {
	Factor          float64 // the context extension factor s
	OriginalContext float64 // the context the model was trained at
	LogMul          float64 // 0.1 · mscale_all_dim
	BetaFast        float64 // the ramp's bounds, in rotations over OriginalContext
	BetaSlow        float64
	// NoTruncate keeps the ramp's bounds as computed, where DeepSeek and
	// ggml floor and ceil them (transformers' rope_scaling truncate
	// false, as gpt-oss publishes it).
	NoTruncate bool
}

// InvFreq is the inverse frequency of each of dim/2 rotated pairs with base
// base: the base frequency f (extrapolated) where the pair turns more than
// BetaFast times over the original context, f/Factor (interpolated) where
// less than BetaSlow times, linearly blended between, the pair index
// bounds floored and ceiled as DeepSeek (and ggml) compute them.
func (y YaRN) InvFreq(base float64, dim int) []float32 {
	corr := func(rot float64) float64 {
		return float64(dim) * math.Log(y.OriginalContext/(rot*2*math.Pi)) / (2 * math.Log(base))
	}
	low, high := corr(y.BetaFast), corr(y.BetaSlow)
	if !y.NoTruncate {
		low, high = math.Floor(low), math.Ceil(high)
	}
	low, high = math.Max(low, 0), math.Min(high, float64(dim-1))
	if low == high {
		high += 0.001
	}
	out := make([]float32, dim/2)
	for i := range out {
		// torch's float32 steps: base^(2i/dim), 1/p extrapolated, 1/(s·p)
		// interpolated, mixed by mask = 1 - ramp.
		p := float32(math.Pow(base, float64(float32(2*i)/float32(dim))))
		extra, inter := 1/p, 1/(float32(y.Factor)*p)
		ramp := min(max((float32(i)-float32(low))/float32(high-low), 0), 1)
		mask := 1 - ramp
		out[i] = inter*(1-mask) + extra*mask
	}
	return out
}

// MScale is DeepSeek's yarn_get_mscale(factor, mscale_all_dim)²: the
// softmax scale's multiplier (1 when Factor ≤ 1).
func (y YaRN) MScale() float64 {
	if y.Factor <= 1 {
		return 1
	}
	m := 1 + y.LogMul*math.Log(y.Factor)
	return m * m
}

// readOnly returns ps never written to a GGUF (their Derive says absent)
// but read back from one on GGUF → HF: keys of another converter's form.
func readOnly(ps ...Param) []Param {
	out := make([]Param, len(ps))
	for i, p := range ps {
		p.Derive = func(Config) (tensor.Value, bool, error) { return tensor.Value{}, false, nil }
		out[i] = p
	}
	return out
}
