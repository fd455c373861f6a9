package arch

import (
	"fmt"

	"github.com/tfconv/tfconv/tensor"
)

// FalconH1 is TII's Falcon-H1 (FalconH1ForCausalLM; llama.cpp's
// "falcon-h1"): every layer runs grouped-query attention (NEOX rotary) and
// a Mamba-2 mixer side by side on the same RMS-normed input and adds both
// outputs to the residual stream, then a SwiGLU feed-forward behind its own
// pre-norm. Its μP multipliers (embedding, attention input/key/output,
// Mamba-2 input/output and the five segments of in_proj, MLP gate/down, LM
// head) scale activations in transformers; the converter folds each into
// the weight it follows (Tensor.Scales), so the GGUF keeps none of them and
// GGUF → HF writes them as 1.
var FalconH1 = register(&Family{
	Name:       "falcon-h1",
	HFClasses:  []string{"FalconH1ForCausalLM"},
	ModelTypes: []string{"falcon_h1"},
	HFClass:    "FalconH1ForCausalLM", ModelType: "falcon_h1",
	Params: []Param{
		u32("context_length", Default, "max_position_embeddings"),
		u32("embedding_length", Required, "hidden_size", "d_model", "dim"),
		u32("feed_forward_length", Required, "intermediate_size"),
		u32("attention.head_count", Required, "num_attention_heads"),
		{Key: "block_count", HF: []string{"num_hidden_layers"}, Kind: tensor.KindUint32, Need: Required},
		ssmParam("ssm.conv_kernel", Default, 4, "mamba_d_conv", "conv_kernel", "d_conv"),
		ssmParam("ssm.inner_size", Required, 0, "mamba_d_ssm", "mamba_d_ssm"),
		ssmParam("ssm.state_size", Default, 128, "mamba_d_state", "state_size", "d_state"),
		falconH1Heads(),
		ssmParam("ssm.group_count", Required, 0, "mamba_n_groups", "n_groups"),
		{Key: "attention.layer_norm_rms_epsilon", HF: []string{"layer_norm_epsilon", "rms_norm_eps", "mamba_layer_norm_epsilon", "mamba_rms_norm_eps"},
			Out: "rms_norm_eps", Kind: tensor.KindFloat32, Need: Default, Default: 1e-5},
		{Key: FileType},
		u32("vocab_size", Required, "vocab_size"),
		u32("attention.head_count_kv", Required, "num_key_value_heads"),
		u32("attention.key_length", Required, "head_dim"),
		{Key: "attention.value_length", HF: []string{"head_dim"}, Kind: tensor.KindUint32, Need: Required,
			Inverse: func(Config, tensor.Value, Meta) {}},
		f32p("rope.freq_base", Required, "rope_theta"),
		falconH1Refusals(),
	},
	Tensors:       falconH1Tensors(),
	SuffixAliases: mamba2DTBias,
	Drops:         []Drop{rotaryBuffer},
	// The multipliers are in the weights (Tensor.Scales).
	HFConst: map[string]any{"hidden_act": "silu", "attention_in_multiplier": 1, "attention_out_multiplier": 1,
		"key_multiplier": 1, "ssm_in_multiplier": 1, "ssm_out_multiplier": 1, "embedding_multiplier": 1,
		"lm_head_multiplier": 1, "mlp_multipliers": []any{1, 1}, "ssm_multipliers": []any{1, 1, 1, 1, 1},
		"mamba_norm_before_gate": false, "mamba_proj_bias": false, "projectors_bias": false,
		"attention_bias": false, "mlp_bias": false, "rope_scaling": nil},
	HFRename: mamba2Flags("mamba_rms_norm", "mamba_conv_bias"),
	Mixers:   []Mixer{Mamba2},
	Graph:    Graph{Norm: RMSNorm, FFN: Gated, Activation: "silu", NeoxRopeGGUF: true},
	Pattern: func(c Config, n int) ([]Layer, error) {
		out := make([]Layer, n)
		for i := range out {
			out[i] = Layer{Mixer: FullAttention, Rope: true, Beside: Mamba2, HasBeside: true}
		}
		return out, nil
	},
})

// falconH1Heads is ssm.time_step_rank, the Mamba-2 head count: the
// converter divides mamba_d_ssm by the head width (mamba_d_head, else
// head_dim, else 64).
func falconH1Heads() Param {
	return Param{Key: "ssm.time_step_rank", Kind: tensor.KindUint32, Need: Required,
		Derive: func(c Config) (tensor.Value, bool, error) {
			inner, ok := c.Int("mamba_d_ssm", "mamba_mamba_d_ssm")
			if !ok {
				return tensor.Value{}, false, errUnsupported("config.json: no mamba_d_ssm")
			}
			d, ok := c.Int("mamba_d_head", "head_dim", "mamba_mamba_d_head", "mamba_head_dim")
			if !ok {
				d = 64
			}
			if d <= 0 || inner <= 0 || inner%d != 0 || inner/d > 1<<20 {
				return tensor.Value{}, false, errUnsupported("config.json: mamba_d_ssm %d is not a multiple of mamba_d_head %d", inner, d)
			}
			return tensor.Uint32(uint32(inner / d)), true, nil
		},
		Inverse: func(c Config, v tensor.Value, m Meta) {
			h, _ := v.Int()
			inner, _ := m.Int("ssm.inner_size")
			c["mamba_n_heads"] = h
			if h > 0 {
				c["mamba_d_head"] = inner / h
			}
		}}
}

// falconH1Refusals writes no key: it refuses what the falcon-h1 GGUF
// cannot keep and the converter silently drops (or fails on).
func falconH1Refusals() Param {
	return Param{Key: "falcon_h1.config", Kind: tensor.KindBool,
		Derive: func(c Config) (tensor.Value, bool, error) {
			if rms, _ := c.Bool("mamba_rms_norm"); rms {
				if before, ok := c.Bool("mamba_norm_before_gate"); !ok || before {
					return tensor.Value{}, false, errUnsupported("config.json: mamba_norm_before_gate true (or absent: the class's default): llama.cpp's Mamba-2 norms after the gate")
				}
			}
			for _, k := range []string{"mamba_proj_bias", "projectors_bias"} {
				if b, _ := c.Bool(k); b {
					return tensor.Value{}, false, errUnsupported("config.json: %s true: the falcon-h1 GGUF has no Mamba-2 projection biases", k)
				}
			}
			if act, ok := c.Str("hidden_act"); ok && act != "silu" {
				return tensor.Value{}, false, errUnsupported("config.json: hidden_act %q: the converter takes only silu", act)
			}
			if rs, ok := c.Map("rope_scaling"); ok {
				return tensor.Value{}, false, errUnsupported("config.json: rope_scaling %v: the falcon-h1 GGUF keeps none", map[string]any(rs))
			}
			if tied, _ := c.Bool("tie_word_embeddings"); tied {
				e, _ := c.Float("embedding_multiplier")
				h, _ := c.Float("lm_head_multiplier")
				if e != h {
					return tensor.Value{}, false, errUnsupported("config.json: tied embeddings with embedding_multiplier %v ≠ lm_head_multiplier %v: llama.cpp's head would be the embedding scaled by the first", e, h)
				}
			}
			return tensor.Value{}, false, nil
		},
		Inverse: func(Config, tensor.Value, Meta) {}}
}

// mamba2Flags sets, on GGUF → HF, the config.json flags of a Mamba-2
// mixer's optional parts from the tensors present: its gated norm (norm)
// and its convolution's bias (convBias).
func mamba2Flags(norm, convBias string) func(c Config, has func(string) bool) map[string]string {
	return func(c Config, has func(string) bool) map[string]string {
		n, b := false, false
		for i := 0; i < 1<<16 && (has(fmt.Sprintf("blk.%d.attn_norm.weight", i)) || i == 0); i++ {
			n = n || has(fmt.Sprintf("blk.%d.ssm_norm.weight", i))
			b = b || has(fmt.Sprintf("blk.%d.ssm_conv1d.bias", i))
		}
		c[norm], c[convBias] = n, b
		return nil
	}
}

// falconScale is one multiplier of config.json applied to a whole weight.
func falconScale(keys ...string) func(c Config) ([]RowScale, error) {
	return func(c Config) ([]RowScale, error) {
		out := make([]RowScale, len(keys))
		for i, k := range keys {
			f, ok := c.Float(k)
			if !ok {
				return nil, errUnsupported("config.json: no %s", k)
			}
			out[i] = RowScale{Factor: float32(f)}
		}
		return out, nil
	}
}

// falconListScale is entry i of config.json's list key applied to a whole
// weight (mlp_multipliers).
func falconListScale(key string, i int) func(c Config) ([]RowScale, error) {
	return func(c Config) ([]RowScale, error) {
		l, err := floats(c, key, i+1)
		if err != nil {
			return nil, err
		}
		return []RowScale{{Factor: float32(l[i])}}, nil
	}
}

// floats reads config.json's list of at least n numbers at key.
func floats(c Config, key string, n int) ([]float64, error) {
	list, ok := c[key].([]any)
	if !ok || len(list) < n {
		return nil, errUnsupported("config.json: %s is %v, not a list of %d numbers", key, c[key], n)
	}
	out := make([]float64, len(list))
	for i, v := range list {
		f, ok := Config{"v": v}.Float("v")
		if !ok {
			return nil, errUnsupported("config.json: %s[%d] is %v, not a number", key, i, v)
		}
		out[i] = f
	}
	return out, nil
}

// falconInProj is Mamba-2's in_proj scaled by ssm_in_multiplier, then its
// five row segments (z and x of mamba_d_ssm rows, B and C of
// mamba_n_groups·mamba_d_state, dt) by ssm_multipliers.
func falconInProj(c Config) ([]RowScale, error) {
	in, ok := c.Float("ssm_in_multiplier")
	if !ok {
		return nil, errUnsupported("config.json: no ssm_in_multiplier")
	}
	m, err := floats(c, "ssm_multipliers", 5)
	if err != nil {
		return nil, err
	}
	inner, ok1 := c.Int("mamba_d_ssm")
	g, ok2 := c.Int("mamba_n_groups")
	st, ok3 := c.Int("mamba_d_state")
	if !ok1 || !ok2 || !ok3 || inner <= 0 || g <= 0 || st <= 0 || g > 1<<20 || st > 1<<20 {
		return nil, errUnsupported("config.json: mamba_d_ssm, mamba_n_groups and mamba_d_state are not all stated")
	}
	gs := g * st
	return []RowScale{{Factor: float32(in)},
		{From: 0, To: inner, Factor: float32(m[0])},
		{From: inner, To: 2 * inner, Factor: float32(m[1])},
		{From: 2 * inner, To: 2*inner + gs, Factor: float32(m[2])},
		{From: 2*inner + gs, To: 2*inner + 2*gs, Factor: float32(m[3])},
		{From: 2*inner + 2*gs, Factor: float32(m[4])}}, nil
}

// falconH1Tensors is the schema: the llama block's names under
// Falcon-H1's (mamba., feed_forward., pre_ff_layernorm, whose GGUF name the
// converter writes without ".weight"), each scaled as the converter scales
// it.
func falconH1Tensors() []Tensor {
	d := []Dim{DimHidden}
	out := []Tensor{
		{GGUF: "token_embd", HF: []string{"model.embed_tokens"}, Shape: []Dim{DimVocab, DimHidden}, Scales: falconScale("embedding_multiplier")},
		{GGUF: "output_norm", HF: []string{"model.final_layernorm"}, Shape: d},
		{GGUF: "output", HF: []string{"lm_head"}, Shape: []Dim{DimVocab, DimHidden}, Optional: true, Scales: falconScale("lm_head_multiplier")},
		{GGUF: "blk.{bid}.attn_norm", HF: []string{hfLayer + "input_layernorm"}, Shape: d},
		{GGUF: "blk.{bid}.attn_q", HF: []string{hfLayer + "self_attn.q_proj"}, Shape: []Dim{DimQ, DimHidden}, Scales: falconScale("attention_in_multiplier")},
		{GGUF: "blk.{bid}.attn_k", HF: []string{hfLayer + "self_attn.k_proj"}, Shape: []Dim{DimKV, DimHidden},
			Scales: falconScale("key_multiplier", "attention_in_multiplier")},
		{GGUF: "blk.{bid}.attn_v", HF: []string{hfLayer + "self_attn.v_proj"}, Shape: []Dim{DimKV, DimHidden}, Scales: falconScale("attention_in_multiplier")},
		{GGUF: "blk.{bid}.attn_output", HF: []string{hfLayer + "self_attn.o_proj"}, Shape: []Dim{DimHidden, DimQ}, Scales: falconScale("attention_out_multiplier")},
	}
	for _, t := range mamba2Tensors(hfLayer+"mamba.", false) {
		// every layer has the mixer; its gated norm only with mamba_rms_norm
		t.Optional = t.Optional || t.GGUF == "blk.{bid}.ssm_norm"
		switch t.GGUF {
		case "blk.{bid}.ssm_in":
			t.Scales = falconInProj
		case "blk.{bid}.ssm_out":
			t.Scales = falconScale("ssm_out_multiplier")
		}
		out = append(out, t)
	}
	return append(out,
		Tensor{GGUF: "blk.{bid}.ffn_norm", HF: []string{hfLayer + "pre_ff_layernorm"}, Shape: d, NoSuffixGGUF: true},
		Tensor{GGUF: "blk.{bid}.ffn_gate", HF: []string{hfLayer + "feed_forward.gate_proj"}, Shape: []Dim{DimFFN, DimHidden}, Scales: falconListScale("mlp_multipliers", 0)},
		Tensor{GGUF: "blk.{bid}.ffn_up", HF: []string{hfLayer + "feed_forward.up_proj"}, Shape: []Dim{DimFFN, DimHidden}},
		Tensor{GGUF: "blk.{bid}.ffn_down", HF: []string{hfLayer + "feed_forward.down_proj"}, Shape: []Dim{DimHidden, DimFFN}, Scales: falconListScale("mlp_multipliers", 1)})
}
