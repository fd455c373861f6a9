package model

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	spec "github.com/tfconv/tfconv/arch"
	"github.com/tfconv/tfconv/kernels"
	"github.com/tfconv/tfconv/tensor"
)

// decoder is the decoder-only transformer of every family package arch
// states as data (LLaMA, Mistral, Qwen2, Gemma 1–2, Granite, OLMo,
// StarCoder2, …): one forward pass whose optional parts are switched on by
// the family's spec.Graph, its hyper-parameters, and the tensors the
// checkpoint holds.
//
//	x₀ = s_emb·E[tok]                              (s_emb: √d for Gemma, Granite's multiplier)
//	h  = N_attn(x);  q, k, v = h·W_{q,k,v} (+ b)
//	q, k = RoPE(q), RoPE(k)
//	a  = softmax(s_att·q·kᵀ [soft-capped] + causal/window mask)·v·W_o (+ b)
//	x  = x + s_res·N_postattn(a)                   (N_postattn: Gemma 2 only)
//	f  = W_down·(act(W_gate·N_ffn(x)) ⊙ W_up·N_ffn(x))   or   W_down·act(W_up·N_ffn(x))
//	x  = x + s_res·N_postffw(f)
//	logits = (N_f(x_L)·W_outᵀ) / s_logit [soft-capped]
type decoder struct {
	cfg *Config
	g   spec.Graph
	w   decoderWeights
	// invFreq are the rotary inverse frequencies of the RopeDim/2 pairs;
	// invFreqLocal those of the sliding-window layers (Gemma 3's local
	// base; the same slice elsewhere).
	invFreq, invFreqLocal []float32
	// layers is the per-layer pattern (arch.Family.LayerPattern): each
	// layer's attention reach (full, sliding window, chunk), whether it
	// rotates, whether it routes to experts.
	layers []spec.Layer
	// invFreqLong are LongRoPE's frequencies for a sequence past longAfter
	// positions (nil: none); ropeScale multiplies cos and sin (1: none).
	invFreqLong []float32
	longAfter   int
	ropeScale   float32
	// embScale, resScale, attnScale, logitScale: the multipliers above
	// (1 where the family has none; attnScale defaults to 1/√head_dim).
	embScale, resScale, attnScale, logitScale float32
	// parallel: attention and feed-forward both read the block's input and
	// are added together (GPT-NeoX, StableLM's option).
	parallel bool
	// regroupQKV, when set, is the family's layout change applied to one
	// fused QKV output row: Hugging Face's grouped order
	// ([kv group][queries, k, v]) to GGUF's [q | k | v].
	regroupQKV func(dst, src []float32)
	// attnCap, finalCap: Gemma 2's soft-caps (0: none). clampQKV: OLMo's
	// clip of q, k and v (0: none).
	attnCap, finalCap, clampQKV float32
	// route: how a mixture weighs its experts (softmax or sigmoid scores,
	// renormalised or not, scaled by routed_scaling_factor, chosen within
	// expert groups).
	route routing
	// qkL2 is the weightless per-head norm of Q and K in the rotating
	// layers (Graph.QKL2Norm; nil: none).
	qkL2 *norm
	// tempFloor, tempScale: attention temperature tuning of the layers
	// without RoPE (Graph.AttnTempNoRope; tempFloor 0: none).
	tempFloor int
	tempScale float32
}

type decoderWeights struct {
	TokenEmbd *kernels.Matrix // [vocab][d]
	// EmbedNorm normalises the embeddings before the first block
	// (Graph.EmbedNorm, RWKV-7's ln0); nil without.
	EmbedNorm *norm // [d]
	Blocks    []decoderBlock
	FinalNorm *norm           // [d]
	Output    *kernels.Matrix // [vocab][d]; TokenEmbd when tied
	// OutputName is Output's GGUF name (token_embd.weight when tied).
	OutputName string
}

type decoderBlock struct {
	AttnNorm     *norm  // [d]; nil when the family has no pre-norm
	QKV          linear // [(heads+2·kv_heads)·head_dim][d] fused (Phi-3, GPT-NeoX); W nil when separate
	Q            linear // [heads·head_dim][d]
	K            linear // [kv_heads·head_dim][d]
	V            linear // [kv_heads·head_dim][d]
	QNorm, KNorm *norm  // [head_dim] per head, or [heads·head_dim] whole; nil without QK norm
	O            linear // [d][heads·head_dim]
	PostAttnNorm *norm  // [d]; nil unless the family has it
	FFNNorm      *norm  // [d]
	Gate         linear // [ffn][d]; W nil for a plain FFN
	Up           linear // [ffn][d]; [2·ffn][d] gate then up when the family fuses them
	Down         linear // [d][ffn]
	PostFFNNorm  *norm  // [d]; nil unless the family has it
	// Router [experts][d] and Experts replace Gate/Up/Down in a mixture
	// of experts (Mixtral); Router.W is nil in a dense layer. Shared is
	// the expert every token uses (Qwen2-MoE), scaled by
	// sigmoid(SharedGate·x) ([1][d]; W nil: unscaled, GLM-4.5's); its
	// Down.W is nil when there is none. ProbsB [experts] is added to the
	// router scores to choose the experts (e_score_correction_bias); nil
	// when the layer has none.
	Router  linear
	Experts []expert
	// Sinks are the attention sinks' logits, one per head (gpt-oss); nil
	// without.
	Sinks []float32
	// Mix replaces the attention of a recurrent layer (its Q, K, V and O
	// are then unset); nil in an attention layer.
	Mix recurrentMixer
	// FFNMix, when set, is a feed-forward that carries state from token to
	// token (RWKV-7's channel mix, with its token shift), in place of
	// Gate/Up/Down; its state follows Mix's in the layer's.
	FFNMix     recurrentMixer
	Shared     expert
	SharedGate linear
	ProbsB     []float32
}

// expert is one feed-forward of a mixture: down(act(gate(x)) ⊙ up(x)).
type expert struct {
	Gate, Up, Down linear // [ffn][d], [ffn][d], [d][ffn]
}

// familyLoader reads the weights of a family by role, whichever naming the
// checkpoint uses.
type familyLoader struct {
	*loader
	f  *spec.Family
	hf bool
	hc spec.Config // the family's config (Hugging Face's, or the one a GGUF's keys give)
}

// name returns the checkpoint's name of role at layer with suffix: the
// first of the family's HF patterns present (the first when none is), or
// the GGUF name.
func (fl familyLoader) name(role spec.Role, layer int, suffix string) string {
	names := fl.f.TensorName(role, layer, fl.hf, suffix)
	if fl.hf && len(names) == 0 && len(fl.packed) > 0 {
		// A role only a packed tensor holds (gpt-oss's experts): the
		// packed view names it as GGUF does.
		names = fl.f.TensorName(role, layer, false, suffix)
	}
	for _, n := range names {
		if fl.has(n) {
			return n
		}
	}
	if len(names) == 0 {
		return ""
	}
	// Absent: name it as the checkpoint names its token embedding (with
	// or without a "transformer."/"bert." prefix), for the error.
	if v := fl.variant(); v < len(names) {
		return names[v]
	}
	return names[0]
}

// variant is the index among the HF patterns of the token embedding's
// name in this checkpoint (0 when not found or GGUF).
func (fl familyLoader) variant() int {
	if !fl.hf {
		return 0
	}
	for i, n := range fl.f.TensorName("token_embd", -1, true, ".weight") {
		if fl.has(n) {
			return i
		}
	}
	return 0
}

// inSchema reports whether the family has role at all.
func (fl familyLoader) inSchema(role spec.Role) bool {
	_, ok := fl.f.Tensor(role)
	return ok
}

// lin loads role's weight [out][in] and its bias when present.
func (fl familyLoader) lin(role spec.Role, layer, out, in int) linear {
	if t, ok := fl.f.Tensor(role); ok && fl.hf && t.Split != nil && len(fl.packed) == 0 {
		return linear{W: fl.hfHalfMatrix(role, layer, out, in), Name: fl.ggufName(role, layer)}
	}
	scale := fl.rowScales(role, out)
	if !fl.hf {
		scale = fl.weightScale(fl.name(role, layer, ""), out)
	}
	return linear{W: fl.matrix(fl.name(role, layer, ".weight"), out, in), B: fl.optVector(fl.name(role, layer, ".bias"), out),
		Name: fl.ggufName(role, layer), Scale: scale}
}

// rowScales are the factors of role's output rows on Hugging Face input
// (arch.Tensor.Scales: Falcon-H1's μP multipliers, which the GGUF form
// keeps in the weights, as transformers applies them to the activations);
// nil when there are none.
func (fl familyLoader) rowScales(role spec.Role, rows int) []float32 {
	t, ok := fl.f.Tensor(role)
	if !fl.hf || !ok || t.Scales == nil {
		return nil
	}
	scales, err := t.Scales(fl.hc)
	if err != nil {
		fl.fail(fmt.Errorf("model: %s: %w", fl.c.Path, err))
		return nil
	}
	out := make([]float32, rows)
	for i := range out {
		out[i] = 1
	}
	for _, s := range scales {
		to := s.To
		if to == 0 {
			to = int64(rows)
		}
		if s.From < 0 || to > int64(rows) || s.From > to {
			fl.fail(fmt.Errorf("model: %s: %s: rows %d to %d of %d to scale", fl.c.Path, role, s.From, s.To, rows))
			return nil
		}
		for r := s.From; r < to; r++ {
			out[r] *= s.Factor
		}
	}
	return out
}

// ggufName is role's weight name at layer in GGUF naming, whatever naming
// the checkpoint uses.
func (fl familyLoader) ggufName(role spec.Role, layer int) string {
	if n := fl.f.TensorName(role, layer, false, ".weight"); len(n) > 0 {
		return n[0]
	}
	return ""
}

// optLin is lin for a role the family may not have (nil weight then).
func (fl familyLoader) optLin(role spec.Role, layer, out, in int) linear {
	if !fl.inSchema(role) {
		return linear{}
	}
	return fl.lin(role, layer, out, in)
}

// norm loads the norm of role: the family's kind, with the weight in the
// GGUF convention (Gemma's +1 applied to HF weights), a bias when present.
// A role the family's schema lacks is a norm without weights (OLMo) when
// main, or absent (nil).
func (fl familyLoader) norm(role spec.Role, layer, d int, eps float32, main bool) *norm {
	n := &norm{Eps: eps, RMS: fl.f.Graph.Norm == spec.RMSNorm}
	if !fl.inSchema(role) {
		if !main {
			return nil
		}
		n.W = make([]float32, d)
		for i := range n.W {
			n.W[i] = 1
		}
		return n
	}
	if t, _ := fl.f.Tensor(role); t.Optional && !fl.has(fl.name(role, layer, ".weight")) {
		return nil // StableLM's second norm, absent with a parallel residual
	}
	if t, _ := fl.f.Tensor(role); t.Stack != 0 {
		// One norm per head (StableLM's QK norms): HF keeps a tensor per
		// head, GGUF one [heads][width] tensor.
		parts := fl.rowsOf(fl.name(role, layer, ".weight"))
		if fl.hf {
			for parts = 0; fl.has(fl.f.TensorPartName(role, layer, parts, ".weight")); parts++ {
			}
		}
		if parts <= 0 || d%parts != 0 {
			fl.fail(fmt.Errorf("model: %s: %s of layer %d has %d parts, which do not divide %d", fl.c.Path, role, layer, parts, d))
			return nil
		}
		n.Width = d / parts
		if !fl.hf {
			n.W = fl.vector(fl.name(role, layer, ".weight"), d)
		} else {
			for x := 0; x < parts; x++ {
				n.W = append(n.W, fl.vector(fl.f.TensorPartName(role, layer, x, ".weight"), n.Width)...)
			}
		}
		return n
	}
	n.W = fl.vector(fl.name(role, layer, ".weight"), d)
	n.B = fl.optVector(fl.name(role, layer, ".bias"), d)
	if t, _ := fl.f.Tensor(role); fl.hf && t.Layout == spec.LayoutNormPlusOne {
		// The GGUF convention, as the converter writes it.
		plusOne, _, err := t.Layout.Transform(fl.name(role, layer, ".weight"), tensor.Shape{int64(len(n.W))}, 0, 0, false)
		if err != nil {
			fl.fail(err)
			return nil
		}
		plusOne(n.W, n.W)
	}
	if n.RMS {
		n.B = nil
	}
	return n
}

// familyConfig returns the config of the checkpoint in Hugging Face's
// terms: config.json itself, or the one the family derives from the GGUF
// metadata.
func familyConfig(l *loader, f *spec.Family, hc spec.Config, hf bool) (spec.Config, error) {
	if hf {
		return hc, nil
	}
	infos := make([]tensor.Info, len(l.c.Tensors))
	for i, t := range l.c.Tensors {
		infos[i] = t.Info
	}
	c, err := f.HFConfigOf(l.c.Metadata, infos)
	if err != nil {
		return nil, fmt.Errorf("model: %s: %w", l.c.Path, err)
	}
	return c, nil
}

// loadDecoder loads a family model from HF names (hf) or GGUF names.
func loadDecoder(l *loader, f *spec.Family, hc spec.Config, hf bool) (*Model, error) {
	c, err := familyConfig(l, f, hc, hf)
	if err != nil {
		return nil, err
	}
	if hf && (len(f.Packed) > 0 || len(f.Splits) > 0) {
		if err := l.packedView(f, c); err != nil {
			return nil, err
		}
	}
	fl := familyLoader{loader: l, f: f, hf: hf, hc: c}
	g := f.Graph
	geti := func(def int64, keys ...string) int {
		if v, ok := c.Int(keys...); ok && v >= 0 && v < 1<<31 {
			return int(v)
		}
		return int(def)
	}
	getf := func(def float64, keys ...string) float64 {
		if v, ok := c.Float(keys...); ok {
			return v
		}
		return def
	}
	d := geti(0, "hidden_size")
	qh, kvh, err := f.HeadCounts(c)
	if err != nil {
		return nil, fmt.Errorf("model: %s: %w", l.c.Path, err)
	}
	if hf && f.HFKVHeads != nil {
		if n, ok := f.HFKVHeads(c); ok {
			kvh = n
		}
	}
	heads := int(qh)
	cfg := Config{Arch: f.Name, Layers: geti(0, "num_hidden_layers", "n_layer"), DModel: d, Heads: heads,
		KVHeads: int(kvh), FFN: geti(int64(4*d), "intermediate_size_mlp", "ffn_hidden_size", "intermediate_size"),
		RopeTheta: getf(10000, "rope_theta"), RopeNeox: (hf && !g.AdjacentRopeHF) || (!hf && g.NeoxRopeGGUF),
		BOS: geti(-1, "bos_token_id"), EOS: geti(-1, "eos_token_id"), PAD: geti(-1, "pad_token_id"), ForcedEOS: -1}
	if !hf {
		cfg.BOS = mdInt(l.c.Metadata, "tokenizer.ggml.bos_token_id", -1)
		cfg.EOS = mdInt(l.c.Metadata, "tokenizer.ggml.eos_token_id", -1)
		cfg.PAD = mdInt(l.c.Metadata, "tokenizer.ggml.padding_token_id", -1)
	}
	cfg.Vocab = geti(int64(fl.rowsOf(fl.name("token_embd", -1, ".weight"))), "vocab_size")
	if g.Norm == spec.RMSNorm {
		def, ok := f.Default("attention.layer_norm_rms_epsilon")
		if !ok {
			def = 1e-6
		}
		cfg.Eps = float32(getf(def, "rms_norm_eps"))
		if v, ok := f.ParamFloat(c, "attention.layer_norm_rms_epsilon"); ok {
			cfg.Eps = float32(v) // from the keys the family's converter reads (LFM2: norm_eps)
		}
	} else {
		cfg.Eps = float32(getf(1e-5, "layer_norm_eps", "norm_epsilon", "layer_norm_epsilon"))
		if v, ok := f.ParamFloat(c, "attention.layer_norm_epsilon"); ok && !c.Has("layer_norm_eps") && !c.Has("norm_epsilon") && !c.Has("layer_norm_epsilon") {
			cfg.Eps = float32(v) // from the keys the family's converter reads (RWKV-7: norm_eps)
		}
	}
	cfg.Context = geti(0, "max_position_embeddings", "n_positions", "seq_length")
	// The expert counts from the keys the family's converter reads them
	// from (ERNIE 4.5: moe_num_experts, moe_k).
	cfg.Experts = int(max(f.Experts(c), 0))
	cfg.ExpertsUsed = geti(0, "num_experts_per_tok")
	if n, ok := f.ParamInt(c, "expert_used_count"); ok && n > 0 && n < 1<<31 {
		cfg.ExpertsUsed = int(n)
	}
	if hf && f.HFFFN != nil {
		if n, ok := f.HFFFN(c); ok && n > 0 && n < 1<<31 {
			cfg.FFN = int(n)
		}
	}
	cfg.ExpertFFN = geti(int64(cfg.FFN), "moe_intermediate_size")
	if _, ok := c.Int("intermediate_size_mlp"); ok {
		// Llama 4: the dense layers' width is intermediate_size_mlp, the
		// experts' (and the shared expert's) intermediate_size.
		cfg.ExpertFFN = geti(0, "intermediate_size")
	}
	cfg.SharedFFN = geti(0, "shared_expert_intermediate_size")
	if n, ok := f.ParamInt(c, "expert_shared_feed_forward_length"); ok && n > 0 && n < 1<<31 {
		cfg.SharedFFN = int(n) // the keys the family's converter reads (Granite's shared_intermediate_size)
	}
	if n := geti(0, "n_shared_experts", "moe_num_shared_experts"); cfg.SharedFFN == 0 && n > 0 {
		// DeepSeek, GLM-4.5 and ERNIE 4.5: the shared experts are one MLP n
		// times an expert's width.
		cfg.SharedFFN = n * cfg.ExpertFFN
	}
	cfg.HeadDim = geti(int64(d/max(heads, 1)), "head_dim")
	cfg.RopeDim = spec.RotaryDims(spec.Config(c), cfg.HeadDim)
	actName := g.Activation
	if s, _ := hc.Str("hidden_activation", "hidden_act"); hf && s != "" {
		if cfg.Activation, err = hfActivation(s); err != nil {
			return nil, err
		}
		actName = cfg.Activation
	}
	cfg.Activation = actName
	if ls, err := f.LayerPattern(c); err == nil && !slices.ContainsFunc(ls, func(l spec.Layer) bool { return l.Mixer.Attention() }) {
		cfg.attentionFree = true // Mamba's: no heads to count
	}
	if err := checkDims(&cfg, l.c.Path); err != nil {
		return nil, err
	}
	m := &decoder{g: g, embScale: 1, resScale: 1, logitScale: 1, attnScale: invSqrt(cfg.HeadDim)}
	if m.invFreq, err = ropeFrequencies(fl, c, &cfg, m); err != nil {
		return nil, err
	}
	m.invFreqLocal = m.invFreq
	if cfg.MRoPE, err = mropeSections(fl, c, cfg.Arch, hf); err != nil {
		return nil, err
	}
	if rs, ok := c.Map("rope_scaling"); ok && cfg.MRoPE != nil {
		cfg.MRoPEInterleaved, _ = rs["mrope_interleaved"].(bool)
	}
	if !hf && cfg.Arch == "qwen3vl" {
		cfg.MRoPEInterleaved = true // llama.cpp's qwen3vl graph interleaves; no key says it
	}
	if g.EmbedScale {
		m.embScale = float32(math.Sqrt(float64(d)))
	}
	m.embScale *= float32(getf(1, "embedding_multiplier"))
	m.resScale = float32(getf(1, "residual_multiplier"))
	m.logitScale = float32(getf(1, "logits_scaling"))
	if v, ok := c.Float("lm_head_multiplier"); ok && v != 0 {
		m.logitScale /= float32(v) // Falcon-H1's, on Hugging Face input (its GGUF has it in the head)
	}
	if v, ok := c.Float("attention_multiplier"); ok {
		m.attnScale = float32(v)
	}
	if v, ok := c.Float("query_pre_attn_scalar"); ok {
		m.attnScale = float32(math.Pow(v, -0.5))
	}
	if use, ok := c.Bool("use_qk_norm"); g.QKL2Norm && (use || !ok) {
		m.qkL2 = &norm{Eps: cfg.Eps, RMS: true, W: make([]float32, cfg.HeadDim)}
		for i := range m.qkL2.W {
			m.qkL2.W[i] = 1
		}
	}
	if on, ok := c.Bool("attn_temperature_tuning"); g.AttnTempNoRope && (on || !ok) {
		m.tempFloor, m.tempScale = geti(0, "floor_scale"), float32(getf(0, "attn_scale"))
	}
	if m.route, err = routingOf(c, f, cfg.Experts, g.MoENormTopK, l.c.Path); err != nil {
		return nil, err
	}
	m.parallel = g.Parallel
	for _, k := range []string{"use_parallel_residual", "parallel_attn"} {
		if b, ok := c.Bool(k); ok {
			m.parallel = b
		}
	}
	m.attnCap = float32(getf(0, "attn_logit_softcapping"))
	m.finalCap = float32(getf(0, "final_logit_softcapping"))
	m.clampQKV = float32(getf(0, "clip_qkv"))
	layers, err := f.LayerPattern(c)
	if err != nil {
		return nil, fmt.Errorf("model: %s: %w", l.c.Path, err)
	}
	if len(layers) != cfg.Layers {
		return nil, fmt.Errorf("model: %s: %d layers in the pattern for %d", l.c.Path, len(layers), cfg.Layers)
	}
	m.layers = layers

	if g.LocalRopeBase {
		base := getf(10000, "rope_local_base_freq")
		if !hf {
			base = mdFloat(l.c.Metadata, f.Name+".rope.freq_base_swa", 10000)
		}
		m.invFreqLocal = kernels.RoPEInvFreq(base, cfg.RopeDim)
	}

	qd, kd := cfg.Heads*cfg.HeadDim, cfg.KVHeads*cfg.HeadDim
	w := decoderWeights{
		TokenEmbd: fl.matrix(fl.name("token_embd", -1, ".weight"), cfg.Vocab, d),
		FinalNorm: fl.norm(cmp.Or(g.FinalNorm, "output_norm"), -1, d, cfg.Eps, true),
	}
	if g.EmbedNorm {
		w.EmbedNorm = fl.norm("token_embd_norm", -1, d, cfg.Eps, true)
	}
	// A pattern that makes some layers mixtures (ERNIE 4.5's) says which;
	// otherwise a layer is one when it has a router.
	statesMoE := slices.ContainsFunc(m.layers, func(l spec.Layer) bool { return l.MoE })
	for i := 0; i < cfg.Layers; i++ {
		upRows := cfg.FFN
		if g.FusedGateUp {
			upRows = 2 * cfg.FFN
		}
		attnNorm, ffnNorm := spec.Role("blk.{bid}.attn_norm"), cmp.Or(g.FFNNorm, "blk.{bid}.ffn_norm")
		if g.FFNNorm == "" && fl.inSchema("blk.{bid}.attn_norm_2") && fl.has(fl.name("blk.{bid}.attn_norm_2", i, ".weight")) {
			// Falcon's two norms of a parallel block, by llama.cpp's
			// names: attn_norm_2 before attention, attn_norm before the
			// feed-forward.
			attnNorm, ffnNorm = "blk.{bid}.attn_norm_2", "blk.{bid}.attn_norm"
		}
		postAttnNorm := "blk.{bid}.post_attention_norm"
		if g.PreFFNNormPostAttention {
			// Seed-OSS: the GGUF's post_attention_norm is the pre-FFN
			// norm, and there is no post-norm of attention.
			ffnNorm, postAttnNorm = postAttnNorm, ""
		}
		qn, kn := qd, kd
		if g.QKNormPerHead {
			qn, kn = cfg.HeadDim, cfg.HeadDim
		}
		lay := m.layers[i]
		b := decoderBlock{
			AttnNorm:     fl.norm(attnNorm, i, d, cfg.Eps, !g.NoPreNorm && lay.Mixer != spec.NoMixer),
			PostAttnNorm: fl.norm(spec.Role(postAttnNorm), i, d, cfg.Eps, false),
			FFNNorm:      fl.norm(ffnNorm, i, d, cfg.Eps, !m.parallel && !g.NoPreNorm && !lay.NoFFN),
			PostFFNNorm:  fl.norm("blk.{bid}.post_ffw_norm", i, d, cfg.Eps, false),
		}
		if lay.Mixer == spec.NoMixer && b.AttnNorm != nil && !fl.inSchema(ffnNorm) {
			// A feed-forward layer whose one pre-norm is named as every
			// layer's (Nemotron-H's MLP layers: attn_norm, as llama.cpp
			// names it).
			b.FFNNorm, b.AttnNorm = b.AttnNorm, nil
		}
		if !lay.NoFFN {
			b.Gate = fl.optDense("blk.{bid}.ffn_gate", i, cfg.FFN, d)
			b.Up = fl.optDense("blk.{bid}.ffn_up", i, upRows, d)
			b.Down = fl.optDense("blk.{bid}.ffn_down", i, d, cfg.FFN)
		}
		if !lay.Mixer.Attention() {
			if lay.Mixer.Recurrent() {
				if b.Mix, err = fl.recurrent(lay.Mixer, i, &cfg, c); err != nil {
					return nil, err
				}
				if cm, ok := b.Mix.(interface{ channelMix() recurrentMixer }); ok && !lay.NoFFN {
					b.FFNMix = cm.channelMix()
				}
				if err := stateCounted(int64(b.Mix.stateSize()+stateSizeOrZeroOf(b.FFNMix)), lay, lay.Mixer, f, c); err != nil {
					return nil, fmt.Errorf("model: %s: layer %d: %w", l.c.Path, i, err)
				}
			}
			if err := fl.moeLayer(&b, i, &cfg, d, lay, statesMoE); err != nil {
				return nil, err
			}
			w.Blocks = append(w.Blocks, b)
			continue
		}
		if lay.HasBeside {
			// A mixer beside the attention (Falcon-H1): its loader, or
			// its refusal.
			if b.Mix, err = fl.recurrent(lay.Beside, i, &cfg, c); err != nil {
				return nil, err
			}
			if err := stateCounted(int64(b.Mix.stateSize()), lay, lay.Beside, f, c); err != nil {
				return nil, fmt.Errorf("model: %s: layer %d: %w", l.c.Path, i, err)
			}
		}
		b.QNorm = fl.norm("blk.{bid}.attn_q_norm", i, qn, cfg.Eps, false)
		b.KNorm = fl.norm("blk.{bid}.attn_k_norm", i, kn, cfg.Eps, false)
		b.O = fl.lin("blk.{bid}.attn_output", i, d, qd)
		if fl.inSchema("blk.{bid}.attn_sinks") {
			b.Sinks = fl.vector(fl.name("blk.{bid}.attn_sinks", i, ".weight"), cfg.Heads)
		}
		if err := fl.moeLayer(&b, i, &cfg, d, lay, statesMoE); err != nil {
			return nil, err
		}
		if g.QueryGate {
			// Each head's query, then its output gate.
			b.Q = fl.lin("blk.{bid}.attn_q", i, 2*qd, d)
			b.K = fl.lin("blk.{bid}.attn_k", i, kd, d)
			b.V = fl.lin("blk.{bid}.attn_v", i, kd, d)
		} else if fl.inSchema("blk.{bid}.attn_qkv") {
			b.QKV = fl.lin("blk.{bid}.attn_qkv", i, qd+2*kd, d)
			if t, _ := f.Tensor("blk.{bid}.attn_qkv"); hf && i == 0 {
				// The projection's output row is regrouped as the
				// converter regroups the weight's rows.
				if m.regroupQKV, _, err = t.Layout.Transform(fl.name("blk.{bid}.attn_qkv", i, ".weight"),
					tensor.Shape{int64(qd + 2*kd)}, int64(cfg.Heads), int64(cfg.KVHeads), false); err != nil {
					return nil, fmt.Errorf("model: %s: %w", fl.c.Path, err)
				}
			}
		} else {
			b.Q = fl.lin("blk.{bid}.attn_q", i, qd, d)
			b.K = fl.lin("blk.{bid}.attn_k", i, kd, d)
			b.V = fl.lin("blk.{bid}.attn_v", i, kd, d)
		}
		w.Blocks = append(w.Blocks, b)
	}
	w.Output, cfg.TiedEmbeddings = w.TokenEmbd, true
	w.OutputName = fl.ggufName("token_embd", -1)
	if out := fl.name("output", -1, ".weight"); out != "" && fl.has(out) {
		w.Output, cfg.TiedEmbeddings = fl.matrix(out, cfg.Vocab, d), false
		w.OutputName = fl.ggufName("output", -1)
	}
	if l.err != nil {
		return nil, l.err
	}
	mod := &Model{cfg: cfg}
	m.cfg, m.w = &mod.cfg, w
	mod.impl = m
	return mod, nil
}

func (m *decoder) step(s *Session, tokens []int, tr *Trace, lastOnly bool) (hidden, logits []float32, err error) {
	c, w, obs := m.cfg, &m.w, s.obs
	T, d, H, G, D := len(tokens), c.DModel, c.Heads, c.KVHeads, c.HeadDim
	qd, kd := H*D, G*D
	pos0 := s.cache.Len

	x := make([]float32, T*d)
	embed(x, w.TokenEmbd, tokens)
	if m.embScale != 1 {
		kernels.Scale(x, m.embScale)
	}
	if w.EmbedNorm != nil {
		w.EmbedNorm.apply(x, x, T, d)
	}
	for t, e := range s.embeds {
		if e != nil {
			copy(x[t*d:(t+1)*d], e)
		}
	}
	var first []float32 // the first layer's value (carryMixer)
	h := make([]float32, T*d)
	q, k, v := make([]float32, T*qd), make([]float32, T*kd), make([]float32, T*kd)
	att := make([]float32, T*qd)
	o := make([]float32, T*d)
	var gate, up, qkv, o2, hb, qg, qgate, side, mrope []float32
	if tr != nil {
		tr.Kinds = make([]string, len(m.layers))
		for l, lay := range m.layers {
			tr.Kinds[l] = lay.Name()
		}
	}
	for l := range w.Blocks {
		b := &w.Blocks[l]
		if !m.layers[l].Mixer.Attention() {
			if gate, up, err = m.stateLayer(s, l, b, x, h, o, gate, up, &first, T); err != nil {
				return nil, nil, err
			}
			recordLayer(tr, x, d)
			continue
		}
		b.AttnNorm.applyOrCopy(h, x, T, d)
		if b.Mix != nil {
			// A mixer beside the attention (arch.Layer.Beside, Falcon-H1's
			// Mamba-2) reads the same normed input; its output joins the
			// attention's before the residual.
			if s.mask != nil {
				return nil, nil, fmt.Errorf("model: %s: layer %d runs a %s: a sequence with padding cannot run", m.cfg.Arch, l, m.layers[l].Beside)
			}
			side = grow(side, T*d)
			if err := b.Mix.forward(side, h, s.cache.state(l, b.Mix.stateSize()), T, obs); err != nil {
				return nil, nil, err
			}
		}
		if b.QKV.W != nil {
			qkv = grow(qkv, T*(qd+2*kd))
			obs.apply(&b.QKV, qkv, h, T)
			m.splitQKV(q, k, v, qkv, T)
		} else if m.g.QueryGate {
			qg = grow(qg, 2*T*qd)
			obs.apply(&b.Q, qg, h, T)
			qgate = grow(qgate, T*qd)
			for r := 0; r < T*H; r++ {
				copy(q[r*D:(r+1)*D], qg[2*r*D:(2*r+1)*D])
				copy(qgate[r*D:(r+1)*D], qg[(2*r+1)*D:(2*r+2)*D])
			}
			obs.apply(&b.K, k, h, T)
			obs.apply(&b.V, v, h, T)
		} else {
			obs.apply(&b.Q, q, h, T)
			obs.apply(&b.K, k, h, T)
			obs.apply(&b.V, v, h, T)
		}
		if b.QNorm != nil && !m.g.QKNormAfterRope {
			b.QNorm.apply(q, q, len(q)/len(b.QNorm.W), len(b.QNorm.W))
			b.KNorm.apply(k, k, len(k)/len(b.KNorm.W), len(b.KNorm.W))
		}
		if m.clampQKV > 0 {
			for _, y := range [][]float32{q, k, v} {
				clamp(y, m.clampQKV)
			}
		}
		inv := m.invFreq
		switch {
		case m.layers[l].Mixer == spec.SlidingAttention:
			inv = m.invFreqLocal
		case m.invFreqLong != nil && pos0+T > m.longAfter:
			// transformers' rule: the whole forward call uses the long
			// factors once its last position is past the original
			// context (llama.cpp decides by its context size).
			inv = m.invFreqLong
		}
		for t := 0; t < T && m.layers[l].Rope; t++ {
			if s.positions != nil {
				// M-RoPE: each pair's angle is its section's position
				// times its frequency, given as the frequency at 1.
				mrope = c.mropeFreq(mrope, inv, s.positions[t])
				kernels.RoPEFreqScaled(q[t*qd:(t+1)*qd], H, D, mrope, 1, c.RopeNeox, m.ropeScale)
				kernels.RoPEFreqScaled(k[t*kd:(t+1)*kd], G, D, mrope, 1, c.RopeNeox, m.ropeScale)
				continue
			}
			kernels.RoPEFreqScaled(q[t*qd:(t+1)*qd], H, D, inv, pos0+t, c.RopeNeox, m.ropeScale)
			kernels.RoPEFreqScaled(k[t*kd:(t+1)*kd], G, D, inv, pos0+t, c.RopeNeox, m.ropeScale)
		}
		if b.QNorm != nil && m.g.QKNormAfterRope {
			b.QNorm.apply(q, q, len(q)/len(b.QNorm.W), len(b.QNorm.W))
			b.KNorm.apply(k, k, len(k)/len(b.KNorm.W), len(b.KNorm.W))
		}
		if m.qkL2 != nil && m.layers[l].Rope {
			m.qkL2.apply(q, q, T*H, D)
			m.qkL2.apply(k, k, T*G, D)
		}
		if m.tempFloor > 0 && !m.layers[l].Rope {
			for t := 0; t < T; t++ {
				f := float32(math.Log(math.Floor(float64(pos0+t+1)/float64(m.tempFloor))+1))*m.tempScale + 1
				kernels.Scale(q[t*qd:(t+1)*qd], f)
			}
		}
		K, V := s.cache.add(l, k, v)
		attend(att, q, K, V, T, pos0+T, reach(kernels.AttentionParams{Heads: H, KVHeads: G, HeadDim: D,
			Scale: m.attnScale, Causal: true, QPos0: pos0, KeyMask: s.mask, SoftCap: m.attnCap, Sinks: b.Sinks,
			Groups: s.groups}, m.layers[l]), tr, l)
		if m.g.QueryGate {
			for i, gv := range qgate[:T*qd] {
				att[i] *= float32(1 / (1 + math.Exp(-float64(gv))))
			}
		}
		obs.apply(&b.O, o, att, T)
		if b.Mix != nil {
			kernels.Add(o[:T*d], side[:T*d])
		}
		if m.parallel {
			// x' = x + Attn(N₁(x)) + FFN(N₂(x)), N₂ = N₁ when the block
			// has one norm (StableLM).
			h2 := h
			if b.FFNNorm != nil {
				hb = grow(hb, T*d)
				b.FFNNorm.apply(hb, x, T, d)
				h2 = hb
			}
			o2 = grow(o2, T*d)
			if gate, up, err = m.ffn(o2, h2, b, gate, up, T, obs); err != nil {
				return nil, nil, err
			}
			// (mlp + attn) + x, transformers' order for GPT-NeoX and Falcon.
			kernels.Add(o2, o)
			kernels.Add(x, o2)
			recordLayer(tr, x, d)
			continue
		}
		m.residual(x, o, b.PostAttnNorm, h, T, d)
		if gate, up, err = m.feedForward(s, x, h, o, b, gate, up, l, T, obs); err != nil {
			return nil, nil, err
		}
		if l < len(s.deepstack) {
			// Qwen3-VL's deepstack: the image's features from a vision
			// layer join the hidden state of its tokens after layer l.
			for t, e := range s.deepstack[l] {
				if e != nil {
					kernels.Add(x[t*d:(t+1)*d], e)
				}
			}
		}
		recordLayer(tr, x, d)
	}
	w.FinalNorm.apply(h, x, T, d)
	if obs != nil {
		head := linear{W: w.Output, Name: w.OutputName}
		if lastOnly {
			obs.observe(&head, h[(T-1)*d:], 1, 0, 0)
		} else {
			obs.observe(&head, h, T, 0, 0)
		}
	}
	logits = lmHead(h, T, d, w.Output, lastOnly, nil)
	if m.logitScale != 1 {
		for i := range logits {
			logits[i] /= m.logitScale
		}
	}
	if m.finalCap > 0 {
		kernels.SoftCap(logits, m.finalCap)
	}
	return h, logits, nil
}

// feedForward adds layer l's feed-forward of x (normed into h; o is its
// output) to x, unless the layer has none (arch.Layer.NoFFN).
func (m *decoder) feedForward(s *Session, x, h, o []float32, b *decoderBlock, gate, up []float32, l, T int, obs Observer) ([]float32, []float32, error) {
	if m.layers[l].NoFFN {
		return gate, up, nil
	}
	d := m.cfg.DModel
	b.FFNNorm.applyOrCopy(h, x, T, d)
	if b.FFNMix != nil {
		st := s.cache.state(l, b.Mix.stateSize()+b.FFNMix.stateSize())
		if err := b.FFNMix.forward(o, h, st[b.Mix.stateSize():], T, obs); err != nil {
			return gate, up, err
		}
		m.residual(x, o, b.PostFFNNorm, h, T, d)
		return gate, up, nil
	}
	gate, up, err := m.ffn(o, h, b, gate, up, T, obs)
	if err != nil {
		return gate, up, err
	}
	m.residual(x, o, b.PostFFNNorm, h, T, d)
	return gate, up, nil
}

// stateLayer runs layer l when it does not attend: its recurrent mixer
// (b.Mix, over its pre-norm of x, advancing the session's state of the
// layer), or none (arch.NoMixer), then its feed-forward.
//
// first carries the value of the step's first layer to the later ones
// (carryMixer).
func (m *decoder) stateLayer(s *Session, l int, b *decoderBlock, x, h, o, gate, up []float32, first *[]float32, T int) ([]float32, []float32, error) {
	d := m.cfg.DModel
	if b.Mix != nil && s.mask != nil {
		// A padding position would enter the state and every later one.
		return gate, up, fmt.Errorf("model: %s: layer %d is recurrent (%s): a sequence with padding cannot run", m.cfg.Arch, l, m.layers[l].Mixer)
	}
	if b.Mix != nil {
		b.AttnNorm.applyOrCopy(h, x, T, d)
		st := s.cache.state(l, b.Mix.stateSize()+stateSizeOrZeroOf(b.FFNMix))[:b.Mix.stateSize()]
		var err error
		if cm, ok := b.Mix.(carryMixer); ok {
			err = cm.forwardCarry(o, h, st, first, T, s.obs)
		} else {
			err = b.Mix.forward(o, h, st, T, s.obs)
		}
		if err != nil {
			return gate, up, err
		}
		m.residual(x, o, b.PostAttnNorm, h, T, d)
	}
	return m.feedForward(s, x, h, o, b, gate, up, l, T, s.obs)
}

// moeLayer loads layer i's mixture of experts into b when the layer has a
// router, and checks the pattern's say (statesMoE: the pattern names the
// mixture layers) against the router's presence.
func (fl familyLoader) moeLayer(b *decoderBlock, i int, cfg *Config, d int, lay spec.Layer, statesMoE bool) error {
	var err error
	if !lay.NoFFN && fl.inSchema("blk.{bid}.ffn_gate_inp") && fl.has(fl.name("blk.{bid}.ffn_gate_inp", i, ".weight")) {
		if b.Router, b.Experts, err = fl.mixture(i, *cfg, d); err != nil {
			return err
		}
		if fl.inSchema("blk.{bid}.ffn_down_shexp") && fl.has(fl.name("blk.{bid}.ffn_down_shexp", i, ".weight")) {
			if cfg.SharedFFN == 0 {
				cfg.SharedFFN = cfg.ExpertFFN // Llama 4's, as llama.cpp sizes it
			}
			S := cfg.SharedFFN
			b.Shared = expert{Gate: fl.lin("blk.{bid}.ffn_gate_shexp", i, S, d), Up: fl.lin("blk.{bid}.ffn_up_shexp", i, S, d),
				Down: fl.lin("blk.{bid}.ffn_down_shexp", i, d, S)}
			// Qwen2-MoE gates the shared expert; ERNIE 4.5 adds it as it is.
			b.SharedGate = fl.optLin("blk.{bid}.ffn_gate_inp_shexp", i, 1, d)
		}
		if fl.inSchema("blk.{bid}.exp_probs_b") {
			b.ProbsB = fl.optVector(fl.name("blk.{bid}.exp_probs_b", i, ".bias"), cfg.Experts)
		}
	}
	if statesMoE && lay.MoE != (b.Router.W != nil) {
		return fmt.Errorf("model: %s: layer %d: the config makes it a mixture: %v, but its router %s is present: %v",
			fl.c.Path, i, lay.MoE, fl.name("blk.{bid}.ffn_gate_inp", i, ".weight"), b.Router.W != nil)
	}
	return nil
}

// recurrentMixer is the token mixer of a recurrent layer
// (arch.Mixer.Recurrent): it carries a state of fixed size from step to
// step instead of attending to a cache. Feeding a sequence at once and
// token by token gives the same output.
type recurrentMixer interface {
	// stateSize is the floats of state one sequence keeps for the layer.
	stateSize() int
	// forward sets dst[T][d] to the mixer's output for its (normed) input
	// h[T][d], reading and advancing state (stateSize floats, zero before
	// the first step). obs sees the weight multiplies.
	forward(dst, h, state []float32, T int, obs Observer) error
}

// carryMixer is a recurrent mixer that also reads a value one forward
// step carries from layer to layer (RWKV-7's: the first layer sets it to
// its value, the later ones mix it into theirs).
type carryMixer interface {
	recurrentMixer
	forwardCarry(dst, h, state []float32, first *[]float32, T int, obs Observer) error
}

// stateSizeOrZeroOf is m's stateSize, 0 for none (nil).
func stateSizeOrZeroOf(m recurrentMixer) int {
	if m == nil {
		return 0
	}
	return m.stateSize()
}

// stateCounted holds a recurrent layer's n floats of state (its mixer's
// and, for RWKV-7, its channel mix's) to the state the memory estimate
// (checkpoint.Summary) counts for its layer: the pattern's StateFloats, or,
// where the pattern states none (the Mamba families), the ssm.* keys' size
// (arch.Family.SSMStateFloats). One fact, computed from the config there
// and from the loaded tensors here, so the two cannot drift apart.
func stateCounted(n int64, lay spec.Layer, kind spec.Mixer, f *spec.Family, c spec.Config) error {
	want := lay.StateFloats
	if want == 0 {
		want = f.SSMStateFloats(c)
	}
	if n != want {
		return fmt.Errorf("%s keeps %d floats of state, the memory estimate counts %d", kind, n, want)
	}
	return nil
}

// canRun reports whether the decoder runs layers of mixer kind: attention,
// a feed-forward alone, and the recurrent kinds recurrent builds (keep the
// two in step).
func canRun(kind spec.Mixer) bool {
	return kind.Attention() || kind == spec.NoMixer || kind == spec.Mamba2 || kind == spec.RWKV7
}

// recurrent loads layer i's recurrent mixer of kind.
func (fl familyLoader) recurrent(kind spec.Mixer, i int, cfg *Config, c spec.Config) (recurrentMixer, error) {
	switch kind {
	case spec.ShortConv:
		return fl.loadShortConv(i, cfg, c)
	case spec.GatedDeltaNet:
		return fl.deltaNet(i, cfg, c)
	case spec.Mamba2:
		return fl.loadMamba2(i, cfg, c)
	case spec.Mamba:
		return fl.mamba(i, cfg, c)
	case spec.RWKV7:
		return fl.loadRWKV7(i, cfg, c)
	default:
		return nil, tensor.Unsupported("model: %s: layer %d: %s layers cannot run yet", fl.c.Path, i, kind)
	}
}

// ffn sets dst[T][d] to the feed-forward branch of h: W_down·(act(gate) ⊙
// up) or W_down·act(up), gate and up from their own or one fused
// projection. gate and up are scratch buffers, returned grown. obs sees
// the multiplies.
func (m *decoder) ffn(dst, h []float32, b *decoderBlock, gate, up []float32, T int, obs Observer) ([]float32, []float32, error) {
	F := m.cfg.FFN
	switch {
	case b.Router.W != nil:
		return gate, up, m.moe(dst, h, b, T, obs)
	case m.g.FusedGateUp:
		gu := grow(up, T*2*F)
		obs.apply(&b.Up, gu, h, T)
		gate, up = grow(gate, T*F), gu
		for t := 0; t < T; t++ {
			copy(gate[t*F:(t+1)*F], gu[t*2*F:t*2*F+F])
		}
		for t := 0; t < T; t++ {
			copy(gu[t*F:(t+1)*F], gu[t*2*F+F:(t+1)*2*F])
		}
		if err := activate(gate, m.cfg.Activation); err != nil {
			return gate, up, err
		}
		kernels.Mul(gate, gu[:T*F])
		obs.apply(&b.Down, dst, gate, T)
	case b.Gate.W != nil:
		up, gate = grow(up, T*F), grow(gate, T*F)
		obs.apply(&b.Up, up, h, T)
		obs.apply(&b.Gate, gate, h, T)
		if err := activate(gate, m.cfg.Activation); err != nil {
			return gate, up, err
		}
		kernels.Mul(gate, up)
		obs.apply(&b.Down, dst, gate, T)
	default:
		up = grow(up, T*F)
		obs.apply(&b.Up, up, h, T)
		if err := activate(up, m.cfg.Activation); err != nil {
			return gate, up, err
		}
		obs.apply(&b.Down, dst, up, T)
	}
	return gate, up, nil
}

// splitQKV cuts a fused projection's rows [T][q | k | v] (or, from Hugging
// Face's grouped layout, [T][kv group][heads/groups q, k, v]) into q, k
// and v.
func (m *decoder) splitQKV(q, k, v, qkv []float32, T int) {
	c := m.cfg
	H, G, D := c.Heads, c.KVHeads, c.HeadDim
	qd, kd := H*D, G*D
	w := qd + 2*kd
	var grouped []float32
	if m.regroupQKV != nil {
		grouped = make([]float32, w)
	}
	for t := 0; t < T; t++ {
		row := qkv[t*w : (t+1)*w]
		if grouped != nil {
			m.regroupQKV(grouped, row)
			row = grouped
		}
		copy(q[t*qd:(t+1)*qd], row[:qd])
		copy(k[t*kd:(t+1)*kd], row[qd:qd+kd])
		copy(v[t*kd:(t+1)*kd], row[qd+kd:])
	}
}

// residual adds branch output o to x: x += s_res·N(o), the norm only where
// the family has a post-norm (scratch is T·d of free space).
func (m *decoder) residual(x, o []float32, post *norm, scratch []float32, T, d int) {
	if post != nil {
		post.apply(scratch, o, T, d)
		o = scratch
	}
	if m.resScale != 1 {
		kernels.Scale(o, m.resScale)
	}
	kernels.Add(x, o)
}

// clampedGLU sets g to gpt-oss's gated unit of gate g and up u (g clamped
// above at Limit, u to ±Limit): (u + 1)·g·σ(Alpha·g), in float32 steps
// as transformers computes it.
func clampedGLU(g, u []float32, c *spec.ClampedGLU) {
	for i, x := range g {
		x = min(x, c.Limit)
		y := min(max(u[i], -c.Limit), c.Limit)
		sig := float32(1 / (1 + math.Exp(-float64(x*c.Alpha))))
		g[i] = (y + 1) * (x * sig)
	}
}

// clamp limits every element of x to [-c, c] (OLMo's clip_qkv).
func clamp(x []float32, c float32) {
	for i, v := range x {
		x[i] = min(max(v, -c), c)
	}
}

// grow returns b resliced to n, reallocated when too small.
func grow(b []float32, n int) []float32 {
	if cap(b) < n {
		return make([]float32, n)
	}
	return b[:n]
}

// ropeFrequencies returns the rotary inverse frequencies: theta^(-2i/d),
// scaled as Llama 3's rope_scaling says (HF) or divided by the rope_freqs
// factors the converter wrote (GGUF); with LongRoPE (Phi-3) the short
// factors' frequencies, and the long ones in m. Other rope scalings are
// refused rather than ignored.
func ropeFrequencies(fl familyLoader, c spec.Config, cfg *Config, m *decoder) ([]float32, error) {
	path := fl.c.Path
	m.ropeScale = 1
	// Hunyuan's alpha scaling: its base, from config.json or as
	// GGUF → HF states it again from rope.freq_base.
	if base, ok, err := spec.NTKAlphaBaseOf(c); err != nil {
		return nil, fmt.Errorf("model: %s: %w", path, err)
	} else if ok {
		return kernels.RoPEInvFreq(base, cfg.RopeDim), nil
	}
	if fl.hf {
		r, ok, err := spec.Llama3RopeOf(c)
		if err != nil {
			return nil, fmt.Errorf("model: %s: %w", path, err)
		}
		if ok {
			return r.InvFreq(cfg.RopeTheta, cfg.RopeDim), nil
		}
		if y, af, ok, err := yarnOf(c, cfg.RopeTheta, cfg.RopeDim, path); ok || err != nil {
			m.ropeScale = af
			return y, err
		}
		if rs, ok := c.Map("rope_scaling"); ok && !isMRoPE(rs) {
			lr, ok, err := spec.LongRopeOf(c, cfg.RopeDim)
			if !ok || err != nil || fl.f != spec.Phi3 {
				return nil, tensor.Unsupported("model: %s: %s rope_scaling %v is not supported", path, cfg.Arch, map[string]any(rs))
			}
			m.invFreqLong = dividedFreq(cfg.RopeTheta, lr.Long)
			m.longAfter = int(lr.OriginalContext)
			m.ropeScale = float32(lr.AttnFactor)
			return dividedFreq(cfg.RopeTheta, lr.Short), nil
		}
		return kernels.RoPEInvFreq(cfg.RopeTheta, cfg.RopeDim), nil
	}
	if typ, ok := fl.c.Metadata.Str(cfg.Arch + ".rope.scaling.type"); ok && typ == "yarn" {
		// The config HFConfigOf rebuilt from the GGUF states it.
		y, af, ok, err := yarnOf(c, cfg.RopeTheta, cfg.RopeDim, path)
		if err == nil && !ok {
			err = fmt.Errorf("model: %s: %s rope scaling yarn without its parameters", path, cfg.Arch)
		}
		m.ropeScale = af
		return y, err
	}
	if typ, ok := fl.c.Metadata.Str(cfg.Arch + ".rope.scaling.type"); ok && typ != "none" {
		return nil, tensor.Unsupported("model: %s: %s rope scaling %q is not supported", path, cfg.Arch, typ)
	}
	half := cfg.RopeDim / 2
	if fl.has("rope_factors_short.weight") || fl.has("rope_factors_long.weight") {
		short := fl.vector("rope_factors_short.weight", half)
		long := fl.vector("rope_factors_long.weight", half)
		if fl.err != nil {
			return nil, fl.err
		}
		m.invFreqLong = dividedFreq(cfg.RopeTheta, long)
		m.longAfter = mdInt(fl.c.Metadata, cfg.Arch+".rope.scaling.original_context_length", cfg.Context)
		m.ropeScale = float32(mdFloat(fl.c.Metadata, cfg.Arch+".rope.scaling.attn_factor", 1))
		return dividedFreq(cfg.RopeTheta, short), nil
	}
	inv := kernels.RoPEInvFreq(cfg.RopeTheta, cfg.RopeDim)
	if fl.has("rope_freqs.weight") {
		factors := fl.vector("rope_freqs.weight", len(inv))
		if fl.err != nil {
			return nil, fl.err
		}
		for i, f := range factors {
			inv[i] /= f
		}
	}
	return inv, nil
}

// yarnOf is config.json's yarn rope_scaling (spec.YaRNOf) as the rotary
// frequencies and the factor on cos and sin, for the decoder's RopeDim.
func yarnOf(c spec.Config, theta float64, dim int, path string) (inv []float32, attnFactor float32, ok bool, err error) {
	y, af, ok, err := spec.YaRNOf(c)
	if !ok || err != nil {
		if err != nil {
			err = fmt.Errorf("model: %s: %w", path, err)
		}
		return nil, 1, ok, err
	}
	return y.InvFreq(theta, dim), float32(af), true, nil
}

// dividedFreq returns 1/(factor_i · theta^(2i/d)), d = 2·len(factors), in
// float32 as transformers' LongRoPE computes it.
func dividedFreq(theta float64, factors []float32) []float32 {
	d := 2 * len(factors)
	out := make([]float32, len(factors))
	for i, f := range factors {
		p := float32(math.Pow(theta, float64(float32(float64(2*i)/float64(d)))))
		out[i] = 1 / (f * p)
	}
	return out
}

// optDense loads a dense feed-forward role, absent (nil weight) in a layer
// whose family routes to experts instead (Tensor.Unless).
func (fl familyLoader) optDense(role spec.Role, layer, out, in int) linear {
	t, ok := fl.f.Tensor(role)
	if !ok {
		return linear{}
	}
	if t.Unless != "" && fl.has(fl.name(t.Unless, layer, ".weight")) {
		return linear{}
	}
	return fl.lin(role, layer, out, in)
}

// mixture loads layer's router and experts: HF keeps one tensor per expert
// and matrix, GGUF one [experts][rows][cols] tensor per matrix.
func (fl familyLoader) mixture(layer int, cfg Config, d int) (linear, []expert, error) {
	n := cfg.Experts
	if n <= 0 || cfg.ExpertsUsed <= 0 || cfg.ExpertsUsed > n {
		return linear{}, nil, fmt.Errorf("model: %s: layer %d routes to experts, but the config gives %d experts, %d used per token",
			fl.c.Path, layer, n, cfg.ExpertsUsed)
	}
	router := fl.lin("blk.{bid}.ffn_gate_inp", layer, n, d)
	F := cfg.ExpertFFN
	mats := func(role spec.Role, rows, cols int) []*kernels.Matrix {
		if name := fl.name(role, layer, ".weight"); !fl.hf || fl.packed[name] != nil {
			return fl.stackedMatrices(name, n, rows, cols)
		}
		if t, _ := fl.f.Tensor(role); t.Stack == 0 {
			return fl.hfStackedExperts(role, layer, n, rows, cols)
		}
		out := make([]*kernels.Matrix, n)
		for x := range out {
			out[x] = fl.matrix(fl.f.TensorPartName(role, layer, x, ".weight"), rows, cols)
		}
		return out
	}
	gate := mats("blk.{bid}.ffn_gate_exps", F, d)
	up := mats("blk.{bid}.ffn_up_exps", F, d)
	down := mats("blk.{bid}.ffn_down_exps", d, F)
	if fl.err != nil {
		return linear{}, nil, fl.err
	}
	// Stacked biases, where the experts have them (gpt-oss): [n][rows].
	bias := func(role spec.Role, rows int) [][]float32 {
		name := fl.name(role, layer, ".bias")
		if name == "" || name == fl.name(role, layer, ".weight") || !fl.has(name) {
			// none, or a suffix-less Hugging Face parameter (Llama 4's
			// experts.gate_up_proj) that names the weight itself
			return make([][]float32, n)
		}
		all := fl.vector(name, n*rows)
		out := make([][]float32, n)
		for x := range out {
			if all != nil {
				out[x] = all[x*rows : (x+1)*rows]
			}
		}
		return out
	}
	gb, ub, db := bias("blk.{bid}.ffn_gate_exps", F), bias("blk.{bid}.ffn_up_exps", F), bias("blk.{bid}.ffn_down_exps", d)
	if fl.err != nil {
		return linear{}, nil, fl.err
	}
	// Per-expert product factors on GGUF input (NVFP4 experts' scales).
	scales := func(role spec.Role, rows int) [][]float32 {
		if fl.hf {
			return make([][]float32, n)
		}
		return fl.expertScales(fl.name(role, layer, ""), n, rows)
	}
	gs, us, ds := scales("blk.{bid}.ffn_gate_exps", F), scales("blk.{bid}.ffn_up_exps", F), scales("blk.{bid}.ffn_down_exps", d)
	if fl.err != nil {
		return linear{}, nil, fl.err
	}
	ex := make([]expert, n)
	for x := range ex {
		ex[x] = expert{Gate: linear{W: gate[x], B: gb[x], Scale: gs[x], Name: fl.ggufName("blk.{bid}.ffn_gate_exps", layer)},
			Up:   linear{W: up[x], B: ub[x], Scale: us[x], Name: fl.ggufName("blk.{bid}.ffn_up_exps", layer)},
			Down: linear{W: down[x], B: db[x], Scale: ds[x], Name: fl.ggufName("blk.{bid}.ffn_down_exps", layer)}}
	}
	return router, ex, nil
}

// hfStackedExperts loads role's experts from a Hugging Face tensor that
// holds all of them (Llama 4's [expert][in][out] experts.down_proj, and
// gate_up_proj with two roles side by side), rearranged as the converter
// rearranges it (arch.Family.HFTensorToGGUF), as float32 matrices.
func (fl familyLoader) hfStackedExperts(role spec.Role, layer, n, rows, cols int) []*kernels.Matrix {
	shape, dst := fl.hfAsGGUF(role, layer)
	if dst == nil {
		return nil
	}
	if len(shape) != 3 || shape[0] != int64(n) || !shapeIs(shape[1:], rows, cols) {
		fl.fail(fmt.Errorf("model: %s: %s from %q is %v, want [%d %d %d]", fl.c.Path, fl.ggufName(role, layer),
			fl.name(role, layer, ".weight"), shape, n, rows, cols))
		return nil
	}
	out := make([]*kernels.Matrix, n)
	for x := range out {
		out[x] = kernels.F32Matrix(rows, cols, dst[x*rows*cols:(x+1)*rows*cols])
		fl.mats = append(fl.mats, out[x])
	}
	return out
}

// hfHalfMatrix loads a [rows][cols] role that a Hugging Face tensor holds
// beside another (arch.Tensor.Half: GraniteMoE's shared_mlp.input_linear,
// gate rows then up rows), as the converter cuts it.
func (fl familyLoader) hfHalfMatrix(role spec.Role, layer, rows, cols int) *kernels.Matrix {
	shape, dst := fl.hfAsGGUF(role, layer)
	if dst == nil {
		return nil
	}
	if !shapeIs(shape, rows, cols) {
		fl.fail(fmt.Errorf("model: %s: %s from %q is %v, want [%d %d]", fl.c.Path, fl.ggufName(role, layer),
			fl.name(role, layer, ".weight"), shape, rows, cols))
		return nil
	}
	m := kernels.F32Matrix(rows, cols, dst)
	fl.mats = append(fl.mats, m)
	return m
}

// hfAsGGUF reads the Hugging Face tensor that holds role at layer and
// returns role's GGUF tensor made from it (shape and values), as the
// converter makes it (arch.Family.HFTensorToGGUF).
func (fl familyLoader) hfAsGGUF(role spec.Role, layer int) (tensor.Shape, []float32) {
	name := fl.name(role, layer, ".weight")
	t, ok := fl.c.Tensor(name)
	if !ok || fl.err != nil {
		fl.fail(fmt.Errorf("model: %s: tensor %q missing", fl.c.Path, name))
		return nil, nil
	}
	maps, err := fl.f.HFTensorToGGUF(t.Info, fl.has)
	if err != nil {
		fl.fail(fmt.Errorf("model: %s: %w", fl.c.Path, err))
		return nil, nil
	}
	want := fl.ggufName(role, layer)
	for _, m := range maps {
		if m.Name != want {
			continue
		}
		n, err := m.Shape.NumElements()
		if err != nil {
			fl.fail(fmt.Errorf("model: %s: %s: %w", fl.c.Path, want, err))
			return nil, nil
		}
		src := fl.vector(name, int(t.NumElements()))
		if src == nil {
			return nil, nil
		}
		dst := src
		if m.Transform != nil {
			dst = make([]float32, n)
			m.Transform(dst, src)
		}
		return m.Shape, dst
	}
	fl.fail(fmt.Errorf("model: %s: tensor %q does not give %s", fl.c.Path, name, want))
	return nil, nil
}

// moe is a sparse mixture block: each token's router scores
// softmax(W_r·h) (or sigmoids: GLM-4.5), its top ExpertsUsed (chosen with
// the layer's score bias and expert groups when it has them; renormalised
// to sum 1 where the family does: Mixtral, not Qwen2-MoE; scaled by
// routed_scaling_factor; see routing), and the sum of those experts'
// outputs weighted by them; then the shared expert's output, scaled by
// sigmoid(W_sg·h) when the layer has that gate (Qwen2-MoE). Tokens are gathered per expert
// and the experts taken in index order, as transformers adds them. obs sees
// the multiplies, an expert's with its index.
func (m *decoder) moe(dst, h []float32, b *decoderBlock, T int, obs Observer) error {
	d, n, k, F := m.cfg.DModel, len(b.Experts), m.cfg.ExpertsUsed, m.cfg.ExpertFFN
	probs := make([]float32, T*n)
	obs.apply(&b.Router, probs, h, T)
	weight := make([]float32, T*n) // token × expert → routing weight (0: not chosen)
	m.route.weights(weight, probs, b.ProbsB, T, n, k)
	if err := runExperts(dst, h, b.Experts, weight, T, d, F, m.cfg.Activation, m.g.MoEScaleInput, m.g.ClampedGLU, obs); err != nil {
		return err
	}
	if b.Shared.Down.W == nil {
		return nil
	}
	S := m.cfg.SharedFFN
	g, u, y := make([]float32, T*S), make([]float32, T*S), make([]float32, T*d)
	obs.apply(&b.Shared.Gate, g, h, T)
	obs.apply(&b.Shared.Up, u, h, T)
	if err := activate(g, m.cfg.Activation); err != nil {
		return err
	}
	kernels.Mul(g, u)
	obs.apply(&b.Shared.Down, y, g, T)
	if b.SharedGate.W == nil {
		kernels.Add(dst[:T*d], y)
		return nil
	}
	sg := make([]float32, T)
	if b.SharedGate.W != nil {
		obs.apply(&b.SharedGate, sg, h, T)
	}
	for t := 0; t < T; t++ {
		s := float32(1)
		if b.SharedGate.W != nil {
			s = float32(1 / (1 + math.Exp(-float64(sg[t]))))
		}
		out := dst[t*d : (t+1)*d]
		for j, v := range y[t*d : (t+1)*d] {
			out[j] += s * v
		}
	}
	return nil
}

// runExperts sets dst[T][d] to Σ_e weight[t][e]·expert_e(h[t]) over the
// experts e a token is routed to (weight[t·n+e] ≠ 0): tokens are gathered
// per expert and the experts taken in index order, as transformers adds
// them; act is the gate's activation, glu (when set) the clamped gated
// unit in its place (gpt-oss). scaleInput: the weight multiplies the
// expert's input instead of its output (Graph.MoEScaleInput). obs sees
// the multiplies, each with its expert's index.
func runExperts(dst, h []float32, experts []expert, weight []float32, T, d, F int, act string, scaleInput bool, glu *spec.ClampedGLU, obs Observer) error {
	n := len(experts)
	clear(dst[:T*d])
	var rows []int
	var x, g, u, y []float32
	for e := 0; e < n; e++ {
		rows = rows[:0]
		for t := 0; t < T; t++ {
			if weight[t*n+e] != 0 {
				rows = append(rows, t)
			}
		}
		if len(rows) == 0 {
			continue
		}
		R := len(rows)
		x, g, u, y = grow(x, R*d), grow(g, R*F), grow(u, R*F), grow(y, R*d)
		for i, t := range rows {
			copy(x[i*d:(i+1)*d], h[t*d:(t+1)*d])
			if scaleInput {
				kernels.Scale(x[i*d:(i+1)*d], weight[t*n+e])
			}
		}
		ex := &experts[e]
		obs.observe(&ex.Gate, x, R, e, n)
		ex.Gate.apply(g, x, R)
		obs.observe(&ex.Up, x, R, e, n)
		ex.Up.apply(u, x, R)
		if glu != nil {
			clampedGLU(g, u, glu)
		} else {
			if err := activate(g, act); err != nil {
				return err
			}
			kernels.Mul(g, u)
		}
		obs.observe(&ex.Down, g, R, e, n)
		ex.Down.apply(y, g, R)
		for i, t := range rows {
			w := weight[t*n+e]
			if scaleInput {
				w = 1
			}
			out := dst[t*d : (t+1)*d]
			for j, v := range y[i*d : (i+1)*d] {
				out[j] += v * w
			}
		}
	}
	return nil
}

// mropeSections reads M-RoPE's sections (time, height, width, extra): the
// GGUF's rope.dimension_sections, or config.json's rope_scaling
// mrope_section; zero when the model has none.
func mropeSections(fl familyLoader, c spec.Config, arch string, hf bool) ([]int, error) {
	out := make([]int, 4)
	var secs []int64
	if hf {
		rs, ok := c.Map("rope_scaling")
		if !ok {
			return nil, nil
		}
		s, ok, err := rs.Ints("mrope_section")
		if err != nil || !ok {
			return nil, err
		}
		secs = s
	} else {
		v, ok := fl.c.Metadata.Get(arch + ".rope.dimension_sections")
		if !ok {
			return nil, nil
		}
		a, _ := v.Array()
		switch d := a.Data.(type) {
		case []int32:
			for _, x := range d {
				secs = append(secs, int64(x))
			}
		case []uint32:
			for _, x := range d {
				secs = append(secs, int64(x))
			}
		default:
			return out, fmt.Errorf("model: %s: %s.rope.dimension_sections is not an integer array", fl.c.Path, arch)
		}
	}
	sum := int64(0)
	for i, x := range secs {
		if i >= 4 {
			break
		}
		if x < 0 || x > 1<<20 {
			return out, fmt.Errorf("model: %s: M-RoPE section %d = %d", fl.c.Path, i, x)
		}
		out[i] = int(x)
		sum += x
	}
	if sum == 0 {
		return nil, nil
	}
	return out, nil
}

// mropeFreq sets dst to inv with each pair's frequency times its section's
// position, for one token at pos (time, height, width, extra). Consecutive
// sections (Qwen2-VL): pair i belongs to section j of i mod Σsections, as
// llama.cpp's ggml_rope_multi and transformers' mrope_section split take
// them. Interleaved (Qwen3-VL): height and width take every third pair
// (1, 4, … and 2, 5, …) within 3·their widths, time the pairs 0, 3, …
// within 3·its width, and any other pair the extra position, as
// ggml_rope_multi's imrope does; transformers' apply_interleaved_mrope gives
// those to time, which the caller says with extra = time.
func (c *Config) mropeFreq(dst, inv []float32, pos [4]int) []float32 {
	dst = grow(dst, len(inv))
	s := c.MRoPE
	sum := s[0] + s[1] + s[2] + s[3]
	for i, f := range inv {
		sec := i % sum
		p := pos[3]
		switch {
		case c.MRoPEInterleaved:
			switch {
			case sec%3 == 1 && sec < 3*s[1]:
				p = pos[1]
			case sec%3 == 2 && sec < 3*s[2]:
				p = pos[2]
			case sec%3 == 0 && sec < 3*s[0]:
				p = pos[0]
			}
		case sec < s[0]:
			p = pos[0]
		case sec < s[0]+s[1]:
			p = pos[1]
		case sec < s[0]+s[1]+s[2]:
			p = pos[2]
		}
		dst[i] = float32(p) * f
	}
	return dst
}

// isMRoPE reports whether rope_scaling is M-RoPE's alone (mrope_section
// with rope_type or type "default" or "mrope"): the frequencies are the
// plain ones, the sections say which position each pair takes.
func isMRoPE(rs spec.Config) bool {
	if _, ok := rs["mrope_section"]; !ok {
		return false
	}
	for _, k := range []string{"rope_type", "type"} {
		if t, ok := rs.Str(k); ok && t != "default" && t != "mrope" {
			return false
		}
	}
	return true
}
