package arch

import (
	"strings"

	"github.com/tfconv/tfconv/tensor"
)

// NemotronH is NVIDIA's Nemotron-H (NemotronHForCausalLM, the publisher's
// own modeling code; llama.cpp's "nemotron_h"): a stack of single-purpose
// layers, each one RMS pre-norm and one residual, chosen by config.json's
// hybrid_override_pattern, one letter a layer: "M" a Mamba-2 mixer, "*"
// grouped-query attention without positions (no RoPE), "-" a feed-forward
// alone (up, squared ReLU, down; no gate). The GGUF states the pattern in
// its per-layer arrays: head_count_kv non-zero for "*", feed_forward_length
// non-zero for "-", both zero for "M". The converter permutes Q/K rows as
// LlamaModel does (with no rotation the dot products do not change).
var NemotronH = register(&Family{
	Name:       "nemotron_h",
	HFClasses:  []string{"NemotronHForCausalLM"},
	ModelTypes: []string{"nemotron_h"},
	HFClass:    "NemotronHForCausalLM", ModelType: "nemotron_h",
	Params: []Param{
		{Key: "block_count", HF: []string{"num_hidden_layers", "n_layer", "num_layers"}, Out: "num_hidden_layers",
			Kind: tensor.KindUint32, Need: Required},
		nemotronHContext(),
		u32("embedding_length", Required, "hidden_size"),
		nemotronHLayerArray("feed_forward_length", '-', "intermediate_size", "n_inner", "hidden_dim"),
		u32("attention.head_count", Required, "num_attention_heads"),
		nemotronHLayerArray("attention.head_count_kv", '*', "num_key_value_heads", "n_head_kv"),
		f32p("attention.layer_norm_rms_epsilon", Optional, "rms_norm_eps"),
		f32p("attention.layer_norm_epsilon", Optional, "layer_norm_epsilon", "layer_norm_eps", "norm_epsilon"),
		{Key: FileType},
		u32("vocab_size", Required, "vocab_size"),
		{Key: "rope.dimension_count", Kind: tensor.KindUint32, Need: Required,
			// GraniteModel pops head_dim before LlamaModel reads it.
			Derive: func(c Config) (tensor.Value, bool, error) {
				h, ok1 := c.Int("hidden_size")
				n, ok2 := c.Int("num_attention_heads")
				if !ok1 || !ok2 || n <= 0 || h < 0 || h/n > 1<<20 {
					return tensor.Value{}, false, errUnsupported("config.json: no hidden_size / num_attention_heads")
				}
				return tensor.Uint32(uint32(h / n)), true, nil
			},
			Inverse: func(Config, tensor.Value, Meta) {}},
		ssmParam("ssm.conv_kernel", Required, 0, "conv_kernel", "conv_kernel", "d_conv"),
		ssmParam("ssm.state_size", Required, 0, "ssm_state_size", "state_size", "d_state", "state_dim", "ssm_state_size"),
		ssmParam("ssm.group_count", Required, 0, "n_groups", "n_groups", "num_groups"),
		nemotronHInner(),
		ssmParam("ssm.time_step_rank", Required, 0, "mamba_num_heads", "n_heads", "num_heads"),
		{Key: "rope.scaling.finetuned", Kind: tensor.KindBool,
			// GraniteHybridModel: no rotation once there are Mamba layers.
			Derive:  func(Config) (tensor.Value, bool, error) { return tensor.Bool(false), true, nil },
			Inverse: func(Config, tensor.Value, Meta) {}},
		u32("attention.key_length", Required, "head_dim", "attention_head_dim"),
		{Key: "attention.value_length", HF: []string{"head_dim", "attention_head_dim"}, Kind: tensor.KindUint32, Need: Required,
			Inverse: func(Config, tensor.Value, Meta) {}},
		nemotronHRefusals(),
		timeStepLimit(),
	},
	Tensors:       nemotronHTensors(),
	SuffixAliases: mamba2DTBias,
	HFConst: map[string]any{"mamba_hidden_act": "silu", "mlp_hidden_act": "relu2", "use_bias": false,
		"attention_bias": false, "residual_in_fp32": false},
	HFRename: mamba2Flags("use_mamba_norm", "use_conv_bias"),
	Vocab:    VocabRules{AddBOS: &yes},
	Graph:    Graph{Norm: RMSNorm, FFN: Plain, Activation: "relu2"},
	Pattern:  nemotronHPattern,
	Mixers:   []Mixer{Mamba2, NoMixer},
})

var yes = true

// nemotronHPattern reads hybrid_override_pattern: "M" a Mamba2 layer, "*"
// full attention without RoPE, "-" a feed-forward alone (NoMixer); every
// layer but the "-" ones without feed-forward.
func nemotronHPattern(c Config, n int) ([]Layer, error) {
	p, err := nemotronHLetters(c, n)
	if err != nil {
		return nil, err
	}
	out := make([]Layer, n)
	for i, r := range p {
		switch r {
		case 'M':
			out[i] = Layer{Mixer: Mamba2, NoFFN: true}
		case '*':
			out[i] = Layer{Mixer: FullAttention, NoFFN: true}
		case '-':
			out[i] = Layer{Mixer: NoMixer}
		}
	}
	return out, nil
}

// nemotronHLetters is config.json's hybrid_override_pattern, checked: n
// letters of "M", "*" and "-" (n < 0: any length).
func nemotronHLetters(c Config, n int) (string, error) {
	p, ok := c.Str("hybrid_override_pattern")
	if !ok {
		return "", errUnsupported("config.json: no hybrid_override_pattern")
	}
	if n >= 0 && len(p) != n {
		return "", errUnsupported("config.json: hybrid_override_pattern %q has %d letters for %d layers", p, len(p), n)
	}
	if i := strings.IndexFunc(p, func(r rune) bool { return r != 'M' && r != '*' && r != '-' }); i >= 0 {
		return "", errUnsupported("config.json: hybrid_override_pattern %q: letter %d is not M, * or - (E, Nemotron-H's mixtures, is nemotron_h_moe: not supported yet)", p, i)
	}
	if !strings.Contains(p, "M") {
		return "", errUnsupported("config.json: hybrid_override_pattern %q has no Mamba layer: the converter writes such a model as granite", p)
	}
	return p, nil
}

// nemotronHContext is context_length: GraniteHybridModel writes 2^20 over
// max_position_embeddings once the model has Mamba layers (no RoPE bounds
// it).
func nemotronHContext() Param {
	return Param{Key: "context_length", Kind: tensor.KindUint32, Out: "max_position_embeddings",
		Derive: func(c Config) (tensor.Value, bool, error) {
			return tensor.Uint32(1 << 20), true, nil
		}}
}

// nemotronHLayerArray is a per-layer array the converter writes in place of
// the scalar key: config.json's value (keys) in the layers of letter, 0 in
// the others. GGUF → HF writes the value back (the largest), and the
// head_count_kv array rebuilds hybrid_override_pattern with
// feed_forward_length's.
func nemotronHLayerArray(key string, letter rune, keys ...string) Param {
	return Param{Key: key, HF: keys, Kind: tensor.KindArray, Need: Required,
		Derive: func(c Config) (tensor.Value, bool, error) {
			n, ok := c.Int("num_hidden_layers", "n_layer", "num_layers")
			if !ok || n < 0 || n > 1<<16 {
				n = -1 // block_count's own param says so
			}
			p, err := nemotronHLetters(c, int(n))
			if err != nil {
				return tensor.Value{}, false, err
			}
			v, ok := c.Int(keys...)
			if !ok || v < 0 || v > 1<<31-1 {
				return tensor.Value{}, false, errUnsupported("config.json: no %s", strings.Join(keys, " or "))
			}
			out := make([]int32, len(p))
			for i, r := range p {
				if r == letter {
					out[i] = int32(v)
				}
			}
			return tensor.ArrayOf(out), true, nil
		},
		Inverse: func(c Config, v tensor.Value, m Meta) {
			a, ok := v.Array()
			if !ok {
				return
			}
			var top int64
			for i := 0; i < a.Len(); i++ {
				x, _ := a.Index(i).Int()
				top = max(top, x)
			}
			c[keys[0]] = top
			if letter != '*' {
				return
			}
			ff, _ := m.Get("feed_forward_length")
			fa, _ := ff.Array()
			p := make([]byte, a.Len())
			for i := range p {
				kv, _ := a.Index(i).Int()
				var f int64
				if i < fa.Len() {
					f, _ = fa.Index(i).Int()
				}
				switch {
				case kv > 0:
					p[i] = '*'
				case f > 0:
					p[i] = '-'
				default:
					p[i] = 'M'
				}
			}
			c["hybrid_override_pattern"] = string(p)
		}}
}

// nemotronHInner is ssm.inner_size: Nemotron-H's converter multiplies the
// Mamba-2 head count by the head width (mamba_head_dim), not expand by
// hidden_size.
func nemotronHInner() Param {
	return Param{Key: "ssm.inner_size", Kind: tensor.KindUint32, Need: Required,
		Derive: func(c Config) (tensor.Value, bool, error) {
			h, ok1 := c.Int("num_heads", "mamba_num_heads")
			d, ok2 := c.Int("mamba_head_dim", "hidden_size", "d_model")
			if !ok1 || !ok2 || h <= 0 || d <= 0 || h > 1<<20 || d > 1<<20 {
				return tensor.Value{}, false, errUnsupported("config.json: no mamba_num_heads and mamba_head_dim")
			}
			if dh, ok := c.Int("d_head", "mamba_d_head"); !ok && h*d%64 != 0 || ok && (dh <= 0 || h*d%dh != 0) {
				return tensor.Value{}, false, errUnsupported("config.json: the Mamba-2 width %d is not a multiple of d_head (64 by default), which the converter asserts", h*d)
			}
			return tensor.Uint32(uint32(h * d)), true, nil
		},
		Inverse: func(c Config, v tensor.Value, m Meta) {
			inner, _ := v.Int()
			h, _ := m.Int("ssm.time_step_rank")
			if h > 0 {
				c["mamba_head_dim"] = inner / h
			}
		}}
}

// nemotronHRefusals writes no key: it refuses what llama.cpp's nemotron_h
// GGUF cannot keep.
func nemotronHRefusals() Param {
	return Param{Key: "nemotron_h.config", Kind: tensor.KindBool,
		Derive: func(c Config) (tensor.Value, bool, error) {
			if c.Has("num_experts_per_tok") {
				return tensor.Value{}, false, errUnsupported("config.json: num_experts_per_tok: a Nemotron-H mixture (nemotron_h_moe) is not supported yet")
			}
			if v, ok := c.Int("vocab_size"); ok && v%8 != 0 {
				return tensor.Value{}, false, errUnsupported("config.json: vocab_size %d: the converter pads Nemotron-H's vocabulary to a multiple of 8, which tfconv does not yet", v)
			}
			for k, want := range map[string]string{"mlp_hidden_act": "relu2", "mamba_hidden_act": "silu"} {
				if a, ok := c.Str(k); ok && a != want {
					return tensor.Value{}, false, errUnsupported("config.json: %s %q: llama.cpp's nemotron_h computes %s", k, a, want)
				}
			}
			for _, k := range []string{"use_bias", "mamba_proj_bias", "attention_bias"} {
				if b, _ := c.Bool(k); b {
					return tensor.Value{}, false, errUnsupported("config.json: %s true: llama.cpp's nemotron_h adds no such biases", k)
				}
			}
			return tensor.Value{}, false, nil
		},
		Inverse: func(Config, tensor.Value, Meta) {}}
}

// nemotronHTensors is the schema under backbone.: the embeddings, one norm
// per layer, a layer's mixer (Mamba-2, attention or feed-forward, each
// optional: the pattern says which a layer has), the final norm_f.
func nemotronHTensors() []Tensor {
	const l = "backbone.layers.{bid}."
	d := []Dim{DimHidden}
	out := []Tensor{
		{GGUF: "token_embd", HF: []string{"backbone.embeddings"}, Shape: []Dim{DimVocab, DimHidden}},
		{GGUF: "output_norm", HF: []string{"backbone.norm_f"}, Shape: d},
		{GGUF: "output", HF: []string{"lm_head"}, Shape: []Dim{DimVocab, DimHidden}, Optional: true},
		{GGUF: "blk.{bid}.attn_norm", HF: []string{l + "norm"}, Shape: d},
	}
	out = append(out, mamba2Tensors(l+"mixer.", true)...)
	return append(out,
		Tensor{GGUF: "blk.{bid}.attn_q", HF: []string{l + "mixer.q_proj"}, Shape: []Dim{DimQ, DimHidden}, Layout: LayoutPermuteQ, Optional: true},
		Tensor{GGUF: "blk.{bid}.attn_k", HF: []string{l + "mixer.k_proj"}, Shape: []Dim{DimKV, DimHidden}, Layout: LayoutPermuteK, Optional: true},
		Tensor{GGUF: "blk.{bid}.attn_v", HF: []string{l + "mixer.v_proj"}, Shape: []Dim{DimKV, DimHidden}, Optional: true},
		Tensor{GGUF: "blk.{bid}.attn_output", HF: []string{l + "mixer.o_proj"}, Shape: []Dim{DimHidden, DimQ}, Optional: true},
		Tensor{GGUF: "blk.{bid}.ffn_up", HF: []string{l + "mixer.up_proj"}, Shape: []Dim{DimFFN, DimHidden}, Optional: true},
		Tensor{GGUF: "blk.{bid}.ffn_down", HF: []string{l + "mixer.down_proj"}, Shape: []Dim{DimHidden, DimFFN}, Optional: true})
}
