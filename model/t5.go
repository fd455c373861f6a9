package model

import (
	"fmt"
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

func loadT5HF(l *loader, hc hfConfig) (*Model, error) {
	d := hc.int(0, "d_model")
	heads := hc.int(0, "num_heads")
	cfg := Config{Arch: "t5", Layers: hc.int(hc.int(0, "num_layers"), "num_decoder_layers"), EncoderLayers: hc.int(0, "num_layers"),
		DModel: d, Vocab: hc.int(0, "vocab_size"), Heads: heads, KVHeads: heads, HeadDim: hc.int(0, "d_kv"),
		FFN: hc.int(0, "d_ff"), Eps: float32(hc.float(1e-6, "layer_norm_epsilon")),
		RelBuckets: hc.int(32, "relative_attention_num_buckets"), RelMaxDistance: hc.int(128, "relative_attention_max_distance"),
		TiedEmbeddings: hc.bool(true, "tie_word_embeddings"), EncoderDecoder: true,
		BOS: -1, EOS: hc.int(-1, "eos_token_id"), PAD: hc.int(-1, "pad_token_id"),
		DecoderStart: hc.int(0, "decoder_start_token_id"), ForcedEOS: -1}
	m := &t5{}
	proj := hc.str("feed_forward_proj")
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
	if err := checkDims(&cfg, l.c.Path); err != nil {
		return nil, err
	}
	if cfg.RelBuckets < 2 || cfg.RelMaxDistance < 1 {
		return nil, fmt.Errorf("model: %s: t5 relative buckets %d, max distance %d", l.c.Path, cfg.RelBuckets, cfg.RelMaxDistance)
	}
	inner := cfg.Heads * cfg.HeadDim
	w := &m.w
	w.TokenEmbd = l.matrix("shared.weight", cfg.Vocab, d)
	rms := func(name string) norm { return l.rmsNorm(name, d, cfg.Eps) }
	bare := func(name string, out, in int) linear { return linear{W: l.matrix(name+".weight", out, in)} }
	ffn := func(b *t5Block, p string) {
		b.FFNNorm = rms(p + ".layer_norm")
		if m.gated {
			b.Wi, b.WiGate = bare(p+".DenseReluDense.wi_0", cfg.FFN, d), bare(p+".DenseReluDense.wi_1", cfg.FFN, d)
		} else {
			b.Wi = bare(p+".DenseReluDense.wi", cfg.FFN, d)
		}
		b.Wo = bare(p+".DenseReluDense.wo", d, cfg.FFN)
	}
	for i := 0; i < cfg.EncoderLayers; i++ {
		p := fmt.Sprintf("encoder.block.%d.layer.", i)
		var b t5Block
		b.SelfNorm = rms(p + "0.layer_norm")
		b.Q, b.K, b.V = bare(p+"0.SelfAttention.q", inner, d), bare(p+"0.SelfAttention.k", inner, d), bare(p+"0.SelfAttention.v", inner, d)
		b.O = bare(p+"0.SelfAttention.o", d, inner)
		ffn(&b, p+"1")
		w.Encoder = append(w.Encoder, b)
	}
	for i := 0; i < cfg.Layers; i++ {
		p := fmt.Sprintf("decoder.block.%d.layer.", i)
		var b t5Block
		b.SelfNorm = rms(p + "0.layer_norm")
		b.Q, b.K, b.V = bare(p+"0.SelfAttention.q", inner, d), bare(p+"0.SelfAttention.k", inner, d), bare(p+"0.SelfAttention.v", inner, d)
		b.O = bare(p+"0.SelfAttention.o", d, inner)
		b.CrossNorm = rms(p + "1.layer_norm")
		b.CQ, b.CK, b.CV = bare(p+"1.EncDecAttention.q", inner, d), bare(p+"1.EncDecAttention.k", inner, d), bare(p+"1.EncDecAttention.v", inner, d)
		b.CO = bare(p+"1.EncDecAttention.o", d, inner)
		ffn(&b, p+"2")
		w.Decoder = append(w.Decoder, b)
	}
	w.EncRel = l.vector("encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight", cfg.RelBuckets*cfg.Heads)
	w.DecRel = l.vector("decoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight", cfg.RelBuckets*cfg.Heads)
	w.EncNorm, w.DecNorm = rms("encoder.final_layer_norm"), rms("decoder.final_layer_norm")
	w.Output = w.TokenEmbd
	if !cfg.TiedEmbeddings {
		w.Output = l.matrix("lm_head.weight", cfg.Vocab, d)
	}
	if l.err != nil {
		return nil, l.err
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
