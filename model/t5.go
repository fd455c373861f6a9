package model

import (
	"fmt"
	spec "github.com/tfconv/tfconv/arch"
	"math"
	"strings"

	"github.com/tfconv/tfconv/kernels"
)

// T5 (Raffel et al. 2020): an encoder-decoder with no position embeddings;
// instead a learned bias per head and relative-position bucket is added to
// every attention score (computed by the first block of each stack and
// shared by the rest). Pre-norm with an RMSNorm that does not subtract the
// mean and has no bias; no 1/√d scaling of the scores; bias-free
// projections; a ReLU (or gated-GELU in v1.1) FFN; the tied LM head rescales
// the decoder output by d_model^-0.5.
//
//	x' = x + Attn(RMS(x)) + bias[bucket(j−i)]
//	x'' = x' + W_o·relu(W_i·RMS(x'))
//	logits = (RMS_f(y_L)·d^-0.5)·Eᵀ

// t5Weights are T5's weights ([out][in]).
type t5Weights struct {
	TokenEmbd *kernels.Matrix // [vocab][d], shared
	EncRel    []float32       // [buckets][heads]: encoder relative attention bias
	DecRel    []float32       // [buckets][heads]: decoder self-attention bias
	Encoder   []t5Block
	Decoder   []t5Block
	EncNorm   norm            // [d]
	DecNorm   norm            // [d]
	Output    *kernels.Matrix // [vocab][d]; TokenEmbd when tied
}

type t5Block struct {
	SelfNorm   norm   // [d]
	Q, K, V    linear // [heads·d_kv][d], no bias
	O          linear // [d][heads·d_kv]
	CrossNorm  norm   // [d], decoder only
	CQ, CK, CV linear // decoder only
	CO         linear
	FFNNorm    norm   // [d]
	Wi         linear // [ffn][d] (wi_0 for gated FFNs)
	WiGate     linear // [ffn][d] wi_1 (gated FFNs only; W nil otherwise)
	Wo         linear // [d][ffn]
}

type t5 struct {
	cfg   *Config
	w     t5Weights
	gated bool
}

// loadT5 loads T5 by role from either naming (arch.T5 states both; a GGUF's
// config comes from its t5.* keys and tensors).
func loadT5(fl familyLoader, c spec.Config) (*Model, error) {
	geti := func(def int, keys ...string) int {
		if v, ok := c.Int(keys...); ok && v >= 0 && v < 1<<31 {
			return int(v)
		}
		return def
	}
	d := geti(0, "d_model")
	heads := geti(0, "num_heads")
	eps := float32(1e-6)
	if v, ok := c.Float("layer_norm_epsilon"); ok {
		eps = float32(v)
	}
	tied := true
	if b, ok := c.Bool("tie_word_embeddings"); ok {
		tied = b
	}
	cfg := Config{Arch: "t5", Layers: geti(geti(0, "num_layers"), "num_decoder_layers"), EncoderLayers: geti(0, "num_layers"),
		DModel: d, Vocab: geti(fl.rowsOf(fl.name("token_embd", -1, ".weight")), "vocab_size"), Heads: heads, KVHeads: heads,
		HeadDim: geti(0, "d_kv"), FFN: geti(0, "d_ff"), Eps: eps,
		RelBuckets: geti(32, "relative_attention_num_buckets"), RelMaxDistance: geti(128, "relative_attention_max_distance"),
		TiedEmbeddings: tied, EncoderDecoder: true,
		BOS: -1, EOS: geti(-1, "eos_token_id"), PAD: geti(-1, "pad_token_id"),
		DecoderStart: geti(0, "decoder_start_token_id"), ForcedEOS: -1}
	m := &t5{}
	proj, _ := c.Str("feed_forward_proj")
	if proj == "" {
		proj = "relu"
	}
	if strings.HasPrefix(proj, "gated-") {
		m.gated, proj = true, strings.TrimPrefix(proj, "gated-")
	}
	act, err := hfActivation(proj)
	if err != nil {
		return nil, err
	}
	cfg.Activation = act
	if m.gated {
		cfg.Activation = "gated-" + act
	}
	if err := checkDims(&cfg, fl.c.Path); err != nil {
		return nil, err
	}
	if cfg.RelBuckets < 2 || cfg.RelMaxDistance < 1 {
		return nil, fmt.Errorf("model: %s: t5 relative buckets %d, max distance %d", fl.c.Path, cfg.RelBuckets, cfg.RelMaxDistance)
	}
	inner := cfg.Heads * cfg.HeadDim
	w := &m.w
	w.TokenEmbd = fl.matrix(fl.name("token_embd", -1, ".weight"), cfg.Vocab, d)
	rms := func(role string, i int) norm {
		if n := fl.norm(role, i, d, cfg.Eps, true); n != nil {
			return *n
		}
		fl.fail(fmt.Errorf("model: %s: tensor %q missing", fl.c.Path, fl.name(role, i, ".weight")))
		return norm{}
	}
	bare := func(role string, i, out, in int) linear {
		return linear{W: fl.matrix(fl.name(role, i, ".weight"), out, in)}
	}
	block := func(st string, i int, cross bool) t5Block {
		b := "enc.blk.{bid}."
		if st == "dec" {
			b = "dec.blk.{bid}."
		}
		var x t5Block
		x.SelfNorm = rms(b+"attn_norm", i)
		x.Q, x.K, x.V = bare(b+"attn_q", i, inner, d), bare(b+"attn_k", i, inner, d), bare(b+"attn_v", i, inner, d)
		x.O = bare(b+"attn_o", i, d, inner)
		if cross {
			x.CrossNorm = rms(b+"cross_attn_norm", i)
			x.CQ, x.CK, x.CV = bare(b+"cross_attn_q", i, inner, d), bare(b+"cross_attn_k", i, inner, d), bare(b+"cross_attn_v", i, inner, d)
			x.CO = bare(b+"cross_attn_o", i, d, inner)
		}
		x.FFNNorm = rms(b+"ffn_norm", i)
		if m.gated {
			x.Wi, x.WiGate = bare(b+"ffn_gate", i, cfg.FFN, d), bare(b+"ffn_up", i, cfg.FFN, d)
		} else {
			x.Wi = bare(b+"ffn_up", i, cfg.FFN, d)
		}
		x.Wo = bare(b+"ffn_down", i, d, cfg.FFN)
		return x
	}
	for i := 0; i < cfg.EncoderLayers; i++ {
		w.Encoder = append(w.Encoder, block("enc", i, false))
	}
	for i := 0; i < cfg.Layers; i++ {
		w.Decoder = append(w.Decoder, block("dec", i, true))
	}
	w.EncRel = fl.vector(fl.name("enc.blk.{bid}.attn_rel_b", 0, ".weight"), cfg.RelBuckets*cfg.Heads)
	w.DecRel = fl.vector(fl.name("dec.blk.{bid}.attn_rel_b", 0, ".weight"), cfg.RelBuckets*cfg.Heads)
	w.EncNorm, w.DecNorm = rms("enc.output_norm", -1), rms("dec.output_norm", -1)
	w.Output = w.TokenEmbd
	if !cfg.TiedEmbeddings {
		w.Output = fl.matrix(fl.name("output", -1, ".weight"), cfg.Vocab, d)
	}
	if fl.err != nil {
		return nil, fl.err
	}
	mm := &Model{cfg: cfg}
	m.cfg = &mm.cfg
	mm.impl = m
	return mm, nil
}

// relativeBucket is transformers' T5Attention._relative_position_bucket for
// rel = key position − query position: half the buckets for each direction
// when bidirectional, exact buckets for small distances and logarithmic
// ones up to maxDistance. The logarithm is taken in float32 as torch does.
func relativeBucket(rel int, bidirectional bool, buckets, maxDistance int) int {
	b := 0
	if bidirectional {
		buckets /= 2
		if rel > 0 {
			b += buckets
		}
		if rel < 0 {
			rel = -rel
		}
	} else {
		rel = -min(rel, 0)
	}
	maxExact := buckets / 2
	if rel < maxExact {
		return b + rel
	}
	f := float32(math.Log(float64(float32(rel)/float32(maxExact)))) / float32(math.Log(float64(maxDistance)/float64(maxExact))) * float32(buckets-maxExact)
	large := maxExact + int(f)
	return b + min(large, buckets-1)
}

// relBias returns the attention bias function of a stack: bias table rel
// [buckets][heads], queries at absolute positions qpos0+i, keys at j.
func (m *t5) relBias(rel []float32, bidirectional bool, qpos0, Tq, Tk int) func(h, i, j int) float32 {
	c := m.cfg
	// One bucket per distance j−(qpos0+i), from −(qpos0+Tq−1) to Tk−1.
	lo := -(qpos0 + Tq - 1)
	bucket := make([]int, Tk-lo)
	for r := range bucket {
		bucket[r] = relativeBucket(r+lo, bidirectional, c.RelBuckets, c.RelMaxDistance)
	}
	H := c.Heads
	return func(h, i, j int) float32 { return rel[bucket[j-(qpos0+i)-lo]*H+h] }
}

// ffn sets x += W_o·act(W_i·RMS(x)) (gated: act(W_i0·n) ⊙ W_i1·n).
func (m *t5) ffn(b *t5Block, x []float32, T int) error {
	d := m.cfg.DModel
	n := make([]float32, T*d)
	b.FFNNorm.apply(n, x, T, d)
	ff := make([]float32, T*m.cfg.FFN)
	b.Wi.apply(ff, n, T)
	act := strings.TrimPrefix(m.cfg.Activation, "gated-")
	if err := activate(ff, act); err != nil {
		return err
	}
	if m.gated {
		g := make([]float32, T*m.cfg.FFN)
		b.WiGate.apply(g, n, T)
		kernels.Mul(ff, g)
	}
	o := make([]float32, T*d)
	b.Wo.apply(o, ff, T)
	kernels.Add(x, o)
	return nil
}

// params are T5's attention parameters: unscaled scores, an optional
// position bias, and a key mask (nil: every key real).
func (m *t5) params(causal bool, qpos0 int, bias func(h, i, j int) float32, mask []bool) kernels.AttentionParams {
	c := m.cfg
	return kernels.AttentionParams{Heads: c.Heads, KVHeads: c.Heads, HeadDim: c.HeadDim, Scale: 1,
		Causal: causal, QPos0: qpos0, Bias: bias, KeyMask: mask}
}

func (m *t5) encode(s *Session, tokens []int) error {
	c, w := m.cfg, &m.w
	T, d, inner := len(tokens), c.DModel, c.Heads*c.HeadDim
	x := make([]float32, T*d)
	embed(x, w.TokenEmbd, tokens)
	n := make([]float32, T*d)
	q, k, v := make([]float32, T*inner), make([]float32, T*inner), make([]float32, T*inner)
	att, o := make([]float32, T*inner), make([]float32, T*d)
	bias := m.relBias(w.EncRel, true, 0, T, T)
	for l := range w.Encoder {
		b := &w.Encoder[l]
		// x' = x + SelfAttn(RMS(x)) with the relative position bias
		b.SelfNorm.apply(n, x, T, d)
		b.Q.apply(q, n, T)
		b.K.apply(k, n, T)
		b.V.apply(v, n, T)
		kernels.Attention(att, q, k, v, T, T, m.params(false, 0, bias, s.encMask))
		b.O.apply(o, att, T)
		kernels.Add(x, o)
		if err := m.ffn(b, x, T); err != nil {
			return err
		}
	}
	w.EncNorm.apply(x, x, T, d)
	s.encLen = T
	s.crossK, s.crossV = make([][]float32, len(w.Decoder)), make([][]float32, len(w.Decoder))
	for l := range w.Decoder {
		b := &w.Decoder[l]
		s.crossK[l], s.crossV[l] = make([]float32, T*inner), make([]float32, T*inner)
		b.CK.apply(s.crossK[l], x, T)
		b.CV.apply(s.crossV[l], x, T)
	}
	s.encoded = true
	return nil
}

func (m *t5) step(s *Session, tokens []int, tr *Trace, lastOnly bool) (hidden, logits []float32, err error) {
	c, w := m.cfg, &m.w
	T, d, inner := len(tokens), c.DModel, c.Heads*c.HeadDim
	pos0 := s.cache.Len
	y := make([]float32, T*d)
	embed(y, w.TokenEmbd, tokens)
	n := make([]float32, T*d)
	q, k, v := make([]float32, T*inner), make([]float32, T*inner), make([]float32, T*inner)
	att, o := make([]float32, T*inner), make([]float32, T*d)
	bias := m.relBias(w.DecRel, false, pos0, T, pos0+T)
	for l := range w.Decoder {
		b := &w.Decoder[l]
		// y' = y + CausalSelfAttn(RMS(y)) with the unidirectional bias
		b.SelfNorm.apply(n, y, T, d)
		b.Q.apply(q, n, T)
		b.K.apply(k, n, T)
		b.V.apply(v, n, T)
		K, V := s.cache.add(l, k, v)
		attend(att, q, K, V, T, pos0+T, m.params(true, pos0, bias, s.mask), tr, l)
		b.O.apply(o, att, T)
		kernels.Add(y, o)
		// y'' = y' + CrossAttn(RMS(y'), enc), no position bias
		b.CrossNorm.apply(n, y, T, d)
		b.CQ.apply(q, n, T)
		kernels.Attention(att, q, s.crossK[l], s.crossV[l], T, s.encLen, m.params(false, 0, nil, s.encMask))
		b.CO.apply(o, att, T)
		kernels.Add(y, o)
		if err := m.ffn(b, y, T); err != nil {
			return nil, nil, err
		}
		recordLayer(tr, y, d)
	}
	w.DecNorm.apply(y, y, T, d)
	out := y
	if c.TiedEmbeddings {
		// The tied LM head sees the output rescaled by d_model^-0.5.
		out = append([]float32(nil), y...)
		kernels.Scale(out, float32(math.Pow(float64(d), -0.5)))
	}
	return y, lmHead(out, T, d, w.Output, lastOnly, nil), nil
}
