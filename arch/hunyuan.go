package arch

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/tfconv/tfconv/tensor"
)

// HunyuanDense is Tencent's Hunyuan dense models (0.5B–7B:
// HunYuanDenseV1ForCausalLM, the newer llama.cpp's "hunyuan-dense"): LLaMA's
// block with NEOX rotation (no Q/K permutation), head_dim stated, and a
// per-head RMSNorm of the queries and keys after their rotation
// (query_layernorm, key_layernorm). Its checkpoints state an NTK-aware
// scaling by "alpha" (rope_scaling type dynamic), which the converter bakes
// into rope.freq_base (NTKAlphaBaseOf) with a context of 256Ki (GGUF → HF
// states the alpha again: hunyuanAlphaInverse); it writes config.json's
// eod_token_id, when stated, as EOS. It follows the newer
// converter (testdata/arch/README.md).
var HunyuanDense = register(&Family{
	Name:       "hunyuan-dense",
	HFClasses:  []string{"HunYuanDenseV1ForCausalLM"},
	ModelTypes: []string{"hunyuan_v1_dense"},
	HFClass:    "HunYuanDenseV1ForCausalLM", ModelType: "hunyuan_v1_dense",
	Params:   hunyuanParams(without(baseParams(), "expert_count")),
	Tensors:  append(decoderTensors(false, LayoutSame), hunyuanQKNorms()...),
	Drops:    []Drop{rotaryBuffer},
	HFConst:  map[string]any{"hidden_act": "silu"},
	BiasFlag: "attention_bias",
	Vocab:    VocabRules{IDsFromConfig: []ConfigID{{Kind: "eos", Key: "eod_token_id"}}},
	Graph: Graph{Norm: RMSNorm, FFN: Gated, Activation: "silu", QKNormPerHead: true, QKNormAfterRope: true,
		NeoxRopeGGUF: true},
})

// hunyuanQKNorms are the per-head Q/K norms under Hunyuan's names.
func hunyuanQKNorms() []Tensor {
	return []Tensor{
		{GGUF: "blk.{bid}.attn_q_norm", HF: []string{hfLayer + "self_attn.query_layernorm"}, Shape: []Dim{DimHeadDim}},
		{GGUF: "blk.{bid}.attn_k_norm", HF: []string{hfLayer + "self_attn.key_layernorm"}, Shape: []Dim{DimHeadDim}},
	}
}

// hunyuanContext is the context the converter writes with the alpha
// scaling (its "usable context" of 256Ki, config.json's being 32Ki).
const hunyuanContext = 256 * 1024

// hunyuanParams are params with Hunyuan's alpha scaling: context_length
// and rope.freq_base derived from rope_scaling, and the scaling keys the
// converter adds after general.file_type (type none, factor 1, the 256Ki
// original context). GGUF → HF writes the scaled base as rope_theta and no
// rope_scaling: transformers then rotates as llama.cpp does.
func hunyuanParams(params []Param) []Param {
	for i := range params {
		switch params[i].Key {
		case "context_length":
			params[i].Derive = func(c Config) (tensor.Value, bool, error) {
				if _, ok, err := NTKAlphaBaseOf(c); err != nil || ok {
					return tensor.Uint32(hunyuanContext), ok, err
				}
				n, ok := c.Int("max_position_embeddings")
				return tensor.Uint32(uint32(n)), ok && n >= 0 && n <= math.MaxUint32, nil
			}
		case "rope.freq_base":
			params[i].Derive = func(c Config) (tensor.Value, bool, error) {
				if base, ok, err := NTKAlphaBaseOf(c); err != nil || ok {
					return tensor.Float32(float32(base)), ok, err
				}
				if rs, ok := c.Map("rope_scaling"); ok {
					return tensor.Value{}, false, errUnsupported("config.json: rope_scaling %v (only Hunyuan's dynamic alpha scaling is supported)", map[string]any(rs))
				}
				theta, ok := c.Float("rope_theta")
				return tensor.Float32(float32(theta)), ok, nil
			}
		}
	}
	alpha := func(v tensor.Value) func(c Config) (tensor.Value, bool, error) {
		return func(c Config) (tensor.Value, bool, error) {
			_, ok, err := NTKAlphaBaseOf(c)
			return v, ok, err
		}
	}
	none := func(Config, tensor.Value, Meta) {}
	return withParams(params,
		Param{Key: "rope.scaling.type", Kind: tensor.KindString, Derive: alpha(tensor.String("none")), Inverse: none},
		Param{Key: "rope.scaling.factor", Kind: tensor.KindFloat32, Derive: alpha(tensor.Float32(1)), Inverse: none},
		Param{Key: "rope.scaling.original_context_length", Kind: tensor.KindUint32, Derive: alpha(tensor.Uint32(hunyuanContext)),
			Inverse: hunyuanAlphaInverse})
}

// hunyuanAlphaInverse states the alpha scaling again on GGUF → HF when the
// GGUF has the converter's marks of it (scaling type none, factor 1, an
// original context of 256Ki): rope_theta 10000 (the converter's
// requirement), the shortest alpha whose base is the GGUF's rope.freq_base
// in float32, and the 32Ki context of the published configs (GGUF keeps
// 256Ki).
func hunyuanAlphaInverse(c Config, v tensor.Value, m Meta) {
	n, _ := v.Int()
	typ, _ := m.MD.Str(m.Arch + ".rope.scaling.type")
	f, _ := m.Float("rope.scaling.factor")
	base, ok1 := m.Float("rope.freq_base")
	d, ok2 := m.Int("attention.key_length")
	if n != hunyuanContext || typ != "none" || f != 1 || !ok1 || !ok2 || d <= 2 || base <= 10000 {
		return
	}
	x := math.Pow(base/10000, float64(d-2)/float64(d))
	a := json.Number(strconv.FormatFloat(x, 'g', -1, 64))
	for p := 1; p < 17; p++ {
		s := strconv.FormatFloat(x, 'g', p, 64)
		if y, err := strconv.ParseFloat(s, 64); err == nil && float32(10000*math.Pow(y, float64(d)/float64(d-2))) == float32(base) {
			a = json.Number(strconv.FormatFloat(y, 'f', -1, 64))
			break
		}
	}
	c["rope_theta"] = json.Number("10000.0")
	c["max_position_embeddings"] = 32 * 1024
	c["rope_scaling"] = map[string]any{"type": "dynamic", "alpha": a, "factor": json.Number("1.0")}
}

// NTKAlphaBaseOf is the rotary base of Hunyuan's NTK-aware scaling
// (config.json rope_scaling of type dynamic with an alpha; without one an
// error): rope_theta · alpha^(d/(d−2)) for head_dim d (hidden_size /
// num_attention_heads when config.json states none),
// what transformers' Hunyuan classes rotate with up to
// max_position_embeddings and what the converter writes as
// rope.freq_base. ok is false without such a rope_scaling. The converter's
// own checks are kept: rope_theta 10000 and max_position_embeddings 32Ki or
// 256Ki, else an error naming the key.
func NTKAlphaBaseOf(c Config) (base float64, ok bool, err error) {
	rs, present := c.Map("rope_scaling")
	if !present {
		return 0, false, nil
	}
	typ, _ := rs.Str("rope_type", "type")
	if typ != "dynamic" {
		return 0, false, nil
	}
	a, has := rs.Float("alpha")
	if !has {
		// The converter would take 50; transformers then runs dynamic NTK
		// by factor instead.
		return 0, false, errUnsupported("config.json: rope_scaling %v: dynamic without an alpha", map[string]any(rs))
	}
	// head_dim, else hidden_size / num_attention_heads (Hunyuan-A13B's
	// config.json states attention_head_dim, which transformers reads not).
	d, err := headDim(c)
	if err != nil || d <= 2 {
		return 0, false, errUnsupported("config.json: rope_scaling %v needs head_dim (or hidden_size and num_attention_heads)", map[string]any(rs))
	}
	theta, _ := c.Float("rope_theta")
	if !c.Has("rope_theta") {
		theta = 10000
	}
	n, _ := c.Int("max_position_embeddings")
	if theta != 10000 || (n != 32*1024 && n != hunyuanContext) {
		return 0, false, errUnsupported("config.json: rope_scaling %v with rope_theta %v and max_position_embeddings %d: the converter's alpha scaling assumes 10000 and 32768 or 262144",
			map[string]any(rs), theta, n)
	}
	return theta * math.Pow(a, float64(d)/float64(d-2)), true, nil
}
