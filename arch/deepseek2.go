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
// converter keeps factor, the original context, the ramp (beta_fast,
// beta_slow: Kimi K2's 1 and 32 differ from DeepSeek's) and
// 0.1·mscale_all_dim (yarn_log_multiplier); it drops mscale (llama.cpp
// takes it equal to mscale_all_dim, as DeepSeek's checkpoints state it).
//
// The GGUF is the newer converter's (llama.cpp d32676d7) form: MLA as
// multi-query attention over the latent (head_count_kv 1, key_length
// kv_lora_rank + qk_rope, value_length kv_lora_rank, the per-head widths in
// key_length_mla and value_length_mla), kv_b_proj cut per head into
// attn_k_b (each head's key rows, transposed) and attn_v_b, and the expert
// groups kept. c392e509's form (attn_kv_b, per-head key and value lengths)
// is read too.
var DeepSeek2 = register(&Family{
	Name:       "deepseek2",
	HFClasses:  []string{"DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM"},
	ModelTypes: []string{"deepseek_v2", "deepseek_v3", "kimi_k2"},
	HFClass:    "DeepseekV2ForCausalLM", ModelType: "deepseek_v2",
	Params: deepseek2Params(),
	Tensors: moeTensors(deepseek2Tensors(), moeLayout{router: "mlp.gate", experts: "mlp.experts.{xid}.",
		gate: "gate_proj", down: "down_proj", up: "up_proj", ffn: DimExpertFFN,
		shared: "mlp.shared_experts.", sharedFFN: DimSharedFFN}),
	SuffixAliases: map[string]string{"e_score_correction_bias": "e_score_correction.bias"},
	Drops: []Drop{rotaryBuffer, {PastLayers: true, Warn: true,
		Reason: "a multi-token-prediction (MTP) layer, past num_hidden_layers: the converter skips it (llama.cpp runs none for deepseek2)"}},
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
	HFWarning: "GGUF keeps no topk_method (written as greedy routing, or V3's noaux_tc), " +
		"nor YaRN's mscale (written as mscale_all_dim, what llama.cpp computes with)",
	Graph: Graph{Norm: RMSNorm, FFN: Gated, Activation: "silu"},
})

// deepseek2Params are the newer converter's keys: TextModel's (the experts
// under n_routed_experts, their groups and scoring; the YaRN keys of
// rope_scaling), then DeepseekV2Model's after general.file_type.
func deepseek2Params() []Param {
	var ps []Param
	for _, p := range routedParams(baseParams(), "n_routed_experts") {
		switch p.Key {
		case "attention.head_count_kv":
			ps = append(append(ps, mlaHeadCountKV(), deepseekYarnType()), yarnParams()[1:]...)
			continue
		case "attention.key_length":
			p = mlaLatentLength(p.Key, true, true)
		case "attention.value_length":
			p = mlaLatentLength(p.Key, false, true)
		}
		ps = append(ps, p)
	}
	nope := func(c Config) (int64, int64, bool) {
		n, ok1 := c.Int("qk_nope_head_dim")
		r, ok2 := c.Int("qk_rope_head_dim")
		return n, r, ok1 && ok2 && n >= 0 && r >= 0 && n+r <= math.MaxUint32
	}
	return append(ps,
		u32("leading_dense_block_count", Required, "first_k_dense_replace"),
		u32("vocab_size", Required, "vocab_size"),
		u32("attention.q_lora_rank", Optional, "q_lora_rank"),
		u32("attention.kv_lora_rank", Required, "kv_lora_rank"),
		mlaLatentLength("attention.key_length", true, false),
		mlaLatentLength("attention.value_length", false, false),
		Param{Key: "attention.key_length_mla", Kind: tensor.KindUint32, Need: Optional,
			Derive: func(c Config) (tensor.Value, bool, error) {
				n, r, ok := nope(c)
				if !ok {
					return tensor.Value{}, false, errUnsupported("config.json: no qk_nope_head_dim or qk_rope_head_dim")
				}
				return tensor.Uint32(uint32(n + r)), true, nil
			},
			Inverse: func(Config, tensor.Value, Meta) {}}, // key_length's Inverse reads it
		Param{Key: "attention.value_length_mla", HF: []string{"v_head_dim"}, Kind: tensor.KindUint32, Need: Optional,
			Inverse: func(Config, tensor.Value, Meta) {}}, // value_length's Inverse reads it
		u32("expert_feed_forward_length", Required, "moe_intermediate_size"),
		u32("expert_shared_count", Required, "n_shared_experts"),
		f32p("expert_weights_scale", Optional, "routed_scaling_factor"),
		// written when true only
		Param{Key: "expert_weights_norm", HF: []string{"norm_topk_prob"}, Kind: tensor.KindBool,
			Derive: func(c Config) (tensor.Value, bool, error) {
				if b, ok := c.Bool("norm_topk_prob"); ok && b {
					return tensor.Bool(true), true, nil
				}
				return tensor.Value{}, false, nil
			}},
		u32("rope.dimension_count", Required, "qk_rope_head_dim"),
		Param{Key: "rope.scaling.yarn_log_multiplier", Kind: tensor.KindFloat32, Inverse: func(Config, tensor.Value, Meta) {},
			Derive: func(c Config) (tensor.Value, bool, error) {
				rs, _ := c.Map("rope_scaling")
				if m, ok := rs.Float("mscale_all_dim"); ok {
					return numValue(tensor.KindFloat32, 0.1*m, []string{"rope_scaling.mscale_all_dim"})
				}
				return tensor.Value{}, false, nil
			}})
}

// mlaHeadCountKV is head_count_kv 1: the converter writes MLA as
// multi-query attention over the latent. GGUF → HF gives every query head
// its key and value again (num_key_value_heads = num_attention_heads), or
// keeps c392e509's count.
func mlaHeadCountKV() Param {
	return Param{Key: "attention.head_count_kv", Kind: tensor.KindUint32,
		Derive: func(Config) (tensor.Value, bool, error) { return tensor.Uint32(1), true, nil },
		Inverse: func(c Config, v tensor.Value, m Meta) {
			n, _ := v.Int()
			if _, mla := m.Int("attention.key_length_mla"); mla {
				n, _ = m.Int("attention.head_count")
			}
			c["num_key_value_heads"] = n
		}}
}

// mlaLatentLength is attention.key_length (key: the latent and the rotated
// key, kv_lora_rank + qk_rope_head_dim) or value_length (the latent) of
// the newer converter. Where transformers has the config's class (model
// type deepseek_v2 or deepseek_v3, whose configs carry a head_dim) the
// converter's TextModel wrote the key first, among its own keys (early),
// and DeepseekV2Model overwrote its value in place; otherwise (Kimi K2's
// kimi_k2, read from config.json alone) it comes after kv_lora_rank. GGUF
// → HF reads the per-head widths: key_length_mla and value_length_mla, or
// c392e509's key_length (qk_nope + qk_rope) and value_length (v_head_dim).
func mlaLatentLength(key string, isKey, early bool) Param {
	return Param{Key: key, Kind: tensor.KindUint32,
		Derive: func(c Config) (tensor.Value, bool, error) {
			mt, _ := c.Str("model_type")
			_, hasHeadDim := c["head_dim"]
			if (mt == "deepseek_v2" || mt == "deepseek_v3" || hasHeadDim) != early {
				return tensor.Value{}, false, nil
			}
			lora, ok1 := c.Int("kv_lora_rank")
			rope, ok2 := c.Int("qk_rope_head_dim")
			if !ok1 || !ok2 || lora <= 0 || rope < 0 || lora+rope > math.MaxUint32 {
				return tensor.Value{}, false, errUnsupported("config.json: no kv_lora_rank or qk_rope_head_dim")
			}
			if !isKey {
				rope = 0
			}
			return tensor.Uint32(uint32(lora + rope)), true, nil
		},
		Inverse: func(c Config, v tensor.Value, m Meta) {
			n, _ := v.Int()
			if isKey {
				if mla, ok := m.Int("attention.key_length_mla"); ok {
					n = mla
				}
				rope, _ := m.Int("rope.dimension_count")
				c["qk_nope_head_dim"] = n - rope
				return
			}
			if mla, ok := m.Int("attention.value_length_mla"); ok {
				n = mla
			}
			c["v_head_dim"] = n
		}}
}

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
		// kv_b_proj is each head's qk_nope key rows then v_head_dim value
		// rows: written cut in two per head, the keys transposed; c392e509
		// wrote it whole (read back, never written).
		Tensor{GGUF: "blk.{bid}.attn_k_b", HF: []string{a + "kv_b_proj"}, Shape: []Dim{DimHeads, DimNope, DimKVLora},
			Layout: LayoutTranspose, Split: &Split{Part: 1, Groups: DimHeads, Width: "qk_nope_head_dim"}},
		Tensor{GGUF: "blk.{bid}.attn_v_b", HF: []string{a + "kv_b_proj"}, Shape: []Dim{DimHeads, DimVHead, DimKVLora},
			Split: &Split{Part: 2, Groups: DimHeads, Width: "v_head_dim"}},
		Tensor{GGUF: "blk.{bid}.attn_kv_b", HF: []string{a + "kv_b_proj"}, Shape: []Dim{DimKVB, DimKVLora}, Optional: true},
		Tensor{GGUF: "blk.{bid}.exp_probs_b", HF: []string{hfLayer + "mlp.gate.e_score_correction"}, HFSuffix: "_bias",
			Shape: []Dim{DimExperts}, Optional: true})
}

// deepseekYarnType is rope.scaling.type for DeepSeek's rope_scaling:
// "yarn" when it has a factor; other types are refused (the converter would
// drop them), and so is a yarn whose cos/sin scale the GGUF cannot say: it
// keeps no mscale (taken equal to mscale_all_dim, DeepSeek's default
// mscale being 1).
func deepseekYarnType() Param {
	return Param{Key: "rope.scaling.type", Kind: tensor.KindString,
		Derive: func(c Config) (tensor.Value, bool, error) {
			rs, ok := c.Map("rope_scaling")
			if !ok {
				return tensor.Value{}, false, nil
			}
			typ, _ := rs.Str("rope_type", "type")
			if _, ok := rs.Float("factor"); typ != "yarn" || !ok {
				return tensor.Value{}, false, errUnsupported("rope_scaling %v (only yarn with a factor is supported)", map[string]any(rs))
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
