package model

import (
	"fmt"
	"math"

	"github.com/tfconv/tfconv/kernels"
	"github.com/tfconv/tfconv/tensor"
)

// BERT (Devlin et al. 2019): an encoder only. Token, learned position and
// token-type embeddings summed and LayerNormed; post-LayerNorm blocks with
// bidirectional attention and an erf-GELU feed-forward; a pooler on the
// first token.
//
//	x₀ = LN_e(E[tok] + T[type] + P[pos])
//	a  = LN₁(x + Attn(x)·W_o + b_o)
//	x' = LN₂(a + W_down·gelu(W_up·a + b_up) + b_down)
//	pooled = tanh(W_p·x_L[0] + b_p)

// bertWeights are BERT's weights ([out][in]).
type bertWeights struct {
	TokenEmbd *kernels.Matrix // [vocab][d]
	PosEmbd   *kernels.Matrix // [max_positions][d]
	TypeEmbd  *kernels.Matrix // [type_vocab][d]
	EmbdNorm  norm            // [d]
	Blocks    []bertBlock
	Pooler    *linear // [d][d], bias [d]; nil when the checkpoint has none
}

type bertBlock struct {
	Q, K, V  linear // [d][d], bias [d]
	O        linear // [d][d], bias [d]
	AttnNorm norm   // [d]
	Up       linear // [ffn][d], bias [ffn]
	Down     linear // [d][ffn], bias [d]
	OutNorm  norm   // [d]
}

type bert struct {
	cfg *Config
	w   bertWeights
}

func loadBertHF(l *loader, hc hfConfig) (*Model, error) {
	d := hc.int(0, "hidden_size")
	heads := hc.int(0, "num_attention_heads")
	cfg := Config{Arch: "bert", Layers: hc.int(0, "num_hidden_layers"), DModel: d, Vocab: hc.int(0, "vocab_size"),
		Heads: heads, KVHeads: heads, HeadDim: d / max(heads, 1), FFN: hc.int(0, "intermediate_size"),
		MaxPositions: hc.int(0, "max_position_embeddings"), Eps: float32(hc.float(1e-12, "layer_norm_eps")),
		TypeVocab: hc.int(2, "type_vocab_size"), EncoderOnly: true, BOS: -1, EOS: -1, PAD: hc.int(-1, "pad_token_id"), ForcedEOS: -1}
	act, err := hfActivation(hc.str("hidden_act"))
	if err != nil {
		return nil, err
	}
	cfg.Activation = act
	if pe := hc.str("position_embedding_type"); pe != "" && pe != "absolute" {
		return nil, tensor.Unsupported("model: %s: bert position_embedding_type %q is not supported", l.c.Path, pe)
	}
	if err := checkDims(&cfg, l.c.Path); err != nil {
		return nil, err
	}
	if cfg.TypeVocab < 1 || cfg.TypeVocab > 1<<20 {
		return nil, fmt.Errorf("model: %s: bert type_vocab_size %d out of range", l.c.Path, cfg.TypeVocab)
	}
	// BertModel checkpoints have no prefix; BertFor* heads add "bert.".
	p := ""
	if l.has("bert.embeddings.word_embeddings.weight") {
		p = "bert"
	}
	n := func(s ...string) string { return joinName(append([]string{p}, s...)...) }
	w := bertWeights{
		TokenEmbd: l.matrix(n("embeddings.word_embeddings.weight"), cfg.Vocab, d),
		PosEmbd:   l.matrix(n("embeddings.position_embeddings.weight"), cfg.MaxPositions, d),
		TypeEmbd:  l.matrix(n("embeddings.token_type_embeddings.weight"), cfg.TypeVocab, d),
		EmbdNorm:  l.layerNorm(n("embeddings.LayerNorm"), d, cfg.Eps),
	}
	for i := 0; i < cfg.Layers; i++ {
		b := func(s string) string { return n("encoder.layer", fmt.Sprint(i), s) }
		w.Blocks = append(w.Blocks, bertBlock{
			Q:        l.lin(b("attention.self.query"), d, d),
			K:        l.lin(b("attention.self.key"), d, d),
			V:        l.lin(b("attention.self.value"), d, d),
			O:        l.lin(b("attention.output.dense"), d, d),
			AttnNorm: l.layerNorm(b("attention.output.LayerNorm"), d, cfg.Eps),
			Up:       l.lin(b("intermediate.dense"), cfg.FFN, d),
			Down:     l.lin(b("output.dense"), d, cfg.FFN),
			OutNorm:  l.layerNorm(b("output.LayerNorm"), d, cfg.Eps),
		})
	}
	if l.has(n("pooler.dense.weight")) {
		pl := l.lin(n("pooler.dense"), d, d)
		w.Pooler = &pl
	}
	if l.err != nil {
		return nil, l.err
	}
	return newBert(cfg, w), nil
}

func loadBertGGUF(l *loader, md tensor.Metadata) (*Model, error) {
	d := mdInt(md, "bert.embedding_length", 0)
	heads := mdInt(md, "bert.attention.head_count", 0)
	cfg := Config{Arch: "bert", Layers: mdInt(md, "bert.block_count", 0), DModel: d, Vocab: l.rowsOf("token_embd.weight"),
		Heads: heads, KVHeads: heads, HeadDim: d / max(heads, 1), FFN: mdInt(md, "bert.feed_forward_length", 0),
		MaxPositions: mdInt(md, "bert.context_length", 0), Eps: float32(mdFloat(md, "bert.attention.layer_norm_epsilon", 1e-12)),
		Activation: "gelu", EncoderOnly: true, BOS: -1, EOS: -1, PAD: mdInt(md, "tokenizer.ggml.padding_token_id", -1), ForcedEOS: -1}
	if mdBool(md, "bert.attention.causal", false) {
		return nil, tensor.Unsupported("model: %s: causal bert is not supported", l.c.Path)
	}
	if err := checkDims(&cfg, l.c.Path); err != nil {
		return nil, err
	}
	cfg.TypeVocab = max(l.rowsOf("token_types.weight"), 1)
	w := bertWeights{
		TokenEmbd: l.matrix("token_embd.weight", cfg.Vocab, d),
		PosEmbd:   l.matrix("position_embd.weight", cfg.MaxPositions, d),
		TypeEmbd:  l.matrix("token_types.weight", cfg.TypeVocab, d),
		EmbdNorm:  l.layerNorm("token_embd_norm", d, cfg.Eps),
	}
	for i := 0; i < cfg.Layers; i++ {
		w.Blocks = append(w.Blocks, bertBlock{
			Q:        l.lin(blk(i, "attn_q"), d, d),
			K:        l.lin(blk(i, "attn_k"), d, d),
			V:        l.lin(blk(i, "attn_v"), d, d),
			O:        l.lin(blk(i, "attn_output"), d, d),
			AttnNorm: l.layerNorm(blk(i, "attn_output_norm"), d, cfg.Eps),
			Up:       l.lin(blk(i, "ffn_up"), cfg.FFN, d),
			Down:     l.lin(blk(i, "ffn_down"), d, cfg.FFN),
			OutNorm:  l.layerNorm(blk(i, "layer_output_norm"), d, cfg.Eps),
		})
	}
	if l.err != nil {
		return nil, l.err
	}
	return newBert(cfg, w), nil
}

func newBert(cfg Config, w bertWeights) *Model {
	m := &Model{cfg: cfg}
	m.impl = &bert{cfg: &m.cfg, w: w}
	return m
}

// step runs the whole encoder over tokens, with the token types in s.types
// (nil: all 0) and the padding mask in s.mask (nil: none).
func (m *bert) step(s *Session, tokens []int, tr *Trace, lastOnly bool) (hidden, logits []float32, err error) {
	c, w := m.cfg, &m.w
	T, d, H, D := len(tokens), c.DModel, c.Heads, c.HeadDim
	if s.types != nil && len(s.types) != T {
		return nil, nil, fmt.Errorf("model: %d token types for %d tokens", len(s.types), T)
	}

	// x₀ = LN_e((E[tok] + T[type]) + P[pos]), summed in transformers' order.
	x := make([]float32, T*d)
	embed(x, w.TokenEmbd, tokens)
	e := make([]float32, d)
	w.TypeEmbd.Row(e, 0)
	for t := 0; t < T; t++ {
		if s.types != nil && (t == 0 || s.types[t] != s.types[t-1]) {
			w.TypeEmbd.Row(e, s.types[t])
		}
		kernels.Add(x[t*d:(t+1)*d], e)
	}
	for t := 0; t < T; t++ {
		w.PosEmbd.Row(e, t)
		kernels.Add(x[t*d:(t+1)*d], e)
	}
	w.EmbdNorm.apply(x, x, T, d)

	q, k, v := make([]float32, T*d), make([]float32, T*d), make([]float32, T*d)
	att, o := make([]float32, T*d), make([]float32, T*d)
	ff := make([]float32, T*c.FFN)
	for l := range w.Blocks {
		b := &w.Blocks[l]
		// a = LN₁(x + Attn(x)·W_o + b_o)
		b.Q.apply(q, x, T)
		b.K.apply(k, x, T)
		b.V.apply(v, x, T)
		attend(att, q, k, v, T, T, kernels.AttentionParams{Heads: H, KVHeads: H, HeadDim: D, Scale: invSqrt(D), KeyMask: s.mask}, tr, l)
		b.O.apply(o, att, T)
		kernels.Add(o, x)
		b.AttnNorm.apply(x, o, T, d)
		// x' = LN₂(a + W_down·act(W_up·a + b_up) + b_down)
		b.Up.apply(ff, x, T)
		if err := activate(ff, c.Activation); err != nil {
			return nil, nil, err
		}
		b.Down.apply(o, ff, T)
		kernels.Add(o, x)
		b.OutNorm.apply(x, o, T, d)
		recordLayer(tr, x, d)
	}
	return x, nil, nil
}

// pooled returns tanh(W_p·h[0] + b_p), BERT's sentence vector.
func (m *bert) pooled(hidden []float32) []float32 {
	if m.w.Pooler == nil {
		return nil
	}
	out := make([]float32, m.cfg.DModel)
	m.w.Pooler.apply(out, hidden[:m.cfg.DModel], 1)
	for i, v := range out {
		out[i] = float32(math.Tanh(float64(v)))
	}
	return out
}
