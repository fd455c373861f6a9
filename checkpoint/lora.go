package checkpoint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/tfconv/tfconv/formats/pytorch"
	"github.com/tfconv/tfconv/formats/safetensors"
	"github.com/tfconv/tfconv/tensor"
)

// PEFT's file names in an adapter directory (save_pretrained).
const (
	LoRAConfigName      = "adapter_config.json"
	LoRASafetensorsName = safetensors.AdapterName
	LoRABinName         = pytorch.AdapterName
)

// LoRAConfig is the part of a PEFT adapter_config.json that decides what the
// adapter computes. Fields tfconv does not implement are kept so that they
// can be refused by name (LoRA.Check).
type LoRAConfig struct {
	PeftType  string  `json:"peft_type"`
	R         int64   `json:"r"`
	Alpha     float64 `json:"lora_alpha"`
	RSLoRA    bool    `json:"use_rslora"`
	DoRA      bool    `json:"use_dora"`
	FanInOut  bool    `json:"fan_in_fan_out"`
	Bias      string  `json:"bias"`
	BaseModel string  `json:"base_model_name_or_path"`
	TaskType  string  `json:"task_type"`
	// Targets is target_modules: a list of module names, or one regular
	// expression (kept as a one-element list, TargetsRegex set).
	Targets      []string       `json:"-"`
	TargetsRegex bool           `json:"-"`
	ModulesSave  []string       `json:"modules_to_save"`
	RankPattern  map[string]any `json:"rank_pattern"`
	AlphaPattern map[string]any `json:"alpha_pattern"`
}

// Scale is what PEFT multiplies B·A by: lora_alpha/r, or lora_alpha/√r with
// rsLoRA (use_rslora), computed in float64 as Python does.
func (c *LoRAConfig) Scale() float64 {
	if c.RSLoRA {
		return c.Alpha / math.Sqrt(float64(c.R))
	}
	return c.Alpha / float64(c.R)
}

// ParseLoRAConfig parses a PEFT adapter_config.json. It refuses what is not
// a LoRA configuration at all (another peft_type, a rank that is not
// positive); what tfconv cannot apply is refused later, by LoRA.Check, so
// that inspect can still describe it.
func ParseLoRAConfig(b []byte) (*LoRAConfig, error) {
	var raw struct {
		LoRAConfig
		Targets json.RawMessage `json:"target_modules"`
		Alpha   json.Number     `json:"lora_alpha"`
		Modules json.RawMessage `json:"modules_to_save"`
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&raw); err != nil {
		return nil, fmt.Errorf("%s: %w", LoRAConfigName, err)
	}
	c := raw.LoRAConfig
	if c.PeftType != "LORA" {
		return nil, tensor.Unsupported("%s: peft_type %q: only LoRA adapters (\"LORA\") are read", LoRAConfigName, c.PeftType)
	}
	if c.R <= 0 || c.R > 1<<20 {
		return nil, fmt.Errorf("%s: r = %d: the rank must be positive", LoRAConfigName, c.R)
	}
	if raw.Alpha == "" {
		return nil, fmt.Errorf("%s: no lora_alpha", LoRAConfigName)
	}
	a, err := raw.Alpha.Float64()
	if err != nil || math.IsInf(a, 0) || math.IsNaN(a) {
		return nil, fmt.Errorf("%s: lora_alpha %q is not a number", LoRAConfigName, raw.Alpha)
	}
	c.Alpha = a
	if len(raw.Targets) > 0 && string(raw.Targets) != "null" {
		var list []string
		var one string
		switch {
		case json.Unmarshal(raw.Targets, &list) == nil:
			sort.Strings(list) // PEFT saves a set: its order means nothing
			c.Targets = list
		case json.Unmarshal(raw.Targets, &one) == nil:
			c.Targets, c.TargetsRegex = []string{one}, true
		default:
			return nil, fmt.Errorf("%s: target_modules is neither a list of names nor a string", LoRAConfigName)
		}
	}
	if len(raw.Modules) > 0 && string(raw.Modules) != "null" {
		if err := json.Unmarshal(raw.Modules, &c.ModulesSave); err != nil {
			return nil, fmt.Errorf("%s: modules_to_save: %w", LoRAConfigName, err)
		}
	}
	return &c, nil
}

// LoRA is an opened PEFT LoRA adapter: its configuration and, in Pairs, its
// lora_A/lora_B tensors matched to the base model tensors they change.
type LoRA struct {
	Config *LoRAConfig
	// Pairs in the order of the adapter file (the first of A or B decides).
	Pairs []LoRAPair
}

// LoRAPair is one adapted weight W (out × in): W' = W + Scale·(B·A), with A
// of shape [rank, in] and B of shape [out, rank].
type LoRAPair struct {
	// Base is the base model's tensor name, as Hugging Face names it
	// ("model.layers.0.self_attn.q_proj.weight").
	Base  string
	A, B  *Tensor
	Rank  int64
	Scale float64
}

// Shape is the shape [out, in] of the weight the pair changes.
func (p *LoRAPair) Shape() tensor.Shape { return tensor.Shape{p.B.Shape[0], p.A.Shape[1]} }

// loraSuffixes map an adapter tensor name's ending to A or B.
var loraSuffixes = []struct {
	suffix string
	isA    bool
}{{".lora_A.weight", true}, {".lora_B.weight", false}}

// LoRABaseName is the base model's name of a PEFT adapter tensor
// ("base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight" →
// "model.layers.0.self_attn.q_proj.weight"), and whether it is A. ok is
// false for a name that is not a lora_A/lora_B weight.
func LoRABaseName(name string) (base string, isA, ok bool) {
	for _, s := range loraSuffixes {
		if stem, found := strings.CutSuffix(name, s.suffix); found {
			return strings.TrimPrefix(stem, "base_model.model.") + ".weight", s.isA, true
		}
	}
	return "", false, false
}

// Check refuses, naming the key, a configuration whose computation tfconv
// does not implement: DoRA (a magnitude vector rescales each column),
// fan_in_fan_out (Conv1D layers, weights stored transposed), per-module
// ranks or alphas (rank_pattern, alpha_pattern), trained biases, and
// modules_to_save (whole replacement modules).
func (c *LoRAConfig) Check() error {
	switch {
	case c.DoRA:
		return tensor.Unsupported("%s: use_dora is set: DoRA adapters (a per-column magnitude rescales W + ΔW) are not applied by tfconv", LoRAConfigName)
	case c.FanInOut:
		return tensor.Unsupported("%s: fan_in_fan_out is set (Conv1D weights stored transposed): not applied by tfconv", LoRAConfigName)
	case len(c.RankPattern) > 0:
		return tensor.Unsupported("%s: rank_pattern gives some modules their own rank: not applied by tfconv", LoRAConfigName)
	case len(c.AlphaPattern) > 0:
		return tensor.Unsupported("%s: alpha_pattern gives some modules their own alpha: not applied by tfconv", LoRAConfigName)
	case c.Bias != "" && c.Bias != "none":
		return tensor.Unsupported("%s: bias = %q: adapters that train biases are not applied by tfconv", LoRAConfigName, c.Bias)
	case len(c.ModulesSave) > 0:
		return tensor.Unsupported("%s: modules_to_save %v: adapters that replace whole modules are not applied by tfconv", LoRAConfigName, c.ModulesSave)
	}
	return nil
}

// LoRA returns the adapter c holds: c must have been opened from an
// adapter directory (c.LoRAConfig set). It checks the configuration (Check)
// and pairs every tensor: each must be a lora_A or lora_B weight, each A
// must have its B, the shapes must agree and the rank must be the config's r.
func (c *Checkpoint) LoRA() (*LoRA, error) {
	if c.LoRAConfig == nil {
		return nil, fmt.Errorf("checkpoint: %s is not a PEFT adapter (no %s)", c.Path, LoRAConfigName)
	}
	cfg := c.LoRAConfig
	if err := cfg.Check(); err != nil {
		return nil, fmt.Errorf("%s: %w", c.Path, err)
	}
	file := c.Files[0].Path
	byBase := map[string]int{}
	var pairs []LoRAPair
	for _, t := range c.Tensors {
		base, isA, ok := LoRABaseName(t.Name)
		if !ok {
			why := "not a lora_A or lora_B weight"
			switch {
			case strings.Contains(t.Name, "lora_embedding_"):
				why = "an embedding LoRA (lora_embedding_A/B), which tfconv does not apply"
			case strings.Contains(t.Name, "lora_magnitude_vector"):
				why = "a DoRA magnitude vector, which tfconv does not apply"
			case strings.Contains(t.Name, "modules_to_save") || strings.HasSuffix(t.Name, ".bias"):
				why = "a whole module or bias the adapter replaces, which tfconv does not apply"
			}
			return nil, tensor.Unsupported("%s: tensor %q is %s", file, t.Name, why)
		}
		if !t.DType.Float() || t.DType.Quantized() || len(t.Shape) != 2 {
			return nil, fmt.Errorf("%s: tensor %q is %v %v; a LoRA factor is a float matrix", file, t.Name, t.DType, t.Shape)
		}
		i, seen := byBase[base]
		if !seen {
			i = len(pairs)
			byBase[base] = i
			pairs = append(pairs, LoRAPair{Base: base, Scale: cfg.Scale()})
		}
		p := &pairs[i]
		if isA {
			if p.A != nil {
				return nil, fmt.Errorf("%s: tensor %q: a second lora_A for %q", file, t.Name, base)
			}
			p.A = t
		} else {
			if p.B != nil {
				return nil, fmt.Errorf("%s: tensor %q: a second lora_B for %q", file, t.Name, base)
			}
			p.B = t
		}
	}
	for i := range pairs {
		p := &pairs[i]
		switch {
		case p.A == nil:
			return nil, fmt.Errorf("%s: %q has a lora_B (%q) but no lora_A", file, p.Base, p.B.Name)
		case p.B == nil:
			return nil, fmt.Errorf("%s: %q has a lora_A (%q) but no lora_B", file, p.Base, p.A.Name)
		case p.A.Shape[0] != p.B.Shape[1]:
			return nil, fmt.Errorf("%s: %q: lora_A %v and lora_B %v disagree on the rank", file, p.Base, p.A.Shape, p.B.Shape)
		case p.A.Shape[0] != cfg.R:
			return nil, fmt.Errorf("%s: %q: rank %d, but %s says r = %d", file, p.Base, p.A.Shape[0], LoRAConfigName, cfg.R)
		}
		p.Rank = p.A.Shape[0]
	}
	if len(pairs) == 0 {
		return nil, fmt.Errorf("%s: the adapter has no lora_A/lora_B tensors", file)
	}
	return &LoRA{Config: cfg, Pairs: pairs}, nil
}

// isLoRADir reports whether dir holds a PEFT adapter (adapter_config.json).
func isLoRADir(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, LoRAConfigName))
	return err == nil && st.Mode().IsRegular()
}

// openLoRA opens a PEFT adapter directory: adapter_model.safetensors (or,
// without it, adapter_model.bin) through the format readers, with the
// parsed adapter_config.json in LoRAConfig.
func openLoRA(dir string) (*Checkpoint, error) {
	p := filepath.Join(dir, LoRAConfigName)
	b, err := readCapped(p)
	if err != nil {
		return nil, err
	}
	cfg, err := ParseLoRAConfig(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	var c *Checkpoint
	switch {
	case exists(filepath.Join(dir, LoRASafetensorsName)):
		c, err = openSafetensors(filepath.Join(dir, LoRASafetensorsName), dir)
	case exists(filepath.Join(dir, LoRABinName)):
		c, err = openPyTorch(filepath.Join(dir, LoRABinName), dir)
	default:
		return nil, fmt.Errorf("checkpoint: %s has %s but neither %s nor %s: %w", dir, LoRAConfigName,
			LoRASafetensorsName, LoRABinName, fs.ErrNotExist)
	}
	if err != nil {
		return nil, err
	}
	c.Path = dir
	c.LoRAConfig = cfg
	return c, nil
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// readCapped reads a small JSON file, refusing one above MaxAuxSize.
func readCapped(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxAuxSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxAuxSize {
		return nil, errors.New("checkpoint: " + p + " is above the size limit for side files")
	}
	return b, nil
}

// WithTensors is a view of c with some tensors replaced (same names, in
// place) by others: a merged or otherwise computed version of the
// checkpoint that shares c's metadata, side files and open files (close c,
// not the view).
func (c *Checkpoint) WithTensors(repl map[string]*Tensor) (*Checkpoint, error) {
	v := *c
	v.closers = nil
	v.byName = nil
	v.Tensors = nil
	for _, t := range c.Tensors {
		if r, ok := repl[t.Name]; ok {
			if r.Name != t.Name {
				return nil, fmt.Errorf("checkpoint: tensor %q replaced by one named %q", t.Name, r.Name)
			}
			t = r
		}
		v.add(t)
	}
	for name := range repl {
		if _, ok := c.byName[name]; !ok {
			return nil, fmt.Errorf("checkpoint: %s has no tensor %q to replace", c.Path, name)
		}
	}
	return &v, nil
}
