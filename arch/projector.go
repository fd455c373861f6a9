package arch

import (
	"fmt"
	"strings"

	"github.com/tfconv/tfconv/tensor"
)

// Projector is one multimodal projector as llama.cpp's converter writes it
// (convert_hf_to_gguf.py --mmproj, its MmprojModel subclasses): the vision
// (or audio) encoder of a multimodal checkpoint and the projection into the
// text model's embeddings, kept in a GGUF of its own (general.architecture
// "clip", general.type "mmproj") beside the text model's. A projector is a
// table entry: the classes it serves, its text family, and its tower stated
// as a Family of GGUF architecture "clip" — its Params are the clip.* keys
// in the converter's order, read from the config TowerConfig builds (Params
// are the one mechanism for keys; "clip." is their prefix), its Tensors the
// Hugging Face ↔ mmproj names with layouts, its Drops what the mmproj leaves
// out, its F32/F16 roles the types the converter forces.
type Projector struct {
	// Type is clip.projector_type ("gemma3"; llama.cpp's
	// VisionProjectorType).
	Type string
	// HFClasses are the config.json "architectures" classes it serves.
	HFClasses []string
	// Text is the GGUF name of the family the text half converts as.
	Text string
	// Encoder is the config.json object holding the tower's settings
	// ("vision_config"; an audio tower's "audio_config").
	Encoder string
	// Prefixes are the Hugging Face name prefixes of the tower's and the
	// projection's tensors: the text GGUF leaves them out (TextDrops), the
	// mmproj takes them.
	Prefixes []string
	// Tower is the mmproj's schema (Name "clip").
	Tower Family
	// Summary names the tower and projection for inspect ("SigLIP ViT,
	// pooled 2-D + RMSNorm + linear").
	Summary string
}

// MmprojArch is the general.architecture of every projector GGUF.
const MmprojArch = "clip"

// Config keys TowerConfig adds beside the encoder's own entries.
const (
	// TowerText is the text model's config (text_config, else the top
	// level): projection_dim is its hidden size.
	TowerText = "_text"
	// TowerTop is the whole config.json (mm_tokens_per_image …).
	TowerTop = "_top"
	// TowerPreprocessor is preprocessor_config.json with
	// processor_config.json's entries (and its image_processor object's)
	// over it, as the converter merges them.
	TowerPreprocessor = "_preprocessor"
)

var projectors []*Projector

// registerProjector adds p to the table; a class served twice panics.
func registerProjector(p *Projector) *Projector {
	for _, q := range projectors {
		for _, a := range q.HFClasses {
			for _, b := range p.HFClasses {
				if a == b {
					panic(fmt.Sprintf("arch: projector %q: class %q already has projector %q", p.Type, a, q.Type))
				}
			}
		}
	}
	if p.Tower.Name != MmprojArch {
		panic(fmt.Sprintf("arch: projector %q: its tower's architecture is %q, not %q", p.Type, p.Tower.Name, MmprojArch))
	}
	projectors = append(projectors, p)
	return p
}

// Projectors lists the projector table, in registration order.
func Projectors() []*Projector { return projectors }

// ProjectorFor returns the projector of a config.json's class (its
// "architectures" entries), if one is in the table.
func ProjectorFor(c Config) (*Projector, bool) {
	for _, cls := range configClasses(c) {
		for _, p := range projectors {
			for _, h := range p.HFClasses {
				if h == cls {
					return p, true
				}
			}
		}
	}
	return nil, false
}

// ProjectorByType returns the projector whose clip.projector_type is t.
func ProjectorByType(t string) (*Projector, bool) {
	for _, p := range projectors {
		if p.Type == t {
			return p, true
		}
	}
	return nil, false
}

func configClasses(c Config) []string {
	var out []string
	switch a := c["architectures"].(type) {
	case []any:
		for _, v := range a {
			if s, ok := v.(string); ok {
				out = append(out, s)
			}
		}
	case []string:
		out = a
	}
	return out
}

// TowerConfig is the config the tower's Params read: the encoder's object
// of config.json (top, the file as written), with the text model's config
// under TowerText, the whole file under TowerTop and the processor's files
// (pre, merged) under TowerPreprocessor. A config without the encoder's
// object is refused naming it.
func (p *Projector) TowerConfig(top, pre Config) (Config, error) {
	enc, ok := top.Map(p.Encoder)
	if !ok {
		return nil, errUnsupported("config.json: no %s object: the %s projector's tower is stated there", p.Encoder, p.Type)
	}
	c := make(Config, len(enc)+3)
	for k, v := range enc {
		c[k] = v
	}
	text, ok := top.Map("text_config")
	if !ok {
		text = top
	}
	c[TowerText], c[TowerTop], c[TowerPreprocessor] = map[string]any(text), map[string]any(top), map[string]any(pre)
	return c, nil
}

// TextDrops are the drops the text family states for the tower's tensors:
// they go to the mmproj GGUF (--mmproj), and a conversion of the text
// model alone (--text-only) reports them.
func (p *Projector) TextDrops() []Drop { return mmprojDrops(p.Prefixes) }

func mmprojDrops(prefixes []string) []Drop {
	out := make([]Drop, len(prefixes))
	for i, pre := range prefixes {
		out[i] = Drop{Prefix: pre, Reason: mmprojPart, Warn: true}
	}
	return out
}

// mmprojPart is the reason the text GGUF leaves a projector's tensors out.
const mmprojPart = "vision tower and projector: written to the mmproj GGUF (--mmproj), not the text model's"

// IsMmprojDrop reports whether a drop reason is a projector's part
// (TextDrops): the tensors --mmproj writes to the mmproj GGUF.
func IsMmprojDrop(reason string) bool { return reason == mmprojPart }

// mmprojVisionParams are MmprojModel.set_gguf_parameters' keys for a vision
// encoder, in its order (general.file_type first), before the subclass's.
func mmprojVisionParams() []Param {
	return []Param{
		{Key: FileType},
		constBool("has_vision_encoder", true),
		{Key: "vision.projection_dim", Kind: tensor.KindUint32, Derive: fromText("hidden_size", "n_embd")},
		u32("vision.image_size", Required, "image_size"),
		u32("vision.patch_size", Required, "patch_size"),
		u32("vision.embedding_length", Required, "hidden_size", "width", "vt_hidden_size"),
		u32("vision.feed_forward_length", Required, "intermediate_size", "vt_intermediate_size"),
		u32("vision.block_count", Required, "n_layers", "num_hidden_layers", "n_layer", "num_layers", "depth", "layers",
			"encoder_layers", "vt_num_hidden_layers"),
		u32("vision.attention.head_count", Required, "num_attention_heads", "num_heads", "heads", "vt_num_attention_heads"),
		preprocessorFloats("vision.image_mean", "image_mean"),
		preprocessorFloats("vision.image_std", "image_std"),
	}
}

// constBool is a key the converter writes with a fixed value.
func constBool(key string, v bool) Param {
	return Param{Key: key, Kind: tensor.KindBool, Derive: func(Config) (tensor.Value, bool, error) { return tensor.Bool(v), true, nil }}
}

// constString is a key the converter writes with a fixed string.
func constString(key, v string) Param {
	return Param{Key: key, Kind: tensor.KindString, Derive: func(Config) (tensor.Value, bool, error) { return tensor.String(v), true, nil }}
}

// fromText reads the first of keys from the text model's config
// (TowerText), as a uint32; absent or not positive is an error (the
// converter asserts it).
func fromText(keys ...string) func(Config) (tensor.Value, bool, error) {
	return func(c Config) (tensor.Value, bool, error) {
		text, _ := c.Map(TowerText)
		n, ok := text.Int(keys...)
		if !ok || n <= 0 || n > 1<<32-1 {
			return tensor.Value{}, false, errUnsupported("config.json: the text model's %s is missing or not a positive integer", strings.Join(keys, " or "))
		}
		return tensor.Uint32(uint32(n)), true, nil
	}
}

// preprocessorFloats is a float32 array key read from the processor's
// files (preprocessor_config.json / processor_config.json), required.
func preprocessorFloats(key, name string) Param {
	return Param{Key: key, Kind: tensor.KindArray, Derive: func(c Config) (tensor.Value, bool, error) {
		pre, _ := c.Map(TowerPreprocessor)
		list, ok := pre[name].([]any)
		if !ok || len(list) == 0 || len(list) > 16 {
			return tensor.Value{}, false, errUnsupported("preprocessor_config.json: %s is missing or not a short list of numbers (the mmproj states it)", name)
		}
		out := make([]float32, len(list))
		for i, v := range list {
			f, ok := Config{"v": v}.Float("v")
			if !ok {
				return tensor.Value{}, false, errUnsupported("preprocessor_config.json: %s[%d] = %v is not a number", name, i, v)
			}
			out[i] = float32(f)
		}
		return tensor.ArrayOf(out), true, nil
	}}
}

// TensorType is the type the converter gives a tensor of the projector's
// GGUF at file type want: the tower's forced roles (Tower.F32, Tower.F16,
// its subclass's tensor_force_quant) first, then MmprojModel's rule for
// every projector — a patch embedding's kernels (names holding
// ".patch_embd.weight", which takes in Qwen-VL's second temporal slice
// ".patch_embd.weight.1", or ".patch_merger.weight") are F16 at f16 and F32
// at every other outtype —, then GGUFTensorType's.
func (p *Projector) TensorType(name string, shape tensor.Shape, want tensor.DType) tensor.DType {
	pat, _, _ := SplitName(name)
	for _, r := range p.Tower.F32 {
		if r == pat {
			return tensor.F32
		}
	}
	for _, r := range p.Tower.F16 {
		if r == pat {
			return tensor.F16
		}
	}
	if strings.Contains(name, ".patch_embd.weight") || strings.Contains(name, ".patch_merger.weight") {
		if want == tensor.F16 {
			return tensor.F16
		}
		return tensor.F32
	}
	return GGUFTensorType(name, shape, want)
}
