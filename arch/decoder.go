package arch

import "github.com/tfconv/tfconv/tensor"

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

// moeLayout names a family's mixture-of-experts tensors in Hugging Face's
// form, below the layer prefix.
type moeLayout struct {
	router         string // the router ("block_sparse_moe.gate")
	experts        string // one expert, with {xid} ("block_sparse_moe.experts.{xid}.")
	gate, down, up string // an expert's matrices ("w1", "w2", "w3")
	ffn            Dim    // an expert's width
	shared         string // the shared expert ("mlp.shared_expert."); "" when none
	sharedGate     string // the shared expert's scalar gate ("mlp.shared_expert_gate"); "" when none
	sharedFFN      Dim    // the shared expert's width
	// mlx is where mlx-lm keeps the experts stacked, below the layer
	// prefix ("mlp.switch_mlp."), "" when not known; mlxNames its names of
	// the gate, down and up matrices where they are not Hugging Face's
	// (Mixtral's w1, w2, w3 are gate_proj, down_proj, up_proj); mlxRouter
	// the bits and group size its quant_predicate gives the router (zero:
	// the checkpoint's).
	mlx       string
	mlxNames  [3]string
	mlxRouter [2]int
}

// moeTensors are the mixture-of-experts roles of layout l (the router,
// each expert's three matrices, stacked experts outermost in GGUF, and a
// shared expert when l has one) after the dense roles of dense, which a
// layer with a router does not need (Tensor.Unless).
func moeTensors(dense []Tensor, l moeLayout) []Tensor {
	out := make([]Tensor, 0, len(dense)+8)
	for _, t := range dense {
		switch t.GGUF {
		case "blk.{bid}.ffn_gate", "blk.{bid}.ffn_up", "blk.{bid}.ffn_down":
			t.Unless = "blk.{bid}.ffn_gate_inp"
		}
		out = append(out, t)
	}
	e := hfLayer + l.experts
	mlx := func(name string, i int) string {
		if l.mlx == "" {
			return ""
		}
		if l.mlxNames[i] != "" {
			name = l.mlxNames[i]
		}
		return hfLayer + l.mlx + name
	}
	out = append(out,
		Tensor{GGUF: "blk.{bid}.ffn_gate_inp", HF: []string{hfLayer + l.router}, Shape: []Dim{DimExperts, DimHidden}, Optional: true,
			MLXBits: l.mlxRouter[0], MLXGroup: l.mlxRouter[1]},
		Tensor{GGUF: "blk.{bid}.ffn_gate_exps", HF: []string{e + l.gate}, Shape: []Dim{l.ffn, DimHidden}, Optional: true, Stack: DimExperts, MLX: mlx(l.gate, 0)},
		Tensor{GGUF: "blk.{bid}.ffn_down_exps", HF: []string{e + l.down}, Shape: []Dim{DimHidden, l.ffn}, Optional: true, Stack: DimExperts, MLX: mlx(l.down, 1)},
		Tensor{GGUF: "blk.{bid}.ffn_up_exps", HF: []string{e + l.up}, Shape: []Dim{l.ffn, DimHidden}, Optional: true, Stack: DimExperts, MLX: mlx(l.up, 2)})
	if l.shared != "" {
		sh := hfLayer + l.shared
		if l.sharedGate != "" {
			out = append(out, Tensor{GGUF: "blk.{bid}.ffn_gate_inp_shexp", HF: []string{hfLayer + l.sharedGate}, Shape: []Dim{DimOne, DimHidden}, Optional: true})
		}
		out = append(out,
			Tensor{GGUF: "blk.{bid}.ffn_gate_shexp", HF: []string{sh + l.gate}, Shape: []Dim{l.sharedFFN, DimHidden}, Optional: true},
			Tensor{GGUF: "blk.{bid}.ffn_down_shexp", HF: []string{sh + l.down}, Shape: []Dim{DimHidden, l.sharedFFN}, Optional: true},
			Tensor{GGUF: "blk.{bid}.ffn_up_shexp", HF: []string{sh + l.up}, Shape: []Dim{l.sharedFFN, DimHidden}, Optional: true})
	}
	return out
}

// rotaryBuffer is the inv_freq buffer old checkpoints carry.
var rotaryBuffer = Drop{Suffix: ".rotary_emb.inv_freq", Reason: "rotary inverse frequencies: a buffer recomputed from rope_theta"}

// withAfter returns params with p inserted after the param of GGUF key
// key (at the end when there is none).
func withAfter(params []Param, key string, p Param) []Param {
	for i := range params {
		if params[i].Key == key {
			return append(params[:i+1], append([]Param{p}, params[i+1:]...)...)
		}
	}
	return append(params, p)
}

// withParams returns base with extra appended.
func withParams(base []Param, extra ...Param) []Param { return append(base, extra...) }

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

// rotaryKeys are the names config.json gives the share of a head's
// dimensions that RoPE turns: transformers' partial_rotary_factor (StableLM,
// Phi-4-mini, GLM-4, ...), GPT-NeoX's rotary_pct, StableLM 1's rope_pct.
// First present wins.
var rotaryKeys = []string{"rotary_pct", "partial_rotary_factor", "rope_pct"}

// RotaryDims is the number of dimensions of a head of headDim that RoPE
// turns: config.json's rotary_dim when it states the count itself
// (MiniMax-M2; at most headDim), else int(factor · headDim) for the factor
// it states under rotaryKeys, headDim when it states none.
// (convert_hf_to_gguf.py rounds Phi-3's as int(factor · hidden) // heads
// and StableLM's as int(factor · (hidden // heads)); with hidden a multiple
// of heads, as every family here checks, both are this.)
func RotaryDims(c Config, headDim int) int {
	if d, ok := c.Int("rotary_dim"); ok && d > 0 && d <= int64(headDim) {
		return int(d)
	}
	if f, ok := c.Float(rotaryKeys...); ok {
		return int(f * float64(headDim))
	}
	return headDim
}

// partialRotary is rope.dimension_count as RotaryDims of hidden/heads,
// the factor required under one of keys when need is Required, 1 when
// absent otherwise; GGUF → HF writes the factor back under keys[0] (when
// it is not 1).
func partialRotary(need Need, keys ...string) Param {
	return Param{Key: "rope.dimension_count", Kind: tensor.KindUint32, Need: Required,
		Derive: func(c Config) (tensor.Value, bool, error) {
			if _, ok := c.Float(keys...); !ok && need == Required {
				return tensor.Value{}, false, errUnsupported("config.json: no %v", keys)
			}
			h, _ := c.Int("hidden_size", "n_embd")
			n, _ := c.Int("num_attention_heads", "n_head")
			if n <= 0 {
				return tensor.Value{}, false, errUnsupported("config.json: no num_attention_heads")
			}
			return tensor.Uint32(uint32(RotaryDims(c, int(h/n)))), true, nil
		},
		Inverse: func(c Config, v tensor.Value, m Meta) {
			rd, _ := v.Int()
			h, _ := m.Int("embedding_length")
			n, _ := m.Int("attention.head_count")
			if n > 0 && h/n > 0 && (need == Required || rd != h/n) {
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

// without returns params less the one of GGUF key key.
func without(params []Param, key string) []Param {
	out := params[:0:0]
	for _, p := range params {
		if p.Key != key {
			out = append(out, p)
		}
	}
	return out
}
