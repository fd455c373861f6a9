package arch

import (
	"fmt"
	"strings"

	"github.com/tfconv/tfconv/tensor"
)

// Mixer is what mixes tokens in a layer: attention of some reach (and,
// with the state-space families, a recurrence).
type Mixer uint8

// The token mixers.
const (
	// FullAttention attends to every earlier position.
	FullAttention Mixer = iota
	// SlidingAttention attends to the last Layer.Window positions (the
	// query's own included).
	SlidingAttention
	// ChunkedAttention attends to the earlier positions of the query's own
	// aligned chunk of Layer.Window positions (Llama 4's local layers).
	ChunkedAttention

	// The recurrent mixers keep a state of fixed size per sequence instead
	// of a cache that grows with it.

	// Mamba is Mamba-1's selective scan (a causal depthwise convolution,
	// then an input-dependent Δ, B and C over a per-channel state).
	Mamba
	// Mamba2 is Mamba-2's state-space dual form (a scalar A per head,
	// B and C shared within groups, a gated RMSNorm).
	Mamba2
	// GatedDeltaNet is the gated delta rule of linear attention
	// (Qwen3-Next's linear_attention layers).
	GatedDeltaNet
	// RWKV7 is RWKV-7's time mix with token shift.
	RWKV7
	// ShortConv is a gated short causal convolution (LFM2's conv layers).
	ShortConv

	// NoMixer: the layer mixes no tokens; it is a feed-forward alone
	// (Nemotron-H's MLP layers).
	NoMixer
)

// mixerNames are the mixers' names in transformers' config.json
// layer_types where it has one (Qwen3-Next's linear_attention, LFM2's
// conv), else llama.cpp's.
var mixerNames = [...]string{FullAttention: "full_attention", SlidingAttention: "sliding_attention",
	ChunkedAttention: "chunked_attention", Mamba: "mamba", Mamba2: "mamba2", GatedDeltaNet: "linear_attention",
	RWKV7: "rwkv7", ShortConv: "conv", NoMixer: "none"}

// String is transformers' layer_types name of the mixer.
func (m Mixer) String() string {
	if int(m) < len(mixerNames) {
		return mixerNames[m]
	}
	return fmt.Sprintf("mixer(%d)", m)
}

// Attention reports whether the mixer is an attention (it keeps a KV
// cache).
func (m Mixer) Attention() bool { return m <= ChunkedAttention }

// Recurrent reports whether the mixer carries a state from step to step
// (its size independent of the sequence's length).
func (m Mixer) Recurrent() bool { return m >= Mamba && m < NoMixer }

// Layer is what one layer of a model computes, as far as it differs from
// the other layers of its family: the per-layer pattern. Model, inspect
// and the memory estimate read a model's layers from Family.LayerPattern,
// never from the family's own keys.
type Layer struct {
	Mixer Mixer
	// Window is the sliding window (SlidingAttention) or the chunk size
	// (ChunkedAttention); 0 otherwise.
	Window int
	// Rope: the layer rotates its queries and keys.
	Rope bool
	// MoE: the feed-forward is a mixture of experts. Families without a
	// Pattern leave it false; the runtime then goes by the router's
	// presence.
	MoE bool
	// KVShared: the layer attends over the cached keys and values of the
	// earlier layer KVFrom instead of its own, and keeps no cache (Gemma
	// 3n's last num_kv_shared_layers layers).
	KVShared bool
	KVFrom   int
	// NoFFN: the layer has no feed-forward; its mixer's output is all it
	// adds to the residual stream (Mamba's layers, Nemotron-H's mixer
	// layers).
	NoFFN bool
}

// LayerPattern is the per-layer pattern of a model of config c (in Hugging
// Face's terms: config.json, or the one Family.HFConfigOf rebuilds from a
// GGUF): the family's Pattern when it has one, else DefaultPattern.
func (f *Family) LayerPattern(c Config) ([]Layer, error) {
	n := f.Layers(c)
	if n < 0 || n > 1<<16 {
		return nil, fmt.Errorf("config.json: num_hidden_layers %d out of range", n)
	}
	if f.Pattern != nil {
		ls, err := f.Pattern(c, int(n))
		if err == nil && len(ls) != int(n) {
			err = fmt.Errorf("arch: %s: pattern of %d layers for %d", f.Name, len(ls), n)
		}
		return ls, err
	}
	return DefaultPattern(f.Graph, c, int(n))
}

// DefaultPattern is the pattern the Graph states: the layers Graph.Sliding
// picks attend within config.json's sliding_window (when it is positive),
// and the layers Graph.RopeLayer names rotate (config.json's
// no_rope_layers first).
func DefaultPattern(g Graph, c Config, n int) ([]Layer, error) {
	noRope, _, err := c.Ints("no_rope_layers")
	if err != nil {
		return nil, err
	}
	window, _ := c.Int("sliding_window")
	p, ok := c.Int("sliding_window_pattern")
	if !ok || p < 0 || p > 1<<16 {
		p = 6
	}
	out := make([]Layer, n)
	for i := range out {
		out[i].Rope = g.RopeLayer(i, noRope)
		if window > 0 && window < 1<<31 && g.Sliding.SlidingLayer(i, int(p)) {
			out[i].Mixer, out[i].Window = SlidingAttention, int(window)
		}
	}
	return out, nil
}

// MixerNamed is the mixer of name (Mixer.String: "full_attention",
// "mamba", and so on); ok is false for a name no mixer has.
func MixerNamed(name string) (m Mixer, ok bool) {
	for i, n := range mixerNames {
		if n == name && n != "" {
			return Mixer(i), true
		}
	}
	return 0, false
}

// LayerTypes reads transformers' config.json "layer_types" list (one entry
// per layer of n: "full_attention", "sliding_attention",
// "chunked_attention"); ok is false when config.json has none. An entry of
// another kind, or a list of another length than n (n ≥ 0), is an error
// naming it.
func LayerTypes(c Config, n int) (mixers []Mixer, ok bool, err error) {
	raw, present := c["layer_types"]
	if !present || raw == nil {
		return nil, false, nil
	}
	list, isList := raw.([]any)
	if !isList {
		return nil, false, fmt.Errorf("config.json: layer_types is %T, not a list", raw)
	}
	if n >= 0 && len(list) != n {
		return nil, false, errUnsupported("config.json: layer_types has %d entries for %d layers", len(list), n)
	}
	out := make([]Mixer, len(list))
	for i, v := range list {
		s, _ := v.(string)
		m, found := MixerNamed(s)
		out[i] = m
		if !found {
			return nil, false, errUnsupported("config.json: layer_types[%d] %q (known: %s)", i, v, strings.Join(mixerNames[:], ", "))
		}
	}
	return out, true, nil
}

// slidingFlags is the GGUF key attention.sliding_window_pattern, one flag
// per layer (true: the layer attends within the window), as sliding
// derives it from config.json (nil: the key is not written); GGUF → HF
// writes it back as layer_types.
func slidingFlags(sliding func(c Config) ([]bool, error)) Param {
	return Param{Key: "attention.sliding_window_pattern", HF: []string{"layer_types"}, Kind: tensor.KindArray,
		Derive: func(c Config) (tensor.Value, bool, error) {
			flags, err := sliding(c)
			if err != nil || flags == nil {
				return tensor.Value{}, false, err
			}
			return tensor.ArrayOf(flags), true, nil
		},
		Inverse: func(c Config, v tensor.Value, _ Meta) {
			a, ok := v.Array()
			if !ok {
				return
			}
			types := make([]any, a.Len())
			for i := range types {
				types[i] = FullAttention.String()
				if b, _ := a.Index(i).BoolValue(); b {
					types[i] = SlidingAttention.String()
				}
			}
			c["layer_types"] = types
		}}
}

// fullLayerTypes states every layer full attention in a config.json GGUF →
// HF writes for a family whose GGUF has no window (its class would
// otherwise slide by its defaults), unless layer_types is already there.
func fullLayerTypes(c Config) {
	if _, ok := c["layer_types"]; ok {
		return
	}
	n, _ := c.Int("num_hidden_layers")
	types := make([]any, max(n, 0))
	for i := range types {
		types[i] = FullAttention.String()
	}
	c["layer_types"] = types
}
