package convert

import (
	"github.com/tfconv/tfconv/arch"
)

// Mapping is one output tensor and how it is made from one input tensor
// (arch.Mapping: a family's ToGGUF and ToHF make them).
type Mapping = arch.Mapping

// Dropped is an input tensor left out of the output on purpose
// (arch.Dropped).
type Dropped = arch.Dropped

// Supported lists the GGUF architecture names tfconv converts, sorted
// (arch.Supported).
func Supported() []string { return arch.Supported() }

// SupportedModel is one architecture convert writes as GGUF: its GGUF
// name and the config.json "architectures" classes and model_type values
// that convert to it.
type SupportedModel struct {
	GGUF       string   `json:"gguf"`
	HFClasses  []string `json:"hf_classes"`
	ModelTypes []string `json:"model_types"`
}

// SupportedModels lists the families with a GGUF form (Supported's
// order) with the Hugging Face names that convert to each, as
// convert_hf_to_gguf.py --print-supported-models lists its classes.
func SupportedModels() []SupportedModel {
	var out []SupportedModel
	for _, f := range arch.Families() {
		if f.NoGGUF != "" {
			continue
		}
		m := SupportedModel{GGUF: f.Name, HFClasses: f.HFClasses, ModelTypes: f.ModelTypes}
		if m.HFClasses == nil {
			m.HFClasses = []string{}
		}
		if m.ModelTypes == nil {
			m.ModelTypes = []string{}
		}
		out = append(out, m)
	}
	return out
}

// lookupConfig returns the family of a config.json: name when given
// (--arch), else arch.LookupConfig's choice.
func lookupConfig(cfg Config, name string) (*arch.Family, error) {
	if name != "" {
		return arch.Lookup(name)
	}
	return arch.LookupConfig(cfg)
}

// Config is a parsed config.json (arch.Config: its accessors live there).
type Config = arch.Config
