package model

import (
	"strings"

	spec "github.com/tfconv/tfconv/arch"
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

// loadGPT2 loads GPT-2 by role from either naming (arch.GPT2 states both):
// Hugging Face's Conv1D weights ([in][out]) are transposed once at load,
// llama.cpp's are stored [out][in] already.
func loadGPT2(fl familyLoader, c spec.Config) (*Model, error) {
	geti := func(def int, keys ...string) int {
		if v, ok := c.Int(keys...); ok && v >= 0 && v < 1<<31 {
			return int(v)
		}
		return def
	}
	d := geti(0, "n_embd")
	eps := float32(1e-5)
	if v, ok := c.Float("layer_norm_epsilon"); ok {
		eps = float32(v)
	}
	vocab := geti(fl.rowsOf(fl.name("token_embd", -1, ".weight")), "vocab_size")
	cfg := gpt2Config(d, geti(0, "n_layer"), geti(0, "n_head"), geti(4*d, "n_inner"), vocab,
		geti(0, "n_positions", "n_ctx"), eps)
	if act, ok := c.Str("activation_function"); ok {
		a, err := hfActivation(act)
		if err != nil {
			return nil, err
		}
		cfg.Activation = a
	}
	cfg.BOS, cfg.EOS = geti(-1, "bos_token_id"), geti(-1, "eos_token_id")
	if !fl.hf {
		md := fl.c.Metadata
		cfg.BOS, cfg.EOS = mdInt(md, "tokenizer.ggml.bos_token_id", -1), mdInt(md, "tokenizer.ggml.eos_token_id", -1)
	}
	if err := checkDims(&cfg, fl.c.Path); err != nil {
		return nil, err
	}
	for _, k := range []string{"scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn"} {
		if b, _ := c.Bool(k); b {
			return nil, tensor.Unsupported("model: %s: gpt2 attention scaling variant %s is not supported", fl.c.Path, k)
		}
	}
	if b, ok := c.Bool("scale_attn_weights"); ok && !b {
		return nil, tensor.Unsupported("model: %s: gpt2 without attention scaling is not supported", fl.c.Path)
	}
	// lin loads role's [out][in] weight, transposing HF's Conv1D, and its
	// bias.
	lin := func(role string, i, out, in int) linear {
		name := fl.name(role, i, ".weight")
		var w *kernels.Matrix
		if fl.hf {
			w = fl.matrixT(name, out, in)
		} else {
			w = fl.matrix(name, out, in)
		}
		return linear{W: w, B: fl.vector(fl.name(role, i, ".bias"), out)}
	}
	layerNorm := func(role string, i int) norm {
		return fl.layerNorm(strings.TrimSuffix(fl.name(role, i, ".weight"), ".weight"), d, cfg.Eps)
	}
	w := gpt2Weights{
		TokenEmbd: fl.matrix(fl.name("token_embd", -1, ".weight"), cfg.Vocab, d),
		PosEmbd:   fl.matrix(fl.name("position_embd", -1, ".weight"), cfg.MaxPositions, d),
		FinalNorm: layerNorm("output_norm", -1),
	}
	for i := 0; i < cfg.Layers; i++ {
		w.Blocks = append(w.Blocks, gpt2Block{
			Norm1: layerNorm("blk.{bid}.attn_norm", i),
			QKV:   lin("blk.{bid}.attn_qkv", i, 3*d, d),
			Proj:  lin("blk.{bid}.attn_output", i, d, d),
			Norm2: layerNorm("blk.{bid}.ffn_norm", i),
			Up:    lin("blk.{bid}.ffn_up", i, cfg.FFN, d),
			Down:  lin("blk.{bid}.ffn_down", i, d, cfg.FFN),
		})
	}
	// An untied head: lm_head in a Hugging Face checkpoint, output.weight
	// in a GGUF (where llama.cpp writes the tied one as a copy).
	w.Output = w.TokenEmbd
	head := "lm_head.weight"
	if !fl.hf {
		head = "output.weight"
	}
	if fl.has(head) {
		w.Output = fl.matrix(head, cfg.Vocab, d)
		cfg.TiedEmbeddings = !fl.hf
	}
	if fl.err != nil {
		return nil, fl.err
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
