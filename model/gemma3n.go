package model

import (
	"fmt"
	"math"

	spec "github.com/tfconv/tfconv/arch"
	"github.com/tfconv/tfconv/kernels"
)

// Gemma 3n's text model (arch.Gemma3n). The hidden state is n AltUp
// streams s₀…s_{n−1} of width d (s₀ the scaled embedding e, the others
// W_pᵢ·e rescaled to e's RMS); each block updates the active stream a and
// carries the change to the others. Per block, with p the token's
// per-layer input for the block (width P):
//
//	m      = tanh(W_r·(RMS_r(s_a)/d))                        router  [n]
//	ŝ_j    = s_j + Σ_i C(m)_{j,i}·s_i                        predict (C = W_pred·m as n×n)
//	h      = RMS_in(ŝ_a)
//	l      = h + RMS_l(W_lr·W_ll·h)                          LAuReL
//	y      = (ŝ_a + RMS_pa(Attn(h)) + l)/√2                  Attn: per-head RMS Q/K norms, RMS V, scale 1
//	f      = W_down(gelu(cut(W_gate·g))·W_up·g), g = RMS_pf(y)
//	y      = y + RMS_pff(f)                                  cut: relu(x − mean − z·std) in sparse layers
//	s_j    = ŝ_j + (1 + W_corr·m')_j·(y − ŝ_a), m' = router of y   correct
//	s_j   += RMS_pl(W_proj(gelu(W_gate_pl(s_a ⊙ c))⊙p))  for j ≥ 1
//
// and at the end the streams are rescaled to s₀'s RMS through W_uᵢ,
// averaged, normalised and projected, with the final soft-cap. The last
// num_kv_shared_layers blocks attend over the keys and values of the last
// earlier block of their kind (sliding or full) instead of their own.
type gemma3n struct {
	cfg *Config
	w   gemma3nWeights
	// streams is n; active the stream the blocks run on; perLayer P.
	streams, active, perLayer int
	// layers is the per-layer pattern; kvFrom[l] the layer whose cache
	// layer l attends over (l itself unless it shares).
	layers []spec.Layer
	kvFrom []int
	// zCut[l] is the sparsity cut in standard deviations (−Inf: none).
	zCut                 []float32
	invGlobal, invLocal  []float32
	finalCap             float32
	embScale, plEmbScale float32
	// unbiasedStd: LoadOptions.MatchLlamaCpp (cut).
	unbiasedStd bool
}

type gemma3nWeights struct {
	TokenEmbd    *kernels.Matrix   // [vocab][d]
	PerLayerEmbd *kernels.Matrix   // [rows][L·P]
	PerLayerProj linear            // [L·P][d]
	PerLayerNorm *norm             // [P]
	AltupProj    []*kernels.Matrix // n−1 × [d][d]
	AltupUnembd  []*kernels.Matrix // n−1 × [d][d]
	Blocks       []gemma3nBlock
	FinalNorm    *norm // [d]
}

type gemma3nBlock struct {
	AttnNorm, PostAttnNorm, FFNNorm, PostFFNNorm *norm     // [d]
	QNorm, KNorm                                 *norm     // [head_dim]
	Q, K, V, O                                   linear    // [H·D][d], [G·D][d], [G·D][d], [d][H·D]
	Gate, Up, Down                               linear    // [F][d], [F][d], [d][F]
	LaurelL, LaurelR                             linear    // [rank][d], [d][rank]
	LaurelNorm                                   *norm     // [d]
	InpGate, Proj                                linear    // [P][d], [d][P]
	PostNorm                                     *norm     // [d]
	Router                                       linear    // [n][d]
	RouterNorm                                   *norm     // [d]
	Predict, Correct                             linear    // [n²][n], [n][n]
	CorrectScale                                 []float32 // [d]
}

// loadGemma3n loads Gemma 3n from either naming; c is config.json or the
// one arch.Gemma3n derives from the GGUF keys.
func loadGemma3n(fl familyLoader, c spec.Config) (*Model, error) {
	path := fl.c.Path
	geti := func(def int, keys ...string) int {
		if v, ok := c.Int(keys...); ok && v >= 0 && v < 1<<31 {
			return int(v)
		}
		return def
	}
	need := func(key string, limit int) (int, error) {
		v := geti(-1, key)
		if v <= 0 || v > limit {
			return 0, fmt.Errorf("model: %s: gemma3n config: %s missing or out of range", path, key)
		}
		return v, nil
	}
	if err := spec.NestedTextConfig(c); err != nil {
		return nil, fmt.Errorf("model: %s: %w", path, err)
	}
	m := &gemma3n{}
	var err error
	d, err := need("hidden_size", 1<<20)
	if err != nil {
		return nil, err
	}
	if m.streams, err = need("altup_num_inputs", 64); err != nil {
		return nil, err
	}
	if m.perLayer, err = need("hidden_size_per_layer_input", 1<<20); err != nil {
		return nil, err
	}
	m.active = geti(-1, "altup_active_idx")
	if m.active < 0 || m.active >= m.streams {
		return nil, fmt.Errorf("model: %s: gemma3n config: altup_active_idx %v out of %d streams", path, c["altup_active_idx"], m.streams)
	}
	rank, err := need("laurel_rank", 1<<20)
	if err != nil {
		return nil, err
	}
	ffn := geti(0, "intermediate_size")
	if widths, isList, err := c.Ints("intermediate_size"); err == nil && isList {
		for i, w := range widths {
			if i == 0 {
				ffn = int(w)
			} else if int(w) != ffn {
				return nil, fmt.Errorf("model: %s: gemma3n config: intermediate_size differs by layer (%d, %d): not supported", path, ffn, w)
			}
		}
	}
	eps := float32(1e-6)
	if v, ok := c.Float("rms_norm_eps"); ok {
		eps = float32(v)
	}
	theta, local := 1e6, 1e4
	if v, ok := c.Float("rope_theta"); ok {
		theta = v
	}
	if v, ok := c.Float("rope_local_base_freq"); ok {
		local = v
	}
	heads := geti(0, "num_attention_heads")
	cfg := Config{Arch: fl.f.Name, Layers: geti(0, "num_hidden_layers"), DModel: d, Heads: heads,
		KVHeads: geti(heads, "num_key_value_heads"), HeadDim: geti(0, "head_dim"), FFN: ffn, Eps: eps,
		Activation: "gelu_tanh", RopeTheta: theta, RopeNeox: true, Context: geti(0, "max_position_embeddings"),
		ScaleEmbedding: true, TiedEmbeddings: true, BOS: geti(-1, "bos_token_id"), EOS: geti(-1, "eos_token_id"),
		PAD: geti(-1, "pad_token_id"), ForcedEOS: -1}
	if cfg.HeadDim == 0 && heads > 0 {
		cfg.HeadDim = d / heads
	}
	cfg.RopeDim = cfg.HeadDim
	if !fl.hf {
		md := fl.c.Metadata
		cfg.BOS = mdInt(md, "tokenizer.ggml.bos_token_id", -1)
		cfg.EOS = mdInt(md, "tokenizer.ggml.eos_token_id", -1)
		cfg.PAD = mdInt(md, "tokenizer.ggml.padding_token_id", -1)
	}
	if s, ok := c.Str("hidden_activation", "hidden_act"); ok && s != "gelu_pytorch_tanh" {
		return nil, fmt.Errorf("model: %s: gemma3n hidden_activation %q is not supported (gelu_pytorch_tanh)", path, s)
	}
	if s, ok := c.Bool("altup_correct_scale"); ok && !s {
		return nil, fmt.Errorf("model: %s: gemma3n altup_correct_scale false is not supported", path)
	}
	cfg.Vocab = fl.rowsOf(fl.name("token_embd", -1, ".weight"))
	if err := checkDims(&cfg, path); err != nil {
		return nil, err
	}
	L, P, n := cfg.Layers, m.perLayer, m.streams
	if m.layers, err = fl.f.LayerPattern(c); err != nil {
		return nil, fmt.Errorf("model: %s: %w", path, err)
	}
	sparsity, err := spec.SparsityPattern(c)
	if err != nil {
		return nil, fmt.Errorf("model: %s: %w", path, err)
	}
	if len(sparsity) != L {
		return nil, fmt.Errorf("model: %s: gemma3n config: activation_sparsity_pattern has %d entries for %d layers", path, len(sparsity), L)
	}
	m.zCut = make([]float32, L)
	for i, p := range sparsity {
		m.zCut[i] = spec.NormalQuantile32(p)
	}
	m.kvFrom = make([]int, L)
	for l, ly := range m.layers {
		m.kvFrom[l] = l
		if ly.KVShared {
			m.kvFrom[l] = ly.KVFrom
		}
	}
	m.invGlobal = kernels.RoPEInvFreq(theta, cfg.HeadDim)
	m.invLocal = kernels.RoPEInvFreq(local, cfg.HeadDim)
	if v, ok := c.Float("final_logit_softcapping"); ok && v > 0 {
		m.finalCap = float32(v)
	}
	m.embScale = float32(math.Sqrt(float64(d)))
	m.plEmbScale = float32(math.Sqrt(float64(P)))

	plName := fl.name("per_layer_token_embd", -1, ".weight")
	w := gemma3nWeights{
		TokenEmbd:    fl.matrix(fl.name("token_embd", -1, ".weight"), cfg.Vocab, d),
		PerLayerEmbd: fl.matrix(plName, fl.rowsOf(plName), L*P),
		PerLayerProj: fl.lin("per_layer_model_proj", -1, L*P, d),
		PerLayerNorm: fl.norm("per_layer_proj_norm", -1, P, eps, true),
		FinalNorm:    fl.norm("output_norm", -1, d, eps, true),
		AltupProj:    m.stacked(fl, "altup_proj", n-1, d),
		AltupUnembd:  m.stacked(fl, "altup_unembd_proj", n-1, d),
	}
	H, G, D, F := cfg.Heads, cfg.KVHeads, cfg.HeadDim, ffn
	for i := 0; i < L; i++ {
		b := gemma3nBlock{
			AttnNorm:     fl.norm("blk.{bid}.attn_norm", i, d, eps, true),
			Q:            fl.lin("blk.{bid}.attn_q", i, H*D, d),
			K:            fl.lin("blk.{bid}.attn_k", i, G*D, d),
			V:            fl.lin("blk.{bid}.attn_v", i, G*D, d),
			O:            fl.lin("blk.{bid}.attn_output", i, d, H*D),
			QNorm:        fl.norm("blk.{bid}.attn_q_norm", i, D, eps, true),
			KNorm:        fl.norm("blk.{bid}.attn_k_norm", i, D, eps, true),
			PostAttnNorm: fl.norm("blk.{bid}.post_attention_norm", i, d, eps, true),
			FFNNorm:      fl.norm("blk.{bid}.ffn_norm", i, d, eps, true),
			Gate:         fl.lin("blk.{bid}.ffn_gate", i, F, d),
			Up:           fl.lin("blk.{bid}.ffn_up", i, F, d),
			Down:         fl.lin("blk.{bid}.ffn_down", i, d, F),
			PostFFNNorm:  fl.norm("blk.{bid}.post_ffw_norm", i, d, eps, true),
			LaurelL:      fl.lin("blk.{bid}.laurel_l", i, rank, d),
			LaurelR:      fl.lin("blk.{bid}.laurel_r", i, d, rank),
			LaurelNorm:   fl.norm("blk.{bid}.laurel_post_norm", i, d, eps, true),
			InpGate:      fl.lin("blk.{bid}.inp_gate", i, P, d),
			Proj:         fl.lin("blk.{bid}.proj", i, d, P),
			PostNorm:     fl.norm("blk.{bid}.post_norm", i, d, eps, true),
			Router:       fl.lin("blk.{bid}.altup_router", i, n, d),
			RouterNorm:   fl.norm("blk.{bid}.altup_router_norm", i, d, eps, true),
			Predict:      fl.lin("blk.{bid}.altup_predict_coef", i, n*n, n),
			Correct:      fl.lin("blk.{bid}.altup_correct_coef", i, n, n),
			CorrectScale: fl.vector(fl.name("blk.{bid}.altup_correct_scale", i, ".weight"), d),
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

// stacked loads role's n matrices of [d][d]: one tensor per part in
// Hugging Face's naming (any of its patterns), one stacked tensor in GGUF's.
func (m *gemma3n) stacked(fl familyLoader, role spec.Role, n, d int) []*kernels.Matrix {
	if !fl.hf {
		return fl.stackedMatrices(fl.name(role, -1, ".weight"), n, d, d)
	}
	t, _ := fl.f.Tensor(role)
	out := make([]*kernels.Matrix, n)
	for x := range out {
		name := ""
		for _, p := range t.HF {
			cand := spec.ExpandPart(p, -1, x) + ".weight"
			if name == "" || fl.has(cand) {
				name = cand
			}
			if fl.has(cand) {
				break
			}
		}
		out[x] = fl.matrix(name, d, d)
	}
	return out
}

// matchLlamaCpp computes the sparsity cut's standard deviation over n − 1,
// as llama.cpp's graph does (transformers divides by n).
func (m *gemma3n) matchLlamaCpp() { m.unbiasedStd = true }

func (m *gemma3n) step(s *Session, tokens []int, tr *Trace, lastOnly bool) (hidden, logits []float32, err error) {
	c, w := m.cfg, &m.w
	T, d, H, G, D, F := len(tokens), c.DModel, c.Heads, c.KVHeads, c.HeadDim, c.FFN
	L, P, n, a := c.Layers, m.perLayer, m.streams, m.active
	qd, kd := H*D, G*D
	pos0 := s.cache.Len
	act := c.Activation

	// The streams, [n][T·d].
	x0 := make([]float32, T*d)
	embed(x0, w.TokenEmbd, tokens)
	kernels.Scale(x0, m.embScale)
	streams := make([][]float32, n)
	streams[0] = x0
	for i := 1; i < n; i++ {
		streams[i] = make([]float32, T*d)
		kernels.MatMul(streams[i], x0, T, w.AltupProj[i-1])
		rescaleTo(streams[i], x0, T, d)
	}

	// The per-layer inputs, [T][L·P].
	pl := make([]float32, T*L*P)
	rows := w.PerLayerEmbd.Rows
	for t, tok := range tokens {
		if tok < rows {
			embed(pl[t*L*P:(t+1)*L*P], w.PerLayerEmbd, []int{tok})
		}
	}
	kernels.Scale(pl, m.plEmbScale)
	proj := make([]float32, T*L*P)
	w.PerLayerProj.apply(proj, x0, T)
	kernels.Scale(proj, float32(1/math.Sqrt(float64(d))))
	w.PerLayerNorm.apply(proj, proj, T*L, P)
	kernels.Add(proj, pl)
	kernels.Scale(proj, float32(1/math.Sqrt2))
	perLayer := proj

	pred := make([][]float32, n)
	for i := range pred {
		pred[i] = make([]float32, T*d)
	}
	mod, coefs := make([]float32, T*n), make([]float32, T*n*n)
	h, lau, lr := make([]float32, T*d), make([]float32, T*d), make([]float32, T*d)
	q, k, v := make([]float32, T*qd), make([]float32, T*kd), make([]float32, T*kd)
	att, o := make([]float32, T*qd), make([]float32, T*d)
	y, g := make([]float32, T*d), make([]float32, T*d)
	gate, up := make([]float32, T*F), make([]float32, T*F)
	pg, pp := make([]float32, T*P), make([]float32, T*d)
	var lrank []float32
	sqrt2 := float32(math.Sqrt2)
	for l := range w.Blocks {
		b := &w.Blocks[l]
		// predict
		m.router(mod, streams[a], b, h, T)
		b.Predict.apply(coefs, mod, T)
		for j := 0; j < n; j++ {
			for t := 0; t < T; t++ {
				dst := pred[j][t*d : (t+1)*d]
				for e := 0; e < d; e++ {
					var sum float32
					for i := 0; i < n; i++ {
						sum += coefs[t*n*n+j*n+i] * streams[i][t*d+e]
					}
					dst[e] = sum
				}
			}
			kernels.Add(pred[j], streams[j])
		}
		ap := pred[a]
		b.AttnNorm.apply(h, ap, T, d)
		// LAuReL
		lrank = grow(lrank, T*b.LaurelL.W.Rows)
		b.LaurelL.apply(lrank, h, T)
		b.LaurelR.apply(lr, lrank, T)
		b.LaurelNorm.apply(lr, lr, T, d)
		for i := range lau[:T*d] {
			lau[i] = h[i] + lr[i]
		}
		// attention
		b.Q.apply(q, h, T)
		b.QNorm.apply(q, q, T*H, D)
		inv := m.invGlobal
		if m.layers[l].Mixer == spec.SlidingAttention {
			inv = m.invLocal
		}
		for t := 0; t < T; t++ {
			kernels.RoPEFreq(q[t*qd:(t+1)*qd], H, D, inv, pos0+t, true)
		}
		var K, V []float32
		if src := m.kvFrom[l]; src != l {
			K, V = s.cache.K[src], s.cache.V[src]
		} else {
			b.K.apply(k, h, T)
			b.V.apply(v, h, T)
			b.KNorm.apply(k, k, T*G, D)
			for r := 0; r < T*G; r++ {
				kernels.RMSNorm(v[r*D:(r+1)*D], v[r*D:(r+1)*D], nil, c.Eps)
			}
			for t := 0; t < T; t++ {
				kernels.RoPEFreq(k[t*kd:(t+1)*kd], G, D, inv, pos0+t, true)
			}
			K, V = s.cache.add(l, k, v)
		}
		attend(att, q, K, V, T, pos0+T, reach(kernels.AttentionParams{Heads: H, KVHeads: G, HeadDim: D,
			Scale: 1, Causal: true, QPos0: pos0, KeyMask: s.mask}, m.layers[l]), tr, l)
		b.O.apply(o, att, T)
		b.PostAttnNorm.apply(o, o, T, d)
		for i := range y[:T*d] {
			// transformers' order: (ŝ_a + attn) + laurel, then / √2
			y[i] = ((ap[i] + o[i]) + lau[i]) / sqrt2
		}
		// feed-forward
		b.FFNNorm.apply(g, y, T, d)
		b.Gate.apply(gate, g, T)
		if z := m.zCut[l]; !math.IsInf(float64(z), -1) {
			m.cut(gate, T, F, z)
		}
		if err := activate(gate, act); err != nil {
			return nil, nil, err
		}
		b.Up.apply(up, g, T)
		kernels.Mul(gate, up)
		b.Down.apply(o, gate, T)
		b.PostFFNNorm.apply(o, o, T, d)
		kernels.Add(y, o)
		// correct
		m.router(mod, y, b, h, T)
		b.Correct.apply(coefs[:T*n], mod, T)
		for t := 0; t < T; t++ {
			for j := 0; j < n; j++ {
				cj := coefs[t*n+j] + 1
				dst, pj := streams[j][t*d:(t+1)*d], pred[j][t*d:(t+1)*d]
				inn := y[t*d : (t+1)*d]
				apt := ap[t*d : (t+1)*d]
				for e := range dst {
					dst[e] = (inn[e]-apt[e])*cj + pj[e]
				}
			}
		}
		// the per-layer input, into every stream but the first
		for t := 0; t < T; t++ {
			for e := 0; e < d; e++ {
				o[t*d+e] = streams[a][t*d+e] * b.CorrectScale[e]
			}
		}
		b.InpGate.apply(pg, o, T)
		if err := activate(pg, act); err != nil {
			return nil, nil, err
		}
		for t := 0; t < T; t++ {
			kernels.Mul(pg[t*P:(t+1)*P], perLayer[(t*L+l)*P:(t*L+l+1)*P])
		}
		b.Proj.apply(pp, pg, T)
		b.PostNorm.apply(pp, pp, T, d)
		for j := 1; j < n; j++ {
			kernels.Add(streams[j], pp)
		}
		recordLayer(tr, streams[a], d)
	}
	// merge the streams
	out := make([]float32, T*d)
	copy(out, streams[0])
	u := make([]float32, T*d)
	for i := 1; i < n; i++ {
		kernels.MatMul(u, streams[i], T, w.AltupUnembd[i-1])
		rescaleTo(u, streams[0], T, d)
		kernels.Add(out, u)
	}
	kernels.Scale(out, 1/float32(n))
	w.FinalNorm.apply(out, out, T, d)
	logits = lmHead(out, T, d, w.TokenEmbd, lastOnly, nil)
	if m.finalCap > 0 {
		kernels.SoftCap(logits, m.finalCap)
	}
	return out, logits, nil
}

// router sets mod[T][n] to AltUp's router output for x: tanh(W_r·(RMS_r(x)
// / d)); h is scratch [T·d].
func (m *gemma3n) router(mod, x []float32, b *gemma3nBlock, h []float32, T int) {
	d := m.cfg.DModel
	b.RouterNorm.apply(h, x, T, d)
	kernels.Scale(h[:T*d], 1/float32(d))
	b.Router.apply(mod, h, T)
	for i, v := range mod[:T*m.streams] {
		mod[i] = float32(math.Tanh(float64(v)))
	}
}

// cut is the gaussian top-k of the feed-forward gate: each row x becomes
// relu(x − mean(x) − z·std(x)), keeping what lies z standard deviations
// above the mean.
func (m *gemma3n) cut(x []float32, T, F int, z float32) {
	for t := 0; t < T; t++ {
		r := x[t*F : (t+1)*F]
		var sum float64
		for _, v := range r {
			sum += float64(v)
		}
		mean := float32(sum / float64(F))
		var ss float64
		for _, v := range r {
			dv := float64(v - mean)
			ss += dv * dv
		}
		div := float64(F)
		if m.unbiasedStd {
			div = float64(F - 1)
		}
		cutoff := mean + float32(math.Sqrt(ss/div))*z
		for i, v := range r {
			r[i] = max(v-cutoff, 0)
		}
	}
}

// rescaleTo scales each row of x (T rows of d) to the root mean square of
// the same row of ref, the RMS of x floored at √1e-5 as transformers does.
func rescaleTo(x, ref []float32, T, d int) {
	for t := 0; t < T; t++ {
		var a, b float64
		for e := 0; e < d; e++ {
			a += float64(ref[t*d+e]) * float64(ref[t*d+e])
			b += float64(x[t*d+e]) * float64(x[t*d+e])
		}
		target := float32(math.Sqrt(a / float64(d)))
		have := float32(math.Sqrt(max(b/float64(d), 1e-5)))
		for e := 0; e < d; e++ {
			x[t*d+e] = x[t*d+e] * target / have
		}
	}
}
