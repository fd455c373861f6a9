// Package ctensors owns the layout of a compressed-tensors checkpoint (the
// format vLLM loads and llm-compressor writes): a Hugging Face directory
// whose config.json carries
//
//	"quantization_config": {
//	    "quant_method": "compressed-tensors",
//	    "format": "pack-quantized",          // how the weights are stored (below)
//	    "config_groups": {"group_0": {
//	        "targets": ["Linear"],
//	        "weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128,
//	                    "symmetric": true, "dynamic": false, "block_structure": null, "actorder": null, …},
//	        "input_activations": null | {…},  // quantized at run time; no weights
//	        "format": "pack-quantized"}},
//	    "ignore": ["lm_head"], "quantization_status": "compressed", …}
//
// and, per quantized linear layer P, in place of P.weight [rows, cols]:
//
//	pack-quantized        P.weight_packed int32 [rows, ⌈cols·bits/32⌉] (quant.PackedLinear's
//	                      CompressedTensors layout), P.weight_shape int64 [2], P.weight_scale
//	                      [rows, groups] in the model's float type, P.weight_zero_point int32
//	                      (asymmetric), P.weight_g_idx int32 [cols] (activation ordering)
//	int-, float-, naive-  P.weight int8 or float8 [rows, cols], P.weight_scale per tensor [1],
//	quantized             per row [rows, 1] or per block [⌈rows/br⌉, ⌈cols/bc⌉]
//	nvfp4-pack-quantized  P.weight_packed uint8 [rows, cols/2] (E2M1 pairs, low nibble first),
//	                      P.weight_scale float8 e4m3 [rows, cols/16], P.weight_global_scale f32 [1]
//
// Scheme is one config group's weight arguments; ParseConfig reads them,
// Scheme.ConfigValue writes them as the library does.
package ctensors

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/tfconv/tfconv/tensor"
)

// QuantMethod is quantization_config's quant_method.
const QuantMethod = "compressed-tensors"

// Formats.
const (
	FormatPacked  = "pack-quantized"
	FormatInt     = "int-quantized"
	FormatFloat   = "float-quantized"
	FormatNaive   = "naive-quantized"
	FormatNVFP4   = "nvfp4-pack-quantized"
	FormatMXFP4   = "mxfp4-pack-quantized"
	FormatDense   = "dense"
	FormatMixed   = "mixed-precision"
	statusCompr   = "compressed"
	defaultTarget = "Linear"
)

// Tensor suffixes after a layer's name.
const (
	SuffixWeight      = ".weight"
	SuffixPacked      = ".weight_packed"
	SuffixShape       = ".weight_shape"
	SuffixScale       = ".weight_scale"
	SuffixZeroPoint   = ".weight_zero_point"
	SuffixGIdx        = ".weight_g_idx"
	SuffixGlobalScale = ".weight_global_scale"
)

// Scheme is how one config group stores its weights.
type Scheme struct {
	Format    string
	Type      string // "int" or "float"
	Bits      int
	Strategy  string // "tensor", "channel", "group", "tensor_group", "block"
	GroupSize int
	Block     [2]int
	Symmetric bool
	// Input is the group's input_activations object as written (nil: none),
	// kept so that a scheme written back says what it said.
	Input map[string]any `json:"-"`
}

// sameWeights reports whether s and o store weights the same way.
func (s Scheme) sameWeights(o Scheme) bool {
	return s.Format == o.Format && s.Type == o.Type && s.Bits == o.Bits && s.Strategy == o.Strategy &&
		s.GroupSize == o.GroupSize && s.Block == o.Block && s.Symmetric == o.Symmetric
}

// ParseConfig reads a quantization_config of quant_method
// compressed-tensors. Every config group must store its weights the same
// way (one format, one set of weight arguments); a checkpoint that mixes
// them is refused naming both groups.
func ParseConfig(qc map[string]any) (Scheme, error) {
	var sc Scheme
	format, _ := qc["format"].(string)
	groups, _ := qc["config_groups"].(map[string]any)
	if len(groups) == 0 {
		return sc, fmt.Errorf("config.json: compressed-tensors quantization_config has no config_groups")
	}
	names := make([]string, 0, len(groups))
	for name := range groups {
		names = append(names, name)
	}
	sort.Strings(names)
	for i, name := range names {
		gm, _ := groups[name].(map[string]any)
		w, _ := gm["weights"].(map[string]any)
		if w == nil {
			return sc, tensor.Unsupported("config.json: compressed-tensors config group %q quantizes no weights", name)
		}
		one := Scheme{Format: format, Symmetric: true}
		if f, _ := gm["format"].(string); f != "" {
			one.Format = f
		}
		one.Input, _ = gm["input_activations"].(map[string]any)
		one.Type, _ = w["type"].(string)
		one.Strategy, _ = w["strategy"].(string)
		num := func(key string) (int, error) {
			v, ok := w[key]
			if !ok || v == nil {
				return 0, nil
			}
			n, ok := v.(json.Number)
			x, err := n.Int64()
			if !ok || err != nil || x <= 0 || x > 1<<20 {
				return 0, fmt.Errorf("config.json: compressed-tensors config group %q: weights %s is %v, want a positive integer", name, key, v)
			}
			return int(x), nil
		}
		var err error
		if one.Bits, err = num("num_bits"); err != nil {
			return sc, err
		}
		if one.GroupSize, err = num("group_size"); err != nil {
			return sc, err
		}
		if sym, ok := w["symmetric"].(bool); ok {
			one.Symmetric = sym
		}
		if v := w["block_structure"]; v != nil {
			bs, ok := v.([]any)
			if !ok || len(bs) != 2 {
				return sc, fmt.Errorf("config.json: compressed-tensors config group %q: block_structure is %v, want [rows, columns]", name, v)
			}
			for i, b := range bs {
				n, ok := b.(json.Number)
				x, err := n.Int64()
				if !ok || err != nil || x <= 0 || x > 1<<16 {
					return sc, fmt.Errorf("config.json: compressed-tensors config group %q: block_structure is %v, want two positive sizes", name, bs)
				}
				one.Block[i] = int(x)
			}
		}
		if ao, ok := w["actorder"].(string); ok && ao != "" && ao != "group" && ao != "weight" {
			return sc, tensor.Unsupported("config.json: compressed-tensors config group %q: actorder %q is not supported", name, ao)
		}
		if i == 0 {
			sc = one
			continue
		}
		if !one.sameWeights(sc) {
			return sc, tensor.Unsupported("config.json: compressed-tensors config groups %q and %q store weights differently (%v; %v): one layout per checkpoint is supported",
				names[0], name, sc, one)
		}
	}
	switch sc.Format {
	case FormatFloat, FormatNaive, FormatInt, FormatPacked, FormatNVFP4:
	default:
		return sc, tensor.Unsupported("config.json: compressed-tensors format %q is not supported (float-quantized, int-quantized, naive-quantized, pack-quantized and nvfp4-pack-quantized are)", sc.Format)
	}
	return sc, nil
}

// String is the scheme in a few words, for errors.
func (s Scheme) String() string {
	b := fmt.Sprintf("%s %d-bit %s, %s", s.Format, s.Bits, s.Type, s.Strategy)
	if s.GroupSize > 0 {
		b += fmt.Sprintf(" %d", s.GroupSize)
	}
	if s.Block[0] > 0 {
		b += fmt.Sprintf(" %d×%d", s.Block[0], s.Block[1])
	}
	if !s.Symmetric {
		b += ", asymmetric"
	}
	return b
}

// Presets are llm-compressor's scheme names tfconv writes (its
// PRESET_SCHEMES, weights as they say; the group size of the W4A16 ones
// may be changed): per group or per row, which quant.CTQuant computes.
// FP8_BLOCK's 128×128 blocks are read (ParseConfig) but not written.
var Presets = map[string]Scheme{
	"W4A16":      {Format: FormatPacked, Type: "int", Bits: 4, Strategy: "group", GroupSize: 128, Symmetric: true},
	"W4A16_ASYM": {Format: FormatPacked, Type: "int", Bits: 4, Strategy: "group", GroupSize: 128},
	"W8A16":      {Format: FormatPacked, Type: "int", Bits: 8, Strategy: "channel", Symmetric: true},
	"FP8_DYNAMIC": {Format: FormatFloat, Type: "float", Bits: 8, Strategy: "channel", Symmetric: true,
		Input: map[string]any{"num_bits": 8, "type": "float", "strategy": "token", "symmetric": true, "dynamic": true}},
}

// PresetNames lists Presets' names, sorted.
func PresetNames() []string {
	names := make([]string, 0, len(Presets))
	for n := range Presets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Preset returns the named scheme (case-insensitive) or an error listing
// the names.
func Preset(name string) (Scheme, error) {
	if s, ok := Presets[strings.ToUpper(name)]; ok {
		return s, nil
	}
	return Scheme{}, fmt.Errorf("compressed-tensors scheme %q is not one tfconv writes (%s)", name, strings.Join(PresetNames(), ", "))
}

// args is a weights or input_activations object with every field the
// library writes, in its spelling.
func args(num, group int, typ, strategy string, symmetric, dynamic bool, block any) map[string]any {
	g := any(nil)
	if group > 0 {
		g = group
	}
	return map[string]any{"actorder": nil, "block_structure": block, "dynamic": dynamic, "group_size": g,
		"num_bits": num, "observer": "minmax", "observer_kwargs": map[string]any{}, "strategy": strategy,
		"symmetric": symmetric, "type": typ}
}

// ConfigValue is the quantization_config compressed-tensors writes for s
// applied to every Linear but lm_head (its update_config, the version key
// aside).
func (s Scheme) ConfigValue() map[string]any {
	var block any
	if s.Block[0] > 0 {
		block = []any{s.Block[0], s.Block[1]}
	}
	group := map[string]any{"format": s.Format, "input_activations": nil, "output_activations": nil,
		"targets": []any{defaultTarget}, "weights": args(s.Bits, s.GroupSize, s.Type, s.Strategy, s.Symmetric, false, block)}
	if s.Input != nil {
		in := s.Input
		num, _ := in["num_bits"].(int)
		gs, _ := in["group_size"].(int)
		typ, _ := in["type"].(string)
		st, _ := in["strategy"].(string)
		sym, _ := in["symmetric"].(bool)
		dyn, _ := in["dynamic"].(bool)
		a := args(num, gs, typ, st, sym, dyn, nil)
		if dyn {
			a["observer"] = nil
		}
		group["input_activations"] = a
	}
	return map[string]any{"config_groups": map[string]any{"group_0": group}, "format": s.Format,
		"global_compression_ratio": nil, "ignore": []any{"lm_head"}, "kv_cache_scheme": nil,
		"quant_method": QuantMethod, "quantization_status": statusCompr, "sparsity_config": map[string]any{},
		"transform_config": map[string]any{}}
}

// Quantizable reports whether the tensor name of this shape is the weight
// of a layer the library's default targets (every nn.Linear but lm_head)
// quantize: a matrix named P.weight that is not an embedding, lm_head or a
// norm.
func Quantizable(name string, shape tensor.Shape) bool {
	if len(shape) != 2 || !strings.HasSuffix(name, SuffixWeight) || strings.HasPrefix(name, "lm_head.") {
		return false
	}
	for _, not := range []string{"embed", "norm", "wte", "wpe"} {
		if strings.Contains(name, not) {
			return false
		}
	}
	return true
}
