package arch

import "github.com/tfconv/tfconv/tensor"

// LlavaVision is LLaVA-1.5's projector (LlavaForConditionalGeneration with a
// CLIP vision tower), as llama.cpp writes it: its convert_hf_to_gguf.py
// --mmproj refuses the class (conversion/llava.py serves only Pixtral and
// Mistral 3 vision configs), and the path its docs/multimodal/llava.md gives
// (llava_surgery_v2.py, then convert_image_encoder_to_gguf.py
// --clip-model-is-vision --llava-projector) writes a legacy mmproj,
// projector type "mlp": the CLIP ViT (class embedding, patch convolution,
// learned positions, pre-layernorm, pre-norm blocks with quick GELU) cut
// after the layer the projector reads (vision_feature_layer), its final
// LayerNorm left out, and the two-layer GELU MLP into the text width. The
// text half is the llama family.
//
// LLaVA-NeXT (LlavaNextForConditionalGeneration, which no class of that
// converter registers) is the same entry: its image_newline beside the
// projector, and after the block count the any-res keys llama.cpp's clip
// reads to tile an image (image_grid_pinpoints, flattened; anyres;
// spatial_unpad; mlp2x_gelu), written when config.json has
// image_grid_pinpoints, as the legacy path writes them from LLaVA-1.6's
// config. (One entry: clip.projector_type "mlp" names both.)
var LlavaVision = registerProjector(&Projector{
	Type:         "mlp",
	HFClasses:    []string{"LlavaForConditionalGeneration", "LlavaNextForConditionalGeneration"},
	Text:         "llama",
	Encoder:      "vision_config",
	Prefixes:     llavaVisionPrefixes,
	Summary:      "CLIP ViT to vision_feature_layer; 2-layer GELU MLP (any-res tiles with image_newline when image_grid_pinpoints)",
	Legacy:       true,
	FeatureLayer: true,
	Order:        llavaOrder,
	Tower: llavaTower([]Tensor{{GGUF: "model.image_newline", HF: []string{"image_newline"}, NoSuffix: true, Optional: true}},
		pinpoints(),
		anyres("vision.image_aspect_ratio", "anyres"),
		anyres("vision.mm_patch_merge_type", "spatial_unpad"),
		anyres("vision.mm_projector_type", "mlp2x_gelu")),
})

// llavaVisionPrefixes are LlavaVision's Prefixes.
var llavaVisionPrefixes = []string{"vision_tower.", "multi_modal_projector.", "image_newline"}

// anyres is a fixed string key of LLaVA-NeXT's any-res tiling, written when
// config.json has image_grid_pinpoints.
func anyres(key, v string) Param {
	return Param{Key: key, Kind: tensor.KindString, Derive: func(c Config) (tensor.Value, bool, error) {
		top, _ := c.Map(TowerTop)
		if _, ok := top["image_grid_pinpoints"]; !ok {
			return tensor.Value{}, false, nil
		}
		return tensor.String(v), true, nil
	}}
}

// llavaTower is the legacy writer's schema of a CLIP tower under
// vision_tower.vision_model. with LLaVA's projector; more are tensors
// beside the projector's (LLaVA-NeXT's image_newline), extra keys it
// writes after the block count (LLaVA-NeXT's any-res keys).
func llavaTower(more []Tensor, extra ...Param) Family {
	v := "vision_tower.vision_model."
	l := v + "encoder.layers.{bid}."
	params := withParams([]Param{
		constBool("has_text_encoder", false),
		constBool("has_vision_encoder", true),
		constBool("has_llava_projector", true),
		{Key: FileType},
		checkpointName(),
		constGeneral("general.description", "image encoder for LLaVA"),
		constString("projector_type", "mlp"),
		u32("vision.image_size", Required, "image_size"),
		u32("vision.patch_size", Required, "patch_size"),
		u32("vision.embedding_length", Required, "hidden_size"),
		u32("vision.feed_forward_length", Required, "intermediate_size"),
		u32("vision.projection_dim", Required, "projection_dim"),
		u32("vision.attention.head_count", Required, "num_attention_heads"),
		{Key: "vision.attention.layer_norm_epsilon", HF: []string{"layer_norm_eps"}, Kind: tensor.KindFloat32, Need: Required},
		// num_hidden_layers as FeatureLayer cut it
		u32("vision.block_count", Required, "num_hidden_layers"),
	}, append(extra,
		preprocessorFloats("vision.image_mean", "image_mean"),
		preprocessorFloats("vision.image_std", "image_std"),
		llavaProjectorGELU(),
	)...)
	return Family{
		Name:   MmprojArch,
		Params: params,
		Tensors: append(append([]Tensor{
			{GGUF: "mm.0", HF: []string{"multi_modal_projector.linear_1"}},
			{GGUF: "mm.2", HF: []string{"multi_modal_projector.linear_2"}}}, more...), []Tensor{
			{GGUF: "v.class_embd", HF: []string{v + "embeddings.class_embedding"}, NoSuffix: true},
			{GGUF: "v.patch_embd", HF: []string{v + "embeddings.patch_embedding"}},
			{GGUF: "v.position_embd", HF: []string{v + "embeddings.position_embedding"}},
			{GGUF: "v.pre_ln", HF: []string{v + "pre_layrnorm"}},
			{GGUF: "v.blk.{bid}.attn_k", HF: []string{l + "self_attn.k_proj"}},
			{GGUF: "v.blk.{bid}.attn_v", HF: []string{l + "self_attn.v_proj"}},
			{GGUF: "v.blk.{bid}.attn_q", HF: []string{l + "self_attn.q_proj"}},
			{GGUF: "v.blk.{bid}.attn_out", HF: []string{l + "self_attn.out_proj"}},
			{GGUF: "v.blk.{bid}.ln1", HF: []string{l + "layer_norm1"}},
			// the legacy writer's names: fc1 is "ffn_down", fc2 "ffn_up"
			// (llama.cpp's clip reads them so for this projector type)
			{GGUF: "v.blk.{bid}.ffn_down", HF: []string{l + "mlp.fc1"}},
			{GGUF: "v.blk.{bid}.ffn_up", HF: []string{l + "mlp.fc2"}},
			{GGUF: "v.blk.{bid}.ln2", HF: []string{l + "layer_norm2"}},
		}...),
		Drops: []Drop{
			{Prefix: v + "post_layernorm.", Reason: "CLIP's final LayerNorm: LLaVA reads an earlier layer's output (the legacy writer skips it)"},
			{PastLayers: true, Reason: "past vision_feature_layer: the projector does not read these layers (the legacy writer drops them)"},
		},
		// the writer's f16 at every outtype: the projector's matrices and
		// the patch convolution (ggml's convolution took no f32 kernel);
		// a role is a name as SplitName reads it, mm.0's and mm.2's index
		// as a layer's
		F16: []Role{"mm.{bid}", "v.patch_embd"},
	}
}

// llavaOrder is the legacy writer's tensor order: the projector's tensors
// as the checkpoint lists them, then CLIPVisionModel's state dict.
var llavaOrder = []string{
	"mm.0.bias", "mm.0.weight", "mm.2.bias", "mm.2.weight", "model.image_newline",
	"v.class_embd", "v.patch_embd.weight", "v.position_embd.weight", "v.pre_ln.weight", "v.pre_ln.bias",
	"v.blk.{bid}.attn_k.weight", "v.blk.{bid}.attn_k.bias", "v.blk.{bid}.attn_v.weight", "v.blk.{bid}.attn_v.bias",
	"v.blk.{bid}.attn_q.weight", "v.blk.{bid}.attn_q.bias", "v.blk.{bid}.attn_out.weight", "v.blk.{bid}.attn_out.bias",
	"v.blk.{bid}.ln1.weight", "v.blk.{bid}.ln1.bias", "v.blk.{bid}.ffn_down.weight", "v.blk.{bid}.ffn_down.bias",
	"v.blk.{bid}.ffn_up.weight", "v.blk.{bid}.ffn_up.bias", "v.blk.{bid}.ln2.weight", "v.blk.{bid}.ln2.bias",
}

// GeneralName is the Param key of general.name in a legacy projector's
// Params: the checkpoint's name (the converter's naming), put in by convert.
const GeneralName = "general.name"

// checkpointName is general.name's place among a legacy projector's keys;
// convert fills in the value.
func checkpointName() Param {
	return Param{Key: GeneralName, Kind: tensor.KindString, Derive: func(Config) (tensor.Value, bool, error) {
		return tensor.String(""), true, nil
	}}
}

// constGeneral is a general.* key a legacy writer states with a fixed
// string.
func constGeneral(key, v string) Param { return constString(key, v) }

// llavaProjectorGELU is clip.use_gelu (the tower's hidden_act is "gelu"; CLIP
// ViT-L's quick_gelu is not), after refusing a projector activation or
// feature strategy llama.cpp's mlp projector does not compute.
func llavaProjectorGELU() Param {
	return Param{Key: "use_gelu", Kind: tensor.KindBool, Derive: func(c Config) (tensor.Value, bool, error) {
		top, _ := c.Map(TowerTop)
		if a, ok := top.Str("projector_hidden_act"); ok && a != "gelu" {
			return tensor.Value{}, false, errUnsupported("config.json: projector_hidden_act %q: llama.cpp's mlp projector computes GELU", a)
		}
		if s, ok := top.Str("vision_feature_select_strategy"); ok && s != "default" {
			return tensor.Value{}, false, errUnsupported("config.json: vision_feature_select_strategy %q: llama.cpp's mlp projector drops the class token (\"default\")", s)
		}
		act, _ := c.Str("hidden_act")
		return tensor.Bool(act == "gelu"), true, nil
	}}
}

// pinpoints is clip.vision.image_grid_pinpoints: config.json's
// image_grid_pinpoints pairs, flattened, as int32 (none without them).
func pinpoints() Param {
	return Param{Key: "vision.image_grid_pinpoints", Kind: tensor.KindArray, Derive: func(c Config) (tensor.Value, bool, error) {
		top, _ := c.Map(TowerTop)
		if _, ok := top["image_grid_pinpoints"]; !ok {
			return tensor.Value{}, false, nil // LLaVA-1.5: one tile
		}
		list, ok := top["image_grid_pinpoints"].([]any)
		if !ok || len(list) == 0 || len(list) > 1024 {
			return tensor.Value{}, false, errUnsupported("config.json: image_grid_pinpoints is missing or not a list of [height, width] pairs")
		}
		var out []int32
		for i, p := range list {
			pair, ok := p.([]any)
			if !ok || len(pair) != 2 {
				return tensor.Value{}, false, errUnsupported("config.json: image_grid_pinpoints[%d] = %v is not a [height, width] pair", i, p)
			}
			for _, v := range pair {
				n, ok := Config{"v": v}.Int("v")
				if !ok || n <= 0 || n > 1<<20 {
					return tensor.Value{}, false, errUnsupported("config.json: image_grid_pinpoints[%d] = %v is not a pair of positive sizes", i, p)
				}
				out = append(out, int32(n))
			}
		}
		return tensor.ArrayOf(out), true, nil
	}}
}
