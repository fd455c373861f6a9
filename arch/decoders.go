package arch

import (
	"github.com/tfconv/tfconv/tensor"
)

// The llama-shaped decoder families: pre-norm blocks, rotary positions,
// separate Q/K/V projections under Hugging Face's "model.layers.N." names.
// Each family below states only what differs from that shape; every value
// follows convert_hf_to_gguf.py at llama.cpp c392e509 and transformers
// v4.43.4.

// hfLayer is the Hugging Face prefix of a decoder block.
const hfLayer = "model.layers.{bid}."

// decoderTensors is the llama-shaped schema: embedding, final norm, head,
// and per block the attention and feed-forward projections with their
// pre-norms. qk is the layout of attn_q/attn_k (the permutation where the
// converter applies it), norm that of every norm weight.
func decoderTensors(qk bool, norm Layout) []Tensor {
	q, k := LayoutSame, LayoutSame
	if qk {
		q, k = LayoutPermuteQ, LayoutPermuteK
	}
	d := []Dim{DimHidden}
	return []Tensor{
		{GGUF: "token_embd", HF: []string{"model.embed_tokens"}, Shape: []Dim{DimVocab, DimHidden}},
		{GGUF: "output_norm", HF: []string{"model.norm"}, Shape: d, Layout: norm},
		{GGUF: "output", HF: []string{"lm_head"}, Shape: []Dim{DimVocab, DimHidden}, Optional: true},
		{GGUF: "blk.{bid}.attn_norm", HF: []string{hfLayer + "input_layernorm"}, Shape: d, Layout: norm},
		{GGUF: "blk.{bid}.attn_q", HF: []string{hfLayer + "self_attn.q_proj"}, Shape: []Dim{DimQ, DimHidden}, Layout: q},
		{GGUF: "blk.{bid}.attn_k", HF: []string{hfLayer + "self_attn.k_proj"}, Shape: []Dim{DimKV, DimHidden}, Layout: k},
		{GGUF: "blk.{bid}.attn_v", HF: []string{hfLayer + "self_attn.v_proj"}, Shape: []Dim{DimKV, DimHidden}},
		{GGUF: "blk.{bid}.attn_output", HF: []string{hfLayer + "self_attn.o_proj"}, Shape: []Dim{DimHidden, DimQ}},
		{GGUF: "blk.{bid}.ffn_norm", HF: []string{hfLayer + "post_attention_layernorm"}, Shape: d, Layout: norm},
		{GGUF: "blk.{bid}.ffn_gate", HF: []string{hfLayer + "mlp.gate_proj"}, Shape: []Dim{DimFFN, DimHidden}},
		{GGUF: "blk.{bid}.ffn_up", HF: []string{hfLayer + "mlp.up_proj"}, Shape: []Dim{DimFFN, DimHidden}},
		{GGUF: "blk.{bid}.ffn_down", HF: []string{hfLayer + "mlp.down_proj"}, Shape: []Dim{DimHidden, DimFFN}},
	}
}

var no = false

// rotaryBuffer is the inv_freq buffer old checkpoints carry.
var rotaryBuffer = Drop{Suffix: ".rotary_emb.inv_freq", Reason: "rotary inverse frequencies: a buffer recomputed from rope_theta"}

// withParams returns base with extra appended.
func withParams(base []Param, extra ...Param) []Param { return append(base, extra...) }

// ropeScalingLinear is LlamaModel's rope scaling: only the linear type is
// written (rope.scaling.type and .factor); other types are refused here
// rather than dropped, since the model would then compute something else.
func ropeScalingLinear() []Param {
	return []Param{
		{Key: "rope.scaling.type", Kind: tensor.KindString,
			Derive: func(c Config) (tensor.Value, bool, error) {
				rs, ok := c.Map("rope_scaling")
				if !ok {
					return tensor.Value{}, false, nil
				}
				typ, _ := rs.Str("type")
				if typ == "" {
					typ, _ = rs.Str("rope_type")
				}
				if typ == "llama3" {
					return tensor.Value{}, false, nil // the rope_freqs tensor carries it
				}
				if _, ok := rs.Float("factor"); typ != "linear" || !ok {
					return tensor.Value{}, false, errUnsupported("rope_scaling %v (only linear is supported)", map[string]any(rs))
				}
				return tensor.String("linear"), true, nil
			},
			Inverse: func(c Config, v tensor.Value, m Meta) {
				typ, _ := v.Str()
				if typ == "none" {
					return
				}
				f, _ := m.Float("rope.scaling.factor")
				c["rope_scaling"] = map[string]any{"type": typ, "factor": F32(float32(f))}
			}},
		{Key: "rope.scaling.factor", Kind: tensor.KindFloat32,
			Derive: func(c Config) (tensor.Value, bool, error) {
				rs, ok := c.Map("rope_scaling")
				if !ok {
					return tensor.Value{}, false, nil
				}
				if _, llama3, _ := Llama3RopeOf(c); llama3 {
					return tensor.Value{}, false, nil
				}
				f, _ := rs.Float("factor")
				return tensor.Float32(float32(f)), true, nil
			},
			Inverse: func(Config, tensor.Value, Meta) {}},
	}
}

// noRopeScaling refuses rope_scaling for families whose converter writes
// none of it.
func noRopeScaling() Param {
	return Param{Key: "rope.scaling.type", Kind: tensor.KindString,
		Derive: func(c Config) (tensor.Value, bool, error) {
			if rs, ok := c.Map("rope_scaling"); ok {
				return tensor.Value{}, false, errUnsupported("rope_scaling %v", map[string]any(rs))
			}
			return tensor.Value{}, false, nil
		}}
}

// Llama is LLaMA and what convert_hf_to_gguf.py's LlamaModel converts with
// it (Mistral): RMSNorm, SwiGLU, grouped-query attention, optional
// attention biases, tied or untied head. The converter permutes Q/K rows so
// ggml's adjacent-pair rope reproduces HF's rotate-half.
var Llama = register(&Family{
	Name:       "llama",
	HFClasses:  []string{"LLaMAForCausalLM", "LlamaForCausalLM", "MistralForCausalLM"},
	ModelTypes: []string{"llama", "mistral"},
	HFClass:    "LlamaForCausalLM", ModelType: "llama",
	Params: withParams(baseParams(),
		append([]Param{u32("vocab_size", Required, "vocab_size"), ropeDimension()}, ropeScalingLinear()...)...),
	Tensors:   decoderTensors(true, LayoutSame),
	Drops:     []Drop{rotaryBuffer},
	Generated: []Generated{ropeFreqs},
	HFConst:   map[string]any{"hidden_act": "silu", "mlp_bias": false},
	BiasFlag:  "attention_bias",
	Graph:     Graph{Norm: RMSNorm, FFN: Gated, Activation: "silu"},
})

// ropeFreqs is LlamaModel's rope_freqs for llama3 rope scaling.
var ropeFreqs = Generated{GGUF: "rope_freqs.weight",
	Reason: "Llama 3 rope frequency factors: config.json's rope_scaling holds them",
	Make: func(c Config) ([]float32, error) {
		r, ok, err := Llama3RopeOf(c)
		if err != nil || !ok {
			return nil, err
		}
		// The converter (c392e509) reads the original context from the
		// top level of config.json, default 8192, where transformers reads
		// rope_scaling's; published Llama 3 configs agree on 8192.
		r.OriginalContext = 8192
		if v, ok := c.Float("original_max_position_embeddings"); ok {
			r.OriginalContext = v
		}
		d, err := headDim(c)
		if err != nil {
			return nil, err
		}
		base, ok := c.Float("rope_theta")
		if !ok {
			base = 10000
		}
		return r.Factors(base, int(d)), nil
	}}

// Qwen2 is Qwen2 and Qwen2.5: the llama shape with Q/K/V biases, no Q/K
// permutation (ggml's NEOX rope), and only the base hyper-parameters.
var Qwen2 = register(&Family{
	Name:       "qwen2",
	HFClasses:  []string{"Qwen2ForCausalLM"},
	ModelTypes: []string{"qwen2"},
	HFClass:    "Qwen2ForCausalLM", ModelType: "qwen2",
	Params:  withParams(baseParams(), noRopeScaling()),
	Tensors: decoderTensors(false, LayoutSame),
	Drops:   []Drop{rotaryBuffer},
	HFConst: map[string]any{"hidden_act": "silu", "use_sliding_window": false},
	Graph:   Graph{Norm: RMSNorm, FFN: Gated, Activation: "silu", NeoxRopeGGUF: true},
})

// gemmaParams are GemmaModel's keys, in its order (no rope.freq_base:
// llama.cpp's default 10000 is Gemma's).
func gemmaParams(extra ...Param) []Param {
	return withParams([]Param{
		u32("context_length", Required, "max_position_embeddings"),
		u32("embedding_length", Required, "hidden_size"),
		u32("block_count", Required, "num_hidden_layers"),
		u32("feed_forward_length", Required, "intermediate_size"),
		u32("attention.head_count", Required, "num_attention_heads"),
		{Key: "attention.head_count_kv", HF: []string{"num_key_value_heads"}, Kind: tensor.KindUint32, Need: Required,
			Derive: func(c Config) (tensor.Value, bool, error) {
				n, ok := c.Int("num_key_value_heads", "num_attention_heads")
				if !ok {
					return tensor.Value{}, false, errUnsupported("config.json: no num_attention_heads")
				}
				return tensor.Uint32(uint32(n)), true, nil
			}},
		f32p("attention.layer_norm_rms_epsilon", Required, "rms_norm_eps"),
		u32("attention.key_length", Required, "head_dim"),
		{Key: "attention.value_length", HF: []string{"head_dim"}, Kind: tensor.KindUint32, Need: Required,
			Inverse: func(Config, tensor.Value, Meta) {}},
		{Key: FileType},
	}, extra...)
}

// gemmaTensors is the llama schema with every norm weight + 1 and no head
// (Gemma ties it; the converter skips an lm_head.weight).
func gemmaTensors(extra ...Tensor) []Tensor {
	var out []Tensor
	for _, t := range decoderTensors(false, LayoutNormPlusOne) {
		if t.GGUF != "output" {
			out = append(out, t)
		}
	}
	return append(out, extra...)
}

var gemmaHead = Drop{Name: "lm_head.weight", Reason: "Gemma ties the head to the token embedding; llama.cpp's converter skips a stored lm_head"}

// Gemma is Gemma 1: the llama shape with embeddings scaled by √d_model,
// norm weights applied as (1 + w) (stored + 1 in GGUF), GeGLU with tanh
// GELU, a tied head, and head_dim stated.
var Gemma = register(&Family{
	Name:       "gemma",
	HFClasses:  []string{"GemmaForCausalLM"},
	ModelTypes: []string{"gemma"},
	HFClass:    "GemmaForCausalLM", ModelType: "gemma",
	Params:  gemmaParams(noRopeScaling()),
	Tensors: gemmaTensors(),
	Drops:   []Drop{rotaryBuffer, gemmaHead},
	HFConst: map[string]any{"hidden_act": "gelu_pytorch_tanh", "hidden_activation": "gelu_pytorch_tanh", "tie_word_embeddings": true},
	// The converter also sets CodeGemma's prefix/suffix/middle/fsep ids, but
	// gguf-py (c392e509) has no keys for them, so only eot is written.
	Vocab:    VocabRules{AddSpacePrefix: &no, SpecialIDs: []SpecialID{{"eot", 107}}},
	BiasFlag: "attention_bias",
	Graph:    Graph{Norm: RMSNorm, FFN: Gated, Activation: "gelu_tanh", EmbedScale: true, NeoxRopeGGUF: true},
})

// Gemma2 adds to Gemma: attention and final-logit soft-capping, a sliding
// window on every other layer (the even ones), and norms after attention
// and after the feed-forward as well as before.
var Gemma2 = register(&Family{
	Name:       "gemma2",
	HFClasses:  []string{"Gemma2ForCausalLM"},
	ModelTypes: []string{"gemma2"},
	HFClass:    "Gemma2ForCausalLM", ModelType: "gemma2",
	Params: gemma2KeyLength(gemmaParams(
		f32p("attn_logit_softcapping", Required, "attn_logit_softcapping"),
		f32p("final_logit_softcapping", Required, "final_logit_softcapping"),
		u32("attention.sliding_window", Required, "sliding_window"),
		noRopeScaling(),
	)),
	Tensors: gemma2Tensors(),
	Drops:   []Drop{rotaryBuffer, gemmaHead},
	HFConst: map[string]any{"hidden_act": "gelu_pytorch_tanh", "hidden_activation": "gelu_pytorch_tanh",
		"tie_word_embeddings": true},
	Vocab:    VocabRules{AddSpacePrefix: &no},
	BiasFlag: "attention_bias",
	Graph:    Graph{Norm: RMSNorm, FFN: Gated, Activation: "gelu_tanh", EmbedScale: true, NeoxRopeGGUF: true},
})

// gemma2KeyLength makes GGUF → HF state Gemma 2's attention scale, which
// the GGUF does not hold: llama.cpp scales queries by 1/√head_dim, or by
// 1/√(d_model/heads) for the 46-layer 27B, and transformers by
// query_pre_attn_scalar^-½ (224 when absent), so the value llama.cpp uses is
// written.
func gemma2KeyLength(params []Param) []Param {
	for i := range params {
		if params[i].Key == "attention.key_length" {
			params[i].Inverse = func(c Config, v tensor.Value, m Meta) {
				d, _ := v.Int()
				c["head_dim"] = d
				c["query_pre_attn_scalar"] = d
				if n, _ := m.Int("block_count"); n == 46 {
					h, _ := m.Int("embedding_length")
					heads, _ := m.Int("attention.head_count")
					if heads > 0 {
						c["query_pre_attn_scalar"] = h / heads
					}
				}
			}
		}
	}
	return params
}

// gemma2Tensors renames the llama schema's norms: HF's
// post_attention_layernorm is Gemma 2's norm after attention, and the
// pre-feed-forward norm has a name of its own.
func gemma2Tensors() []Tensor {
	var out []Tensor
	for _, t := range gemmaTensors() {
		if t.GGUF == "blk.{bid}.ffn_norm" {
			continue
		}
		out = append(out, t)
	}
	return append(out,
		Tensor{GGUF: "blk.{bid}.post_attention_norm", HF: []string{hfLayer + "post_attention_layernorm"}, Shape: []Dim{DimHidden}, Layout: LayoutNormPlusOne},
		Tensor{GGUF: "blk.{bid}.ffn_norm", HF: []string{hfLayer + "pre_feedforward_layernorm"}, Shape: []Dim{DimHidden}, Layout: LayoutNormPlusOne},
		Tensor{GGUF: "blk.{bid}.post_ffw_norm", HF: []string{hfLayer + "post_feedforward_layernorm"}, Shape: []Dim{DimHidden}, Layout: LayoutNormPlusOne},
	)
}

// Granite is the llama shape with four multipliers: embeddings, the
// residual branches, the attention scale and the logits (divided by). The
// converter ignores head_dim for it.
var Granite = register(&Family{
	Name:       "granite",
	HFClasses:  []string{"GraniteForCausalLM"},
	ModelTypes: []string{"granite"},
	HFClass:    "GraniteForCausalLM", ModelType: "granite",
	Params: withParams(graniteBase(),
		u32("vocab_size", Required, "vocab_size"), ropeDimension(),
		ropeScalingLinear()[0], ropeScalingLinear()[1],
		f32p("attention.scale", Optional, "attention_multiplier"),
		f32p("embedding_scale", Optional, "embedding_multiplier"),
		f32p("residual_scale", Optional, "residual_multiplier"),
		f32p("logit_scale", Optional, "logits_scaling"),
	),
	Tensors:  decoderTensors(true, LayoutSame),
	Drops:    []Drop{rotaryBuffer},
	HFConst:  map[string]any{"hidden_act": "silu", "mlp_bias": false},
	BiasFlag: "attention_bias",
	Graph:    Graph{Norm: RMSNorm, FFN: Gated, Activation: "silu"},
})

// graniteBase is baseParams without head_dim (GraniteModel pops it).
func graniteBase() []Param {
	var out []Param
	for _, p := range baseParams() {
		if p.Key != "attention.key_length" && p.Key != "attention.value_length" {
			out = append(out, p)
		}
	}
	return out
}

// Olmo is OLMo (1): the llama shape with LayerNorms that have no weights
// at all (so no norm tensors), optional clipping of Q/K/V, and the Q/K
// weights permuted as LLaMA's.
var Olmo = register(&Family{
	Name:       "olmo",
	HFClasses:  []string{"OlmoForCausalLM", "OLMoForCausalLM"},
	ModelTypes: []string{"olmo"},
	HFClass:    "OlmoForCausalLM", ModelType: "olmo",
	Params: withParams(baseParams(),
		Param{Key: "attention.layer_norm_epsilon", Kind: tensor.KindFloat32,
			Derive:  func(Config) (tensor.Value, bool, error) { return tensor.Float32(1e-5), true, nil },
			Inverse: func(Config, tensor.Value, Meta) {}},
		f32p("attention.clamp_kqv", Optional, "clip_qkv"),
		noRopeScaling(),
	),
	Tensors:  olmoTensors(),
	Drops:    []Drop{rotaryBuffer},
	HFConst:  map[string]any{"hidden_act": "silu"},
	BiasFlag: "attention_bias",
	Graph:    Graph{Norm: LayerNorm, FFN: Gated, Activation: "silu"},
})

// olmoTensors is the llama schema without norm tensors.
func olmoTensors() []Tensor {
	var out []Tensor
	for _, t := range decoderTensors(true, LayoutSame) {
		switch t.GGUF {
		case "output_norm", "blk.{bid}.attn_norm", "blk.{bid}.ffn_norm":
			continue
		}
		out = append(out, t)
	}
	return out
}

// Starcoder2 is the llama shape with LayerNorms (weight and bias), biases
// on every projection, a plain GELU MLP (c_fc → ffn_up, c_proj →
// ffn_down) and a tied head by default.
var Starcoder2 = register(&Family{
	Name:       "starcoder2",
	HFClasses:  []string{"Starcoder2ForCausalLM"},
	ModelTypes: []string{"starcoder2"},
	HFClass:    "Starcoder2ForCausalLM", ModelType: "starcoder2",
	Params:   withOut(withParams(baseParams(), noRopeScaling()), "attention.layer_norm_epsilon", "norm_epsilon"),
	Tensors:  starcoder2Tensors(),
	Drops:    []Drop{rotaryBuffer},
	HFConst:  map[string]any{"hidden_act": "gelu_pytorch_tanh"},
	BiasFlag: "use_bias",
	Graph:    Graph{Norm: LayerNorm, FFN: Plain, Activation: "gelu_tanh", NeoxRopeGGUF: true},
})

func starcoder2Tensors() []Tensor {
	var out []Tensor
	for _, t := range decoderTensors(false, LayoutSame) {
		switch t.GGUF {
		case "blk.{bid}.ffn_gate":
			continue
		case "blk.{bid}.ffn_up":
			t.HF = []string{hfLayer + "mlp.c_fc"}
		case "blk.{bid}.ffn_down":
			t.HF = []string{hfLayer + "mlp.c_proj"}
		}
		out = append(out, t)
	}
	return out
}

// partialRotary is rope.dimension_count as int(factor · hidden/heads),
// factor read from keys (rotary_pct, partial_rotary_factor, rope_pct);
// GGUF → HF writes the factor back under keys[0].
func partialRotary(keys ...string) Param {
	return Param{Key: "rope.dimension_count", Kind: tensor.KindUint32, Need: Required,
		Derive: func(c Config) (tensor.Value, bool, error) {
			f, ok := c.Float(keys...)
			if !ok {
				return tensor.Value{}, false, errUnsupported("config.json: no %v", keys)
			}
			h, _ := c.Int("hidden_size")
			n, _ := c.Int("num_attention_heads")
			if n <= 0 {
				return tensor.Value{}, false, errUnsupported("config.json: no num_attention_heads")
			}
			return tensor.Uint32(uint32(f * float64(h/n))), true, nil
		},
		Inverse: func(c Config, v tensor.Value, m Meta) {
			rd, _ := v.Int()
			h, _ := m.Int("embedding_length")
			n, _ := m.Int("attention.head_count")
			if n > 0 && h/n > 0 {
				c[keys[0]] = jsonValue(tensor.Float64(float64(rd) / float64(h/n)))
			}
		}}
}

// parallelResidual is use_parallel_residual (default true).
func parallelResidual() Param {
	return Param{Key: "use_parallel_residual", HF: []string{"use_parallel_residual"}, Kind: tensor.KindBool,
		Derive: func(c Config) (tensor.Value, bool, error) {
			b, ok := c.Bool("use_parallel_residual")
			if !ok {
				b = true
			}
			return tensor.Bool(b), true, nil
		}}
}

// Phi3 is Phi-3 (mini, medium): the llama shape with Q, K and V fused in
// one projection (attn_qkv: rows Q, then K, then V) and the gate and up
// projections fused (ffn_up: rows gate, then up), a sliding-window size
// stated (0 when none), and no Q/K permutation.
var Phi3 = register(&Family{
	Name:       "phi3",
	HFClasses:  []string{"Phi3ForCausalLM"},
	ModelTypes: []string{"phi3"},
	HFClass:    "Phi3ForCausalLM", ModelType: "phi3",
	Params: []Param{
		{Key: "context_length", HF: []string{"n_positions", "max_position_embeddings"}, Out: "max_position_embeddings",
			Kind: tensor.KindUint32, Need: Required},
		{Key: "rope.scaling.original_context_length", HF: []string{"original_max_position_embeddings"}, Kind: tensor.KindUint32, Need: Required},
		u32("embedding_length", Required, "hidden_size", "n_embd"),
		u32("feed_forward_length", Required, "intermediate_size"),
		{Key: "block_count", HF: []string{"num_hidden_layers", "n_layer"}, Kind: tensor.KindUint32, Need: Required},
		u32("attention.head_count", Required, "num_attention_heads", "n_head"),
		u32("attention.head_count_kv", Required, "num_key_value_heads", "n_head_kv"),
		f32p("attention.layer_norm_rms_epsilon", Required, "rms_norm_eps"),
		{Key: "rope.dimension_count", Kind: tensor.KindUint32, Need: Required,
			Derive: func(c Config) (tensor.Value, bool, error) {
				h, _ := c.Int("hidden_size", "n_embd")
				n, _ := c.Int("num_attention_heads", "n_head")
				if n <= 0 {
					return tensor.Value{}, false, errUnsupported("config.json: no num_attention_heads")
				}
				return tensor.Uint32(uint32(h / n)), true, nil
			}, Inverse: func(Config, tensor.Value, Meta) {}},
		f32p("rope.freq_base", Required, "rope_theta"),
		{Key: FileType},
		{Key: "attention.sliding_window", HF: []string{"sliding_window"}, Kind: tensor.KindUint32,
			Derive: func(c Config) (tensor.Value, bool, error) {
				w, _ := c.Int("sliding_window")
				return tensor.Uint32(uint32(w)), true, nil
			}},
		noRopeScaling(),
	},
	Tensors: phi3Tensors(),
	Vocab:   VocabRules{NoAddSpacePrefix: true},
	Drops:   []Drop{rotaryBuffer},
	HFConst: map[string]any{"hidden_act": "silu"},
	Graph:   Graph{Norm: RMSNorm, FFN: Gated, FusedGateUp: true, Activation: "silu", NeoxRopeGGUF: true},
})

func phi3Tensors() []Tensor {
	var out []Tensor
	for _, t := range decoderTensors(false, LayoutSame) {
		switch t.GGUF {
		case "blk.{bid}.attn_q":
			out = append(out, Tensor{GGUF: "blk.{bid}.attn_qkv", HF: []string{hfLayer + "self_attn.qkv_proj"}, Shape: []Dim{DimQKV, DimHidden}})
			continue
		case "blk.{bid}.attn_k", "blk.{bid}.attn_v", "blk.{bid}.ffn_gate":
			continue
		case "blk.{bid}.ffn_up":
			t.HF = []string{hfLayer + "mlp.gate_up_proj"}
			t.Shape = []Dim{DimFFN2, DimHidden}
		}
		out = append(out, t)
	}
	return out
}

// GPTNeoX is GPT-NeoX and Pythia: LayerNorms with biases, a fused QKV
// projection whose rows Hugging Face interleaves per head ([head][q,k,v])
// and the converter regroups ([q,k,v][head]), partial rotary positions
// (rotary_pct), a plain GELU MLP, parallel attention and MLP residuals.
var GPTNeoX = register(&Family{
	Name:       "gptneox",
	HFClasses:  []string{"GPTNeoXForCausalLM"},
	ModelTypes: []string{"gpt_neox"},
	HFClass:    "GPTNeoXForCausalLM", ModelType: "gpt_neox",
	Params: []Param{
		u32("context_length", Required, "max_position_embeddings"),
		u32("embedding_length", Required, "hidden_size"),
		u32("block_count", Required, "num_hidden_layers"),
		u32("feed_forward_length", Required, "intermediate_size"),
		partialRotary("rotary_pct"),
		u32("attention.head_count", Required, "num_attention_heads"),
		parallelResidual(),
		f32p("attention.layer_norm_epsilon", Required, "layer_norm_eps"),
		noRopeScaling(),
	},
	Tensors: []Tensor{
		{GGUF: "token_embd", HF: []string{"gpt_neox.embed_in"}, Shape: []Dim{DimVocab, DimHidden}},
		{GGUF: "output_norm", HF: []string{"gpt_neox.final_layer_norm"}, Shape: []Dim{DimHidden}},
		{GGUF: "output", HF: []string{"embed_out"}, Shape: []Dim{DimVocab, DimHidden}},
		{GGUF: "blk.{bid}.attn_norm", HF: []string{"gpt_neox.layers.{bid}.input_layernorm"}, Shape: []Dim{DimHidden}},
		{GGUF: "blk.{bid}.attn_qkv", HF: []string{"gpt_neox.layers.{bid}.attention.query_key_value"}, Shape: []Dim{DimQKV, DimHidden}, Layout: LayoutQKVGroups},
		{GGUF: "blk.{bid}.attn_output", HF: []string{"gpt_neox.layers.{bid}.attention.dense"}, Shape: []Dim{DimHidden, DimQ}},
		{GGUF: "blk.{bid}.ffn_norm", HF: []string{"gpt_neox.layers.{bid}.post_attention_layernorm"}, Shape: []Dim{DimHidden}},
		{GGUF: "blk.{bid}.ffn_up", HF: []string{"gpt_neox.layers.{bid}.mlp.dense_h_to_4h"}, Shape: []Dim{DimFFN, DimHidden}},
		{GGUF: "blk.{bid}.ffn_down", HF: []string{"gpt_neox.layers.{bid}.mlp.dense_4h_to_h"}, Shape: []Dim{DimHidden, DimFFN}},
	},
	Drops: []Drop{rotaryBuffer,
		{Suffix: ".attention.bias", Reason: "causal-mask buffer, not a weight"},
		{Suffix: ".attention.masked_bias", Reason: "causal-mask buffer, not a weight"}},
	HFConst:  map[string]any{"hidden_act": "gelu", "tie_word_embeddings": false},
	BiasFlag: "attention_bias",
	Graph:    Graph{Norm: LayerNorm, FFN: Plain, Activation: "gelu", Parallel: true, NeoxRopeGGUF: true},
})

// StableLM is StableLM (2, Zephyr, Epoch): the llama shape with LayerNorms
// (biases), partial rotary positions, optional Q/K/V biases and an
// optional parallel residual, in which the block has no second norm.
var StableLM = register(&Family{
	Name:       "stablelm",
	HFClasses:  []string{"StableLmForCausalLM", "StableLMEpochForCausalLM"},
	ModelTypes: []string{"stablelm", "stablelm_epoch"},
	HFClass:    "StableLmForCausalLM", ModelType: "stablelm",
	Params: []Param{
		u32("context_length", Required, "max_position_embeddings"),
		u32("embedding_length", Required, "hidden_size"),
		u32("block_count", Required, "num_hidden_layers"),
		u32("feed_forward_length", Required, "intermediate_size"),
		partialRotary("partial_rotary_factor", "rope_pct"),
		u32("attention.head_count", Required, "num_attention_heads"),
		u32("attention.head_count_kv", Required, "num_key_value_heads"),
		parallelResidual(),
		f32p("attention.layer_norm_epsilon", Required, "layer_norm_eps", "norm_eps"),
		{Key: FileType},
		noRopeScaling(),
	},
	Tensors:  stablelmTensors(),
	Drops:    []Drop{rotaryBuffer},
	HFConst:  map[string]any{"hidden_act": "silu"},
	BiasFlag: "use_qkv_bias",
	Graph:    Graph{Norm: LayerNorm, FFN: Gated, Activation: "silu", NeoxRopeGGUF: true},
})

func stablelmTensors() []Tensor {
	out := decoderTensors(false, LayoutSame)
	for i := range out {
		if out[i].GGUF == "blk.{bid}.ffn_norm" {
			out[i].Optional = true // absent with use_parallel_residual
		}
	}
	return out
}

// Falcon is Falcon (7B's multi-query form, and the "new decoder
// architecture" of 40B/180B with grouped key/value heads and two norms per
// block): a fused QKV projection in groups ([kv group][queries, k, v],
// regrouped by the converter), LayerNorms with biases, a GELU MLP of
// 4·d_model, and attention and MLP added in parallel. The converter writes a
// fixed context of 2048 and the "jploski" layout name.
var Falcon = register(&Family{
	Name:       "falcon",
	HFClasses:  []string{"FalconForCausalLM", "RWForCausalLM"},
	ModelTypes: []string{"falcon", "RefinedWeb", "RefinedWebModel"},
	HFClass:    "FalconForCausalLM", ModelType: "falcon",
	Params: []Param{
		{Key: "context_length", Kind: tensor.KindUint32,
			Derive:  func(Config) (tensor.Value, bool, error) { return tensor.Uint32(2048), true, nil },
			Inverse: func(c Config, v tensor.Value, _ Meta) { c["max_position_embeddings"] = jsonValue(v) }},
		{Key: "tensor_data_layout", Kind: tensor.KindString,
			Derive:  func(Config) (tensor.Value, bool, error) { return tensor.String("jploski"), true, nil },
			Inverse: func(Config, tensor.Value, Meta) {}},
		u32("embedding_length", Required, "hidden_size"),
		{Key: "feed_forward_length", Kind: tensor.KindUint32,
			Derive: func(c Config) (tensor.Value, bool, error) {
				h, ok := c.Int("hidden_size")
				if !ok {
					return tensor.Value{}, false, errUnsupported("config.json: no hidden_size")
				}
				return tensor.Uint32(uint32(4 * h)), true, nil
			},
			Inverse: func(c Config, v tensor.Value, _ Meta) { c["ffn_hidden_size"] = jsonValue(v) }},
		{Key: "block_count", HF: []string{"num_hidden_layers", "n_layer"}, Kind: tensor.KindUint32, Need: Required},
		u32("attention.head_count", Required, "num_attention_heads", "n_head"),
		{Key: "attention.head_count_kv", HF: []string{"num_kv_heads", "n_head_kv"}, Kind: tensor.KindUint32, Need: Default, Default: 1},
		f32p("attention.layer_norm_epsilon", Required, "layer_norm_epsilon"),
		{Key: FileType},
		noRopeScaling(),
		{Key: "alibi", Kind: tensor.KindBool, Derive: func(c Config) (tensor.Value, bool, error) {
			if b, _ := c.Bool("alibi"); b {
				return tensor.Value{}, false, errUnsupported("Falcon with alibi (llama.cpp's falcon graph uses rotary positions)")
			}
			return tensor.Value{}, false, nil
		}},
	},
	KVHeads:        []string{"num_kv_heads", "n_head_kv"},
	KVHeadsDefault: 1,
	HFKVHeads: func(c Config) (int64, bool) {
		// transformers: one key/value head for the old multi-query form,
		// whatever num_kv_heads says.
		newArch, _ := c.Bool("new_decoder_architecture")
		mq, ok := c.Bool("multi_query")
		if !newArch && (mq || !ok) {
			return 1, true
		}
		return 0, false
	},
	Tensors: []Tensor{
		{GGUF: "token_embd", HF: []string{"transformer.word_embeddings"}, Shape: []Dim{DimVocab, DimHidden}},
		{GGUF: "output_norm", HF: []string{"transformer.ln_f"}, Shape: []Dim{DimHidden}},
		{GGUF: "output", HF: []string{"lm_head"}, Shape: []Dim{DimVocab, DimHidden}, Optional: true},
		// llama.cpp's names for the new architecture's two norms are the
		// other way round: attn_norm is ln_mlp (the feed-forward's) and
		// attn_norm_2 is ln_attn (attention's).
		{GGUF: "blk.{bid}.attn_norm", HF: []string{"transformer.h.{bid}.input_layernorm", "transformer.h.{bid}.ln_mlp"}, Shape: []Dim{DimHidden}},
		{GGUF: "blk.{bid}.attn_norm_2", HF: []string{"transformer.h.{bid}.ln_attn"}, Shape: []Dim{DimHidden}, Optional: true},
		{GGUF: "blk.{bid}.attn_qkv", HF: []string{"transformer.h.{bid}.self_attention.query_key_value"}, Shape: []Dim{DimQKV, DimHidden}, Layout: LayoutQKVGroups},
		{GGUF: "blk.{bid}.attn_output", HF: []string{"transformer.h.{bid}.self_attention.dense"}, Shape: []Dim{DimHidden, DimQ}},
		{GGUF: "blk.{bid}.ffn_up", HF: []string{"transformer.h.{bid}.mlp.dense_h_to_4h"}, Shape: []Dim{DimFFN, DimHidden}},
		{GGUF: "blk.{bid}.ffn_down", HF: []string{"transformer.h.{bid}.mlp.dense_4h_to_h"}, Shape: []Dim{DimHidden, DimFFN}},
	},
	Drops:    []Drop{rotaryBuffer},
	HFConst:  map[string]any{"activation": "gelu", "parallel_attn": true, "alibi": false},
	BiasFlag: "bias",
	HFRename: falconHFNames,
	Graph:    Graph{Norm: LayerNorm, FFN: Plain, Activation: "gelu", Parallel: true, NeoxRopeGGUF: true},
})

// falconHFNames names a GGUF Falcon in transformers' terms: with a second
// norm it is the new decoder architecture (ln_attn, ln_mlp), else the
// multi-query one (input_layernorm).
func falconHFNames(c Config, gguf func(name string) bool) map[string]string {
	if !gguf("blk.0.attn_norm_2.weight") {
		c["multi_query"] = true
		c["new_decoder_architecture"] = false
		return nil
	}
	c["multi_query"] = false
	c["new_decoder_architecture"] = true
	c["num_ln_in_parallel_attn"] = 2
	return map[string]string{"blk.{bid}.attn_norm": "transformer.h.{bid}.ln_mlp"}
}

// Olmo2 is OLMo 2: blocks without pre-norms, RMSNorms over the whole Q and
// K projections, and norms after attention and after the MLP; otherwise the
// llama shape, with no Q/K permutation and the base hyper-parameters.
var Olmo2 = register(&Family{
	Name:       "olmo2",
	HFClasses:  []string{"Olmo2ForCausalLM"},
	ModelTypes: []string{"olmo2"},
	HFClass:    "Olmo2ForCausalLM", ModelType: "olmo2",
	Params:   withParams(baseParams(), noRopeScaling()),
	Tensors:  olmo2Tensors(),
	Drops:    []Drop{rotaryBuffer},
	HFConst:  map[string]any{"hidden_act": "silu"},
	BiasFlag: "attention_bias",
	Graph:    Graph{Norm: RMSNorm, FFN: Gated, Activation: "silu", NoPreNorm: true, NeoxRopeGGUF: true},
})

func olmo2Tensors() []Tensor {
	var out []Tensor
	for _, t := range decoderTensors(false, LayoutSame) {
		switch t.GGUF {
		case "blk.{bid}.attn_norm", "blk.{bid}.ffn_norm":
			continue
		}
		out = append(out, t)
	}
	return append(out,
		Tensor{GGUF: "blk.{bid}.attn_q_norm", HF: []string{hfLayer + "self_attn.q_norm"}, Shape: []Dim{DimQ}},
		Tensor{GGUF: "blk.{bid}.attn_k_norm", HF: []string{hfLayer + "self_attn.k_norm"}, Shape: []Dim{DimKV}},
		Tensor{GGUF: "blk.{bid}.post_attention_norm", HF: []string{hfLayer + "post_attention_layernorm"}, Shape: []Dim{DimHidden}},
		Tensor{GGUF: "blk.{bid}.post_ffw_norm", HF: []string{hfLayer + "post_feedforward_layernorm"}, Shape: []Dim{DimHidden}},
	)
}
