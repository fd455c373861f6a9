package convert

import (
	"fmt"
	"sort"
	"strings"

	"github.com/tfconv/tfconv/arch"
	"github.com/tfconv/tfconv/tensor"
)

// Arch is the conversion policy of one model architecture: everything that
// differs between the Hugging Face and the GGUF form of the model lives in
// one value of this type, in one file per architecture.
type Arch interface {
	// Name is the GGUF general.architecture value ("llama").
	Name() string
	// ModelTypes are the config.json model_type values it converts.
	ModelTypes() []string

	// ToGGUF maps the HF tensors to GGUF tensors: the output tensors in
	// write order (each naming the HF tensor it is made from) and the HF
	// tensors dropped on purpose, with the reason. A tensor it does not
	// know is an error naming it.
	ToGGUF(cfg Config, in []tensor.Info) ([]Mapping, []Dropped, error)
	// GGUFMetadata returns the architecture's KVs in the order
	// convert_hf_to_gguf.py writes them, general.file_type included at its
	// place (fileType is the llama.cpp ftype).
	GGUFMetadata(cfg Config, fileType uint32) (tensor.Metadata, error)

	// ToHF is the inverse of ToGGUF.
	ToHF(md tensor.Metadata, in []tensor.Info) ([]Mapping, []Dropped, error)
	// HFConfig builds config.json from the GGUF metadata and tensors.
	HFConfig(md tensor.Metadata, in []tensor.Info) (Config, error)
}

// Mapping is one output tensor and how it is made from one input tensor.
type Mapping struct {
	Name   string       // output name
	Source string       // input tensor name
	Shape  tensor.Shape // output shape, row-major
	// Transform rearranges the elements (dst and src have the same
	// length; src is laid out in the input's shape). nil: copied as is.
	Transform func(dst, src []float32)
	// Copy marks an output that duplicates an input already used by
	// another Mapping (GPT-2's output.weight is a copy of the embedding).
	Copy bool
	// Stack, when set, are the inputs stacked along a new outermost
	// dimension into this output, in order (Source is the first).
	Stack []string
	// Parts > 0: the output is part Part of Parts of Source, cut along its
	// outermost dimension (the inverse of Stack).
	Part, Parts int
}

// Dropped is an input tensor left out of the output on purpose.
type Dropped struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
	// TiedTo names the tensor this one is a copy of (a tied head written
	// twice), when that is why it is dropped.
	TiedTo string `json:"tied_to,omitempty"`
}

var registry = map[string]Arch{}

// register adds an architecture; called from each architecture's init.
func register(a Arch) {
	registry[a.Name()] = a
	for _, t := range a.ModelTypes() {
		registry[t] = a
	}
}

// Supported lists the GGUF architecture names tfconv converts, sorted.
func Supported() []string {
	seen := map[string]bool{}
	var out []string
	for _, a := range registry {
		if !seen[a.Name()] {
			seen[a.Name()] = true
			out = append(out, a.Name())
		}
	}
	sort.Strings(out)
	return out
}

// SupportedModel is one architecture convert writes as GGUF: its GGUF
// name and the config.json "architectures" classes and model_type values
// that convert to it.
type SupportedModel struct {
	GGUF       string   `json:"gguf"`
	HFClasses  []string `json:"hf_classes"`
	ModelTypes []string `json:"model_types"`
}

// SupportedModels lists the registered architectures (Supported's order)
// with the Hugging Face names that convert to each, as
// convert_hf_to_gguf.py --print-supported-models lists its classes.
func SupportedModels() []SupportedModel {
	var out []SupportedModel
	for _, name := range Supported() {
		m := SupportedModel{GGUF: name, HFClasses: []string{}, ModelTypes: registry[name].ModelTypes()}
		if f, ok := registry[name].(family); ok {
			m.HFClasses = f.f.HFClasses
		}
		if m.ModelTypes == nil {
			m.ModelTypes = []string{}
		}
		out = append(out, m)
	}
	return out
}

// Lookup returns the architecture for a GGUF general.architecture value or a
// config.json model_type. An unknown name is an error listing the supported
// ones.
func Lookup(name string) (Arch, error) {
	if a, ok := registry[strings.ToLower(name)]; ok {
		return a, nil
	}
	// A family tfconv reads and repacks (native, safetensors) but that
	// llama.cpp has no GGUF architecture for: inventing names and keys
	// would make files nothing loads.
	if f, ok := arch.ByName(name); ok && f.NoGGUF != "" {
		return nil, tensor.Unsupported("convert: %s: %s; convert it to native (--to native) or safetensors instead (GGUF architectures: %s)",
			name, f.NoGGUF, strings.Join(Supported(), ", "))
	}
	return nil, tensor.Unsupported("convert: unknown architecture %q (supported: %s)",
		name, strings.Join(Supported(), ", "))
}

// LookupConfig is the architecture of a config.json as convert chooses it:
// its "architectures" class first (as convert_hf_to_gguf.py), then its
// model_type.
func LookupConfig(cfg Config) (Arch, error) { return lookupConfig(cfg, "") }

// lookupConfig returns the architecture of a config.json: name when given
// (--arch), else its "architectures" class as convert_hf_to_gguf.py
// chooses (MistralForCausalLM converts as llama), else its model_type.
func lookupConfig(cfg Config, name string) (Arch, error) {
	if name != "" {
		return Lookup(name)
	}
	if f, ok := arch.ForConfig(cfg); ok {
		return Lookup(f.Name)
	}
	mt, _ := cfg.Str("model_type")
	return Lookup(mt)
}

// GGUFName returns the GGUF name of the Hugging Face tensor hfName in
// architecture arch (a GGUF architecture name or HF model_type), as
// llama.cpp's converter names it: "model.layers.3.self_attn.q_proj.weight"
// → "blk.3.attn_q.weight". ok is false for tensors that have no GGUF
// counterpart (dropped buffers, unknown names). It is the matching other
// tools (tfconv diff) use to pair HF and GGUF tensors; note that some pairs
// also differ in layout (LLaMA's Q/K rows are permuted, GPT-2's Conv1D
// weights are transposed), which the name alone does not say.
func GGUFName(arch, hfName string) (string, bool) {
	a, err := Lookup(arch)
	if err != nil {
		return "", false
	}
	f, ok := a.(family)
	if !ok {
		return "", false
	}
	m, ok := f.f.FromHF(hfName)
	if !ok {
		return "", false
	}
	return m.Name(true), true
}

// HFName is the inverse of GGUFName: "blk.3.attn_q.weight" →
// "model.layers.3.self_attn.q_proj.weight".
func HFName(arch, ggufName string) (string, bool) {
	a, err := Lookup(arch)
	if err != nil {
		return "", false
	}
	f, ok := a.(family)
	if !ok {
		return "", false
	}
	m, ok := f.f.FromGGUF(ggufName)
	if !ok {
		return "", false
	}
	return m.Name(false), true
}

// Config is a parsed config.json (arch.Config: its accessors live there).
type Config = arch.Config

// mdUint reads an integer GGUF KV.
func mdUint(md tensor.Metadata, key string) (int64, error) {
	v, ok := md.Get(key)
	if !ok {
		return 0, fmt.Errorf("convert: GGUF metadata has no %s", key)
	}
	i, ok := v.Int()
	if !ok {
		return 0, fmt.Errorf("convert: GGUF metadata %s is %v, not an integer", key, v.Kind())
	}
	return i, nil
}

// requireTensors fails naming the first of names missing from out.
func requireTensors(out []Mapping, names ...string) error {
	have := map[string]bool{}
	for _, m := range out {
		have[m.Name] = true
	}
	for _, n := range names {
		if !have[n] {
			return fmt.Errorf("convert: missing tensor %q", n)
		}
	}
	return nil
}

func infoByName(in []tensor.Info) map[string]tensor.Info {
	m := make(map[string]tensor.Info, len(in))
	for _, t := range in {
		m[t.Name] = t
	}
	return m
}
