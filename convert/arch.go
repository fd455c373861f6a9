package convert

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
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

// noGGUF are architectures tfconv reads and repacks (native, safetensors)
// but that llama.cpp has no GGUF architecture for, so there are no GGUF
// names or keys to match; inventing some would make files nothing loads.
var noGGUF = map[string]string{
	"marian": "llama.cpp has no Marian architecture (sinusoidal positions, post-LN encoder-decoder), so a GGUF of it would load nowhere",
	"bart":   "llama.cpp has no BART architecture, so a GGUF of it would load nowhere",
}

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

// Lookup returns the architecture for a GGUF general.architecture value or a
// config.json model_type. An unknown name is an error listing the supported
// ones.
func Lookup(name string) (Arch, error) {
	if a, ok := registry[strings.ToLower(name)]; ok {
		return a, nil
	}
	if why, ok := noGGUF[strings.ToLower(name)]; ok {
		return nil, tensor.Unsupported("convert: %s: %s; convert it to native (--to native) or safetensors instead (GGUF architectures: %s)",
			name, why, strings.Join(Supported(), ", "))
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
	if f, ok := a.(family); ok {
		m, ok := f.f.FromHF(hfName)
		if !ok {
			return "", false
		}
		return m.Name(true), true
	}
	n, ok := a.(namer)
	if !ok {
		return "", false
	}
	return n.names().toGGUF(hfName)
}

// HFName is the inverse of GGUFName: "blk.3.attn_q.weight" →
// "model.layers.3.self_attn.q_proj.weight".
func HFName(arch, ggufName string) (string, bool) {
	a, err := Lookup(arch)
	if err != nil {
		return "", false
	}
	if f, ok := a.(family); ok {
		m, ok := f.f.FromGGUF(ggufName)
		if !ok {
			return "", false
		}
		return m.Name(false), true
	}
	n, ok := a.(namer)
	if !ok {
		return "", false
	}
	return n.names().toHF(ggufName)
}

// namer is implemented by the architectures whose tensors map one to one by
// a name table.
type namer interface{ names() nameTable }

// nameTable pairs HF and GGUF tensor names without their .weight/.bias
// suffix; "{bid}" stands for the layer number (the first all-digit part of
// a name, as llama.cpp's converter takes it).
type nameTable []struct{ hf, gguf string }

func (t nameTable) lookup(name string, toGGUF bool) (string, bool) {
	pat, bid, suffix := arch.SplitName(name)
	if suffix == "" {
		return "", false
	}
	for _, e := range t {
		from, to := e.hf, e.gguf
		if !toGGUF {
			from, to = e.gguf, e.hf
		}
		if from == pat {
			return strings.Replace(to, "{bid}", strconv.Itoa(bid), 1) + suffix, true
		}
	}
	return "", false
}

func (t nameTable) toGGUF(hf string) (string, bool) { return t.lookup(hf, true) }
func (t nameTable) toHF(gguf string) (string, bool) { return t.lookup(gguf, false) }

// Config is a parsed config.json (arch.Config: its accessors live there).
type Config = arch.Config

// requireInt returns the first present integer of keys as a uint32 GGUF
// value, or an error naming the keys.
func requireInt(c Config, keys ...string) (uint32, error) {
	v, ok := c.Int(keys...)
	if !ok {
		return 0, fmt.Errorf("convert: config.json: no integer %s", strings.Join(keys, " or "))
	}
	if v < 0 || v > math.MaxUint32 {
		return 0, fmt.Errorf("convert: config.json: %s = %d is out of range", keys[0], v)
	}
	return uint32(v), nil
}

func requireFloat(c Config, keys ...string) (float32, error) {
	v, ok := c.Float(keys...)
	if !ok {
		return 0, fmt.Errorf("convert: config.json: no number %s", strings.Join(keys, " or "))
	}
	return float32(v), nil
}

// f32 is arch.F32.
func f32(x float32) json.Number { return arch.F32(x) }

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

// mdFloat reads a float GGUF KV as float32 (the type llama.cpp writes).
func mdFloat(md tensor.Metadata, key string) (float32, bool) {
	v, ok := md.Get(key)
	if !ok {
		return 0, false
	}
	f, ok := v.Float()
	return float32(f), ok
}

// mapTable maps in through t in the given direction, dropping the tensors
// drop names (with its reason) and failing on any other unknown name.
func mapTable(t nameTable, in []tensor.Info, toGGUF bool, drop func(name string) string) ([]Mapping, []Dropped, error) {
	var out []Mapping
	var dropped []Dropped
	for _, ti := range in {
		if r := drop(ti.Name); r != "" {
			dropped = append(dropped, Dropped{Name: ti.Name, Reason: r})
			continue
		}
		name, ok := t.lookup(ti.Name, toGGUF)
		if !ok {
			return nil, nil, tensor.Unsupported("convert: unexpected tensor %q: no mapping for it", ti.Name)
		}
		out = append(out, Mapping{Name: name, Source: ti.Name, Shape: ti.Shape.Clone()})
	}
	return out, dropped, nil
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

// layerTensors lists name patterns ("blk.{bid}.attn_q.weight") expanded for
// every layer.
func layerTensors(n int, patterns ...string) []string {
	var out []string
	for b := 0; b < n; b++ {
		for _, p := range patterns {
			out = append(out, strings.Replace(p, "{bid}", strconv.Itoa(b), 1))
		}
	}
	return out
}

func infoByName(in []tensor.Info) map[string]tensor.Info {
	m := make(map[string]tensor.Info, len(in))
	for _, t := range in {
		m[t.Name] = t
	}
	return m
}

// addSpecialIDs copies the BOS/EOS/PAD ids of the GGUF tokenizer into
// config.json, where transformers' generation defaults read them.
func addSpecialIDs(c Config, md tensor.Metadata) {
	for _, k := range []struct{ gguf, key string }{
		{"tokenizer.ggml.bos_token_id", "bos_token_id"},
		{"tokenizer.ggml.eos_token_id", "eos_token_id"},
		{"tokenizer.ggml.padding_token_id", "pad_token_id"},
	} {
		if v, ok := md.Int(k.gguf); ok {
			c[k.key] = v
		}
	}
}

// permuteRows returns llama.cpp's rotary row permutation for a [rows, cols]
// matrix of heads heads: within each head of d rows, row j·d/2+i (j ∈ {0,1})
// goes to row 2i+j. inverse undoes it.
func permuteRows(heads, rows, cols int, inverse bool) func(dst, src []float32) {
	d := rows / heads
	half := d / 2
	return func(dst, src []float32) {
		for h := 0; h < heads; h++ {
			for i := 0; i < half; i++ {
				for j := 0; j < 2; j++ {
					hfRow := h*d + j*half + i
					ggRow := h*d + 2*i + j
					from, to := hfRow, ggRow
					if inverse {
						from, to = ggRow, hfRow
					}
					copy(dst[to*cols:(to+1)*cols], src[from*cols:(from+1)*cols])
				}
			}
		}
	}
}
