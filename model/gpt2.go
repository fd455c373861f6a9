package model

import (
	"fmt"

	"github.com/tfconv/tfconv/kernels"
	"github.com/tfconv/tfconv/tensor"
)

// GPT-2 (Radford et al. 2019): learned absolute positions, pre-LayerNorm
// blocks, fused QKV projection, tanh-GELU MLP, final LayerNorm, LM head tied
// to the token embedding.
//
//	x₀ = E[tok] + P[pos]
//	a  = x + Attn(LN₁(x))·W_o + b_o
//	x' = a + W_down·gelu_tanh(W_up·LN₂(a) + b_up) + b_down
//	logits = LN_f(x_L)·Eᵀ

// gpt2Weights are GPT-2's weights, shapes [rows][cols] as kernels.Matrix
// keeps them ([out][in]).
type gpt2Weights struct {
	TokenEmbd *kernels.Matrix // [vocab][d]
	PosEmbd   *kernels.Matrix // [max_positions][d]
	Blocks    []gpt2Block
	FinalNorm norm            // [d]
	Output    *kernels.Matrix // [vocab][d]; TokenEmbd when tied
}

type gpt2Block struct {
	Norm1 norm   // [d] weight and bias
	QKV   linear // [3d][d], bias [3d]: rows 0..d-1 query, d..2d-1 key, 2d..3d-1 value
	Proj  linear // [d][d], bias [d]
	Norm2 norm   // [d]
	Up    linear // [ffn][d], bias [ffn]
	Down  linear // [d][ffn], bias [d]
}

type gpt2 struct {
	cfg *Config
	w   gpt2Weights
}

func gpt2Config(d, layers, heads, ffn, vocab, maxPos int, eps float32) Config {
	return Config{Arch: "gpt2", Layers: layers, DModel: d, Vocab: vocab, Heads: heads, KVHeads: heads,
		HeadDim: d / max(heads, 1), FFN: ffn, MaxPositions: maxPos, Eps: eps, Activation: "gelu_tanh",
		TiedEmbeddings: true, BOS: -1, EOS: -1, PAD: -1, ForcedEOS: -1}
}

func loadGPT2HF(l *loader, hc hfConfig) (*Model, error) {
	d := hc.int(0, "n_embd")
	cfg := gpt2Config(d, hc.int(0, "n_layer"), hc.int(0, "n_head"), hc.int(4*d, "n_inner"), hc.int(0, "vocab_size"),
		hc.int(0, "n_positions"), float32(hc.float(1e-5, "layer_norm_epsilon")))
	act, err := hfActivation(hc.str("activation_function"))
	if err != nil {
		return nil, err
	}
	cfg.Activation = act
	cfg.BOS, cfg.EOS = hc.int(-1, "bos_token_id"), hc.int(-1, "eos_token_id")
	if err := checkDims(&cfg, l.c.Path); err != nil {
		return nil, err
	}
	if hc.bool(false, "scale_attn_by_inverse_layer_idx") || hc.bool(false, "reorder_and_upcast_attn") || !hc.bool(true, "scale_attn_weights") {
		return nil, tensor.Unsupported("model: %s: gpt2 attention scaling variants are not supported", l.c.Path)
	}
	// Checkpoints saved from GPT2LMHeadModel carry a "transformer." prefix;
	// those saved from GPT2Model do not.
	p := ""
	if l.has("transformer.wte.weight") {
		p = "transformer"
	}
	n := func(s ...string) string { return joinName(append([]string{p}, s...)...) }
	w := gpt2Weights{
		TokenEmbd: l.matrix(n("wte.weight"), cfg.Vocab, d),
		PosEmbd:   l.matrix(n("wpe.weight"), cfg.MaxPositions, d),
		FinalNorm: l.layerNorm(n("ln_f"), d, cfg.Eps),
	}
	for i := 0; i < cfg.Layers; i++ {
		b := func(s string) string { return n("h", fmt.Sprint(i), s) }
		// HF's Conv1D keeps its weight as [in][out]: transposed once here.
		w.Blocks = append(w.Blocks, gpt2Block{
			Norm1: l.layerNorm(b("ln_1"), d, cfg.Eps),
			QKV:   linear{W: l.matrixT(b("attn.c_attn.weight"), 3*d, d), B: l.vector(b("attn.c_attn.bias"), 3*d)},
			Proj:  linear{W: l.matrixT(b("attn.c_proj.weight"), d, d), B: l.vector(b("attn.c_proj.bias"), d)},
			Norm2: l.layerNorm(b("ln_2"), d, cfg.Eps),
			Up:    linear{W: l.matrixT(b("mlp.c_fc.weight"), cfg.FFN, d), B: l.vector(b("mlp.c_fc.bias"), cfg.FFN)},
			Down:  linear{W: l.matrixT(b("mlp.c_proj.weight"), d, cfg.FFN), B: l.vector(b("mlp.c_proj.bias"), d)},
		})
	}
	w.Output = w.TokenEmbd
	if l.has("lm_head.weight") {
		w.Output = l.matrix("lm_head.weight", cfg.Vocab, d)
		cfg.TiedEmbeddings = false
	}
	if l.err != nil {
		return nil, l.err
	}
	return newGPT2(cfg, w), nil
}

func loadGPT2GGUF(l *loader, md tensor.Metadata) (*Model, error) {
	d := mdInt(md, "gpt2.embedding_length", 0)
	cfg := gpt2Config(d, mdInt(md, "gpt2.block_count", 0), mdInt(md, "gpt2.attention.head_count", 0),
		mdInt(md, "gpt2.feed_forward_length", 4*d), l.rowsOf("token_embd.weight"),
		mdInt(md, "gpt2.context_length", 0), float32(mdFloat(md, "gpt2.attention.layer_norm_epsilon", 1e-5)))
	cfg.BOS, cfg.EOS = mdInt(md, "tokenizer.ggml.bos_token_id", -1), mdInt(md, "tokenizer.ggml.eos_token_id", -1)
	if err := checkDims(&cfg, l.c.Path); err != nil {
		return nil, err
	}
	// llama.cpp's converter stores every GPT-2 matrix as [out][in] already.
	w := gpt2Weights{
		TokenEmbd: l.matrix("token_embd.weight", cfg.Vocab, d),
		PosEmbd:   l.matrix("position_embd.weight", cfg.MaxPositions, d),
		FinalNorm: l.layerNorm("output_norm", d, cfg.Eps),
	}
	for i := 0; i < cfg.Layers; i++ {
		w.Blocks = append(w.Blocks, gpt2Block{
			Norm1: l.layerNorm(blk(i, "attn_norm"), d, cfg.Eps),
			QKV:   l.lin(blk(i, "attn_qkv"), 3*d, d),
			Proj:  l.lin(blk(i, "attn_output"), d, d),
			Norm2: l.layerNorm(blk(i, "ffn_norm"), d, cfg.Eps),
			Up:    l.lin(blk(i, "ffn_up"), cfg.FFN, d),
			Down:  l.lin(blk(i, "ffn_down"), d, cfg.FFN),
		})
	}
	w.Output = w.TokenEmbd
	if l.has("output.weight") {
		w.Output = l.matrix("output.weight", cfg.Vocab, d)
	}
	if l.err != nil {
		return nil, l.err
	}
	return newGPT2(cfg, w), nil
}

func newGPT2(cfg Config, w gpt2Weights) *Model {
	m := &Model{cfg: cfg}
	m.impl = &gpt2{cfg: &m.cfg, w: w}
	return m
}

func (g *gpt2) step(s *Session, tokens []int, tr *Trace, lastOnly bool) (hidden, logits []float32, err error) {
	c, w := g.cfg, &g.w
	T, d, H, D := len(tokens), c.DModel, c.Heads, c.HeadDim
	pos0 := s.cache.Len

	x := make([]float32, T*d)
	embed(x, w.TokenEmbd, tokens)
	p := make([]float32, d)
	for t := 0; t < T; t++ {
		w.PosEmbd.Row(p, pos0+t)
		kernels.Add(x[t*d:(t+1)*d], p)
	}

	h := make([]float32, T*d)
	qkv := make([]float32, T*3*d)
	q, k, v := make([]float32, T*d), make([]float32, T*d), make([]float32, T*d)
	att := make([]float32, T*d)
	proj := make([]float32, T*d)
	ff := make([]float32, T*c.FFN)
	for l := range w.Blocks {
		b := &w.Blocks[l]
		// a = x + Attn(LN₁(x))·W_o + b_o
		b.Norm1.apply(h, x, T, d)
		b.QKV.apply(qkv, h, T)
		for t := 0; t < T; t++ {
			copy(q[t*d:(t+1)*d], qkv[t*3*d:])
			copy(k[t*d:(t+1)*d], qkv[t*3*d+d:])
			copy(v[t*d:(t+1)*d], qkv[t*3*d+2*d:])
		}
		K, V := s.cache.add(l, k, v)
		attend(att, q, K, V, T, pos0+T, kernels.AttentionParams{Heads: H, KVHeads: H, HeadDim: D,
			Scale: invSqrt(D), Causal: true, QPos0: pos0, KeyMask: s.mask}, tr, l)
		b.Proj.apply(proj, att, T)
		kernels.Add(x, proj)
		// x' = a + W_down·act(W_up·LN₂(a) + b_up) + b_down
		b.Norm2.apply(h, x, T, d)
		b.Up.apply(ff, h, T)
		if err := activate(ff, c.Activation); err != nil {
			return nil, nil, err
		}
		b.Down.apply(proj, ff, T)
		kernels.Add(x, proj)
		recordLayer(tr, x, d)
	}
	w.FinalNorm.apply(h, x, T, d)
	return h, lmHead(h, T, d, w.Output, lastOnly, nil), nil
}

// recordLayer appends a copy of the hidden state to the trace.
func recordLayer(tr *Trace, x []float32, d int) {
	if tr != nil {
		tr.Layers = append(tr.Layers, rows(append([]float32(nil), x...), d))
	}
}

// lmHead computes logits = h·Wᵀ (+ bias) for every row of h, or the last
// one only.
func lmHead(h []float32, T, d int, W *kernels.Matrix, lastOnly bool, bias []float32) []float32 {
	if lastOnly {
		h, T = h[(T-1)*d:T*d], 1
	}
	out := make([]float32, T*W.Rows)
	kernels.MatMul(out, h, T, W)
	if bias != nil {
		for t := 0; t < T; t++ {
			kernels.Add(out[t*W.Rows:(t+1)*W.Rows], bias)
		}
	}
	return out
}
