package arch

import (
	"math"

	"github.com/tfconv/tfconv/tensor"
)

// RWKV7Family is RWKV-7 "Goose" in fla-hub's form (fla's RWKV7ForCausalLM,
// config model_type rwkv7; d32676d7's conversion/rwkv.py Rwkv7Model):
// every layer is a LayerNorm and a time mix (token shift, the r/w/k/v/a/g
// mixes fused into one [6][1][1][d] tensor, decay, in-context learning
// rate, value-residual and gate low-rank projections, the wkv7 state per
// head, a group norm ln_x) and a LayerNorm and a channel mix (token shift,
// relu²). Layer 0's value feeds the value residual of the later layers;
// the embeddings are normed (model.layers.0.pre_norm, GGUF
// token_embd_norm) before the first layer. fla's LoRA weights are already
// [out][in] (the converter transposes only the older RWKV-LM names'); r_k
// is flattened; layer 0, which has no value-residual projection, gets
// copies of its a0/a1/a2 as v0/v1/v2, which llama.cpp loads and never
// uses.
var RWKV7Family = register(&Family{
	Name:       "rwkv7",
	HFClasses:  []string{"RWKV7ForCausalLM"},
	ModelTypes: []string{"rwkv7"},
	HFClass:    "RWKV7ForCausalLM", ModelType: "rwkv7",
	Params: []Param{
		constU32("context_length", 1<<20),
		u32("embedding_length", Required, "hidden_size"),
		{Key: "block_count", HF: []string{"num_hidden_layers"}, Kind: tensor.KindUint32, Need: Required},
		{Key: "attention.layer_norm_epsilon", HF: []string{"layer_norm_epsilon", "norm_eps"}, Out: "norm_eps", Kind: tensor.KindFloat32,
			Need: Required},
		rwkv7HeadSize(),
		rwkv7Rank("attention.decay_lora_rank", "decay_low_rank_dim", 1.8, 0.5),
		rwkv7Rank("attention.iclr_lora_rank", "a_low_rank_dim", 1.8, 0.5),
		rwkv7Rank("attention.value_residual_mix_lora_rank", "v_low_rank_dim", 1.3, 0.5),
		rwkv7Rank("attention.gate_lora_rank", "gate_low_rank_dim", 0.6, 0.8),
		rwkv7FFN(),
		{Key: FileType},
		constU32("attention.head_count", 0),
	},
	Tensors: []Tensor{
		{GGUF: "token_embd", HF: []string{"model.embeddings"}, Shape: []Dim{DimVocab, DimHidden}},
		{GGUF: "token_embd_norm", HF: []string{"model.layers.0.pre_norm"}, Shape: []Dim{DimHidden}},
		{GGUF: "output_norm", HF: []string{"model.norm"}, Shape: []Dim{DimHidden}},
		{GGUF: "output", HF: []string{"lm_head"}, Shape: []Dim{DimVocab, DimHidden}},
		{GGUF: "blk.{bid}.attn_norm", HF: []string{rwkv7Layer + "attn_norm"}, Shape: []Dim{DimHidden}},
		{GGUF: "blk.{bid}.attn_norm_2", HF: []string{rwkv7Layer + "ffn_norm"}, Shape: []Dim{DimHidden}},
		{GGUF: "blk.{bid}.time_mix_lerp_fused", HF: []string{rwkv7Layer + "attn.x_{xid}"}, Shape: []Dim{DimOne, DimOne, DimHidden},
			Stack: DimLerp, Parts: []string{"r", "w", "k", "v", "a", "g"}, NoSuffixHF: true},
		// the LoRAs' biases: SuffixAliases reads "w_lora.lora.2.bias" as the
		// weight of "w_lora"
		{GGUF: "blk.{bid}.time_mix_w0", HF: []string{rwkv7Layer + "attn.w_lora"}, Shape: []Dim{DimHidden}, HFSuffix: ".lora.2.bias"},
		{GGUF: "blk.{bid}.time_mix_w1", HF: []string{rwkv7Layer + "attn.w_lora.lora.0"}, Shape: []Dim{DimLoraDecay, DimHidden}},
		{GGUF: "blk.{bid}.time_mix_w2", HF: []string{rwkv7Layer + "attn.w_lora.lora.2"}, Shape: []Dim{DimHidden, DimLoraDecay}},
		{GGUF: "blk.{bid}.time_mix_a0", HF: []string{rwkv7Layer + "attn.a_lora"}, Shape: []Dim{DimHidden}, HFSuffix: ".lora.2.bias"},
		{GGUF: "blk.{bid}.time_mix_a1", HF: []string{rwkv7Layer + "attn.a_lora.lora.0"}, Shape: []Dim{DimLoraICLR, DimHidden}},
		{GGUF: "blk.{bid}.time_mix_a2", HF: []string{rwkv7Layer + "attn.a_lora.lora.2"}, Shape: []Dim{DimHidden, DimLoraICLR}},
		// layer 0 has none (its GGUF copies are Copies)
		{GGUF: "blk.{bid}.time_mix_v0", HF: []string{rwkv7Layer + "attn.v_lora"}, Shape: []Dim{DimHidden}, HFSuffix: ".lora.2.bias", Optional: true},
		{GGUF: "blk.{bid}.time_mix_v1", HF: []string{rwkv7Layer + "attn.v_lora.lora.0"}, Shape: []Dim{DimLoraValue, DimHidden}, Optional: true},
		{GGUF: "blk.{bid}.time_mix_v2", HF: []string{rwkv7Layer + "attn.v_lora.lora.2"}, Shape: []Dim{DimHidden, DimLoraValue}, Optional: true},
		{GGUF: "blk.{bid}.time_mix_g1", HF: []string{rwkv7Layer + "attn.g_lora.lora.0"}, Shape: []Dim{DimLoraGate, DimHidden}},
		{GGUF: "blk.{bid}.time_mix_g2", HF: []string{rwkv7Layer + "attn.g_lora.lora.2"}, Shape: []Dim{DimHidden, DimLoraGate}},
		{GGUF: "blk.{bid}.time_mix_k_k", HF: []string{rwkv7Layer + "attn.k_k"}, Shape: []Dim{DimHidden}, NoSuffixHF: true},
		{GGUF: "blk.{bid}.time_mix_k_a", HF: []string{rwkv7Layer + "attn.k_a"}, Shape: []Dim{DimHidden}, NoSuffixHF: true},
		{GGUF: "blk.{bid}.time_mix_r_k", HF: []string{rwkv7Layer + "attn.r_k"}, Shape: []Dim{DimHeads, DimHeadDim}, NoSuffixHF: true,
			Layout: LayoutFlatten},
		{GGUF: "blk.{bid}.time_mix_key", HF: []string{rwkv7Layer + "attn.k_proj"}, Shape: []Dim{DimHidden, DimHidden}},
		{GGUF: "blk.{bid}.time_mix_value", HF: []string{rwkv7Layer + "attn.v_proj"}, Shape: []Dim{DimHidden, DimHidden}},
		{GGUF: "blk.{bid}.time_mix_receptance", HF: []string{rwkv7Layer + "attn.r_proj"}, Shape: []Dim{DimHidden, DimHidden}},
		{GGUF: "blk.{bid}.time_mix_ln", HF: []string{rwkv7Layer + "attn.g_norm"}, Shape: []Dim{DimHidden}},
		{GGUF: "blk.{bid}.time_mix_output", HF: []string{rwkv7Layer + "attn.o_proj"}, Shape: []Dim{DimHidden, DimHidden}},
		{GGUF: "blk.{bid}.channel_mix_lerp_k", HF: []string{rwkv7Layer + "ffn.x_k"}, Shape: []Dim{DimHidden}, NoSuffixHF: true},
		{GGUF: "blk.{bid}.channel_mix_key", HF: []string{rwkv7Layer + "ffn.key"}, Shape: []Dim{DimFFN, DimHidden}},
		{GGUF: "blk.{bid}.channel_mix_value", HF: []string{rwkv7Layer + "ffn.value"}, Shape: []Dim{DimHidden, DimFFN}},
	},
	Copies: []Copy{
		{GGUF: "blk.0.time_mix_v1.weight", Of: "blk.0.time_mix_a1.weight", Before: true, Reason: "layer 0's copy of time_mix_a1, which llama.cpp loads and never uses"},
		{GGUF: "blk.0.time_mix_v0.weight", Of: "blk.0.time_mix_a0.weight", Before: true, Reason: "layer 0's copy of time_mix_a0, which llama.cpp loads and never uses"},
		{GGUF: "blk.0.time_mix_v2.weight", Of: "blk.0.time_mix_a2.weight", Before: true, Reason: "layer 0's copy of time_mix_a2, which llama.cpp loads and never uses"},
	},
	SuffixAliases: map[string]string{".lora.2.bias": ".weight"},
	HFConst: map[string]any{"hidden_act": "sqrelu", "norm_first": true, "norm_bias": true, "attn": nil,
		"tie_word_embeddings": false, "fuse_norm": false, "attn_mode": "chunk"},
	Graph:   Graph{Norm: LayerNorm, EmbedNorm: true, FFNNorm: "blk.{bid}.attn_norm_2"},
	Mixers:  []Mixer{RWKV7},
	Pattern: rwkv7Pattern,
})

// rwkv7Layer is the Hugging Face prefix of an RWKV-7 block.
const rwkv7Layer = "model.layers.{bid}."

// RWKV7GroupNormEps is the epsilon of the group norm ln_x as llama.cpp
// fixes it (fla takes head_dim · norm_eps, the same for every published
// model: 64 · 1e-5).
const RWKV7GroupNormEps = 64e-5

// rwkv7Pattern makes every layer an RWKV-7 time mix with its channel mix;
// the state one sequence keeps for a layer is the two token-shift rows
// (2·d) and the wkv state of each head (d·head_size), as llama.cpp's
// recurrent memory counts them (n_embd_r, n_embd_s).
func rwkv7Pattern(c Config, n int) ([]Layer, error) {
	d, _ := c.Int("hidden_size")
	hs, err := rwkv7HeadSizeOf(c)
	if err != nil {
		return nil, err
	}
	out := make([]Layer, n)
	for i := range out {
		out[i] = Layer{Mixer: RWKV7, StateFloats: 2*d + d*hs}
	}
	return out, nil
}

// rwkv7HeadSizeOf is head_dim (older conversions: head_size), which must
// divide hidden_size, or hidden_size / num_heads.
func rwkv7HeadSizeOf(c Config) (int64, error) {
	d, ok := c.Int("hidden_size")
	if !ok || d <= 0 || d > 1<<20 {
		return 0, errUnsupported("config.json: hidden_size missing or out of range")
	}
	hs, ok := c.Int("head_size", "head_dim")
	if !ok {
		if h, ok := c.Int("num_heads"); ok && h > 0 {
			hs = d / h
		}
	}
	if hs <= 0 || d%hs != 0 || hs > 1<<12 {
		return 0, errUnsupported("config.json: head_dim %d does not divide hidden_size %d", hs, d)
	}
	return hs, nil
}

// rwkv7HeadSize is wkv.head_size, and the checks of what the GGUF cannot
// keep: a value width other than hidden_size (value_dim), a group-norm
// epsilon (head_dim · norm_eps) other than the one llama.cpp fixes, and
// the variants llama.cpp does not build (hybrid attention layers, no
// pre-norm or norm biases, an activation other than relu²).
func rwkv7HeadSize() Param {
	return Param{Key: "wkv.head_size", HF: []string{"head_size", "head_dim"}, Kind: tensor.KindUint32, Need: Required,
		Derive: func(c Config) (tensor.Value, bool, error) {
			hs, err := rwkv7HeadSizeOf(c)
			if err != nil {
				return tensor.Value{}, false, err
			}
			d, _ := c.Int("hidden_size")
			if c.Has("value_dim") {
				if v, ok := c.Int("value_dim"); ok && v != d {
					return tensor.Value{}, false, errUnsupported("config.json: value_dim %d: llama.cpp's RWKV-7 takes values as wide as hidden_size (%d)", v, d)
				}
				if vs, ok, _ := c.Ints("value_dim"); ok {
					for i, v := range vs {
						if v != d {
							return tensor.Value{}, false, errUnsupported("config.json: value_dim[%d] %d: llama.cpp's RWKV-7 takes values as wide as hidden_size (%d)", i, v, d)
						}
					}
				}
			}
			if eps, ok := c.Float("norm_eps", "layer_norm_epsilon"); ok {
				if ge := float64(hs) * eps; math.Abs(ge-RWKV7GroupNormEps) > 1e-3*RWKV7GroupNormEps {
					return tensor.Value{}, false, errUnsupported("config.json: head_dim·norm_eps = %g is ln_x's epsilon; llama.cpp fixes it at %g", ge, RWKV7GroupNormEps)
				}
			}
			if c.Has("attn") {
				return tensor.Value{}, false, errUnsupported("config.json: attn: llama.cpp's RWKV-7 has no attention layers")
			}
			for _, k := range []string{"norm_first", "norm_bias"} {
				if v, ok := c.Bool(k); ok && !v {
					return tensor.Value{}, false, errUnsupported("config.json: %s false: llama.cpp's RWKV-7 needs the embedding norm and the norms' biases", k)
				}
			}
			if a, ok := c.Str("hidden_act"); ok && a != "sqrelu" {
				return tensor.Value{}, false, errUnsupported("config.json: hidden_act %q: llama.cpp's RWKV-7 channel mix is relu²", a)
			}
			if g, ok := c.Bool("wkv_has_gate"); ok && !g {
				return tensor.Value{}, false, errUnsupported("config.json: wkv_has_gate false")
			}
			return tensor.Uint32(uint32(hs)), true, nil
		},
		Inverse: func(c Config, v tensor.Value, _ Meta) {
			if n, ok := v.Int(); ok {
				c["head_dim"] = n
			}
		}}
}

// rwkv7Rank is one of the low-rank widths: config.json's key, or, when it
// is null, the converter's max(1, round(d^exp·mult/32))·32, which must be
// fla's own default (the tensors are fla's).
func rwkv7Rank(key, hf string, mult, exp float64) Param {
	return Param{Key: key, HF: []string{hf}, Kind: tensor.KindUint32, Need: Required,
		Derive: func(c Config) (tensor.Value, bool, error) {
			if r, ok := c.Int(hf); ok {
				if r <= 0 || r > 1<<20 {
					return tensor.Value{}, false, errUnsupported("config.json: %s %d out of range", hf, r)
				}
				return tensor.Uint32(uint32(r)), true, nil
			}
			d, _ := c.Int("hidden_size")
			conv := max(1, int64(math.RoundToEven(math.Pow(float64(d), exp)*mult/32))) * 32
			if fla := rwkv7FlaRank(c, hf, d); fla != conv {
				return tensor.Value{}, false, errUnsupported("config.json: %s null: fla builds %d, llama.cpp's converter writes %d", hf, fla, conv)
			}
			return tensor.Uint32(uint32(conv)), true, nil
		}}
}

// rwkv7FlaRank is fla's RWKV7Attention default for the low-rank width hf.
func rwkv7FlaRank(c Config, hf string, d int64) int64 {
	hs, _ := rwkv7HeadSizeOf(c)
	factor := float64(hs) / 64
	root := math.Sqrt(float64(d))
	var x float64
	switch hf {
	case "decay_low_rank_dim", "a_low_rank_dim":
		x = 2.5 * root * factor
	case "v_low_rank_dim":
		x = 1.7 * root * factor
	default:
		x = 5 * root
	}
	return max(32, int64(math.RoundToEven(x/32))*32)
}

// rwkv7FFN is feed_forward_length: intermediate_size, or 4·hidden_size
// when it is null (the converter's), which must be fla's width then
// (hidden_ratio·hidden_size rounded up to 32).
func rwkv7FFN() Param {
	return Param{Key: "feed_forward_length", HF: []string{"intermediate_size"}, Kind: tensor.KindUint32, Need: Required,
		Derive: func(c Config) (tensor.Value, bool, error) {
			if f, ok := c.Int("intermediate_size"); ok {
				if f <= 0 || f > 1<<24 {
					return tensor.Value{}, false, errUnsupported("config.json: intermediate_size %d out of range", f)
				}
				return tensor.Uint32(uint32(f)), true, nil
			}
			d, _ := c.Int("hidden_size")
			r, ok := c.Float("hidden_ratio")
			if !ok {
				r = 4
			}
			fla := int64(float64(d) * r)
			fla = 32 * ((fla + 31) / 32)
			if fla != 4*d {
				return tensor.Value{}, false, errUnsupported("config.json: intermediate_size null: fla builds %d, llama.cpp's converter writes %d", fla, 4*d)
			}
			return tensor.Uint32(uint32(4 * d)), true, nil
		}}
}
