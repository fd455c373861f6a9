package arch

import "github.com/tfconv/tfconv/tensor"

// ropeScalingLinear is LlamaModel's rope scaling: only the linear type is
// written (rope.scaling.type and .factor); other types are refused here
// rather than dropped, since the model would then compute something else.
func ropeScalingLinear() []Param {
	return []Param{
		{Key: "rope.scaling.type", Kind: tensor.KindString,
			Derive: func(c Config) (tensor.Value, bool, error) {
				rs, ok := c.Map("rope_scaling")
				if !ok {
					return tensor.Value{}, false, nil
				}
				typ, _ := rs.Str("type")
				if typ == "" {
					typ, _ = rs.Str("rope_type")
				}
				if typ == "llama3" {
					return tensor.Value{}, false, nil // the rope_freqs tensor carries it
				}
				if _, ok := rs.Float("factor"); typ != "linear" || !ok {
					return tensor.Value{}, false, errUnsupported("rope_scaling %v (only linear is supported)", map[string]any(rs))
				}
				return tensor.String("linear"), true, nil
			},
			Inverse: func(c Config, v tensor.Value, m Meta) {
				typ, _ := v.Str()
				if typ == "none" {
					return
				}
				f, _ := m.Float("rope.scaling.factor")
				c["rope_scaling"] = map[string]any{"type": typ, "factor": F32(float32(f))}
			}},
		{Key: "rope.scaling.factor", Kind: tensor.KindFloat32,
			Derive: func(c Config) (tensor.Value, bool, error) {
				rs, ok := c.Map("rope_scaling")
				if !ok {
					return tensor.Value{}, false, nil
				}
				if _, llama3, _ := Llama3RopeOf(c); llama3 {
					return tensor.Value{}, false, nil
				}
				f, _ := rs.Float("factor")
				return tensor.Float32(float32(f)), true, nil
			},
			Inverse: func(Config, tensor.Value, Meta) {}},
	}
}

// Llama is LLaMA and what convert_hf_to_gguf.py's LlamaModel converts with
// it (Mistral; Mixtral, whose layers route each token to 2 of its experts'
// feed-forwards): RMSNorm, SwiGLU, grouped-query attention, optional
// attention biases, tied or untied head. The converter permutes Q/K rows so
// ggml's adjacent-pair rope reproduces HF's rotate-half.
var Llama = register(&Family{
	Name: "llama",
	// and the text halves of LLaVA-1.5, LLaVA-NeXT, SmolVLM and SmolVLM2
	// (under language_model. and model.text_model.; text_config in
	// config.json).
	HFClasses: []string{"LLaMAForCausalLM", "LlamaForCausalLM", "MistralForCausalLM", "MixtralForCausalLM",
		"LlavaForConditionalGeneration", "LlavaNextForConditionalGeneration", "Idefics3ForConditionalGeneration",
		"SmolVLMForConditionalGeneration"},
	ModelTypes: []string{"llama", "mistral", "mixtral"},
	HFClass:    "LlamaForCausalLM", ModelType: "llama",
	Params: withParams(baseParams(),
		append([]Param{u32("vocab_size", Required, "vocab_size"), ropeDimension()}, ropeScalingLinear()...)...),
	Tensors: withSubmodelText(withTextPrefix(moeTensors(decoderTensors(true, LayoutSame), moeLayout{router: "block_sparse_moe.gate",
		experts: "block_sparse_moe.experts.{xid}.", gate: "w1", down: "w2", up: "w3", ffn: DimFFN,
		// mlx-lm d78bf58 models/mixtral.py sanitize
		mlx: "block_sparse_moe.switch_mlp.", mlxNames: [3]string{"gate_proj", "down_proj", "up_proj"}})), "model.", "model.text_model."),
	Drops: append(append([]Drop{rotaryBuffer}, mmprojDrops(idefics3VisionPrefixes)...),
		mmprojDrops(llavaVisionPrefixes)...),
	Generated: []Generated{ropeFreqs},
	// A GGUF with a router is Mixtral's: the same GGUF architecture, its
	// own transformers class.
	HFRename: func(c Config, has func(string) bool) map[string]string {
		if has("blk.0.ffn_gate_inp.weight") {
			c["architectures"], c["model_type"] = []string{"MixtralForCausalLM"}, "mixtral"
			delete(c, "mlp_bias")
		}
		return nil
	},
	HFConst:  map[string]any{"hidden_act": "silu", "mlp_bias": false},
	BiasFlag: "attention_bias",
	Vocab: VocabRules{SpacePrefixFromConfigFor: []string{"LlavaForConditionalGeneration",
		"LlavaNextForConditionalGeneration", "Idefics3ForConditionalGeneration", "SmolVLMForConditionalGeneration"}},
	Graph:   llamaGraph,
	Pattern: mistralWindow,
})

// mistralWindow is LLaMA's pattern, except that a Mistral config.json's
// sliding_window holds in every layer: transformers' Mistral masks keys
// beyond it, while the GGUF (whose llama graph has no window, and whose
// rebuilt config says llama) attends fully.
func mistralWindow(c Config, n int) ([]Layer, error) {
	if c["model_type"] == "mistral" {
		return windowEveryLayer(llamaGraph, c, n)
	}
	return DefaultPattern(llamaGraph, c, n)
}

// windowEveryLayer is the pattern of transformers' Mistral-derived classes
// (Mistral, Mixtral, MiniMax-M2): config.json's sliding_window, when set,
// holds in every layer.
func windowEveryLayer(g Graph, c Config, n int) ([]Layer, error) {
	ls, err := DefaultPattern(g, c, n)
	if w, _ := c.Int("sliding_window"); err == nil && w > 0 && w < 1<<31 {
		for i := range ls {
			ls[i].Mixer, ls[i].Window = SlidingAttention, int(w)
		}
	}
	return ls, err
}

// fullAttention refuses a config.json whose pattern (the family's
// pattern) has a layer that is not full attention, for the families whose
// GGUF graph has no window: the GGUF would attend to keys the checkpoint
// masks.
func fullAttention(pattern func(Config, int) ([]Layer, error)) Param {
	return Param{Key: "sliding_window", Kind: tensor.KindUint32,
		Derive: func(c Config) (tensor.Value, bool, error) {
			n, _ := c.Int("num_hidden_layers")
			if n < 0 || n > 1<<16 {
				return tensor.Value{}, false, errUnsupported("config.json: num_hidden_layers %d out of range", n)
			}
			ls, err := pattern(c, int(n))
			if err != nil {
				return tensor.Value{}, false, err
			}
			for i, l := range ls {
				if l.Mixer != FullAttention {
					return tensor.Value{}, false, errUnsupported("config.json: layer %d is %s (layer_types, sliding_window %v): the GGUF graph has no window",
						i, l.Mixer, c["sliding_window"])
				}
			}
			return tensor.Value{}, false, nil
		},
		Inverse: func(Config, tensor.Value, Meta) {}}
}

var llamaGraph = Graph{Norm: RMSNorm, FFN: Gated, Activation: "silu", MoENormTopK: true}

// ropeFreqs is LlamaModel's rope_freqs for llama3 rope scaling.
var ropeFreqs = Generated{GGUF: "rope_freqs.weight",
	Reason: "Llama 3 rope frequency factors: config.json's rope_scaling holds them",
	Make:   func(c Config) ([]float32, error) { return llama3Freqs(c, contextTop) },
	Invert: invertLlama3Factors}

// ropeFreqsNewer is the newer converter's rope_freqs (its LlamaModel, as
// Llama 4 converts): the original context is rope_scaling's, else the top
// level's, else 8192.
var ropeFreqsNewer = Generated{GGUF: ropeFreqs.GGUF, Reason: ropeFreqs.Reason,
	Make:   func(c Config) ([]float32, error) { return llama3Freqs(c, contextScalingThenTop) },
	Invert: invertLlama3Factors}

// Where a converter reads llama3 rope scaling's original context from.
type originalContext uint8

const (
	contextTop            originalContext = iota // config.json's top level, default 8192 (c392e509's LlamaModel)
	contextScalingThenTop                        // rope_scaling's, else the top level's, else 8192 (the newer LlamaModel)
	contextScaling                               // rope_scaling's, default 8192 (Llama3RopeOf's reading; Exaone4Model)
)

// llama3Freqs are the llama3 rope_freqs of config c (nil without llama3
// rope scaling), the original context read from where the converter reads
// it (c392e509's reads the top level of config.json, default 8192, where
// transformers reads rope_scaling's; published Llama 3 configs agree on
// 8192).
func llama3Freqs(c Config, from originalContext) ([]float32, error) {
	r, ok, err := Llama3RopeOf(c)
	if err != nil || !ok {
		return nil, err
	}
	rs, _ := c.Map("rope_scaling")
	if _, inScaling := rs.Float("original_max_position_embeddings"); from == contextTop || from == contextScalingThenTop && !inScaling {
		r.OriginalContext = 8192
		if v, ok := c.Float("original_max_position_embeddings"); ok {
			r.OriginalContext = v
		}
	}
	d, err := headDim(c)
	if err != nil {
		return nil, err
	}
	base, ok := c.Float("rope_theta")
	if !ok {
		base = 10000
	}
	return r.Factors(base, int(d)), nil
}

// llama3Published are the rope_scaling values of the published Llama 3.1,
// 3.2 and 3.3 configs (factor 8 or 32; the rest shared) and Llama 4
// Scout's (factor 16, low = high frequency factor 1).
var llama3Published = []Llama3Rope{
	{Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalContext: 8192},
	{Factor: 32, LowFreqFactor: 1, HighFreqFactor: 4, OriginalContext: 8192},
	{Factor: 16, LowFreqFactor: 1, HighFreqFactor: 4, OriginalContext: 8192},
	{Factor: 16, LowFreqFactor: 1, HighFreqFactor: 1, OriginalContext: 8192},
}

// invertLlama3Factors finds the rope_scaling that gives exactly these
// factors, among the published ones and any factor with their bounds, and
// writes it into c; factors no candidate reproduces bit for bit are an
// error rather than a guess.
func invertLlama3Factors(values []float32, c Config) error {
	d, err := headDim(c)
	if err != nil {
		return err
	}
	base, ok := c.Float("rope_theta")
	if !ok {
		base = 10000
	}
	cands := append([]Llama3Rope(nil), llama3Published...)
	if n := len(values); n > 0 {
		cands = append(cands, Llama3Rope{Factor: float64(values[n-1]), LowFreqFactor: 1, HighFreqFactor: 4, OriginalContext: 8192})
	}
	for _, r := range cands {
		got := r.Factors(base, int(d))
		if len(got) != len(values) {
			continue
		}
		same := true
		for i := range got {
			if got[i] != values[i] {
				same = false
				break
			}
		}
		if same {
			c["rope_scaling"] = map[string]any{"rope_type": "llama3", "factor": F32(float32(r.Factor)),
				"low_freq_factor": F32(float32(r.LowFreqFactor)), "high_freq_factor": F32(float32(r.HighFreqFactor)),
				"original_max_position_embeddings": int64(r.OriginalContext)}
			return nil
		}
	}
	return errUnsupported("rope_freqs %v match no llama3 rope_scaling (factor 8/16/32, low 1, high 4, original context 8192; Llama 4 Scout's factor 16, low 1, high 1)", values)
}
