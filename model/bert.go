package model

import (
	"fmt"
	"math"
	"strings"

	spec "github.com/tfconv/tfconv/arch"
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

// loadBert loads BERT by role from either naming (arch.BERT states both,
// with and without the "bert." prefix of BertFor* checkpoints).
func loadBert(fl familyLoader, c spec.Config) (*Model, error) {
	geti := func(def int, keys ...string) int {
		if v, ok := c.Int(keys...); ok && v >= 0 && v < 1<<31 {
			return int(v)
		}
		return def
	}
	d := geti(0, "hidden_size")
	heads := geti(0, "num_attention_heads")
	eps := float32(1e-12)
	if v, ok := c.Float("layer_norm_eps"); ok {
		eps = float32(v)
	}
	cfg := Config{Arch: "bert", Layers: geti(0, "num_hidden_layers"), DModel: d,
		Vocab: geti(fl.rowsOf(fl.name("token_embd", -1, ".weight")), "vocab_size"),
		Heads: heads, KVHeads: heads, HeadDim: d / max(heads, 1), FFN: geti(0, "intermediate_size"),
		MaxPositions: geti(0, "max_position_embeddings"), Eps: eps, Activation: "gelu",
		TypeVocab: geti(2, "type_vocab_size"), EncoderOnly: true, BOS: -1, EOS: -1, PAD: geti(-1, "pad_token_id"), ForcedEOS: -1}
	if fl.hf {
		name, _ := c.Str("hidden_act")
		act, err := hfActivation(name)
		if err != nil {
			return nil, err
		}
		cfg.Activation = act
		if pe, _ := c.Str("position_embedding_type"); pe != "" && pe != "absolute" {
			return nil, tensor.Unsupported("model: %s: bert position_embedding_type %q is not supported", fl.c.Path, pe)
		}
	} else {
		md := fl.c.Metadata
		if mdBool(md, "bert.attention.causal", false) {
			return nil, tensor.Unsupported("model: %s: causal bert is not supported", fl.c.Path)
		}
		cfg.PAD = mdInt(md, "tokenizer.ggml.padding_token_id", -1)
	}
	if err := checkDims(&cfg, fl.c.Path); err != nil {
		return nil, err
	}
	if cfg.TypeVocab < 1 || cfg.TypeVocab > 1<<20 {
		return nil, fmt.Errorf("model: %s: bert type_vocab_size %d out of range", fl.c.Path, cfg.TypeVocab)
	}
	lin := func(role string, i, out, in int) linear { return fl.lin(role, i, out, in) }
	layerNorm := func(role string, i int) norm {
		return fl.layerNorm(strings.TrimSuffix(fl.name(role, i, ".weight"), ".weight"), d, cfg.Eps)
	}
	w := bertWeights{
		TokenEmbd: fl.matrix(fl.name("token_embd", -1, ".weight"), cfg.Vocab, d),
		PosEmbd:   fl.matrix(fl.name("position_embd", -1, ".weight"), cfg.MaxPositions, d),
		TypeEmbd:  fl.matrix(fl.name("token_types", -1, ".weight"), cfg.TypeVocab, d),
		EmbdNorm:  layerNorm("token_embd_norm", -1),
	}
	for i := 0; i < cfg.Layers; i++ {
		w.Blocks = append(w.Blocks, bertBlock{
			Q:        lin("blk.{bid}.attn_q", i, d, d),
			K:        lin("blk.{bid}.attn_k", i, d, d),
			V:        lin("blk.{bid}.attn_v", i, d, d),
			O:        lin("blk.{bid}.attn_output", i, d, d),
			AttnNorm: layerNorm("blk.{bid}.attn_output_norm", i),
			Up:       lin("blk.{bid}.ffn_up", i, cfg.FFN, d),
			Down:     lin("blk.{bid}.ffn_down", i, d, cfg.FFN),
			OutNorm:  layerNorm("blk.{bid}.layer_output_norm", i),
		})
	}
	// The pooler is Hugging Face's only (a GGUF has none, and the schema
	// drops it): its name follows the embedding's prefix.
	if pooler := strings.TrimSuffix(fl.name("token_embd", -1, ".weight"), "embeddings.word_embeddings.weight") + "pooler.dense"; fl.hf && fl.has(pooler+".weight") {
		pl := fl.loader.lin(pooler, d, d)
		w.Pooler = &pl
	}
	if fl.err != nil {
		return nil, fl.err
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
