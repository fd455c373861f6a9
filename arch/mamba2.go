package arch

import (
	"fmt"
	"math"

	"github.com/tfconv/tfconv/tensor"
)

// Mamba2Family is the state-space model of Mamba-2 (transformers'
// Mamba2ForCausalLM; the newer converter's Mamba2Model): every layer is an
// RMS pre-norm and a Mamba-2 mixer, without feed-forward. The converter
// writes the mixer's sizes under ssm.* (the head count as time_step_rank),
// A = −exp(A_log) as ssm_a, A and D as [heads][1] columns, the convolution
// squeezed to [channels][kernel] and the gated norm as [groups][inner/groups].
var Mamba2Family = register(&Family{
	Name:       "mamba2",
	HFClasses:  []string{"Mamba2ForCausalLM"},
	ModelTypes: []string{"mamba2"},
	HFClass:    "Mamba2ForCausalLM", ModelType: "mamba2",
	Params: []Param{
		constU32("context_length", 1<<20), // the converter's "arbitrary value"
		{Key: "embedding_length", HF: []string{"hidden_size", "d_model", "dim"}, Kind: tensor.KindUint32, Need: Required},
		constU32("feed_forward_length", 0),
		constU32("attention.head_count", 0),
		{Key: "block_count", HF: []string{"n_layers", "num_hidden_layers", "n_layer", "num_layers"}, Out: "num_hidden_layers",
			Kind: tensor.KindUint32, Need: Required},
		{Key: "ssm.conv_kernel", HF: []string{"conv_kernel", "d_conv"}, Kind: tensor.KindUint32, Need: Default, Default: 4},
		mamba2Inner(),
		{Key: "ssm.state_size", HF: []string{"state_size", "d_state"}, Kind: tensor.KindUint32, Need: Default, Default: 128},
		mamba2Heads(),
		{Key: "ssm.group_count", HF: []string{"n_groups"}, Kind: tensor.KindUint32, Need: Default, Default: 1},
		{Key: "attention.layer_norm_rms_epsilon", HF: []string{"layer_norm_epsilon", "rms_norm_eps"}, Kind: tensor.KindFloat32,
			Need: Default, Default: 1e-5},
		timeStepLimit(),
		{Key: FileType},
	},
	Tensors: append([]Tensor{
		{GGUF: "token_embd", HF: []string{"backbone.embeddings", "backbone.embedding"}, Shape: []Dim{DimVocab, DimHidden}},
		{GGUF: "output_norm", HF: []string{"backbone.norm_f"}, Shape: []Dim{DimHidden}},
		{GGUF: "output", HF: []string{"lm_head"}, Shape: []Dim{DimVocab, DimHidden}, Optional: true},
		{GGUF: "blk.{bid}.attn_norm", HF: []string{"backbone.layers.{bid}.norm"}, Shape: []Dim{DimHidden}},
	}, mamba2Tensors("backbone.layers.{bid}.mixer.", false)...),
	SuffixAliases: mamba2DTBias,
	HFConst:       map[string]any{"hidden_act": "silu", "use_bias": false, "use_conv_bias": true, "rms_norm": true},
	Graph:         Graph{Norm: RMSNorm},
	Pattern: func(c Config, n int) ([]Layer, error) {
		out := make([]Layer, n)
		for i := range out {
			out[i] = Layer{Mixer: Mamba2, NoFFN: true}
		}
		return out, nil
	},
})

// constU32 is a GGUF key the converter writes with a fixed value whatever
// config.json says (Mamba-2's context length, its zero head count); GGUF →
// HF writes nothing for it.
func constU32(key string, v uint32) Param {
	return Param{Key: key, Kind: tensor.KindUint32,
		Derive:  func(Config) (tensor.Value, bool, error) { return tensor.Uint32(v), true, nil },
		Inverse: func(Config, tensor.Value, Meta) {}}
}

// mamba2InnerOf is the mixer's inner width as the converter reads it:
// intermediate_size (or mamba_d_ssm, d_inner), else expand (default 2) ·
// hidden_size.
func mamba2InnerOf(c Config) (int64, error) {
	if v, ok := c.Int("mamba_d_ssm", "intermediate_size", "d_inner"); ok {
		return v, nil
	}
	d, ok := c.Int("hidden_size", "d_model", "dim")
	if !ok {
		return 0, errUnsupported("config.json: no hidden_size")
	}
	e, ok := c.Int("mamba_expand", "expand")
	if !ok {
		e = 2
	}
	return e * d, nil
}

// mamba2Inner is ssm.inner_size; GGUF → HF states it as expand (the
// converter asserts inner = expand · hidden_size).
func mamba2Inner() Param {
	return Param{Key: "ssm.inner_size", Kind: tensor.KindUint32,
		Derive: func(c Config) (tensor.Value, bool, error) {
			inner, err := mamba2InnerOf(c)
			if err != nil {
				return tensor.Value{}, false, err
			}
			d, _ := c.Int("hidden_size", "d_model", "dim")
			e, ok := c.Int("mamba_expand", "expand")
			if !ok {
				e = 2
			}
			if inner != e*d {
				return tensor.Value{}, false, errUnsupported("config.json: the mixer's inner width %d is not expand %d · hidden_size %d, which the converter asserts", inner, e, d)
			}
			return numValue(tensor.KindUint32, float64(inner), []string{"intermediate_size"})
		},
		Inverse: func(c Config, v tensor.Value, m Meta) {
			inner, _ := v.Int()
			if d, ok := m.Int("embedding_length"); ok && d > 0 {
				c["expand"] = inner / d
			}
		}}
}

// mamba2Heads is ssm.time_step_rank, which holds the head count: the inner
// width over head_dim (default 64). GGUF → HF states num_heads and head_dim.
func mamba2Heads() Param {
	return Param{Key: "ssm.time_step_rank", Kind: tensor.KindUint32,
		Derive: func(c Config) (tensor.Value, bool, error) {
			inner, err := mamba2InnerOf(c)
			if err != nil {
				return tensor.Value{}, false, err
			}
			hd, ok := c.Int("mamba_d_head", "head_dim")
			if !ok {
				hd = 64
			}
			if hd <= 0 || inner%hd != 0 {
				return tensor.Value{}, false, errUnsupported("config.json: head_dim %d does not divide the inner width %d", hd, inner)
			}
			if n, ok := c.Int("num_heads"); ok && n != inner/hd {
				return tensor.Value{}, false, errUnsupported("config.json: num_heads %d is not the inner width %d / head_dim %d, as the GGUF states it", n, inner, hd)
			}
			return numValue(tensor.KindUint32, float64(inner/hd), []string{"head_dim"})
		},
		Inverse: func(c Config, v tensor.Value, m Meta) {
			heads, _ := v.Int()
			c["num_heads"] = heads
			if inner, ok := m.Int("ssm.inner_size"); ok && heads > 0 {
				c["head_dim"] = inner / heads
			}
		}}
}

// timeStepLimit writes no key: transformers clamps Δ to config.json's
// time_step_limit, which llama.cpp's graph does not; a limit other than
// (0, ∞) would make the GGUF compute something else, so it is refused.
func timeStepLimit() Param {
	return Param{Key: "time_step_limit", Kind: tensor.KindUint32,
		Derive: func(c Config) (tensor.Value, bool, error) {
			raw, ok := c["time_step_limit"]
			if !ok || raw == nil {
				return tensor.Value{}, false, nil
			}
			list, ok := raw.([]any)
			if ok && len(list) == 2 {
				lo, ok1 := Config{"v": list[0]}.Float("v")
				hi, ok2 := Config{"v": list[1]}.Float("v")
				if s, isStr := list[1].(string); isStr && s == "Infinity" {
					hi, ok2 = math.Inf(1), true
				}
				if ok1 && ok2 && lo == 0 && math.IsInf(hi, 1) {
					return tensor.Value{}, false, nil
				}
			}
			return tensor.Value{}, false, errUnsupported("config.json: time_step_limit %v: the GGUF runtime does not clamp Δ (only (0, Infinity) converts)", fmt.Sprint(raw))
		},
		Inverse: func(Config, tensor.Value, Meta) {}}
}
