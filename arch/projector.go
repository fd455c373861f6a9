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
	// Summary names the tower and projection for inspect.
	Summary string
	// Legacy: the mmproj is written as llama.cpp's
	// tools/mtmd/legacy-models/convert_image_encoder_to_gguf.py writes it
	// (the path llama.cpp documents for LLaVA, whose classes its
	// convert_hf_to_gguf.py --mmproj refuses): general.architecture, then
	// the Tower's Params alone, which state the general.* keys it writes
	// (a Param key starting with "general." is written as is; general.name
	// is the checkpoint's name, as for every output) — no general.type,
	// size label or quantization_version.
	Legacy bool
	// FeatureLayer: the tower is cut after the layer whose output the
	// projector reads (config.json's vision_feature_layer, counted from
	// the end when negative, as transformers indexes hidden_states):
	// TowerConfig sets num_hidden_layers to that many layers, so the block
	// count and a Drop{PastLayers} follow it. A list of layers is refused.
	FeatureLayer bool
	// Order, when set, is the order the mmproj's tensors are written in:
	// GGUF names, {bid} for a layer's; the names before the first {bid}
	// one come first, then each layer's in turn, then the rest (the legacy
	// writer's: the projector's tensors, then the CLIP model's state dict).
	Order []string
	// NoHF, when set, says why GGUF → HF refuses this projector (what
	// the record cannot write back yet), as Family.NoGGUF does for GGUF.
	NoHF string
	// HFModelType is the multimodal config.json's model_type ("gemma3");
	// TextModelType its text_config's ("gemma3_text"), both written on
	// GGUF → HF.
	HFModelType, TextModelType string
	// TokenKeys are config.json's special-token entries GGUF → HF fills
	// from the text GGUF's vocabulary, by the token's text.
	TokenKeys []TokenKey
	// TokensKey is config.json's entry of the tokens per image
	// (TokensPerImage: "mm_tokens_per_image").
	TokensKey string
	// Preprocessor and ProcessorFile are the constant entries of
	// preprocessor_config.json and processor_config.json GGUF → HF writes
	// (the published model's); image_mean, image_std, size and
	// image_seq_length come from the mmproj.
	Preprocessor, ProcessorFile map[string]any
	// PoolDefault is the pooling kernel (patches per token side) llama.cpp
	// takes when the mmproj has no clip.vision.projector.scale_factor (4
	// for Gemma 3); 0: the projector does not pool.
	PoolDefault int64
}

// TokensPerImage is how many embeddings the projector gives one image of
// its image size, from its mmproj keys (get reads a clip.* key as an
// integer): the patch grid, pooled by the scale factor when the projector
// pools, merged by clip.vision.spatial_merge_size when it states one. 0
// when the keys do not say.
func (p *Projector) TokensPerImage(get func(key string) (int64, bool)) int64 {
	img, _ := get("clip.vision.image_size")
	patch, _ := get("clip.vision.patch_size")
	if img <= 0 || patch <= 0 || img > 1<<20 {
		return 0
	}
	side := img / patch
	if p.PoolDefault > 0 {
		k, ok := get("clip.vision.projector.scale_factor")
		if !ok {
			k = p.PoolDefault
		}
		if k <= 0 {
			return 0
		}
		side /= k
	}
	// A patch merger (Pixtral's) joins merge×merge patches into one
	// token; its images vary in size, so this is at the image size.
	if m, ok := get("clip.vision.spatial_merge_size"); ok && m > 0 {
		side /= m
	}
	return side * side
}

// TowerMetadata is the mmproj's clip.* keys for a Hugging Face checkpoint
// of one of the projector's classes (top: config.json as written; pre: the
// processor's files, merged), general.file_type aside: what inspect shows
// of the tower before any conversion.
func (p *Projector) TowerMetadata(top, pre Config) (tensor.Metadata, error) {
	c, err := p.TowerConfig(top, pre)
	if err != nil {
		return nil, err
	}
	md, err := p.Tower.GGUFMetadata(c, 0)
	if err != nil {
		return nil, err
	}
	out := md[:0]
	for _, kv := range md {
		if kv.Key != FileType {
			out = append(out, kv)
		}
	}
	return out, nil
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
		text, ok = top.Map("llm_config") // the original InternVL layout's
	}
	if !ok {
		text = top
	}
	c[TowerText], c[TowerTop], c[TowerPreprocessor] = map[string]any(text), map[string]any(top), map[string]any(pre)
	if p.FeatureLayer {
		n, ok := c.Int("num_hidden_layers")
		if !ok || n <= 0 || n > 1<<16 {
			return nil, errUnsupported("config.json: %s num_hidden_layers is missing or out of range", p.Encoder)
		}
		f, ok := top.Int("vision_feature_layer")
		if _, isList := top["vision_feature_layer"].([]any); isList || !ok {
			return nil, errUnsupported("config.json: vision_feature_layer %v: the %s projector reads one layer's output (an integer)", top["vision_feature_layer"], p.Type)
		}
		if f < 0 {
			f += n + 1
		}
		if f <= 0 || f > n {
			return nil, errUnsupported("config.json: vision_feature_layer %v is not one of the tower's %d layers", top["vision_feature_layer"], n)
		}
		c["num_hidden_layers"] = f
	}
	return c, nil
}

// OrderKey places GGUF tensor name in p.Order: (section, layer, index) to
// sort by, ok false for a name Order does not list.
func (p *Projector) OrderKey(name string) (key [3]int, ok bool) {
	pat, bid, suffix := SplitName(name)
	block := false
	for i, o := range p.Order {
		isBlock := strings.Contains(o, "{bid}")
		block = block || isBlock
		if isBlock && o != pat+suffix || !isBlock && o != name {
			continue
		}
		switch {
		case isBlock:
			return [3]int{1, bid, i}, true
		case block:
			return [3]int{2, 0, i}, true
		}
		return [3]int{0, 0, i}, true
	}
	return key, false
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
		{Key: "vision.block_count", Out: "num_hidden_layers", Kind: tensor.KindUint32, Need: Required, HF: []string{"n_layers", "num_hidden_layers", "n_layer", "num_layers", "depth", "layers",
			"encoder_layers", "vt_num_hidden_layers"}},
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

// TensorType is the type the converter gives an mmproj tensor for the
// file type want: the tower's roles first (Family.TensorType: F32, F16 and
// Unquantized roles), then, for a projector the newer converter writes
// (not Legacy), its MmprojModel rules — a tower's position embedding stays
// F32, a patch embedding or patch merger kernel is F16 at f16 and F32
// otherwise —, then GGUFTensorType. The legacy LLaVA writer has none of
// those rules (its position embedding is F16 at f16).
func (p *Projector) TensorType(name string, shape tensor.Shape, want tensor.DType) tensor.DType {
	pat, _, _ := SplitName(name)
	if !p.Legacy && !p.Tower.hasTypeRole(pat) {
		switch {
		case name == "v.position_embd.weight" || name == "a.position_embd.weight": // V/A_ENC_EMBD_POS
			return tensor.F32
		case strings.Contains(name, ".patch_embd.weight") || strings.Contains(name, ".patch_merger.weight"):
			if want == tensor.F16 {
				return tensor.F16
			}
			return tensor.F32
		}
	}
	return p.Tower.TensorType(name, shape, want)
}

// TokenKey is a config.json entry holding the id of the token of Text.
type TokenKey struct{ Key, Text string }

// ToHF maps the mmproj GGUF's tensors back to the checkpoint's names (the
// tower's roles, layouts undone).
func (p *Projector) ToHF(md tensor.Metadata, in []tensor.Info) ([]Mapping, []Dropped, error) {
	// The tower's head count is under clip.vision. (clip.audio. for an
	// audio tower); ToHF reads the family's (for layouts that cut by
	// heads, which no tower uses).
	if _, ok := md.Get(MmprojArch + ".attention.head_count"); !ok {
		for _, enc := range []string{".vision.", ".audio."} {
			if v, ok := md.Get(MmprojArch + enc + "attention.head_count"); ok {
				md = append(md[:len(md):len(md)], tensor.KV{Key: MmprojArch + ".attention.head_count", Value: v})
				break
			}
		}
	}
	return p.Tower.ToHF(md, in)
}

// HFConfig is the multimodal config.json GGUF → HF writes from the text
// model's config (text, as the text family writes it) and the mmproj's
// keys: model_type HFModelType, the text model under text_config, the
// tower's entries (its Params' config keys and HFConst) under Encoder,
// TokensKey and the TokenKeys (tokenID finds a token's id by its text).
func (p *Projector) HFConfig(text Config, mm tensor.Metadata, tokenID func(text string) (int64, bool)) (Config, error) {
	tower, err := p.Tower.HFConfig(mm)
	if err != nil {
		return nil, err
	}
	delete(tower, "architectures")
	tc := Config{}
	for k, v := range text {
		if k != "architectures" && k != "torch_dtype" {
			tc[k] = v
		}
	}
	if p.TextModelType != "" {
		tc["model_type"] = p.TextModelType
	}
	c := Config{"architectures": []string{p.HFClasses[0]}, "model_type": p.HFModelType, "text_config": tc, p.Encoder: tower}
	if p.TokensKey != "" {
		if n := p.TokensPerImage(mm.Int); n > 0 {
			c[p.TokensKey] = n
		}
	}
	for _, k := range p.TokenKeys {
		id, ok := tokenID(k.Text)
		if !ok {
			return nil, errUnsupported("the text GGUF's vocabulary has no %q (config.json's %s)", k.Text, k.Key)
		}
		c[k.Key] = id
	}
	return c, nil
}

// HFProcessorFiles are preprocessor_config.json and processor_config.json
// for the mmproj's keys: the record's constant entries, the mmproj's mean,
// std and image size, and the tokens per image.
func (p *Projector) HFProcessorFiles(mm tensor.Metadata) map[string]Config {
	out := map[string]Config{}
	if p.Preprocessor != nil {
		pre := Config{}
		for k, v := range p.Preprocessor {
			pre[k] = v
		}
		for _, k := range []string{"image_mean", "image_std"} {
			if v, ok := mm.Get(MmprojArch + ".vision." + k); ok {
				if a, ok := v.Array(); ok {
					list := make([]any, a.Len())
					for i := range list {
						f, _ := a.Index(i).Float()
						list[i] = F32(float32(f))
					}
					pre[k] = list
				}
			}
		}
		if n, ok := mm.Int(MmprojArch + ".vision.image_size"); ok {
			pre["size"] = map[string]any{"height": n, "width": n}
		}
		if n := p.TokensPerImage(mm.Int); n > 0 {
			pre["image_seq_length"] = n
		}
		out["preprocessor_config.json"] = pre
	}
	if p.ProcessorFile != nil {
		proc := Config{}
		for k, v := range p.ProcessorFile {
			proc[k] = v
		}
		if n := p.TokensPerImage(mm.Int); n > 0 {
			proc["image_seq_length"] = n
		}
		out["processor_config.json"] = proc
	}
	return out
}
