package model

import (
	"fmt"
	spec "github.com/tfconv/tfconv/arch"
	"math"
	"math/bits"
	"strings"

	"github.com/tfconv/tfconv/kernels"
	"github.com/tfconv/tfconv/tensor"
)

// BLOOM (BigScience 2022): a GPT-style pre-LayerNorm decoder with no
// position embeddings. ALiBi (Press et al. 2022) instead adds to every
// attention score a per-head penalty linear in the key's position; a
// LayerNorm follows the word embeddings; the QKV projection is fused with
// the rows of each head interleaved; the MLP uses Megatron's tanh-GELU; the
// LM head is tied to the word embeddings.
//
//	x₀ = LN_e(E[tok])
//	s_h(i,j) = q_i,h·k_j,h/√D + m_h·p_j        for keys j ≤ i (causal)
//	a  = x + W_o·Attn(LN₁(x)) + b_o
//	x' = a + W_down·gelu_b(W_up·LN₂(a) + b_up) + b_down
//	logits = LN_f(x_L)·Eᵀ
//
// p_j is the key's position counted over real tokens only (transformers'
// build_alibi_tensor: (cumsum(mask)−1)·mask). ALiBi proper subtracts
// m_h·(i−j); the m_h·i part is the same for every key of a query and
// cancels in the softmax, so only m_h·p_j is added, as transformers does.
// The slopes m_h are a geometric sequence: for n heads and P the largest
// power of two ≤ n, m_h = b^(h+1) with b = 2^(−8/P) for the first P heads,
// and the odd powers of 2^(−4/P) for the remaining n−P.

// bloomWeights are BLOOM's weights ([out][in]).
type bloomWeights struct {
	TokenEmbd *kernels.Matrix // [vocab][d]
	EmbdNorm  norm            // [d] word_embeddings_layernorm
	Blocks    []bloomBlock
	FinalNorm norm            // [d]
	Output    *kernels.Matrix // [vocab][d]; TokenEmbd when tied
}

type bloomBlock struct {
	AttnNorm norm // [d]
	// QKV is [3d][d], bias [3d]. Hugging Face interleaves it per head:
	// rows h·3D.. are q, k, v of head h, D rows each. llama.cpp's converter
	// regroups them to all queries, all keys, all values (GPT-2's layout).
	QKV     linear
	O       linear // [d][d], bias [d]
	FFNNorm norm   // [d]
	Up      linear // [4d][d], bias [4d]
	Down    linear // [d][4d], bias [d]
}

type bloom struct {
	cfg    *Config
	w      bloomWeights
	slopes []float32 // [heads] ALiBi slopes m_h
	// regroup, when set, is arch's layout change of the fused QKV applied
	// to one output row: Hugging Face's per-head [head][q,k,v] to GGUF's
	// [q | k | v].
	regroup func(dst, src []float32)
	// postLNResidual is apply_residual_connection_post_layernorm: the
	// residual branch starts from the LayerNorm output instead of its input.
	postLNResidual bool
}

func bloomConfig(d, layers, heads, vocab int, eps float32) Config {
	return Config{Arch: "bloom", Layers: layers, DModel: d, Vocab: vocab, Heads: heads, KVHeads: heads,
		HeadDim: d / max(heads, 1), FFN: 4 * d, Eps: eps, Activation: "bloom_gelu", Alibi: true,
		TiedEmbeddings: true, BOS: -1, EOS: -1, PAD: -1, ForcedEOS: -1}
}

func checkBloom(c *Config, path string) error {
	if err := checkDims(c, path); err != nil {
		return err
	}
	if c.HeadDim*c.Heads != c.DModel {
		return fmt.Errorf("model: %s: bloom config: hidden size %d is not a multiple of %d heads", path, c.DModel, c.Heads)
	}
	return nil
}

// loadBloomFamily loads BLOOM by role from either naming (arch.Bloom states
// both). Hugging Face's fused QKV is interleaved per head; llama.cpp's is
// regrouped into all queries, keys, values, and its tied head is stored
// again as output.weight.
func loadBloomFamily(fl familyLoader, c spec.Config) (*Model, error) {
	geti := func(def int, keys ...string) int {
		if v, ok := c.Int(keys...); ok && v >= 0 && v < 1<<31 {
			return int(v)
		}
		return def
	}
	d := geti(0, "hidden_size", "n_embed")
	eps := float32(1e-5)
	if v, ok := c.Float("layer_norm_epsilon"); ok {
		eps = float32(v)
	}
	cfg := bloomConfig(d, geti(0, "n_layer", "num_hidden_layers"), geti(0, "n_head", "num_attention_heads"),
		geti(fl.rowsOf(fl.name("token_embd", -1, ".weight")), "vocab_size"), eps)
	cfg.BOS, cfg.EOS, cfg.PAD = geti(-1, "bos_token_id"), geti(-1, "eos_token_id"), geti(-1, "pad_token_id")
	if !fl.hf {
		md := fl.c.Metadata
		cfg.FFN = mdInt(md, "bloom.feed_forward_length", 4*d)
		cfg.BOS, cfg.EOS = mdInt(md, "tokenizer.ggml.bos_token_id", -1), mdInt(md, "tokenizer.ggml.eos_token_id", -1)
		cfg.PAD = mdInt(md, "tokenizer.ggml.padding_token_id", -1)
		if kv := mdInt(md, "bloom.attention.head_count_kv", cfg.Heads); kv != cfg.Heads {
			return nil, tensor.Unsupported("model: %s: bloom with %d kv heads for %d heads is not supported", fl.c.Path, kv, cfg.Heads)
		}
	}
	if err := checkBloom(&cfg, fl.c.Path); err != nil {
		return nil, err
	}
	// pretraining_tp with slow_but_exact only splits the output projections
	// into slices summed in turn: the same sums in another order.
	layerNorm := func(role string, i int) norm {
		return fl.layerNorm(strings.TrimSuffix(fl.name(role, i, ".weight"), ".weight"), d, cfg.Eps)
	}
	w := bloomWeights{
		TokenEmbd: fl.matrix(fl.name("token_embd", -1, ".weight"), cfg.Vocab, d),
		EmbdNorm:  layerNorm("token_embd_norm", -1),
		FinalNorm: layerNorm("output_norm", -1),
	}
	for i := 0; i < cfg.Layers; i++ {
		w.Blocks = append(w.Blocks, bloomBlock{
			AttnNorm: layerNorm("blk.{bid}.attn_norm", i),
			QKV:      fl.lin("blk.{bid}.attn_qkv", i, 3*d, d),
			O:        fl.lin("blk.{bid}.attn_output", i, d, d),
			FFNNorm:  layerNorm("blk.{bid}.ffn_norm", i),
			Up:       fl.lin("blk.{bid}.ffn_up", i, cfg.FFN, d),
			Down:     fl.lin("blk.{bid}.ffn_down", i, d, cfg.FFN),
		})
	}
	w.Output, cfg.TiedEmbeddings = w.TokenEmbd, true
	if fl.hf {
		if tied, ok := c.Bool("tie_word_embeddings"); ok && !tied {
			w.Output, cfg.TiedEmbeddings = fl.matrix("lm_head.weight", cfg.Vocab, d), false
		}
	} else if fl.has("output.weight") {
		w.Output, cfg.TiedEmbeddings = fl.matrix("output.weight", cfg.Vocab, d), false
	}
	if fl.err != nil {
		return nil, fl.err
	}
	postLN, _ := c.Bool("apply_residual_connection_post_layernorm")
	var regroup func(dst, src []float32)
	if t, ok := fl.f.Tensor("blk.{bid}.attn_qkv"); ok && fl.hf {
		var err error
		regroup, _, err = t.Layout.Transform(fl.name("blk.{bid}.attn_qkv", 0, ".weight"), tensor.Shape{int64(3 * d)},
			int64(cfg.Heads), int64(cfg.Heads), false)
		if err != nil {
			return nil, fmt.Errorf("model: %s: %w", fl.c.Path, err)
		}
	}
	return newBloom(cfg, w, regroup, postLN && fl.hf), nil
}

func newBloom(cfg Config, w bloomWeights, regroup func(dst, src []float32), postLNResidual bool) *Model {
	m := &Model{cfg: cfg}
	m.impl = &bloom{cfg: &m.cfg, w: w, slopes: alibiSlopes(cfg.Heads), regroup: regroup, postLNResidual: postLNResidual}
	return m
}

// alibiSlopes returns the ALiBi slope of each of n heads as transformers'
// build_alibi_tensor computes them: the bases in float64 rounded to
// float32, their integer powers rounded to float32. For n a power of two
// the slopes are 2^(−8/n), 2^(−16/n), …; otherwise the first P (largest
// power of two below n) follow that rule for P and the other n−P heads take
// every other slope of the rule for 2P.
func alibiSlopes(n int) []float32 {
	if n <= 0 {
		return nil
	}
	p := 1 << (bits.Len(uint(n)) - 1)
	base := func(p int) float64 {
		return float64(float32(math.Pow(2, -math.Pow(2, -(math.Log2(float64(p))-3)))))
	}
	out := make([]float32, 0, n)
	b := base(p)
	for k := 1; k <= p; k++ {
		out = append(out, float32(math.Pow(b, float64(k))))
	}
	if p != n {
		b = base(2 * p)
		for k := 1; len(out) < n; k += 2 {
			out = append(out, float32(math.Pow(b, float64(k))))
		}
	}
	return out
}

// alibiBias returns the ALiBi term of kernels.AttentionParams.Bias over Tk
// keys, m_h·p_j, with p_j key j's position among the real keys (mask nil:
// p_j = j). It keeps one position per key, never a Tq×Tk matrix.
func alibiBias(slopes []float32, mask []bool, Tk int) func(h, i, j int) float32 {
	pos := make([]float32, Tk)
	n := 0
	for j := range pos {
		if mask == nil || mask[j] {
			pos[j] = float32(n)
			n++
		}
	}
	return func(h, _, j int) float32 { return slopes[h] * pos[j] }
}

// bloomGELU is transformers' bloom_gelu_forward,
//
//	gelu_b(x) = x·0.5·(1 + tanh(0.79788456·x·(1 + 0.044715·x·x))),
//
// evaluated in float32 in the order torch does; its constant 0.79788456
// is √(2/π) cut to 8 digits, unlike GELUTanh's.
func bloomGELU(x []float32) {
	for i, v := range x {
		// The conversions keep each product rounded on its own (no FMA).
		half := float32(v * 0.5)
		inner := float32(float32(0.79788456*v) * (1 + float32(float32(0.044715*v)*v)))
		x[i] = half * (1 + float32(math.Tanh(float64(inner))))
	}
}

func (m *bloom) step(s *Session, tokens []int, tr *Trace, lastOnly bool) (hidden, logits []float32, err error) {
	c, w := m.cfg, &m.w
	T, d, H, D := len(tokens), c.DModel, c.Heads, c.HeadDim
	pos0 := s.cache.Len

	// x₀ = LN_e(E[tok])
	x := make([]float32, T*d)
	embed(x, w.TokenEmbd, tokens)
	w.EmbdNorm.apply(x, x, T, d)

	h := make([]float32, T*d)
	qkv := make([]float32, T*3*d)
	q, k, v := make([]float32, T*d), make([]float32, T*d), make([]float32, T*d)
	att, o := make([]float32, T*d), make([]float32, T*d)
	ff := make([]float32, T*c.FFN)
	p := kernels.AttentionParams{Heads: H, KVHeads: H, HeadDim: D, Scale: invSqrt(D), Causal: true, QPos0: pos0,
		KeyMask: s.mask, Bias: alibiBias(m.slopes, s.mask, pos0+T)}
	for l := range w.Blocks {
		b := &w.Blocks[l]
		// a = x + W_o·Attn(LN₁(x)) + b_o, scores with the ALiBi term
		b.AttnNorm.apply(h, x, T, d)
		b.QKV.apply(qkv, h, T)
		m.splitQKV(q, k, v, qkv, T)
		K, V := s.cache.add(l, k, v)
		attend(att, q, K, V, T, pos0+T, p, tr, l)
		b.O.apply(o, att, T)
		m.residual(x, h, o)
		// x' = a + W_down·gelu_b(W_up·LN₂(a) + b_up) + b_down
		b.FFNNorm.apply(h, x, T, d)
		b.Up.apply(ff, h, T)
		if err := activate(ff, m.cfg.Activation); err != nil {
			return nil, nil, err
		}
		b.Down.apply(o, ff, T)
		m.residual(x, h, o)
		recordLayer(tr, x, d)
	}
	w.FinalNorm.apply(h, x, T, d)
	return h, lmHead(h, T, d, w.Output, lastOnly, nil), nil
}

// splitQKV copies the fused projection [T][3d] into q, k, v [T][d]
// (regrouped first when it comes in Hugging Face's per-head order).
func (m *bloom) splitQKV(q, k, v, qkv []float32, T int) {
	d := m.cfg.DModel
	var grouped []float32
	if m.regroup != nil {
		grouped = make([]float32, 3*d)
	}
	for t := 0; t < T; t++ {
		row := qkv[t*3*d : (t+1)*3*d]
		if grouped != nil {
			m.regroup(grouped, row)
			row = grouped
		}
		copy(q[t*d:(t+1)*d], row[:d])
		copy(k[t*d:(t+1)*d], row[d:2*d])
		copy(v[t*d:(t+1)*d], row[2*d:])
	}
}

// residual sets x to the block's output: x + o, or, with
// apply_residual_connection_post_layernorm, LN(x) + o where ln holds LN(x).
func (m *bloom) residual(x, ln, o []float32) {
	if m.postLNResidual {
		copy(x, ln)
	}
	kernels.Add(x, o)
}
