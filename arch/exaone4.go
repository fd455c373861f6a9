package arch

import (
	"strings"

	"github.com/tfconv/tfconv/tensor"
)

// Exaone4 is LG AI Research's EXAONE 4.0 (Exaone4ForCausalLM, the newer
// llama.cpp's "exaone4"): OLMo 2's block (no pre-norms, RMSNorms after
// attention and after the MLP) with per-head Q/K RMSNorms before the
// rotation (NEOX, no Q/K permutation), and, when config.json has a
// sliding_window, layers that attend within it and rotate beside global
// layers without RoPE, as layer_types (or sliding_window_pattern) says
// (exaone4Pattern); the GGUF keeps the window and one flag per layer.
// llama.cpp's graph honours them at 64 layers (the 32B) only. It follows
// the newer converter (testdata/arch/README.md).
var Exaone4 = register(&Family{
	Name:       "exaone4",
	HFClasses:  []string{"Exaone4ForCausalLM"},
	ModelTypes: []string{"exaone4"},
	HFClass:    "Exaone4ForCausalLM", ModelType: "exaone4",
	Params: withParams(without(baseParams(), "expert_count"),
		u32("vocab_size", Required, "vocab_size"),
		u32("attention.sliding_window", Optional, "sliding_window"),
		slidingFlags(func(c Config) ([]bool, error) {
			n, _ := c.Int("num_hidden_layers")
			return exaone4Sliding(c, int(n))
		}), exaone4RopeScaling()),
	Pattern:   exaone4Pattern,
	Tensors:   exaone4Tensors(),
	Drops:     []Drop{rotaryBuffer},
	Generated: []Generated{exaone4RopeFreqs},
	// Exaone4Config defaults sliding_window to 4096: a GGUF without one
	// says null (and every layer global, HFRename).
	HFConst: map[string]any{"hidden_act": "silu", "sliding_window": nil},
	HFRename: func(c Config, _ func(string) bool) map[string]string {
		fullLayerTypes(c)
		return nil
	},
	Graph: Graph{Norm: RMSNorm, FFN: Gated, Activation: "silu", NoPreNorm: true, QKNormPerHead: true, NeoxRopeGGUF: true},
})

func exaone4Tensors() []Tensor { return postNormTensors(DimHeadDim, DimHeadDim) }

// exaone4Sliding says which of n layers config.json makes sliding:
// layer_types first, else sliding_window_pattern (an int p: all but every
// p-th layer; a string such as "LLLG": its letters repeated); nil when
// sliding_window is absent or null (every layer global and rotating).
func exaone4Sliding(c Config, n int) ([]bool, error) {
	if !c.Has("sliding_window") {
		return nil, nil
	}
	out := make([]bool, n)
	types, ok, err := LayerTypes(c, n)
	switch {
	case err != nil:
		return nil, err
	case ok:
		for i, t := range types {
			out[i] = t == SlidingAttention
		}
		return out, nil
	}
	if s, ok := c.Str("sliding_window_pattern"); ok && s != "" {
		for i := range out {
			out[i] = strings.ToUpper(s[i%len(s):i%len(s)+1]) == "L"
		}
		return out, nil
	}
	p, ok := c.Int("sliding_window_pattern")
	if !ok {
		p = 4 // Exaone4Config's default
	}
	for i := range out {
		out[i] = p > 0 && int64(i+1)%p != 0
	}
	return out, nil
}

// exaone4Pattern: with a sliding_window, the sliding layers attend within
// it and rotate, the others attend to everything without RoPE
// (transformers' "global NoPE"); without one every layer is global and
// rotates.
func exaone4Pattern(c Config, n int) ([]Layer, error) {
	sliding, err := exaone4Sliding(c, n)
	if err != nil {
		return nil, err
	}
	window, _ := c.Int("sliding_window")
	out := make([]Layer, n)
	for i := range out {
		out[i].Rope = sliding == nil
		if sliding != nil && sliding[i] {
			if window <= 0 || window >= 1<<31 {
				return nil, errUnsupported("config.json: sliding_window %d", window)
			}
			out[i] = Layer{Mixer: SlidingAttention, Window: int(window), Rope: true}
		}
	}
	return out, nil
}

// exaone4RopeScaling accepts no rope_scaling or llama3's (the rope_freqs
// tensor carries it), refusing the others.
func exaone4RopeScaling() Param {
	return Param{Key: "rope.scaling.type", Kind: tensor.KindString,
		Derive: func(c Config) (tensor.Value, bool, error) {
			rs, ok := c.Map("rope_scaling")
			if !ok {
				return tensor.Value{}, false, nil
			}
			if _, llama3, err := Llama3RopeOf(c); err != nil || !llama3 {
				if err == nil {
					err = errUnsupported("config.json: rope_scaling %v (only llama3 is supported)", map[string]any(rs))
				}
				return tensor.Value{}, false, err
			}
			return tensor.Value{}, false, nil
		},
		Inverse: func(Config, tensor.Value, Meta) {}}
}

// exaone4RopeFreqs is the converter's rope_freqs for llama3 rope scaling:
// LlamaModel's factors, with the original context read inside rope_scaling
// (Llama3RopeOf's reading, default 8192), as Exaone4Model reads it.
var exaone4RopeFreqs = Generated{GGUF: ropeFreqs.GGUF, Reason: ropeFreqs.Reason, Invert: ropeFreqs.Invert,
	Make: func(c Config) ([]float32, error) { return llama3Freqs(c, contextScaling) }}
