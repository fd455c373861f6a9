package model

import (
	"fmt"

	"github.com/tfconv/tfconv/kernels"
	"github.com/tfconv/tfconv/tensor"
)

// LLaMA (Touvron et al. 2023) and the models that share its graph: no
// position table, rotary embeddings on queries and keys, RMSNorm before
// each sub-block, grouped-query attention, SwiGLU feed-forward.
//
//	x₀ = E[tok]
//	q, k = RoPE(RMS₁(x)·W_q), RoPE(RMS₁(x)·W_k);  v = RMS₁(x)·W_v
//	a  = x + Attn(q, k, v)·W_o
//	x' = a + W_down·(silu(W_gate·RMS₂(a)) ⊙ W_up·RMS₂(a))
//	logits = RMS_f(x_L)·W_outᵀ

// llamaWeights are LLaMA's weights ([out][in]).
type llamaWeights struct {
	TokenEmbd *kernels.Matrix // [vocab][d]
	Blocks    []llamaBlock
	FinalNorm norm            // [d]
	Output    *kernels.Matrix // [vocab][d]; TokenEmbd when tied
}

type llamaBlock struct {
	AttnNorm norm   // [d]
	Q        linear // [heads·head_dim][d] (bias only in Qwen2-style checkpoints)
	K        linear // [kv_heads·head_dim][d]
	V        linear // [kv_heads·head_dim][d]
	O        linear // [d][heads·head_dim]
	FFNNorm  norm   // [d]
	Gate     linear // [ffn][d]
	Up       linear // [ffn][d]
	Down     linear // [d][ffn]
}

type llama struct {
	cfg *Config
	w   llamaWeights
}

func loadLlamaHF(l *loader, hc hfConfig) (*Model, error) {
	d := hc.int(0, "hidden_size")
	heads := hc.int(0, "num_attention_heads")
	cfg := Config{Arch: "llama", Layers: hc.int(0, "num_hidden_layers"), DModel: d, Vocab: hc.int(0, "vocab_size"),
		Heads: heads, KVHeads: hc.int(heads, "num_key_value_heads"), FFN: hc.int(0, "intermediate_size"),
		Eps: float32(hc.float(1e-6, "rms_norm_eps")), RopeTheta: hc.float(10000, "rope_theta"), RopeNeox: true,
		TiedEmbeddings: hc.bool(false, "tie_word_embeddings"),
		BOS:            hc.int(-1, "bos_token_id"), EOS: hc.int(-1, "eos_token_id"), PAD: hc.int(-1, "pad_token_id"), ForcedEOS: -1}
	cfg.HeadDim = hc.int(d/max(heads, 1), "head_dim")
	cfg.RopeDim = cfg.HeadDim
	act, err := hfActivation(hc.str("hidden_act"))
	if err != nil {
		return nil, err
	}
	cfg.Activation = act
	if _, ok := hc["rope_scaling"].(map[string]any); ok {
		return nil, tensor.Unsupported("model: %s: llama rope_scaling is not supported", l.c.Path)
	}
	if err := checkDims(&cfg, l.c.Path); err != nil {
		return nil, err
	}
	qd, kd := cfg.Heads*cfg.HeadDim, cfg.KVHeads*cfg.HeadDim
	w := llamaWeights{
		TokenEmbd: l.matrix("model.embed_tokens.weight", cfg.Vocab, d),
		FinalNorm: l.rmsNorm("model.norm", d, cfg.Eps),
	}
	for i := 0; i < cfg.Layers; i++ {
		b := func(s string) string { return fmt.Sprintf("model.layers.%d.%s", i, s) }
		w.Blocks = append(w.Blocks, llamaBlock{
			AttnNorm: l.rmsNorm(b("input_layernorm"), d, cfg.Eps),
			Q:        l.lin(b("self_attn.q_proj"), qd, d),
			K:        l.lin(b("self_attn.k_proj"), kd, d),
			V:        l.lin(b("self_attn.v_proj"), kd, d),
			O:        l.lin(b("self_attn.o_proj"), d, qd),
			FFNNorm:  l.rmsNorm(b("post_attention_layernorm"), d, cfg.Eps),
			Gate:     l.lin(b("mlp.gate_proj"), cfg.FFN, d),
			Up:       l.lin(b("mlp.up_proj"), cfg.FFN, d),
			Down:     l.lin(b("mlp.down_proj"), d, cfg.FFN),
		})
	}
	w.Output = w.TokenEmbd
	if l.has("lm_head.weight") {
		w.Output = l.matrix("lm_head.weight", cfg.Vocab, d)
		cfg.TiedEmbeddings = false
	} else {
		cfg.TiedEmbeddings = true
	}
	if l.err != nil {
		return nil, l.err
	}
	return newLlama(cfg, w), nil
}

func loadLlamaGGUF(l *loader, md tensor.Metadata) (*Model, error) {
	d := mdInt(md, "llama.embedding_length", 0)
	heads := mdInt(md, "llama.attention.head_count", 0)
	cfg := Config{Arch: "llama", Layers: mdInt(md, "llama.block_count", 0), DModel: d,
		Vocab: l.rowsOf("token_embd.weight"), Heads: heads, KVHeads: mdInt(md, "llama.attention.head_count_kv", heads),
		FFN: mdInt(md, "llama.feed_forward_length", 0), MaxPositions: 0,
		Eps:       float32(mdFloat(md, "llama.attention.layer_norm_rms_epsilon", 1e-5)),
		RopeTheta: mdFloat(md, "llama.rope.freq_base", 10000), Activation: "silu",
		// llama.cpp's converter permutes the Q and K rows of HF checkpoints
		// so that ggml's interleaved rope reproduces HF's rotate-half.
		RopeNeox: false,
		BOS:      mdInt(md, "tokenizer.ggml.bos_token_id", -1), EOS: mdInt(md, "tokenizer.ggml.eos_token_id", -1),
		PAD: mdInt(md, "tokenizer.ggml.padding_token_id", -1), ForcedEOS: -1}
	cfg.HeadDim = mdInt(md, "llama.attention.key_length", d/max(heads, 1))
	cfg.RopeDim = mdInt(md, "llama.rope.dimension_count", cfg.HeadDim)
	if err := checkDims(&cfg, l.c.Path); err != nil {
		return nil, err
	}
	qd, kd := cfg.Heads*cfg.HeadDim, cfg.KVHeads*cfg.HeadDim
	w := llamaWeights{
		TokenEmbd: l.matrix("token_embd.weight", cfg.Vocab, d),
		FinalNorm: l.rmsNorm("output_norm", d, cfg.Eps),
	}
	for i := 0; i < cfg.Layers; i++ {
		w.Blocks = append(w.Blocks, llamaBlock{
			AttnNorm: l.rmsNorm(blk(i, "attn_norm"), d, cfg.Eps),
			Q:        l.lin(blk(i, "attn_q"), qd, d),
			K:        l.lin(blk(i, "attn_k"), kd, d),
			V:        l.lin(blk(i, "attn_v"), kd, d),
			O:        l.lin(blk(i, "attn_output"), d, qd),
			FFNNorm:  l.rmsNorm(blk(i, "ffn_norm"), d, cfg.Eps),
			Gate:     l.lin(blk(i, "ffn_gate"), cfg.FFN, d),
			Up:       l.lin(blk(i, "ffn_up"), cfg.FFN, d),
			Down:     l.lin(blk(i, "ffn_down"), d, cfg.FFN),
		})
	}
	w.Output, cfg.TiedEmbeddings = w.TokenEmbd, true
	if l.has("output.weight") {
		w.Output, cfg.TiedEmbeddings = l.matrix("output.weight", cfg.Vocab, d), false
	}
	if l.err != nil {
		return nil, l.err
	}
	return newLlama(cfg, w), nil
}

func newLlama(cfg Config, w llamaWeights) *Model {
	m := &Model{cfg: cfg}
	m.impl = &llama{cfg: &m.cfg, w: w}
	return m
}

func (m *llama) step(s *Session, tokens []int, tr *Trace, lastOnly bool) (hidden, logits []float32, err error) {
	c, w := m.cfg, &m.w
	T, d, H, G, D := len(tokens), c.DModel, c.Heads, c.KVHeads, c.HeadDim
	qd, kd := H*D, G*D
	pos0 := s.cache.Len

	x := make([]float32, T*d)
	embed(x, w.TokenEmbd, tokens)
	h := make([]float32, T*d)
	q, k, v := make([]float32, T*qd), make([]float32, T*kd), make([]float32, T*kd)
	att := make([]float32, T*qd)
	o := make([]float32, T*d)
	gate, up := make([]float32, T*c.FFN), make([]float32, T*c.FFN)
	for l := range w.Blocks {
		b := &w.Blocks[l]
		// q, k, v from RMS₁(x); rotary positions on q and k.
		b.AttnNorm.apply(h, x, T, d)
		b.Q.apply(q, h, T)
		b.K.apply(k, h, T)
		b.V.apply(v, h, T)
		for t := 0; t < T; t++ {
			kernels.RoPE(q[t*qd:(t+1)*qd], H, D, c.RopeDim, pos0+t, c.RopeTheta, c.RopeNeox)
			kernels.RoPE(k[t*kd:(t+1)*kd], G, D, c.RopeDim, pos0+t, c.RopeTheta, c.RopeNeox)
		}
		K, V := s.cache.add(l, k, v)
		attend(att, q, K, V, T, pos0+T, kernels.AttentionParams{Heads: H, KVHeads: G, HeadDim: D,
			Scale: invSqrt(D), Causal: true, QPos0: pos0, KeyMask: s.mask}, tr, l)
		// a = x + Attn·W_o
		b.O.apply(o, att, T)
		kernels.Add(x, o)
		// x' = a + W_down·(act(W_gate·RMS₂(a)) ⊙ W_up·RMS₂(a))
		b.FFNNorm.apply(h, x, T, d)
		b.Gate.apply(gate, h, T)
		b.Up.apply(up, h, T)
		if err := activate(gate, c.Activation); err != nil {
			return nil, nil, err
		}
		kernels.Mul(gate, up)
		b.Down.apply(o, gate, T)
		kernels.Add(x, o)
		recordLayer(tr, x, d)
	}
	w.FinalNorm.apply(h, x, T, d)
	return h, lmHead(h, T, d, w.Output, lastOnly, nil), nil
}
