package arch

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/tfconv/tfconv/tensor"
)

// Config is a parsed config.json. Numbers are json.Number (as
// checkpoint.Config returns them), so integers and floats stay exact.
type Config map[string]any

// num returns the first of keys that is present and a number.
func (c Config) num(keys ...string) (json.Number, bool) {
	for _, k := range keys {
		switch v := c[k].(type) {
		case json.Number:
			return v, true
		case float64:
			return json.Number(strconv.FormatFloat(v, 'g', -1, 64)), true
		case float32:
			return json.Number(strconv.FormatFloat(float64(v), 'g', -1, 32)), true
		case int:
			return json.Number(strconv.Itoa(v)), true
		case int64:
			return json.Number(strconv.FormatInt(v, 10)), true
		case uint32:
			return json.Number(strconv.FormatUint(uint64(v), 10)), true
		}
	}
	return "", false
}

// Has reports whether key is present and not null.
func (c Config) Has(key string) bool { return c[key] != nil }

// Int returns the first present integer of keys.
func (c Config) Int(keys ...string) (int64, bool) {
	n, ok := c.num(keys...)
	if !ok {
		return 0, false
	}
	if i, err := n.Int64(); err == nil {
		return i, true
	}
	f, err := n.Float64()
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<62 {
		return 0, false
	}
	return int64(f), true
}

// Float returns the first present number of keys.
func (c Config) Float(keys ...string) (float64, bool) {
	n, ok := c.num(keys...)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	return f, err == nil
}

// Bool returns the boolean at key.
func (c Config) Bool(key string) (v, ok bool) {
	v, ok = c[key].(bool)
	return v, ok
}

// Str returns the first string of keys ("hidden_activation",
// "hidden_act": the first key a family's config uses).
func (c Config) Str(keys ...string) (string, bool) {
	for _, k := range keys {
		if s, ok := c[k].(string); ok {
			return s, true
		}
	}
	return "", false
}

// Ints returns the list of integers at key (ok false when absent or
// null; an error when it is something else).
func (c Config) Ints(key string) ([]int64, bool, error) {
	if !c.Has(key) {
		return nil, false, nil
	}
	list, ok := c[key].([]any)
	if !ok {
		return nil, false, errUnsupported("config.json: %s is not a list", key)
	}
	out := make([]int64, len(list))
	for i, v := range list {
		n, ok := Config{"v": v}.Int("v")
		if !ok {
			return nil, false, errUnsupported("config.json: %s[%d] is %v, not an integer", key, i, v)
		}
		out[i] = n
	}
	return out, true, nil
}

// Map returns the object at key (rope_scaling).
func (c Config) Map(key string) (Config, bool) {
	m, ok := c[key].(map[string]any)
	if !ok || m == nil {
		return nil, false
	}
	return Config(m), true
}

// F32 is a float32 config value written as its shortest decimal form, so
// 1e-05 read from a GGUF float32 is written back as 1e-05, not
// 9.999999747378752e-06.
func F32(x float32) json.Number {
	return json.Number(strconv.FormatFloat(float64(x), 'g', -1, 32))
}

// Need says what happens when a Param's config keys are absent.
type Need uint8

// The needs.
const (
	Optional Need = iota // left out of the GGUF
	Required             // an error naming the keys
	Default              // Param.Default is written
)

// FileType is the Param.Key that marks where general.file_type is written.
const FileType = "general.file_type"

// Param is one hyper-parameter.
type Param struct {
	// Key is the GGUF key without the "<arch>." prefix
	// ("attention.head_count"), or FileType.
	Key string
	// HF are the config.json keys, first present wins.
	HF []string
	// Out is the config.json key written on GGUF → HF ("": HF[0]).
	Out string
	// Kind is the GGUF type: KindUint32, KindFloat32, KindBool or
	// KindString.
	Kind tensor.Kind
	// Need and Default: what an absent key does.
	Need    Need
	Default float64
	// Derive computes the value from the whole config instead of reading
	// HF (ok false: left out).
	Derive func(c Config) (v tensor.Value, ok bool, err error)
	// Inverse sets config.json entries from the GGUF value on GGUF → HF,
	// for derived values; nil writes HF[0] (nothing when HF is empty).
	Inverse func(c Config, v tensor.Value, md Meta)
	// Early: the converter writes the key while it prepares the tensors
	// (generate_extra_tensors), before general.type: right after
	// general.architecture.
	Early bool
}

// Default returns the value the family's converter writes for GGUF key
// key (without the "<arch>." prefix) when config.json is silent, if it
// writes one: what the model computes with then.
func (f *Family) Default(key string) (float64, bool) {
	for _, p := range f.Params {
		if p.Key == key && p.Need == Default {
			return p.Default, true
		}
	}
	return 0, false
}

// Early reports whether the GGUF key (with its "<arch>." prefix) is one the
// converter writes right after general.architecture.
func (f *Family) Early(key string) bool {
	for _, p := range f.Params {
		if p.Early && f.Name+"."+p.Key == key {
			return true
		}
	}
	return false
}

// Meta reads the GGUF keys of one family ("<arch>." added).
type Meta struct {
	Arch string
	MD   tensor.Metadata
}

// Get returns "<arch>.key".
func (m Meta) Get(key string) (tensor.Value, bool) { return m.MD.Get(m.Arch + "." + key) }

// Int returns "<arch>.key" as an integer.
func (m Meta) Int(key string) (int64, bool) {
	v, ok := m.Get(key)
	if !ok {
		return 0, false
	}
	return v.Int()
}

// Float returns "<arch>.key" as a float.
func (m Meta) Float(key string) (float64, bool) {
	v, ok := m.Get(key)
	if !ok {
		return 0, false
	}
	return v.Float()
}

// value converts a config number or string to the param's GGUF kind.
func (p Param) value(c Config) (tensor.Value, bool, error) {
	if p.Derive != nil {
		return p.Derive(c)
	}
	var present bool
	for _, k := range p.HF {
		if c.Has(k) {
			present = true
			break
		}
	}
	if !present {
		switch p.Need {
		case Required:
			return tensor.Value{}, false, fmt.Errorf("arch: config.json: no %s", strings.Join(p.HF, " or "))
		case Default:
			return numValue(p.Kind, p.Default, p.HF)
		}
		return tensor.Value{}, false, nil
	}
	switch p.Kind {
	case tensor.KindString:
		for _, k := range p.HF {
			if s, ok := c.Str(k); ok {
				return tensor.String(s), true, nil
			}
		}
	case tensor.KindBool:
		for _, k := range p.HF {
			if b, ok := c.Bool(k); ok {
				return tensor.Bool(b), true, nil
			}
		}
	default:
		for _, k := range p.HF {
			if c.Has(k) {
				f, ok := c.Float(k)
				if !ok {
					return tensor.Value{}, false, fmt.Errorf("arch: config.json: %s = %v is not a number", k, c[k])
				}
				return numValue(p.Kind, f, []string{k})
			}
		}
	}
	return tensor.Value{}, false, fmt.Errorf("arch: config.json: %s has the wrong type", strings.Join(p.HF, " or "))
}

// numValue makes a GGUF value of kind k from f.
func numValue(k tensor.Kind, f float64, keys []string) (tensor.Value, bool, error) {
	switch k {
	case tensor.KindUint32:
		if f < 0 || f > math.MaxUint32 || f != math.Trunc(f) {
			return tensor.Value{}, false, fmt.Errorf("arch: config.json: %s = %v is not a uint32", strings.Join(keys, "/"), f)
		}
		return tensor.Uint32(uint32(f)), true, nil
	case tensor.KindFloat32:
		return tensor.Float32(float32(f)), true, nil
	case tensor.KindBool:
		return tensor.Bool(f != 0), true, nil
	}
	return tensor.Value{}, false, fmt.Errorf("arch: %v parameter %s", k, strings.Join(keys, "/"))
}

// GGUFMetadata returns the family's GGUF keys for config c in the order
// llama.cpp's converter writes them, general.file_type (fileType) at its
// place.
func (f *Family) GGUFMetadata(c Config, fileType uint32) (tensor.Metadata, error) {
	var md tensor.Metadata
	for _, p := range f.Params {
		if p.Key == FileType {
			md = append(md, tensor.KV{Key: FileType, Value: tensor.Uint32(fileType)})
			continue
		}
		v, ok, err := p.value(c)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Name, err)
		}
		if ok {
			key := f.Name + "." + p.Key
			if strings.HasPrefix(p.Key, "general.") {
				key = p.Key // a legacy projector's own general.* keys (Projector.Legacy)
			}
			md = append(md, tensor.KV{Key: key, Value: v})
		}
	}
	return md, nil
}

// keyVocabSize is the "<arch>.vocab_size" param, which convert_hf_to_gguf.py
// writes for some families but llama.cpp reads as optional.
const keyVocabSize = "vocab_size"

// vocabSize is the vocabulary size of a GGUF without "<arch>.vocab_size", as
// llama.cpp's llama_model::load_hparams takes it: the length of
// tokenizer.ggml.tokens, else (a file without a vocabulary) the rows of
// token_embd.weight. llama.cpp then requires token_embd to have that many
// rows; the model loader checks the same.
func vocabSize(md tensor.Metadata, emb tensor.Info) int64 {
	if v, ok := md.Get("tokenizer.ggml.tokens"); ok {
		if a, ok := v.Array(); ok && a.Len() > 0 {
			return int64(a.Len())
		}
	}
	return emb.Shape[0]
}

// HFConfig builds the config.json entries of the params from GGUF metadata
// (the tensors, special ids and tied-ness are the caller's, and so is
// vocab_size when the GGUF lacks it: HFConfigOf fills all of them).
func (f *Family) HFConfig(md tensor.Metadata) (Config, error) {
	c := Config{"architectures": []string{f.HFClass}, "model_type": f.ModelType}
	for k, v := range f.HFConst {
		c[k] = v
	}
	m := Meta{Arch: f.Name, MD: md}
	for _, p := range f.Params {
		if p.Key == FileType {
			continue
		}
		v, ok := m.Get(p.Key)
		if !ok {
			// vocab_size is optional in a GGUF: llama.cpp takes the
			// vocabulary's length then, and HFConfigOf does the same.
			if p.Need == Required && p.Derive == nil && p.Key != keyVocabSize {
				return nil, fmt.Errorf("arch: GGUF metadata has no %s.%s", f.Name, p.Key)
			}
			continue
		}
		if p.Inverse != nil {
			p.Inverse(c, v, m)
			continue
		}
		switch {
		case p.Out != "":
			c[p.Out] = jsonValue(v)
		case len(p.HF) > 0:
			c[p.HF[0]] = jsonValue(v)
		}
	}
	return c, nil
}

// jsonValue is a GGUF scalar as config.json writes it.
func jsonValue(v tensor.Value) any {
	switch v.Kind() {
	case tensor.KindFloat32:
		f, _ := v.Float()
		return F32(float32(f))
	case tensor.KindFloat64:
		f, _ := v.Float()
		return json.Number(strconv.FormatFloat(f, 'g', -1, 64))
	case tensor.KindString:
		s, _ := v.Str()
		return s
	case tensor.KindBool:
		b, _ := v.BoolValue()
		return b
	}
	if i, ok := v.Int(); ok {
		return i
	}
	return v.Any()
}

// Param builders for the keys most families share.

func u32(key string, need Need, hf ...string) Param {
	return Param{Key: key, HF: hf, Kind: tensor.KindUint32, Need: need}
}

func f32p(key string, need Need, hf ...string) Param {
	return Param{Key: key, HF: hf, Kind: tensor.KindFloat32, Need: need}
}

// baseParams are convert_hf_to_gguf.py's Model.set_gguf_parameters, in its
// order.
func baseParams() []Param {
	return []Param{
		{Key: "block_count", HF: []string{"n_layers", "num_hidden_layers", "n_layer", "num_layers"}, Out: "num_hidden_layers",
			Kind: tensor.KindUint32, Need: Required},
		u32("context_length", Optional, "max_position_embeddings", "n_ctx"),
		u32("embedding_length", Optional, "hidden_size", "n_embd"),
		u32("feed_forward_length", Optional, "intermediate_size", "n_inner"),
		u32("attention.head_count", Optional, "num_attention_heads", "n_head"),
		u32("attention.head_count_kv", Optional, "num_key_value_heads"),
		f32p("rope.freq_base", Optional, "rope_theta"),
		f32p("attention.layer_norm_rms_epsilon", Optional, "rms_norm_eps"),
		f32p("attention.layer_norm_epsilon", Optional, "layer_norm_eps", "layer_norm_epsilon", "norm_epsilon"),
		u32("expert_count", Optional, "num_local_experts"),
		u32("expert_used_count", Optional, "num_experts_per_tok"),
		u32("attention.key_length", Optional, "head_dim"),
		{Key: "attention.value_length", HF: []string{"head_dim"}, Kind: tensor.KindUint32, Need: Optional,
			Inverse: func(Config, tensor.Value, Meta) {}},
		{Key: FileType},
	}
}

// headDim is head_dim, or hidden_size / num_attention_heads.
func headDim(c Config) (int64, error) {
	if d, ok := c.Int("head_dim"); ok {
		return d, nil
	}
	h, ok1 := c.Int("hidden_size")
	n, ok2 := c.Int("num_attention_heads")
	if !ok1 || !ok2 || n <= 0 {
		return 0, fmt.Errorf("arch: config.json: no head_dim, and no hidden_size / num_attention_heads")
	}
	return h / n, nil
}

// rotaryDims is RotaryDims of headDim(c): the rotated dimensions of a
// head, which LongRoPE's factor lists halve.
func rotaryDims(c Config) (int, error) {
	d, err := headDim(c)
	if err != nil {
		return 0, err
	}
	return RotaryDims(c, int(d)), nil
}

// ropeDimension is LlamaModel's rope.dimension_count: head_dim, or
// hidden_size / num_attention_heads.
func ropeDimension() Param {
	return Param{Key: "rope.dimension_count", Kind: tensor.KindUint32, Need: Required,
		Derive: func(c Config) (tensor.Value, bool, error) {
			d, err := headDim(c)
			if err != nil {
				return tensor.Value{}, false, err
			}
			return tensor.Uint32(uint32(d)), true, nil
		},
		Inverse: func(c Config, v tensor.Value, m Meta) {
			rd, _ := v.Int()
			h, _ := m.Int("embedding_length")
			n, _ := m.Int("attention.head_count")
			if n > 0 && rd != h/n {
				c["head_dim"] = rd
			}
		}}
}

// withOut returns params with the config.json key written back for the
// GGUF key key set to out.
func withOut(params []Param, key, out string) []Param {
	for i := range params {
		if params[i].Key == key {
			params[i].Out = out
		}
	}
	return params
}

// HFConfigOf builds the whole config.json of a GGUF: the params
// (HFConfig), what transformers would otherwise default differently from
// llama.cpp, and what the tensors say (vocabulary, tied head, biases,
// ShapeKeys, HFRename), with the tokenizer's special ids.
func (f *Family) HFConfigOf(md tensor.Metadata, in []tensor.Info) (Config, error) {
	c, err := f.HFConfig(md)
	if err != nil {
		return nil, err
	}
	if _, ok := c["num_key_value_heads"]; !ok && f.HasParam("attention.head_count_kv") {
		c["num_key_value_heads"] = c["num_attention_heads"]
	}
	if _, ok := c["rope_theta"]; !ok && !f.Graph.LearnedPositions && !f.Graph.EncoderDecoder {
		c["rope_theta"] = F32(10000) // llama.cpp's default when the key is absent
	}
	byName := make(map[string]tensor.Info, len(in))
	for _, t := range in {
		byName[t.Name] = t
	}
	emb, ok := byName["token_embd.weight"]
	if !ok || len(emb.Shape) != 2 {
		return nil, fmt.Errorf("arch: %s: missing tensor %q", f.Name, "token_embd.weight")
	}
	if _, ok := c["vocab_size"]; !ok {
		c["vocab_size"] = vocabSize(md, emb)
	}
	for _, k := range f.ShapeKeys {
		t, ok := byName[k.Tensor]
		switch {
		case ok && k.Axis < len(t.Shape):
			c[k.Key] = t.Shape[k.Axis]
		case k.Default != 0:
			c[k.Key] = k.Default
		default:
			return nil, fmt.Errorf("arch: %s: missing tensor %q", f.Name, k.Tensor)
		}
	}
	if _, ok := f.Tensor("output"); ok {
		_, hasOutput := byName["output.weight"]
		c["tie_word_embeddings"] = !hasOutput
	}
	if f.BiasFlag != "" {
		_, q := byName["blk.0.attn_q.bias"]
		_, qkv := byName["blk.0.attn_qkv.bias"]
		c[f.BiasFlag] = q || qkv
	}
	if f.HFRename != nil {
		f.HFRename(c, func(n string) bool { _, ok := byName[n]; return ok })
	}
	for _, k := range append([]SpecialKey{
		{GGUF: "tokenizer.ggml.bos_token_id", Key: "bos_token_id"},
		{GGUF: "tokenizer.ggml.eos_token_id", Key: "eos_token_id"},
		{GGUF: "tokenizer.ggml.padding_token_id", Key: "pad_token_id"},
	}, f.SpecialConfig...) {
		if v, ok := md.Int(k.GGUF); ok {
			c[k.Key] = v
		}
	}
	return c, nil
}
