package model

import (
	"fmt"
	spec "github.com/tfconv/tfconv/arch"
	"math"
	"strings"

	"github.com/tfconv/tfconv/kernels"
	"github.com/tfconv/tfconv/tensor"
)

// BART (Lewis et al. 2020) and the original encoder-decoder Transformer it
// inherits from (Marian, marian.go, shares this stack): post-LayerNorm
// blocks, encoder self-attention, decoder causal self-attention followed by
// cross-attention to the encoder output, a two-layer FFN; queries are scaled
// by 1/√head_dim before the dot product, as transformers does.
//
//	x₀ = LN_emb(s·E[tok] + P[pos+2])            (BART: learned positions, offset 2)
//	encoder:  a = LN₁(x + SelfAttn(x));         x' = LN₂(a + FFN(a))
//	decoder:  a = LN₁(y + CausalSelfAttn(y));   c = LN₂(a + CrossAttn(a, enc));  y' = LN₃(c + FFN(c))
//	logits = y_L·Eᵀ + final_logits_bias

// seq2seqWeights are the weights of a BART/Marian model ([out][in]).
type seq2seqWeights struct {
	TokenEmbd   *kernels.Matrix // [vocab][d], shared by encoder, decoder and LM head
	EncPos      *kernels.Matrix // [positions][d]: learned (BART, offset rows first) or a sinusoid table (Marian)
	DecPos      *kernels.Matrix // [positions][d]
	EncEmbdNorm *norm           // [d]; BART's layernorm_embedding, nil for Marian
	DecEmbdNorm *norm           // [d]
	Encoder     []seq2seqBlock
	Decoder     []seq2seqBlock
	EncNorm     *norm           // [d] final encoder norm (mBART-style), nil for BART/Marian
	DecNorm     *norm           // [d]
	Output      *kernels.Matrix // [vocab][d]; TokenEmbd when tied
	OutputBias  []float32       // [vocab] final_logits_bias, nil when absent
}

type seq2seqBlock struct {
	Q, K, V, O linear // self-attention, [d][d] with biases
	SelfNorm   norm   // [d]
	// Decoder blocks only: cross-attention to the encoder output.
	CQ, CK, CV, CO linear // [d][d] with biases
	CrossNorm      norm   // [d]
	Up             linear // [ffn][d], bias [ffn]
	Down           linear // [d][ffn], bias [d]
	FFNNorm        norm   // [d]
}

type seq2seq struct {
	cfg       *Config
	w         seq2seqWeights
	posOffset int     // BART's learned positions start at row 2
	embScale  float32 // √d_model when scale_embedding, else 1
}

// loadSeq2Seq loads the BART/Marian stack by role (arch.BART and
// arch.Marian state the names; there is no GGUF form).
func loadSeq2Seq(fl familyLoader, c spec.Config, arch string) (*seq2seq, error) {
	geti := func(def int, keys ...string) int {
		if v, ok := c.Int(keys...); ok && v >= 0 && v < 1<<31 {
			return int(v)
		}
		return def
	}
	getb := func(def bool, key string) bool {
		if b, ok := c.Bool(key); ok {
			return b
		}
		return def
	}
	d := geti(0, "d_model")
	heads := geti(0, "decoder_attention_heads")
	cfg := Config{Arch: arch, Layers: geti(0, "decoder_layers"), EncoderLayers: geti(0, "encoder_layers"), DModel: d,
		Vocab: geti(0, "vocab_size"), Heads: heads, KVHeads: heads, HeadDim: d / max(heads, 1),
		FFN: geti(0, "decoder_ffn_dim"), MaxPositions: geti(0, "max_position_embeddings"), Eps: 1e-5,
		ScaleEmbedding: getb(false, "scale_embedding"), TiedEmbeddings: true, EncoderDecoder: true,
		BOS: geti(-1, "bos_token_id"), EOS: geti(-1, "eos_token_id"), PAD: geti(-1, "pad_token_id"),
		DecoderStart: geti(0, "decoder_start_token_id"), ForcedEOS: geti(-1, "forced_eos_token_id")}
	actName, _ := c.Str("activation_function")
	act, err := hfActivation(actName)
	if err != nil {
		return nil, err
	}
	cfg.Activation = act
	if err := checkDims(&cfg, fl.c.Path); err != nil {
		return nil, err
	}
	if e := geti(heads, "encoder_attention_heads"); e != heads || geti(cfg.FFN, "encoder_ffn_dim") != cfg.FFN {
		return nil, tensor.Unsupported("model: %s: %s with different encoder and decoder widths is not supported", fl.c.Path, arch)
	}
	if getb(false, "normalize_before") {
		return nil, tensor.Unsupported("model: %s: %s normalize_before (pre-LN) is not supported", fl.c.Path, arch)
	}
	m := &seq2seq{embScale: 1}
	if cfg.ScaleEmbedding {
		m.embScale = float32(math.Sqrt(float64(d)))
	}
	w := &m.w
	w.TokenEmbd = fl.matrix(fl.name("token_embd", -1, ".weight"), cfg.Vocab, d)
	// ln is a LayerNorm of the role; opt: nil when the checkpoint has none.
	ln := func(role string, i int, opt bool) *norm {
		name := fl.name(role, i, ".weight")
		if opt && !fl.has(name) {
			return nil
		}
		n := fl.layerNorm(strings.TrimSuffix(name, ".weight"), d, cfg.Eps)
		return &n
	}
	w.EncEmbdNorm, w.DecEmbdNorm = ln("enc.token_embd_norm", -1, true), ln("dec.token_embd_norm", -1, true)
	w.EncNorm, w.DecNorm = ln("enc.output_norm", -1, true), ln("dec.output_norm", -1, true)
	// attn loads the q, k, v projections of prefix and the output one.
	attn := func(p, out string, i int) (q, k, v, o linear) {
		return fl.lin(p+"_q", i, d, d), fl.lin(p+"_k", i, d, d), fl.lin(p+"_v", i, d, d), fl.lin(out, i, d, d)
	}
	for i := 0; i < cfg.EncoderLayers; i++ {
		var b seq2seqBlock
		b.Q, b.K, b.V, b.O = attn("enc.blk.{bid}.attn", "enc.blk.{bid}.attn_output", i)
		b.SelfNorm = *ln("enc.blk.{bid}.attn_norm", i, false)
		b.Up, b.Down = fl.lin("enc.blk.{bid}.ffn_up", i, cfg.FFN, d), fl.lin("enc.blk.{bid}.ffn_down", i, d, cfg.FFN)
		b.FFNNorm = *ln("enc.blk.{bid}.ffn_norm", i, false)
		w.Encoder = append(w.Encoder, b)
	}
	for i := 0; i < cfg.Layers; i++ {
		var b seq2seqBlock
		b.Q, b.K, b.V, b.O = attn("dec.blk.{bid}.attn", "dec.blk.{bid}.attn_output", i)
		b.SelfNorm = *ln("dec.blk.{bid}.attn_norm", i, false)
		b.CQ, b.CK, b.CV, b.CO = attn("dec.blk.{bid}.cross_attn", "dec.blk.{bid}.cross_attn_o", i)
		b.CrossNorm = *ln("dec.blk.{bid}.cross_attn_norm", i, false)
		b.Up, b.Down = fl.lin("dec.blk.{bid}.ffn_up", i, cfg.FFN, d), fl.lin("dec.blk.{bid}.ffn_down", i, d, cfg.FFN)
		b.FFNNorm = *ln("dec.blk.{bid}.ffn_norm", i, false)
		w.Decoder = append(w.Decoder, b)
	}
	w.Output = w.TokenEmbd
	if out := fl.name("output", -1, ".weight"); fl.has(out) && !getb(true, "tie_word_embeddings") {
		w.Output, cfg.TiedEmbeddings = fl.matrix(out, cfg.Vocab, d), false
	}
	// final_logits_bias is a buffer-like tensor with no role of its own.
	w.OutputBias = fl.optVector("final_logits_bias", cfg.Vocab)
	if fl.err != nil {
		return nil, fl.err
	}
	m.cfg = &cfg
	return m, nil
}

func loadBart(fl familyLoader, c spec.Config) (*Model, error) {
	s, err := loadSeq2Seq(fl, c, "bart")
	if err != nil {
		return nil, err
	}
	// BartLearnedPositionalEmbedding: max_position_embeddings+2 rows, the
	// first two unused (a fairseq leftover), position p reads row p+2.
	const offset = 2
	n := s.cfg.MaxPositions + offset
	s.posOffset = offset
	s.w.EncPos = fl.matrix(fl.name("enc.position_embd", -1, ".weight"), n, s.cfg.DModel)
	s.w.DecPos = fl.matrix(fl.name("dec.position_embd", -1, ".weight"), n, s.cfg.DModel)
	if fl.err != nil {
		return nil, fl.err
	}
	return newSeq2Seq(s), nil
}

func newSeq2Seq(s *seq2seq) *Model {
	m := &Model{cfg: *s.cfg}
	s.cfg = &m.cfg
	m.impl = s
	return m
}

// attention params of BART-style attention: queries are pre-scaled; mask
// is the key mask (nil: every key real).
func (m *seq2seq) params(causal bool, qpos0 int, mask []bool) kernels.AttentionParams {
	c := m.cfg
	return kernels.AttentionParams{Heads: c.Heads, KVHeads: c.Heads, HeadDim: c.HeadDim, Scale: 1, Causal: causal, QPos0: qpos0,
		KeyMask: mask}
}

// embedTokens computes LN_emb(s·E[tok] + P[pos0+t+offset]).
func (m *seq2seq) embedTokens(x []float32, tokens []int, pos *kernels.Matrix, pos0 int, ln *norm) {
	d := m.cfg.DModel
	embed(x, m.w.TokenEmbd, tokens)
	if m.embScale != 1 {
		kernels.Scale(x, m.embScale)
	}
	p := make([]float32, d)
	for t := range tokens {
		pos.Row(p, pos0+t+m.posOffset)
		kernels.Add(x[t*d:(t+1)*d], p)
	}
	if ln != nil {
		ln.apply(x, x, len(tokens), d)
	}
}

// ffn sets x = LN(x + W_down·act(W_up·x + b_up) + b_down).
func (m *seq2seq) ffn(b *seq2seqBlock, x []float32, T int) error {
	d := m.cfg.DModel
	ff := make([]float32, T*m.cfg.FFN)
	b.Up.apply(ff, x, T)
	if err := activate(ff, m.cfg.Activation); err != nil {
		return err
	}
	o := make([]float32, T*d)
	b.Down.apply(o, ff, T)
	kernels.Add(o, x)
	b.FFNNorm.apply(x, o, T, d)
	return nil
}

func (m *seq2seq) encode(s *Session, tokens []int) error {
	c, w := m.cfg, &m.w
	T, d := len(tokens), c.DModel
	if c.MaxPositions > 0 && T > c.MaxPositions {
		return fmt.Errorf("model: %d encoder positions exceed the model's %d", T, c.MaxPositions)
	}
	x := make([]float32, T*d)
	m.embedTokens(x, tokens, w.EncPos, 0, w.EncEmbdNorm)
	q, k, v := make([]float32, T*d), make([]float32, T*d), make([]float32, T*d)
	att, o := make([]float32, T*d), make([]float32, T*d)
	scale := invSqrt(c.HeadDim)
	for l := range w.Encoder {
		b := &w.Encoder[l]
		// a = LN₁(x + SelfAttn(x))
		b.Q.apply(q, x, T)
		kernels.Scale(q, scale)
		b.K.apply(k, x, T)
		b.V.apply(v, x, T)
		kernels.Attention(att, q, k, v, T, T, m.params(false, 0, s.encMask))
		b.O.apply(o, att, T)
		kernels.Add(o, x)
		b.SelfNorm.apply(x, o, T, d)
		if err := m.ffn(b, x, T); err != nil {
			return err
		}
	}
	if w.EncNorm != nil {
		w.EncNorm.apply(x, x, T, d)
	}
	// Each decoder layer's cross-attention keys and values, computed once.
	s.encLen = T
	s.crossK, s.crossV = make([][]float32, len(w.Decoder)), make([][]float32, len(w.Decoder))
	for l := range w.Decoder {
		b := &w.Decoder[l]
		s.crossK[l], s.crossV[l] = make([]float32, T*d), make([]float32, T*d)
		b.CK.apply(s.crossK[l], x, T)
		b.CV.apply(s.crossV[l], x, T)
	}
	s.encoded = true
	return nil
}

func (m *seq2seq) step(s *Session, tokens []int, tr *Trace, lastOnly bool) (hidden, logits []float32, err error) {
	c, w := m.cfg, &m.w
	T, d := len(tokens), c.DModel
	pos0 := s.cache.Len
	y := make([]float32, T*d)
	m.embedTokens(y, tokens, w.DecPos, pos0, w.DecEmbdNorm)
	q, k, v := make([]float32, T*d), make([]float32, T*d), make([]float32, T*d)
	att, o := make([]float32, T*d), make([]float32, T*d)
	scale := invSqrt(c.HeadDim)
	for l := range w.Decoder {
		b := &w.Decoder[l]
		// a = LN₁(y + CausalSelfAttn(y))
		b.Q.apply(q, y, T)
		kernels.Scale(q, scale)
		b.K.apply(k, y, T)
		b.V.apply(v, y, T)
		K, V := s.cache.add(l, k, v)
		attend(att, q, K, V, T, pos0+T, m.params(true, pos0, s.mask), tr, l)
		b.O.apply(o, att, T)
		kernels.Add(o, y)
		b.SelfNorm.apply(y, o, T, d)
		// c = LN₂(a + CrossAttn(a, enc))
		b.CQ.apply(q, y, T)
		kernels.Scale(q, scale)
		kernels.Attention(att, q, s.crossK[l], s.crossV[l], T, s.encLen, m.params(false, 0, s.encMask))
		b.CO.apply(o, att, T)
		kernels.Add(o, y)
		b.CrossNorm.apply(y, o, T, d)
		// y' = LN₃(c + FFN(c))
		if err := m.ffn(b, y, T); err != nil {
			return nil, nil, err
		}
		recordLayer(tr, y, d)
	}
	if w.DecNorm != nil {
		w.DecNorm.apply(y, y, T, d)
	}
	return y, lmHead(y, T, d, w.Output, lastOnly, w.OutputBias), nil
}
