package arch

import (
	"math"

	"github.com/tfconv/tfconv/tensor"
)

// LFM2 is Liquid AI's hybrid (transformers' Lfm2ForCausalLM, d32676d7's
// conversion/lfm2.py LFM2Model): config.json's layer_types makes each
// layer a gated short convolution ("conv": in_proj to B, C and x, B·x
// through a depthwise causal convolution of conv_L_cache taps, C times
// that, out_proj) or attention with per-head Q/K RMSNorms
// ("full_attention"); every layer has a SwiGLU feed-forward whose width
// LFM2 adjusts from intermediate_size. The GGUF keeps the pattern as
// attention.head_count_kv, one count per layer, 0 for a convolution.
// model.embedding_norm is the norm after the last layer, whatever its name
// (llama.cpp calls it token_embd_norm too).
var LFM2 = register(&Family{
	Name:       "lfm2",
	HFClasses:  []string{"Lfm2ForCausalLM", "LFM2ForCausalLM"},
	ModelTypes: []string{"lfm2"},
	HFClass:    "Lfm2ForCausalLM", ModelType: "lfm2",
	Params:  lfm2Params(),
	Tensors: lfm2Tensors(),
	Drops:   []Drop{rotaryBuffer},
	// feed_forward_length is the width itself: no adjusting on the way back.
	HFConst: map[string]any{"conv_bias": false, "block_auto_adjust_ff_dim": false},
	HFFFN: func(c Config) (int64, bool) {
		hf, _, err := lfm2FFN(c)
		return hf, err == nil
	},
	Graph:   Graph{Norm: RMSNorm, FFN: Gated, Activation: "silu", QKNormPerHead: true, NeoxRopeGGUF: true, FinalNorm: "token_embd_norm"},
	Pattern: lfm2Pattern,
})

// lfm2Params are LFM2Model.set_gguf_parameters: the base keys (norm_eps as
// the RMS epsilon, head_count_kv per layer, feed_forward_length as LFM2
// adjusts it, in the base's place: the converter overwrites its own
// earlier value), then vocab_size and shortconv.l_cache.
func lfm2Params() []Param {
	var ps []Param
	for _, p := range baseParams() {
		switch p.Key {
		case "feed_forward_length":
			p = lfm2FFNParam()
		case "attention.head_count_kv":
			p = lfm2KVHeads()
		case "attention.layer_norm_rms_epsilon":
			p.HF, p.Out = []string{"rms_norm_eps", "norm_eps"}, "norm_eps"
		}
		ps = append(ps, p)
	}
	return append(ps, noRopeScaling(), lfm2ConvBias(),
		u32("vocab_size", Required, "vocab_size"),
		u32("shortconv.l_cache", Required, "conv_L_cache"))
}

// lfm2FFN is the feed-forward width of an LFM2 config.json as transformers
// builds Lfm2MLP (hf) and as the converter writes feed_forward_length
// (gguf). With block_auto_adjust_ff_dim both take ⌊2·w/3⌋, scaled by
// block_ffn_dim_multiplier; transformers rounds up to a multiple of
// block_multiple_of only when a multiplier is set, the converter always:
// when the two differ the GGUF would not fit the tensors, and that is an
// error.
func lfm2FFN(c Config) (hf, gguf int64, err error) {
	w, ok := c.Int("block_ff_dim", "intermediate_size")
	if !ok || w <= 0 || w > math.MaxInt32 {
		return 0, 0, errUnsupported("config.json: intermediate_size missing or out of range")
	}
	if adj, _ := c.Bool("block_auto_adjust_ff_dim"); !adj {
		return w, w, nil
	}
	w = int64(2 * float64(w) / 3)
	mult, hasMult := c.Float("block_ffn_dim_multiplier")
	if hasMult {
		w = int64(mult * float64(w))
	}
	m, ok := c.Int("block_multiple_of")
	if !ok || m <= 0 || m > math.MaxInt32 {
		return 0, 0, errUnsupported("config.json: block_multiple_of missing or out of range")
	}
	rounded := m * ((w + m - 1) / m)
	if !hasMult {
		if rounded != w {
			return 0, 0, errUnsupported("config.json: block_ffn_dim_multiplier null: transformers' feed-forward is %d wide, llama.cpp's converter writes %d", w, rounded)
		}
	}
	if rounded <= 0 || rounded > math.MaxInt32 {
		return 0, 0, errUnsupported("config.json: adjusted feed-forward width %d out of range", rounded)
	}
	return rounded, rounded, nil
}

func lfm2FFNParam() Param {
	return Param{Key: "feed_forward_length", Kind: tensor.KindUint32,
		Derive: func(c Config) (tensor.Value, bool, error) {
			if !c.Has("intermediate_size") {
				// the converter would write the key after shortconv.l_cache
				return tensor.Value{}, false, errUnsupported("config.json: no intermediate_size")
			}
			_, w, err := lfm2FFN(c)
			if err != nil {
				return tensor.Value{}, false, err
			}
			return tensor.Uint32(uint32(w)), true, nil
		},
		Inverse: func(c Config, v tensor.Value, _ Meta) { c["intermediate_size"] = jsonValue(v) }}
}

// lfm2KVHeads is attention.head_count_kv as the converter writes it: per
// layer, num_key_value_heads for an attention layer and 0 for a
// convolution (int32s); GGUF → HF gives back num_key_value_heads and
// layer_types from it.
func lfm2KVHeads() Param {
	return Param{Key: "attention.head_count_kv", Kind: tensor.KindArray, Need: Required,
		Derive: func(c Config) (tensor.Value, bool, error) {
			n, _ := c.Int("num_hidden_layers")
			types, ok, err := LayerTypes(c, int(n))
			if err != nil {
				return tensor.Value{}, false, err
			}
			if !ok {
				return tensor.Value{}, false, errUnsupported("config.json: no layer_types")
			}
			kv, ok := c.Int("num_key_value_heads")
			if !ok || kv <= 0 || kv > math.MaxInt32 {
				return tensor.Value{}, false, errUnsupported("config.json: num_key_value_heads missing or out of range")
			}
			out := make([]int32, len(types))
			for i, t := range types {
				switch t {
				case FullAttention:
					out[i] = int32(kv)
				case ShortConv:
				default:
					// transformers makes it a convolution, the converter
					// an attention layer
					return tensor.Value{}, false, errUnsupported("config.json: layer_types[%d] %q: LFM2 has conv and full_attention layers", i, t)
				}
			}
			return tensor.ArrayOf(out), true, nil
		},
		Inverse: func(c Config, v tensor.Value, _ Meta) {
			a, ok := v.Array()
			if !ok {
				if n, ok := v.Int(); ok {
					c["num_key_value_heads"] = n
				}
				return
			}
			types := make([]any, a.Len())
			var kv int64
			for i := range types {
				n, _ := a.Index(i).Int()
				types[i] = ShortConv.String()
				if n != 0 {
					types[i], kv = FullAttention.String(), n
				}
			}
			c["layer_types"] = types
			if kv > 0 {
				c["num_key_value_heads"] = kv
			}
		}}
}

// lfm2ConvBias refuses conv_bias: llama.cpp's short convolution has no
// biases (in_proj, conv, out_proj).
func lfm2ConvBias() Param {
	return Param{Key: "shortconv.bias", Kind: tensor.KindBool,
		Derive: func(c Config) (tensor.Value, bool, error) {
			if b, _ := c.Bool("conv_bias"); b {
				return tensor.Value{}, false, errUnsupported("config.json: conv_bias true: llama.cpp's LFM2 short convolution has no biases")
			}
			return tensor.Value{}, false, nil
		},
		Inverse: func(Config, tensor.Value, Meta) {}}
}

// lfm2Pattern: layer_types says which layers are short convolutions
// (keeping conv_L_cache−1 rows of hidden_size floats) and which attend
// (fully, with RoPE).
func lfm2Pattern(c Config, n int) ([]Layer, error) {
	types, ok, err := LayerTypes(c, n)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errUnsupported("config.json: no layer_types")
	}
	k, ok := c.Int("conv_L_cache")
	d, ok2 := c.Int("hidden_size")
	if !ok || !ok2 || k < 1 || k > 1<<10 || d <= 0 || d > 1<<24 {
		return nil, errUnsupported("config.json: conv_L_cache and hidden_size missing or out of range")
	}
	out := make([]Layer, n)
	for i, t := range types {
		switch t {
		case ShortConv:
			// the last L_cache−1 inputs of the convolution
			out[i].Mixer, out[i].StateFloats = ShortConv, (k-1)*d
		case FullAttention:
			out[i].Mixer, out[i].Rope = FullAttention, true
		default:
			return nil, errUnsupported("config.json: layer_types[%d] %q: LFM2 has conv and full_attention layers", i, t)
		}
	}
	return out, nil
}

// lfm2Tensors: the attention roles are in the attention layers only, the
// convolution's in the conv layers (Tensor.Mixers).
func lfm2Tensors() []Tensor {
	d := []Dim{DimHidden}
	conv, attn := []Mixer{ShortConv}, []Mixer{FullAttention}
	return []Tensor{
		{GGUF: "token_embd", HF: []string{"model.embed_tokens"}, Shape: []Dim{DimVocab, DimHidden}},
		{GGUF: "token_embd_norm", HF: []string{"model.embedding_norm"}, Shape: d},
		{GGUF: "output", HF: []string{"lm_head"}, Shape: []Dim{DimVocab, DimHidden}, Optional: true},
		{GGUF: "blk.{bid}.attn_norm", HF: []string{hfLayer + "operator_norm"}, Shape: d},
		{GGUF: "blk.{bid}.attn_q", HF: []string{hfLayer + "self_attn.q_proj"}, Shape: []Dim{DimQ, DimHidden}, Mixers: attn},
		{GGUF: "blk.{bid}.attn_k", HF: []string{hfLayer + "self_attn.k_proj"}, Shape: []Dim{DimKV, DimHidden}, Mixers: attn},
		{GGUF: "blk.{bid}.attn_v", HF: []string{hfLayer + "self_attn.v_proj"}, Shape: []Dim{DimKV, DimHidden}, Mixers: attn},
		{GGUF: "blk.{bid}.attn_output", HF: []string{hfLayer + "self_attn.out_proj"}, Shape: []Dim{DimHidden, DimQ}, Mixers: attn},
		{GGUF: "blk.{bid}.attn_q_norm", HF: []string{hfLayer + "self_attn.q_layernorm"}, Shape: []Dim{DimHeadDim}, Mixers: attn},
		{GGUF: "blk.{bid}.attn_k_norm", HF: []string{hfLayer + "self_attn.k_layernorm"}, Shape: []Dim{DimHeadDim}, Mixers: attn},
		{GGUF: "blk.{bid}.shortconv.conv", HF: []string{hfLayer + "conv.conv"}, Shape: []Dim{DimHidden, DimOne, DimConvKernel},
			Layout: LayoutSqueeze, Mixers: conv},
		{GGUF: "blk.{bid}.shortconv.in_proj", HF: []string{hfLayer + "conv.in_proj"}, Shape: []Dim{DimHidden3, DimHidden}, Mixers: conv},
		{GGUF: "blk.{bid}.shortconv.out_proj", HF: []string{hfLayer + "conv.out_proj"}, Shape: []Dim{DimHidden, DimHidden}, Mixers: conv},
		{GGUF: "blk.{bid}.ffn_norm", HF: []string{hfLayer + "ffn_norm"}, Shape: d},
		{GGUF: "blk.{bid}.ffn_gate", HF: []string{hfLayer + "feed_forward.w1"}, Shape: []Dim{DimFFN, DimHidden}},
		{GGUF: "blk.{bid}.ffn_up", HF: []string{hfLayer + "feed_forward.w3"}, Shape: []Dim{DimFFN, DimHidden}},
		{GGUF: "blk.{bid}.ffn_down", HF: []string{hfLayer + "feed_forward.w2"}, Shape: []Dim{DimHidden, DimFFN}},
	}
}
