package arch

import (
	"fmt"
	"math"

	"github.com/tfconv/tfconv/tensor"
)

// Gemma3n is Gemma 3n's text model (Gemma3nForCausalLM, and the language
// model of Gemma3nForConditionalGeneration, whose vision and audio towers
// the converter leaves to the multimodal projector file: Drops say so).
// Gemma 3's attention (per-head Q/K norms, sliding layers with their own
// rope base) with an unweighted RMSNorm of V and no query scaling, plain w
// norms (not 1 + w), and around each block: AltUp (altup_num_inputs copies
// of the hidden state, a router predicting them before the block and
// correcting them after), LAuReL (a rank-laurel_rank residual beside
// attention), per-layer embeddings (a second embedding table of
// hidden_size_per_layer_input values per layer, gated into the stream after
// the block), gaussian top-k sparsity of the feed-forward gate in the layers
// activation_sparsity_pattern names, the last num_kv_shared_layers layers
// reusing earlier layers' keys and values, and the final soft-cap. It
// follows the newer converter (testdata/arch/README.md names the commit).
var Gemma3n = register(&Family{
	Name:       "gemma3n",
	HFClasses:  []string{"Gemma3nForCausalLM", "Gemma3nForConditionalGeneration"},
	ModelTypes: []string{"gemma3n_text", "gemma3n"},
	HFClass:    "Gemma3nForCausalLM", ModelType: "gemma3n_text",
	Params: withParams(withAfter(withFFNList(baseParams()), "rope.freq_base",
		f32p("rope.freq_base_swa", Optional, "rope_local_base_freq")),
		f32p("final_logit_softcapping", Optional, "final_logit_softcapping"),
		u32("attention.sliding_window", Optional, "sliding_window"),
		u32("altup.active_idx", Required, "altup_active_idx"),
		gemma3nAltupInputs(),
		u32("embedding_length_per_layer_input", Required, "hidden_size_per_layer_input"),
		u32("attention.shared_kv_layers", Required, "num_kv_shared_layers"),
		gemma3nSparsity(),
		slidingFlags(gemma3nSliding),
		noRopeScaling(),
	),
	Tensors: gemma3nTensors(),
	Pattern: gemma3nPattern,
	Drops: []Drop{rotaryBuffer, gemmaHead,
		{Prefix: "model.vision_tower.", Reason: gemma3nTowers},
		{Prefix: "model.audio_tower.", Reason: gemma3nTowers},
		{Prefix: "model.embed_vision.", Reason: gemma3nTowers},
		{Prefix: "model.embed_audio.", Reason: gemma3nTowers},
	},
	SuffixAliases: map[string]string{"correct_output_scale": "correct_output.weight"},
	// The converter keeps AltUp's coefficient matrices F32 at every
	// --outtype (ModelBase.prepare_tensors' list: ALTUP_CORRECT_COEF,
	// ALTUP_PREDICT_COEF).
	F32: []Role{"blk.{bid}.altup_correct_coef", "blk.{bid}.altup_predict_coef"},
	ShapeKeys: []ShapeKey{
		{Key: "laurel_rank", Tensor: "blk.0.laurel_l.weight", Axis: 0},
		{Key: "vocab_size_per_layer_input", Tensor: "per_layer_token_embd.weight", Axis: 0},
	},
	HFConst: map[string]any{"hidden_activation": "gelu_pytorch_tanh", "tie_word_embeddings": true,
		"altup_correct_scale": true},
	BiasFlag: "attention_bias",
	Vocab:    VocabRules{AddSpacePrefix: &no},
	Graph: Graph{Norm: RMSNorm, FFN: Gated, Activation: "gelu_tanh", EmbedScale: true, QKNormPerHead: true,
		NeoxRopeGGUF: true, LocalRopeBase: true},
})

const gemma3nTowers = "Gemma 3n's vision and audio towers: not the text model's; llama.cpp's converter puts them in the multimodal projector file (--mmproj), which its d32676d7 refuses for Gemma 3n (it cannot map the audio tower's subsample_conv_projection norms) and tfconv has no record of"

// gemma3nH is the text model's prefix as the published checkpoints (and
// transformers' save of Gemma3nForCausalLM) name it; the converter reads
// names without "language_model.", so those are accepted too.
const gemma3nH = "model.language_model."

func gemma3nTensors() []Tensor {
	w := func(gguf, hf string, layout Layout, shape ...Dim) Tensor {
		return Tensor{GGUF: gguf, HF: []string{gemma3nH + hf, "model." + hf}, Shape: shape, Layout: layout}
	}
	l := func(gguf, hf string, shape ...Dim) Tensor {
		return w("blk.{bid}."+gguf, "layers.{bid}."+hf, LayoutSame, shape...)
	}
	ts := []Tensor{
		w("token_embd", "embed_tokens", LayoutSame, DimVocab, DimHidden),
		w("per_layer_token_embd", "embed_tokens_per_layer", LayoutSame, DimVocab, DimPerLayerAll),
		w("output_norm", "norm", LayoutSame, DimHidden),
		w("per_layer_model_proj", "per_layer_model_projection", LayoutSame, DimPerLayerAll, DimHidden),
		w("per_layer_proj_norm", "per_layer_projection_norm", LayoutSame, DimPerLayer),
		l("attn_norm", "input_layernorm", DimHidden),
		l("attn_q", "self_attn.q_proj", DimQ, DimHidden),
		l("attn_k", "self_attn.k_proj", DimKV, DimHidden),
		l("attn_v", "self_attn.v_proj", DimKV, DimHidden),
		l("attn_output", "self_attn.o_proj", DimHidden, DimQ),
		l("attn_q_norm", "self_attn.q_norm", DimHeadDim),
		l("attn_k_norm", "self_attn.k_norm", DimHeadDim),
		l("post_attention_norm", "post_attention_layernorm", DimHidden),
		l("ffn_norm", "pre_feedforward_layernorm", DimHidden),
		l("ffn_gate", "mlp.gate_proj", DimFFN, DimHidden),
		l("ffn_up", "mlp.up_proj", DimFFN, DimHidden),
		l("ffn_down", "mlp.down_proj", DimHidden, DimFFN),
		l("post_ffw_norm", "post_feedforward_layernorm", DimHidden),
		l("inp_gate", "per_layer_input_gate", DimPerLayer, DimHidden),
		l("proj", "per_layer_projection", DimHidden, DimPerLayer),
		l("post_norm", "post_per_layer_input_norm", DimHidden),
		l("altup_correct_coef", "altup.correction_coefs", DimAltup, DimAltup),
		l("altup_predict_coef", "altup.prediction_coefs", DimAltupSquared, DimAltup),
		l("altup_router", "altup.modality_router", DimAltup, DimHidden),
		l("altup_router_norm", "altup.router_norm", DimHidden),
		l("laurel_l", "laurel.linear_left", DimLaurel, DimHidden),
		l("laurel_r", "laurel.linear_right", DimHidden, DimLaurel),
		l("laurel_post_norm", "laurel.post_laurel_norm", DimHidden),
	}
	// correct_output_scale has no ".weight" suffix in Hugging Face's names
	// (the converter adds one: filter_tensors).
	scale := l("altup_correct_scale", "altup.correct_output", DimHidden)
	scale.HFSuffix = "_scale"
	// The AltUp projections are one matrix per stream beyond the first,
	// stacked in GGUF.
	proj := w("altup_proj", "altup_projections.{xid}", LayoutSame, DimHidden, DimHidden)
	proj.Stack = DimAltupExtra
	unembd := w("altup_unembd_proj", "altup_unembed_projections.{xid}", LayoutSame, DimHidden, DimHidden)
	unembd.Stack = DimAltupExtra
	// The converter pads both embedding tables to vocab_size (the
	// published per-layer table has 262144 rows of 262400).
	ts[0].PadTo, ts[1].PadTo = "vocab_size", "vocab_size"
	// transformers v4.57.6's save_pretrained of Gemma3nForCausalLM rewrites
	// the "model" inside per_layer_model_projection as well.
	ts[3].HF = append(ts[3].HF, gemma3nH+"per_layer_model.language_model_projection")
	return append(ts, scale, proj, unembd)
}

// withFFNList makes feed_forward_length an array when config.json's
// intermediate_size is a list (one width per layer, as Gemma3nTextConfig
// saves it: the converter writes the list, as INT32).
func withFFNList(params []Param) []Param {
	for i := range params {
		if params[i].Key != "feed_forward_length" {
			continue
		}
		scalar := params[i]
		params[i].Derive = func(c Config) (tensor.Value, bool, error) {
			if _, isList := c["intermediate_size"].([]any); !isList {
				return scalar.value(c)
			}
			l, _, err := c.Ints("intermediate_size")
			if err != nil {
				return tensor.Value{}, false, err
			}
			out := make([]int32, len(l))
			for j, v := range l {
				if v <= 0 || v > math.MaxInt32 {
					return tensor.Value{}, false, errUnsupported("config.json: intermediate_size[%d] = %d", j, v)
				}
				out[j] = int32(v)
			}
			return tensor.ArrayOf(out), true, nil
		}
		params[i].Inverse = func(c Config, v tensor.Value, _ Meta) {
			if a, ok := v.Array(); ok {
				l := make([]any, a.Len())
				for j := range l {
					l[j], _ = a.Index(j).Int()
				}
				c["intermediate_size"] = l
				return
			}
			c["intermediate_size"] = jsonValue(v)
		}
	}
	return params
}

// gemma3nAltupInputs is altup.num_inputs; the converter takes 4 streams
// only (its AltUp projections are three).
func gemma3nAltupInputs() Param {
	p := u32("altup.num_inputs", Required, "altup_num_inputs")
	p.Derive = func(c Config) (tensor.Value, bool, error) {
		n, ok := c.Int("altup_num_inputs")
		if !ok {
			return tensor.Value{}, false, fmt.Errorf("arch: config.json: no altup_num_inputs")
		}
		if n != 4 {
			return tensor.Value{}, false, errUnsupported("config.json: altup_num_inputs %d: llama.cpp's converter takes 4 AltUp streams only", n)
		}
		if s, ok := c.Bool("altup_correct_scale"); ok && !s {
			return tensor.Value{}, false, errUnsupported("config.json: altup_correct_scale false: a Gemma 3n GGUF always scales the corrected stream")
		}
		if a, ok := c.Str("hidden_activation", "hidden_act"); ok && a != "gelu_pytorch_tanh" {
			return tensor.Value{}, false, errUnsupported("config.json: hidden_activation %q: llama.cpp's Gemma 3n graph uses GELU (tanh)", a)
		}
		return tensor.Uint32(uint32(n)), true, nil
	}
	p.Inverse = func(c Config, v tensor.Value, _ Meta) { c["altup_num_inputs"] = jsonValue(v) }
	return p
}

// gemma3nSparsity is activation_sparsity_scale: for each layer the cut of
// its feed-forward gate in standard deviations above the mean, the standard
// normal quantile of activation_sparsity_pattern's target sparsity (−∞ for
// 0: no cut), as the converter computes it (torch's float32 icdf).
func gemma3nSparsity() Param {
	return Param{Key: "activation_sparsity_scale", HF: []string{"activation_sparsity_pattern"}, Kind: tensor.KindArray,
		Derive: func(c Config) (tensor.Value, bool, error) {
			ps, err := SparsityPattern(c)
			if err != nil {
				return tensor.Value{}, false, err
			}
			out := make([]float32, len(ps))
			for i, p := range ps {
				out[i] = NormalQuantile32(p)
			}
			return tensor.ArrayOf(out), true, nil
		},
		Inverse: func(c Config, v tensor.Value, _ Meta) {
			a, ok := v.Array()
			if !ok {
				return
			}
			out := make([]any, a.Len())
			for i := range out {
				s, _ := a.Index(i).Float()
				out[i] = F32(normalCDF32(float32(s)))
			}
			c["activation_sparsity_pattern"] = out
		}}
}

// SparsityPattern is config.json's activation_sparsity_pattern: one target
// sparsity in [0, 1) per layer (0: the layer's gate is not cut).
func SparsityPattern(c Config) ([]float32, error) {
	list, ok := c["activation_sparsity_pattern"].([]any)
	if !ok {
		return nil, errUnsupported("config.json: activation_sparsity_pattern %v is not a list of one value per layer", c["activation_sparsity_pattern"])
	}
	out := make([]float32, len(list))
	for i, v := range list {
		f, ok := Config{"v": v}.Float("v")
		if !ok || f < 0 || f >= 1 {
			return nil, errUnsupported("config.json: activation_sparsity_pattern[%d] = %v is not in [0, 1)", i, v)
		}
		out[i] = float32(f)
	}
	return out, nil
}

// NormalQuantile32 is the standard normal quantile of p computed as torch's
// float32 Normal(0, 1).icdf does (erfinv(2p − 1)·√2, erfinv by its rational
// start and two Newton steps), which the converter writes: it can differ
// from the correctly rounded quantile in the last bit. 0 gives −∞.
func NormalQuantile32(p float32) float32 {
	if p == 0 {
		return float32(math.Inf(-1))
	}
	return erfinv32(2*p-1) * float32(math.Sqrt2)
}

// erfinv32 is the inverse error function in float32 arithmetic.
func erfinv32(y float32) float32 {
	a := [4]float32{0.886226899, -1.645349621, 0.914624893, -0.140543331}
	b := [4]float32{-2.118377725, 1.442710462, -0.329097515, 0.012229801}
	c := [4]float32{-1.970840454, -1.624906493, 3.429567803, 1.641345311}
	d := [2]float32{3.543889200, 1.637067800}
	ya := float32(math.Abs(float64(y)))
	var x float32
	if ya <= 0.7 {
		z := y * y
		num := ((a[3]*z+a[2])*z+a[1])*z + a[0]
		dem := (((b[3]*z+b[2])*z+b[1])*z+b[0])*z + 1
		x = y * num / dem
	} else {
		z := float32(math.Sqrt(float64(float32(-math.Log(float64((1 - ya) / 2))))))
		num := ((c[3]*z+c[2])*z+c[1])*z + c[0]
		dem := (d[1]*z+d[0])*z + 1
		x = float32(math.Copysign(float64(num), float64(y))) / dem
	}
	k := float32(2 / math.Sqrt(math.Pi))
	for range 2 {
		x -= (float32(math.Erf(float64(x))) - y) / (k * float32(math.Exp(float64(-x*x))))
	}
	return x
}

// normalCDF32 inverts NormalQuantile32 for GGUF → HF: the target sparsity a
// cut of s standard deviations keeps (0 for −∞).
func normalCDF32(s float32) float32 {
	if math.IsInf(float64(s), -1) {
		return 0
	}
	p := float32(0.5 * math.Erfc(-float64(s)/math.Sqrt2))
	// the float32 whose quantile the converter wrote, when one is next to
	// the rounded value
	for _, q := range []float32{p, math.Nextafter32(p, 0), math.Nextafter32(p, 1)} {
		if NormalQuantile32(q) == s {
			return q
		}
	}
	return p
}

// gemma3nSliding is config.json's layer_types as one flag per layer
// (true: the layer slides); Gemma 3n has sliding and full layers only.
func gemma3nSliding(c Config) ([]bool, error) {
	n, ok := c.Int("num_hidden_layers")
	if !ok {
		n = -1
	}
	types, ok, err := LayerTypes(c, int(n))
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errUnsupported("config.json: no layer_types")
	}
	out := make([]bool, len(types))
	for i, t := range types {
		switch t {
		case SlidingAttention:
			out[i] = true
		case FullAttention:
		default:
			return nil, errUnsupported("config.json: layer_types[%d] %s: Gemma 3n has sliding and full layers", i, t)
		}
	}
	return out, nil
}

// gemma3nPattern is config.json's layer_types, every layer rotating, the
// sliding ones within sliding_window; the last num_kv_shared_layers share
// the cache of the last earlier layer of their kind.
func gemma3nPattern(c Config, n int) ([]Layer, error) {
	sliding, err := gemma3nSliding(c) // n entries: Family.LayerPattern's n is num_hidden_layers
	if err != nil {
		return nil, err
	}
	window, _ := c.Int("sliding_window")
	out := make([]Layer, n)
	for i, s := range sliding {
		out[i] = Layer{Mixer: FullAttention, Rope: true}
		if s {
			if window <= 0 || window >= 1<<31 {
				return nil, errUnsupported("config.json: sliding_window %v for sliding layers", c["sliding_window"])
			}
			out[i].Mixer, out[i].Window = SlidingAttention, int(window)
		}
	}
	shared, _ := c.Int("num_kv_shared_layers")
	if shared < 0 || shared >= int64(n) {
		return nil, errUnsupported("config.json: num_kv_shared_layers %d of %d layers", shared, n)
	}
	first := n - int(shared)
	for l := first; l < n && first > 0; l++ {
		out[l].KVShared, out[l].KVFrom = true, -1
		for j := first - 1; j >= 0; j-- {
			if out[j].Mixer == out[l].Mixer {
				out[l].KVFrom = j
				break
			}
		}
		if out[l].KVFrom < 0 {
			return nil, errUnsupported("config.json: num_kv_shared_layers %d: layer %d has no earlier %s layer to share with", shared, l, out[l].Mixer)
		}
	}
	return out, nil
}
