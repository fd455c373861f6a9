package mlx

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/tfconv/tfconv/tensor"
)

// ConfigKey and ConfigCopyKey are config.json's keys for the quantization
// mlx-lm applied: it reads ConfigKey and writes both.
const (
	ConfigKey     = "quantization"
	ConfigCopyKey = "quantization_config"
)

// QuantizeActivationsKey is config.json's switch by which mlx-lm (d78bf58
// utils.load_model) turns nvfp4 and mxfp8 layers into ones that quantize
// their activations as well: refused, never dropped.
const QuantizeActivationsKey = "quantize_activations"

// ModeAffine is mx.quantize's default mode, the only one with biases.
const ModeAffine = "affine"

// ModeMXFP4 is the floating-point mode whose blocks are OCP MXFP4's (and
// GGUF MXFP4's, nibbles reordered).
const ModeMXFP4 = "mxfp4"

// ModeNVFP4 is the floating-point mode whose codes and scale bytes are
// NVFP4's (GGUF NVFP4's, in blocks of 64).
const ModeNVFP4 = "nvfp4"

// FPMode is one of MLX's floating-point modes (846d176 mlx/ops.cpp
// fp_quantize): uint8 scales and no biases, one group size and bits each.
type FPMode struct {
	GroupSize, Bits int
	// E4M3Scales: the scale bytes are fp8 e4m3 (nvfp4), not e8m0.
	E4M3Scales bool
}

// FPModes are the floating-point modes by name.
var FPModes = map[string]FPMode{
	ModeMXFP4: {GroupSize: 32, Bits: 4},
	"mxfp8":   {GroupSize: 32, Bits: 8},
	"nvfp4":   {GroupSize: 16, Bits: 4, E4M3Scales: true},
}

// FP returns p's floating-point mode, false for affine.
func (p Params) FP() (FPMode, bool) {
	m, ok := FPModes[p.Mode]
	return m, ok
}

// Params are one layer's quantization.
type Params struct {
	GroupSize int    `json:"group_size"`
	Bits      int    `json:"bits"`
	Mode      string `json:"mode,omitempty"` // "" in older configs: affine
}

// Quantization is config.json's "quantization" object.
type Quantization struct {
	Params
	// Layers holds the per-layer entries by module path ("lm_head",
	// "model.layers.0.mlp.down_proj"): a layer's own parameters, or nil for
	// a layer kept in float (false in the file).
	Layers map[string]*Params
}

// maxLayers caps the per-layer entries of a config (the largest models have
// a few thousand linear layers).
const maxLayers = 1 << 20

// FromConfig reads the "quantization" object of a decoded config.json (as
// encoding/json decodes it, with or without UseNumber). q is nil when the
// config has none: the checkpoint is not quantized by MLX.
func FromConfig(cfg map[string]any) (q *Quantization, err error) {
	raw, ok := cfg[ConfigKey]
	if !ok || raw == nil {
		return nil, nil
	}
	obj, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("mlx: config.json: %q is %T, want an object", ConfigKey, raw)
	}
	if qa, _ := cfg[QuantizeActivationsKey].(bool); qa {
		return nil, tensor.Unsupported("mlx: config.json: %q is true: mlx-lm then quantizes each layer's input too (nn.QQLinear), which a float weight cannot carry", QuantizeActivationsKey)
	}
	q = &Quantization{}
	if q.Params, err = params(ConfigKey, obj); err != nil {
		return nil, err
	}
	if len(obj) > maxLayers {
		return nil, fmt.Errorf("mlx: config.json: %q has %d entries, more than %d", ConfigKey, len(obj), maxLayers)
	}
	for k, v := range obj {
		switch k {
		case "group_size", "bits", "mode":
			continue
		}
		if q.Layers == nil {
			q.Layers = map[string]*Params{}
		}
		switch v := v.(type) {
		case bool:
			if v {
				p := q.Params
				q.Layers[k] = &p
			} else {
				q.Layers[k] = nil
			}
		case map[string]any:
			p, err := params(ConfigKey+"."+k, v)
			if err != nil {
				return nil, err
			}
			if p.Mode == "" {
				p.Mode = q.Mode
			}
			q.Layers[k] = &p
		default:
			return nil, fmt.Errorf("mlx: config.json: %s.%s is %T, want an object or a boolean", ConfigKey, k, v)
		}
	}
	return q, nil
}

// params reads group_size, bits and mode of one object (key names it).
func params(key string, obj map[string]any) (Params, error) {
	var p Params
	num := func(name string) (int, error) {
		v, ok := obj[name]
		if !ok {
			return 0, fmt.Errorf("mlx: config.json: %s has no %q", key, name)
		}
		var f float64
		switch v := v.(type) {
		case json.Number:
			var err error
			if f, err = v.Float64(); err != nil {
				return 0, fmt.Errorf("mlx: config.json: %s.%s is %q, want an integer", key, name, v)
			}
		case float64:
			f = v
		default:
			return 0, fmt.Errorf("mlx: config.json: %s.%s is %T, want an integer", key, name, v)
		}
		if f != math.Trunc(f) || f < 1 || f > 1<<20 {
			return 0, fmt.Errorf("mlx: config.json: %s.%s is %v, want a positive integer", key, name, f)
		}
		return int(f), nil
	}
	var err error
	if p.GroupSize, err = num("group_size"); err != nil {
		return p, err
	}
	if p.Bits, err = num("bits"); err != nil {
		return p, err
	}
	if m, ok := obj["mode"]; ok {
		s, isStr := m.(string)
		if !isStr {
			return p, fmt.Errorf("mlx: config.json: %s.mode is %T, want a string", key, m)
		}
		p.Mode = s
	}
	return p, nil
}

// Check reports whether tfconv reads p: affine quantization with
// parameters MLX accepts, or a floating-point mode (FPModes) with its own
// group size and bits, as MLX's quantize holds them. (tfconv writes
// affine only: CheckWrite.)
func (p Params) Check() error {
	if m, ok := p.FP(); ok {
		if p.GroupSize != m.GroupSize || p.Bits != m.Bits {
			return tensor.Unsupported("mlx: mode %q is not supported with %d bits and group size %d: MLX's %s takes %d bits and group size %d",
				p.Mode, p.Bits, p.GroupSize, p.Mode, m.Bits, m.GroupSize)
		}
		return nil
	}
	if p.Mode != "" && p.Mode != ModeAffine {
		return tensor.Unsupported("mlx: quantization mode %q is not supported (affine, mxfp4, mxfp8 and nvfp4 are)", p.Mode)
	}
	for _, b := range []int{2, 3, 4, 5, 6, 8} {
		if p.Bits != b {
			continue
		}
		for _, g := range []int{32, 64, 128} {
			if p.GroupSize == g {
				return nil
			}
		}
	}
	return tensor.Unsupported("mlx: %d bits with group size %d: MLX's affine quantization takes bits 2, 3, 4, 5, 6 or 8 and group size 32, 64 or 128", p.Bits, p.GroupSize)
}

// CheckWrite reports whether tfconv writes p: every mode it reads.
func (p Params) CheckWrite() error { return p.Check() }

// For returns the parameters of the layer at module path (a tensor name
// without ".weight"), and false when the config keeps it in float.
func (q *Quantization) For(path string) (Params, bool) {
	if p, ok := q.Layers[path]; ok {
		if p == nil {
			return Params{}, false
		}
		return *p, true
	}
	return q.Params, true
}

// ConfigValue is q as config.json holds it (keys sorted when marshalled:
// mlx-lm's save_config sorts the top level; json.Marshal sorts maps).
func (q *Quantization) ConfigValue() map[string]any {
	m := map[string]any{"group_size": q.GroupSize, "bits": q.Bits}
	if q.Mode != "" {
		m["mode"] = q.Mode
	}
	for k, p := range q.Layers {
		if p == nil {
			m[k] = false
			continue
		}
		lp := map[string]any{"group_size": p.GroupSize, "bits": p.Bits}
		if p.Mode != "" {
			lp["mode"] = p.Mode
		}
		m[k] = lp
	}
	return m
}

// SetConfig writes q into cfg under both keys mlx-lm writes (or removes
// both when q is nil).
func SetConfig(cfg map[string]any, q *Quantization) {
	if q == nil {
		delete(cfg, ConfigKey)
		delete(cfg, ConfigCopyKey)
		return
	}
	cfg[ConfigKey] = q.ConfigValue()
	cfg[ConfigCopyKey] = q.ConfigValue()
}

// LayerNames lists the per-layer entries, sorted.
func (q *Quantization) LayerNames() []string {
	names := make([]string, 0, len(q.Layers))
	for k := range q.Layers {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// String describes q in words: "4-bit affine, group size 64 (2 layers their own)".
func (q *Quantization) String() string {
	mode := q.Mode
	if mode == "" {
		mode = ModeAffine
	}
	s := fmt.Sprintf("%d-bit %s, group size %d", q.Bits, mode, q.GroupSize)
	if n := len(q.Layers); n > 0 {
		var own, kept int
		for _, p := range q.Layers {
			if p == nil {
				kept++
			} else {
				own++
			}
		}
		var parts []string
		if own > 0 {
			parts = append(parts, fmt.Sprintf("%d layers their own", own))
		}
		if kept > 0 {
			parts = append(parts, fmt.Sprintf("%d kept in float", kept))
		}
		s += " (" + strings.Join(parts, ", ") + ")"
	}
	return s
}
