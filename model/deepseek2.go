package model

import (
	"fmt"
	"math"

	spec "github.com/tfconv/tfconv/arch"
	"github.com/tfconv/tfconv/kernels"
	"github.com/tfconv/tfconv/tensor"
)

// DeepSeek-V2 (arch.DeepSeek2): multi-head latent attention (MLA) and a
// mixture of experts with shared experts, run in MLA's decompressed form.
// Per block, with H heads of n position-free and r rotated query/key
// elements and v value elements, and a key/value latent of width c:
//
//	h      = RMS_attn(x)
//	q      = W_q·h   or   W_qb·RMS_qa(W_qa·h)          [H][n | r]
//	c, kᵣ  = W_kva·h                                    [c], [r] (one rotated key for all heads)
//	c      = RMS_kva(c)
//	q[:, n:], kᵣ = RoPE(q[:, n:]), RoPE(kᵣ)             (adjacent pairs, YaRN frequencies)
//	cache ← (c, kᵣ)                                     (c + r floats per token and layer)
//	kₙ, v  = W_kvb·c  for every cached position         [H][n], [H][v]
//	a      = softmax(s·q·[kₙ | kᵣ]ᵀ + causal)·v·W_o     s = mscale²/√(n+r)
//	x      = x + a
//	x      = x + FFN(RMS_ffn(x))
//
// FFN is a dense SwiGLU in the first leading_dense layers; after them, the
// token's top-k experts by softmax (or sigmoid) router scores (V3: chosen
// by the scores plus a per-expert bias, within the best expert groups), their
// weights renormalised (norm_topk_prob) or multiplied by
// routed_scaling_factor, plus the shared experts' SwiGLU unweighted.
//
// The cache holds the latent, not per-head keys and values: every step
// expands all cached positions through W_kvb again (the absorbed form,
// which folds W_kvb into W_q and W_o, is the faster way to the same
// numbers). llama.cpp c392e509 caches the expanded per-head keys and values
// instead (H·(n+r) + H·v floats per token).
type deepseek2 struct {
	cfg *Config
	w   deepseek2Weights
	// Nope, Rope, V are each head's position-free and rotated query/key
	// widths and its value width; KVLora the latent's width.
	Nope, Rope, V, KVLora int
	// DenseLead is how many leading layers are dense.
	DenseLead int
	invFreq   []float32
	// yarn, theta: the rope's YaRN and base, kept for matchLlamaCpp (yarn
	// nil: none).
	yarn  *spec.YaRN
	theta float64
	// ropeScale multiplies cos and sin (DeepSeek's mscale/mscale_all_dim;
	// 1 when equal, as in its checkpoints and whenever read from GGUF).
	ropeScale float32
	attnScale float32
	// route is the experts' routing: softmax or sigmoid scores, V3's
	// choice bias within expert groups (topk_method noaux_tc), the
	// renormalisation and routed_scaling_factor.
	route routing
}

type deepseek2Weights struct {
	TokenEmbd *kernels.Matrix // [vocab][d]
	Blocks    []deepseek2Block
	FinalNorm *norm           // [d]
	Output    *kernels.Matrix // [vocab][d]
}

type deepseek2Block struct {
	AttnNorm *norm  // [d]
	Q        linear // [H·(n+r)][d]; W nil with query compression
	QA       linear // [q_lora][d]
	QANorm   *norm  // [q_lora]
	QB       linear // [H·(n+r)][q_lora]
	KVA      linear // [c+r][d]
	KVANorm  *norm  // [c]
	KVB      linear // [H·(n+v)][c]
	O        linear // [d][H·v]
	FFNNorm  *norm  // [d]
	// Dense layers: Gate/Up [ffn][d], Down [d][ffn]. Mixture layers:
	// Router [experts][d], Experts, and Shared (width n_shared·expert_ffn).
	Gate, Up, Down linear
	Router         linear
	Experts        []expert
	Shared         expert
	// ProbsB [experts] is added to the router scores to choose the experts
	// (not to weight them): DeepSeek-V3's e_score_correction_bias; nil
	// without.
	ProbsB []float32
}

// loadDeepSeek2 loads DeepSeek-V2 from either naming; c is config.json or
// the one arch.DeepSeek2 derives from the GGUF keys.
func loadDeepSeek2(fl familyLoader, c spec.Config) (*Model, error) {
	path := fl.c.Path
	geti := func(def int, keys ...string) int {
		if v, ok := c.Int(keys...); ok && v >= 0 && v < 1<<31 {
			return int(v)
		}
		return def
	}
	need := func(key string) (int, error) {
		v := geti(-1, key)
		if v <= 0 || v > 1<<20 {
			return 0, fmt.Errorf("model: %s: deepseek2 config: %s missing or out of range", path, key)
		}
		return v, nil
	}
	d := geti(0, "hidden_size")
	m := &deepseek2{}
	var err error
	for _, p := range []struct {
		dst *int
		key string
	}{{&m.Nope, "qk_nope_head_dim"}, {&m.Rope, "qk_rope_head_dim"}, {&m.V, "v_head_dim"}, {&m.KVLora, "kv_lora_rank"}} {
		if *p.dst, err = need(p.key); err != nil {
			return nil, err
		}
	}
	heads := geti(0, "num_attention_heads")
	eps := float32(1e-6)
	if v, ok := c.Float("rms_norm_eps"); ok {
		eps = float32(v)
	}
	theta := 10000.0
	if v, ok := c.Float("rope_theta"); ok {
		theta = v
	}
	// HeadDim is the width attention runs at: the query/key head, padded to
	// the value head when that is wider.
	hd := max(m.Nope+m.Rope, m.V)
	cfg := Config{Arch: fl.f.Name, Layers: geti(0, "num_hidden_layers"), DModel: d, Heads: heads, KVHeads: heads,
		HeadDim: hd, FFN: geti(0, "intermediate_size"), Eps: eps, Activation: "silu", RopeTheta: theta,
		RopeDim: m.Rope, Context: geti(0, "max_position_embeddings"),
		Experts: geti(0, "n_routed_experts"), ExpertsUsed: geti(0, "num_experts_per_tok"),
		ExpertFFN: geti(0, "moe_intermediate_size"), BOS: geti(-1, "bos_token_id"), EOS: geti(-1, "eos_token_id"),
		PAD: geti(-1, "pad_token_id"), ForcedEOS: -1}
	cfg.SharedFFN = geti(0, "n_shared_experts") * cfg.ExpertFFN
	if !fl.hf {
		md := fl.c.Metadata
		cfg.BOS = mdInt(md, "tokenizer.ggml.bos_token_id", -1)
		cfg.EOS = mdInt(md, "tokenizer.ggml.eos_token_id", -1)
		cfg.PAD = mdInt(md, "tokenizer.ggml.padding_token_id", -1)
	}
	if s, ok := c.Str("hidden_act"); ok {
		if cfg.Activation, err = hfActivation(s); err != nil {
			return nil, err
		}
	}
	cfg.Vocab = geti(fl.rowsOf(fl.name("token_embd", -1, ".weight")), "vocab_size")
	if err := checkDims(&cfg, path); err != nil {
		return nil, err
	}
	m.DenseLead = geti(0, "first_k_dense_replace")
	mt, _ := c.Str("model_type")
	if m.route, err = routingOf(c, fl.f, cfg.Experts, false, path); err != nil {
		return nil, err
	}
	// DeepSeek's code renormalises only more than one expert.
	m.route.normTopK = m.route.normTopK && cfg.ExpertsUsed > 1
	// DeepSeek-V2's code scales only weights it did not renormalise; V3's
	// (Kimi K2 runs it: model_type kimi_k2, DeepseekV3ForCausalLM) and
	// llama.cpp's scale them all.
	v3 := mt == "deepseek_v3"
	if list, ok := c["architectures"].([]any); ok && len(list) > 0 {
		v3 = v3 || list[0] == "DeepseekV3ForCausalLM"
	}
	m.route.scaleAfterNorm = !fl.hf || v3
	tm, _ := c.Str("topk_method")
	switch tm {
	case "", "greedy":
		m.route.groups = 0 // greedy: among all experts, whatever n_group says
	case "noaux_tc":
	default:
		return nil, tensor.Unsupported("model: %s: deepseek2 topk_method %q is not supported (greedy, noaux_tc)", path, tm)
	}
	if err := m.rope(c, theta, path); err != nil {
		return nil, err
	}

	H, n, r, v, cl := heads, m.Nope, m.Rope, m.V, m.KVLora
	w := deepseek2Weights{
		TokenEmbd: fl.matrix(fl.name("token_embd", -1, ".weight"), cfg.Vocab, d),
		FinalNorm: fl.norm("output_norm", -1, d, eps, true),
		Output:    fl.matrix(fl.name("output", -1, ".weight"), cfg.Vocab, d),
	}
	for i := 0; i < cfg.Layers; i++ {
		b := deepseek2Block{
			AttnNorm: fl.norm("blk.{bid}.attn_norm", i, d, eps, true),
			KVA:      fl.lin("blk.{bid}.attn_kv_a_mqa", i, cl+r, d),
			KVANorm:  fl.norm("blk.{bid}.attn_kv_a_norm", i, cl, eps, true),
			KVB:      fl.kvb(i, H, n, v, cl),
			O:        fl.lin("blk.{bid}.attn_output", i, d, H*v),
			FFNNorm:  fl.norm("blk.{bid}.ffn_norm", i, d, eps, true),
		}
		if fl.has(fl.name("blk.{bid}.attn_q_a", i, ".weight")) {
			ql := fl.rowsOf(fl.name("blk.{bid}.attn_q_a", i, ".weight"))
			if ql <= 0 || ql > 1<<20 {
				return nil, fmt.Errorf("model: %s: layer %d: query bottleneck of %d rows", path, i, ql)
			}
			b.QA = fl.lin("blk.{bid}.attn_q_a", i, ql, d)
			b.QANorm = fl.norm("blk.{bid}.attn_q_a_norm", i, ql, eps, true)
			b.QB = fl.lin("blk.{bid}.attn_q_b", i, H*(n+r), ql)
		} else {
			b.Q = fl.lin("blk.{bid}.attn_q", i, H*(n+r), d)
		}
		if i < m.DenseLead {
			b.Gate = fl.lin("blk.{bid}.ffn_gate", i, cfg.FFN, d)
			b.Up = fl.lin("blk.{bid}.ffn_up", i, cfg.FFN, d)
			b.Down = fl.lin("blk.{bid}.ffn_down", i, d, cfg.FFN)
		} else {
			if b.Router, b.Experts, err = fl.mixture(i, cfg, d); err != nil {
				return nil, err
			}
			b.ProbsB = fl.optVector(fl.name("blk.{bid}.exp_probs_b", i, ".bias"), cfg.Experts)
			if tm == "noaux_tc" && b.ProbsB == nil {
				return nil, fmt.Errorf("model: %s: layer %d: topk_method noaux_tc without %s", path, i, fl.name("blk.{bid}.exp_probs_b", i, ".bias"))
			}
			if S := cfg.SharedFFN; S > 0 {
				b.Shared = expert{Gate: fl.lin("blk.{bid}.ffn_gate_shexp", i, S, d), Up: fl.lin("blk.{bid}.ffn_up_shexp", i, S, d),
					Down: fl.lin("blk.{bid}.ffn_down_shexp", i, d, S)}
			}
		}
		w.Blocks = append(w.Blocks, b)
	}
	if fl.err != nil {
		return nil, fl.err
	}
	mod := &Model{cfg: cfg}
	m.cfg, m.w = &mod.cfg, w
	mod.impl = m
	return mod, nil
}

// matchLlamaCpp rotates with YaRN's ramp as llama.cpp does: it reads no
// rope.scaling.yarn_beta_fast/slow from the GGUF (d32676d7's converter
// writes them; its llama_model_load never reads them) and computes with its
// defaults 32 and 1, whatever the checkpoint says (Kimi K2's 1 and 1 move
// the ramp's lower bound on its 64 rotated dimensions from 19 to 8).
func (m *deepseek2) matchLlamaCpp() {
	if m.yarn == nil {
		return
	}
	y := *m.yarn
	y.BetaFast, y.BetaSlow = 32, 1
	m.invFreq = y.InvFreq(m.theta, m.Rope)
}

// rope sets the rotary frequencies, YaRN's when rope_scaling says so, and
// the softmax scale 1/√(n+r), times YaRN's mscale².
func (m *deepseek2) rope(c spec.Config, theta float64, path string) error {
	m.ropeScale = 1
	m.attnScale = invSqrt(m.Nope + m.Rope)
	rs, ok := c.Map("rope_scaling")
	if !ok {
		m.invFreq = kernels.RoPEInvFreq(theta, m.Rope)
		return nil
	}
	if typ, _ := rs.Str("type"); typ != "yarn" {
		return tensor.Unsupported("model: %s: deepseek2 rope_scaling %v is not supported (yarn only)", path, map[string]any(rs))
	}
	get := func(key string, def float64) float64 {
		if v, ok := rs.Float(key); ok {
			return v
		}
		return def
	}
	y := spec.YaRN{Factor: get("factor", 1), OriginalContext: get("original_max_position_embeddings", 4096),
		LogMul: 0.1 * get("mscale_all_dim", 0), BetaFast: get("beta_fast", 32), BetaSlow: get("beta_slow", 1)}
	if y.Factor <= 0 || y.OriginalContext <= 0 || y.BetaFast <= 0 || y.BetaSlow <= 0 {
		return fmt.Errorf("model: %s: deepseek2 rope_scaling %v: a factor, context or beta is not positive", path, map[string]any(rs))
	}
	m.invFreq = y.InvFreq(theta, m.Rope)
	m.yarn, m.theta = &y, theta
	// cos and sin scale mscale(s, mscale)/mscale(s, mscale_all_dim).
	ms := func(k float64) float64 {
		if y.Factor <= 1 {
			return 1
		}
		return 0.1*k*math.Log(y.Factor) + 1
	}
	m.ropeScale = float32(ms(get("mscale", 1)) / ms(get("mscale_all_dim", 0)))
	if get("mscale_all_dim", 0) != 0 {
		m.attnScale = float32(float64(m.attnScale) * y.MScale())
	}
	return nil
}

func (m *deepseek2) step(s *Session, tokens []int, tr *Trace, lastOnly bool) (hidden, logits []float32, err error) {
	c, w := m.cfg, &m.w
	T, d, H, D := len(tokens), c.DModel, c.Heads, c.HeadDim
	n, r, v, cl := m.Nope, m.Rope, m.V, m.KVLora
	qk := n + r
	pos0 := s.cache.Len
	Tk := pos0 + T

	x := make([]float32, T*d)
	embed(x, w.TokenEmbd, tokens)
	h := make([]float32, T*d)
	q := make([]float32, T*H*qk)
	kva := make([]float32, T*(cl+r))
	lat, kr := make([]float32, T*cl), make([]float32, T*r)
	Q := make([]float32, T*H*D)
	K, V := make([]float32, Tk*H*D), make([]float32, Tk*H*D)
	att := make([]float32, T*H*D)
	av := make([]float32, T*H*v)
	o := make([]float32, T*d)
	var qa, kv []float32
	for l := range w.Blocks {
		b := &w.Blocks[l]
		b.AttnNorm.apply(h, x, T, d)
		if b.Q.W != nil {
			b.Q.apply(q, h, T)
		} else {
			ql := b.QA.W.Rows
			qa = grow(qa, T*ql)
			b.QA.apply(qa, h, T)
			b.QANorm.apply(qa, qa, T, ql)
			b.QB.apply(q, qa, T)
		}
		b.KVA.apply(kva, h, T)
		for t := 0; t < T; t++ {
			copy(lat[t*cl:(t+1)*cl], kva[t*(cl+r):t*(cl+r)+cl])
			copy(kr[t*r:(t+1)*r], kva[t*(cl+r)+cl:(t+1)*(cl+r)])
		}
		b.KVANorm.apply(lat, lat, T, cl)
		for t := 0; t < T; t++ {
			for hh := 0; hh < H; hh++ {
				off := (t*H+hh)*qk + n
				kernels.RoPEFreqScaled(q[off:off+r], 1, r, m.invFreq, pos0+t, false, m.ropeScale)
			}
			kernels.RoPEFreqScaled(kr[t*r:(t+1)*r], 1, r, m.invFreq, pos0+t, false, m.ropeScale)
		}
		// The cache keeps the latent and the rotated key; every position's
		// per-head keys and values are expanded from them.
		allLat, allKr := s.cache.add(l, lat, kr)
		kv = grow(kv, Tk*H*(n+v))
		b.KVB.apply(kv, allLat, Tk)
		clear(K)
		clear(V)
		for j := 0; j < Tk; j++ {
			for hh := 0; hh < H; hh++ {
				src := kv[(j*H+hh)*(n+v) : (j*H+hh+1)*(n+v)]
				dk := K[(j*H+hh)*D : (j*H+hh+1)*D]
				copy(dk[:n], src[:n])
				copy(dk[n:qk], allKr[j*r:(j+1)*r])
				copy(V[(j*H+hh)*D:(j*H+hh)*D+v], src[n:])
			}
		}
		clear(Q)
		for t := 0; t < T; t++ {
			for hh := 0; hh < H; hh++ {
				copy(Q[(t*H+hh)*D:(t*H+hh)*D+qk], q[(t*H+hh)*qk:(t*H+hh+1)*qk])
			}
		}
		attend(att, Q, K, V, T, Tk, kernels.AttentionParams{Heads: H, KVHeads: H, HeadDim: D,
			Scale: m.attnScale, Causal: true, QPos0: pos0, KeyMask: s.mask}, tr, l)
		for t := 0; t < T; t++ {
			for hh := 0; hh < H; hh++ {
				copy(av[(t*H+hh)*v:(t*H+hh+1)*v], att[(t*H+hh)*D:(t*H+hh)*D+v])
			}
		}
		b.O.apply(o, av, T)
		kernels.Add(x, o)

		b.FFNNorm.apply(h, x, T, d)
		if b.Router.W != nil {
			err = m.moe(o, h, b, T)
		} else {
			err = swiglu(o, h, &expert{Gate: b.Gate, Up: b.Up, Down: b.Down}, T, c.FFN, c.Activation)
		}
		if err != nil {
			return nil, nil, err
		}
		kernels.Add(x, o)
		recordLayer(tr, x, d)
	}
	w.FinalNorm.apply(h, x, T, d)
	return h, lmHead(h, T, d, w.Output, lastOnly, nil), nil
}

// moe sets dst[T][d] to the routed experts' weighted sum plus the shared
// experts' output.
func (m *deepseek2) moe(dst, h []float32, b *deepseek2Block, T int) error {
	c := m.cfg
	d, n, k := c.DModel, len(b.Experts), c.ExpertsUsed
	scores, weight := make([]float32, T*n), make([]float32, T*n)
	b.Router.apply(scores, h, T)
	m.route.weights(weight, scores, b.ProbsB, T, n, k)
	if err := runExperts(dst, h, b.Experts, weight, T, d, c.ExpertFFN, c.Activation, false, nil, nil); err != nil {
		return err
	}
	if b.Shared.Down.W == nil {
		return nil
	}
	y := make([]float32, T*d)
	if err := swiglu(y, h, &b.Shared, T, c.SharedFFN, c.Activation); err != nil {
		return err
	}
	kernels.Add(dst[:T*d], y)
	return nil
}

// swiglu sets dst[T][d] to down(act(gate·h) ⊙ up·h), F wide inside.
func swiglu(dst, h []float32, e *expert, T, F int, act string) error {
	g, u := make([]float32, T*F), make([]float32, T*F)
	e.Gate.apply(g, h, T)
	e.Up.apply(u, h, T)
	if err := activate(g, act); err != nil {
		return err
	}
	kernels.Mul(g, u)
	e.Down.apply(dst, g, T)
	return nil
}

// kvb loads layer i's W_kvb [H·(n+v)][c]: attn_kv_b itself (Hugging Face,
// and c392e509's GGUF form), or rebuilt from the newer converter's split
// of it, attn_k_b [H][c][n] (each head's key rows, transposed, for the
// absorbed form) and attn_v_b [H][v][c].
func (fl familyLoader) kvb(i, H, n, v, c int) linear {
	kn, vn := fmt.Sprintf("blk.%d.attn_k_b.weight", i), fmt.Sprintf("blk.%d.attn_v_b.weight", i)
	if fl.hf || !fl.has(kn) {
		return fl.lin("blk.{bid}.attn_kv_b", i, H*(n+v), c)
	}
	kb := fl.shaped(kn, tensor.Shape{int64(H), int64(c), int64(n)})
	vb := fl.shaped(vn, tensor.Shape{int64(H), int64(v), int64(c)})
	if kb == nil || vb == nil {
		return linear{}
	}
	w := make([]float32, H*(n+v)*c)
	for h := 0; h < H; h++ {
		for j := 0; j < n; j++ {
			row := w[(h*(n+v)+j)*c : (h*(n+v)+j+1)*c]
			for ci := range row {
				row[ci] = kb[(h*c+ci)*n+j]
			}
		}
		copy(w[(h*(n+v)+n)*c:(h+1)*(n+v)*c], vb[h*v*c:(h+1)*v*c])
	}
	return linear{W: kernels.F32Matrix(H*(n+v), c, w), Name: fmt.Sprintf("blk.%d.attn_kv_b.weight", i)}
}
