package arch

import (
	"slices"

	"github.com/tfconv/tfconv/tensor"
)

// InternVLVision is InternVL's projector (InternVL 2.5 / 3: an InternViT
// tower and the mlp1 projection), as llama.cpp's InternVisionModel writes
// it (clip.projector_type "internvl"): a ViT with a class token, learned
// absolute positions, pre-norm blocks whose attention and MLP outputs are
// scaled by learned per-channel vectors (layer scale: ls1, ls2), and the
// projection: the patch grid pixel-shuffled by 1/downsample_ratio (each
// 2×2 block of patches concatenated), LayerNorm, Linear, GELU, Linear to
// the text width. The text half is the qwen2 family (InternVL3-1B, 2B, 8B,
// 14B, 38B and 78B use Qwen2.5).
//
// OpenGVLab publishes each model in two layouts, and both convert here:
// the Hugging Face one (InternVLForConditionalGeneration, the -hf
// checkpoints: vision_tower.* and multi_modal_projector.* as transformers
// saves them, model.vision_tower.* as it holds them) and the original
// remote-code one (InternVLChatModel: vision_model.* with one fused
// attn.qkv, mlp1.*, the text model's settings under llm_config).
// llama.cpp d32676d7's converter picks InternVisionModel from
// vision_config.architectures in both, but its tensor filter takes only
// vision_model.*, mlp1.* and the model.-prefixed names: from a -hf
// checkpoint as transformers saves it it writes an mmproj without a single
// tensor. tfconv writes the tower from either layout
// (testdata/vision/README.md).
var InternVLVision = registerProjector(&Projector{
	Type:      "internvl",
	HFClasses: []string{"InternVLForConditionalGeneration", "InternVLChatModel"},
	Text:      "qwen2",
	Encoder:   "vision_config",
	Prefixes:  internVLPrefixes,
	Summary:   "InternViT (class token, layer scale); pixel shuffle by 1/downsample_ratio, LayerNorm + 2-layer GELU MLP",
	// The pixel shuffle joins scale_factor × scale_factor patches into one
	// token, so a tile's tokens count as a pool of that kernel's; the
	// converter always writes the key (2: InternVL's downsample_ratio 0.5).
	PoolDefault: 2,
	NoHF:        "not written yet: config.json's InternVL keys (downsample_ratio, the tower's image and patch size pairs, layer_scale_init_value) and the processor files would have to be rebuilt from the mmproj; convert the text GGUF alone, or keep the Hugging Face checkpoint",
	Tower: Family{
		Name: MmprojArch,
		Params: withParams(withParam(withParam(mmprojVisionParams(),
			firstOfPair("vision.image_size", "image_size")),
			firstOfPair("vision.patch_size", "patch_size")),
			constString("projector_type", "internvl"),
			f32p("vision.attention.layer_norm_epsilon", Required, "layer_norm_eps"),
			internVLActivation("silu"), internVLActivation("gelu"),
			internVLScaleFactor(),
			fromTopIfPositive("vision.preproc_min_tiles", "min_dynamic_patch"),
			fromTopIfPositive("vision.preproc_max_tiles", "max_dynamic_patch"),
			internVLFeatures(),
		),
		Tensors: internVLTensors(),
		// InternVisionModel.tensor_force_quant: the position embedding
		// stays F32; the class token, named without ".weight", is F32 by
		// the converter's rule for such names.
		F32: []Role{"v.position_embd", "v.class_embd"},
	},
})

// internVLPrefixes are InternVLVision's Prefixes (both layouts); the qwen2
// family states their drops for the InternVL classes.
var internVLPrefixes = []string{"vision_tower.", "multi_modal_projector.", "model.vision_tower.", "model.multi_modal_projector.",
	"vision_model.", "mlp1."}

// internVLTensors are the tower's and projection's roles: each role's
// Hugging Face names as transformers saves them, as it holds them
// (model.-prefixed) and, where the original layout names the tensor alone,
// as InternVLChatModel does. Its fused attn.qkv is a second entry of the
// q, k and v roles, cut in three (the converter's split).
func internVLTensors() []Tensor {
	hf := func(saved string, orig ...string) []string {
		return append([]string{saved, "model." + saved}, orig...)
	}
	const l, o = "vision_tower.encoder.layer.{bid}.", "vision_model.encoder.layers.{bid}."
	return []Tensor{
		{GGUF: "v.class_embd", HF: hf("vision_tower.embeddings.cls_token", "vision_model.embeddings.class_embedding"), NoSuffix: true},
		{GGUF: "v.patch_embd", HF: hf("vision_tower.embeddings.patch_embeddings.projection", "vision_model.embeddings.patch_embedding")},
		{GGUF: "v.position_embd", HF: hf("vision_tower.embeddings.position_embeddings", "vision_model.embeddings.position_embedding"), NoSuffixHF: true},
		{GGUF: "v.blk.{bid}.attn_q", HF: hf(l + "attention.q_proj")},
		{GGUF: "v.blk.{bid}.attn_k", HF: hf(l + "attention.k_proj")},
		{GGUF: "v.blk.{bid}.attn_v", HF: hf(l + "attention.v_proj")},
		{GGUF: "v.blk.{bid}.attn_q", HF: []string{o + "attn.qkv"}, Split: &Split{Part: 1}},
		{GGUF: "v.blk.{bid}.attn_k", HF: []string{o + "attn.qkv"}, Split: &Split{Part: 2}},
		{GGUF: "v.blk.{bid}.attn_v", HF: []string{o + "attn.qkv"}, Split: &Split{Part: 3}},
		{GGUF: "v.blk.{bid}.attn_out", HF: hf(l+"attention.projection_layer", o+"attn.proj")},
		{GGUF: "v.blk.{bid}.ls1", HF: hf(l+"lambda_1", o+"ls1"), NoSuffixHF: true},
		{GGUF: "v.blk.{bid}.ls2", HF: hf(l+"lambda_2", o+"ls2"), NoSuffixHF: true},
		{GGUF: "v.blk.{bid}.ln1", HF: hf(l+"layernorm_before", o+"norm1")},
		{GGUF: "v.blk.{bid}.ln2", HF: hf(l+"layernorm_after", o+"norm2")},
		{GGUF: "v.blk.{bid}.ffn_up", HF: hf(l+"mlp.fc1", o+"mlp.fc1")},
		{GGUF: "v.blk.{bid}.ffn_down", HF: hf(l+"mlp.fc2", o+"mlp.fc2")},
		{GGUF: "mm.model.mlp.0", HF: hf("multi_modal_projector.layer_norm", "mlp1.0")},
		{GGUF: "mm.model.mlp.1", HF: hf("multi_modal_projector.linear_1", "mlp1.1")},
		{GGUF: "mm.model.mlp.3", HF: hf("multi_modal_projector.linear_2", "mlp1.3")},
	}
}

// firstOfPair is a uint32 key read from the tower's config entry name, an
// integer or, as InternVLVisionConfig saves image_size and patch_size, a
// [height, width] pair of which the converter takes the first; a pair of
// two different sides is refused (the GGUF states one).
func firstOfPair(key, name string) Param {
	return Param{Key: key, HF: []string{name}, Kind: tensor.KindUint32, Derive: func(c Config) (tensor.Value, bool, error) {
		n, ok := c.Int(name)
		if !ok {
			pair, isList, err := c.Ints(name)
			if err != nil || !isList || len(pair) == 0 {
				return tensor.Value{}, false, errUnsupported("config.json: vision_config %s %v is not an integer or a [height, width] pair", name, c[name])
			}
			if slices.ContainsFunc(pair, func(v int64) bool { return v != pair[0] }) {
				return tensor.Value{}, false, errUnsupported("config.json: vision_config %s %v: a tower of unequal sides (the mmproj states one)", name, pair)
			}
			n = pair[0]
		}
		if n <= 0 || n > 1<<20 {
			return tensor.Value{}, false, errUnsupported("config.json: vision_config %s %d is out of range", name, n)
		}
		return tensor.Uint32(uint32(n)), true, nil
	}}
}

// internVLActivation is clip.use_gelu or clip.use_silu (act) from the
// tower's hidden_act, as the converter writes them: the key of the
// activation the tower has, nothing for the other; an activation that is
// neither is refused (the converter raises too).
func internVLActivation(act string) Param {
	return Param{Key: "use_" + act, Kind: tensor.KindBool, Derive: func(c Config) (tensor.Value, bool, error) {
		switch h, _ := c.Str("hidden_act"); h {
		case act:
			return tensor.Bool(true), true, nil
		case "gelu", "silu":
			return tensor.Value{}, false, nil
		default:
			return tensor.Value{}, false, errUnsupported("config.json: vision_config hidden_act %q: the internvl projector's tower takes gelu or silu", h)
		}
	}}
}

// internVLScaleFactor is clip.vision.projector.scale_factor: int(1 /
// downsample_ratio) of config.json's top level, which the converter
// requires.
func internVLScaleFactor() Param {
	return Param{Key: "vision.projector.scale_factor", Kind: tensor.KindUint32, Derive: func(c Config) (tensor.Value, bool, error) {
		top, _ := c.Map(TowerTop)
		r, ok := top.Float("downsample_ratio")
		if !ok || r <= 0 || r > 1 {
			return tensor.Value{}, false, errUnsupported("config.json: downsample_ratio %v is missing or not in (0, 1]: the internvl projector's pixel shuffle is stated by it", top["downsample_ratio"])
		}
		return tensor.Uint32(uint32(1 / r)), true, nil
	}}
}

// fromTopIfPositive is a uint32 key from config.json's top level, written
// only when the entry is there and positive (InternVisionModel's
// preproc_min_tiles and preproc_max_tiles, which only the original layout's
// min_dynamic_patch and max_dynamic_patch state).
func fromTopIfPositive(key, name string) Param {
	return Param{Key: key, Kind: tensor.KindUint32, Derive: func(c Config) (tensor.Value, bool, error) {
		top, _ := c.Map(TowerTop)
		n, ok := top.Int(name)
		if !ok || n <= 0 {
			return tensor.Value{}, false, nil
		}
		if n > 1<<20 {
			return tensor.Value{}, false, errUnsupported("config.json: %s %d is out of range", name, n)
		}
		return tensor.Uint32(uint32(n)), true, nil
	}}
}

// internVLFeatures refuses the settings that change what the tower gives
// the text model but that no mmproj key states (llama.cpp's internvl graph
// takes the last layer's patches, a LayerNorm tower without q/k norms and a
// GELU projection): a vision_feature_layer or select_layer other than -1,
// the "full" feature strategy (class token kept), q/k normalization, an
// RMSNorm tower, another projector activation. No key.
func internVLFeatures() Param {
	return Param{Key: "vision.feature_layer", Kind: tensor.KindInt32, Derive: func(c Config) (tensor.Value, bool, error) {
		top, _ := c.Map(TowerTop)
		for _, k := range []string{"vision_feature_layer", "select_layer"} {
			if n, ok := top.Int(k); ok && n != -1 {
				return tensor.Value{}, false, errUnsupported("config.json: %s %d: the internvl projector reads the tower's last layer (-1); the mmproj cannot state another", k, n)
			}
		}
		if s, ok := top.Str("vision_feature_select_strategy"); ok && s != "default" {
			return tensor.Value{}, false, errUnsupported("config.json: vision_feature_select_strategy %q: the internvl projector drops the class token (default)", s)
		}
		if a, ok := top.Str("projector_hidden_act"); ok && a != "gelu" {
			return tensor.Value{}, false, errUnsupported("config.json: projector_hidden_act %q: llama.cpp's internvl projection is GELU", a)
		}
		for _, k := range []string{"use_qk_norm", "qk_normalization"} {
			if b, ok := c[k].(bool); ok && b {
				return tensor.Value{}, false, errUnsupported("config.json: vision_config %s: q/k-normalized InternViT (InternViT-6B) is not in tfconv's internvl record yet", k)
			}
		}
		if s, ok := c.Str("norm_type"); ok && s != "layer_norm" {
			return tensor.Value{}, false, errUnsupported("config.json: vision_config norm_type %q: tfconv's internvl record has the LayerNorm tower", s)
		}
		return tensor.Value{}, false, nil
	}}
}
