package arch

import "github.com/tfconv/tfconv/tensor"

// Llama4Vision is Llama 4's projector (Llama4ForConditionalGeneration:
// Scout, Maverick), as llama.cpp's Llama4VisionModel writes it (projector
// type "llama4"): a ViT with a class embedding, learned positions and 2-D
// RoPE over adjacent pairs (rotated as ggml does, so no row permutation),
// LayerNorms before and after the blocks, pre-norm blocks with biased
// attention and a GELU MLP; then the vision adapter: the patch grid
// pixel-shuffled by 1/pixel_shuffle_ratio (each 2 × 2 block of patches
// concatenated into one token) and a two-layer GELU MLP (mm.model.mlp.1,
// .2), and the projector's one linear map to the text width
// (mm.model.fc). The text half is the llama4 family.
//
// The converter names the adapter's fc1/fc2 through gguf-py's block map
// (vision_adapter.mlp.fc{bid} → mm.model.mlp.{bid}), so it maps fc2 only
// for a tower of 3 layers or more; tfconv names them whatever the depth.
//
// GGUF → HF of a llama4 mmproj is refused (NoHF): Llama 4's processor
// files and the multimodal config's top-level keys are not written back.
var Llama4Vision = registerProjector(&Projector{
	Type:      "llama4",
	HFClasses: []string{"Llama4ForConditionalGeneration"},
	Text:      "llama4",
	Encoder:   "vision_config",
	Prefixes:  llama4VisionPrefixes,
	Summary:   "ViT (2-D RoPE, class embedding); pixel shuffle by 1/pixel_shuffle_ratio, GELU MLP, linear",
	NoHF:      "the llama4 projector's processor files and multimodal config.json are not written back yet",
	// The pixel shuffle joins scale_factor² patches into one token (the
	// converter always writes the key; 2 is Scout's and Maverick's
	// pixel_shuffle_ratio 0.5).
	PoolDefault: 2,
	Tower: Family{
		Name: MmprojArch,
		Params: withParams(mmprojVisionParams(),
			constString("projector_type", "llama4"),
			Param{Key: "vision.attention.layer_norm_epsilon", HF: []string{"norm_eps"}, Kind: tensor.KindFloat32,
				Need: Required},
			llama4ShuffleScale(),
			llama4VisionFixed(),
			constBool("use_gelu", true),
		),
		Tensors: llama4VisionTensors(),
		// positional_embedding_vlm is a bare parameter; the converter
		// names it with ".weight".
		SuffixAliases: map[string]string{"positional_embedding_vlm": "positional_embedding.weight"},
	},
})

// llama4ShuffleScale is clip.vision.projector.scale_factor, int(1 /
// pixel_shuffle_ratio) as the converter writes it; a ratio whose inverse
// is not a whole number of patches is refused (the pixel shuffle of
// llama.cpp's graph takes whole blocks).
func llama4ShuffleScale() Param {
	return Param{Key: "vision.projector.scale_factor", Kind: tensor.KindUint32, Derive: func(c Config) (tensor.Value, bool, error) {
		r, ok := c.Float("pixel_shuffle_ratio")
		if !ok || r <= 0 || r > 1 {
			return tensor.Value{}, false, errUnsupported("config.json: vision_config pixel_shuffle_ratio %v is missing or not in (0, 1]", c["pixel_shuffle_ratio"])
		}
		k := int64(1.0 / r)
		if float64(k)*r != 1 {
			return tensor.Value{}, false, errUnsupported("config.json: vision_config pixel_shuffle_ratio %g: 1/ratio is not a whole number of patches, which the mmproj's scale_factor states", r)
		}
		return tensor.Uint32(uint32(k)), true, nil
	}}
}

// llama4VisionFixed refuses what llama.cpp's llama4 tower fixes and the
// mmproj cannot state (clip.cpp: rope theta 10000 for the 2-D RoPE; GELU in
// the blocks and the adapter, which the converter asserts), naming the
// config key; it writes no key.
func llama4VisionFixed() Param {
	return Param{Key: "llama4.fixed", Kind: tensor.KindUint32, Derive: func(c Config) (tensor.Value, bool, error) {
		if th, ok := c.Float("rope_theta"); ok && th != 10000 {
			return tensor.Value{}, false, errUnsupported("config.json: vision_config rope_theta %g: llama.cpp's llama4 tower rotates with 10000 and the mmproj cannot state another", th)
		}
		if a, ok := c.Str("hidden_act"); ok && a != "gelu" {
			return tensor.Value{}, false, errUnsupported("config.json: vision_config hidden_act %q: llama.cpp's llama4 tower applies gelu (the converter asserts it)", a)
		}
		return tensor.Value{}, false, nil
	}}
}

// llama4VisionTensors are the Llama 4 tower's, adapter's and projector's
// tensors as gguf-py's tensor map names them.
func llama4VisionTensors() []Tensor {
	l := "vision_model.model.layers.{bid}."
	return []Tensor{
		{GGUF: "mm.model.fc", HF: []string{"multi_modal_projector.linear_1"}},
		{GGUF: "v.class_embd", HF: []string{"vision_model.class_embedding"}, NoSuffix: true},
		{GGUF: "v.patch_embd", HF: []string{"vision_model.patch_embedding.linear"}},
		{GGUF: "v.position_embd", HF: []string{"vision_model.positional_embedding"}, HFSuffix: "_vlm"},
		{GGUF: "v.pre_ln", HF: []string{"vision_model.layernorm_pre"}},
		{GGUF: "v.post_ln", HF: []string{"vision_model.layernorm_post"}},
		{GGUF: "v.blk.{bid}.ln1", HF: []string{l + "input_layernorm"}},
		{GGUF: "v.blk.{bid}.attn_q", HF: []string{l + "self_attn.q_proj"}},
		{GGUF: "v.blk.{bid}.attn_k", HF: []string{l + "self_attn.k_proj"}},
		{GGUF: "v.blk.{bid}.attn_v", HF: []string{l + "self_attn.v_proj"}},
		{GGUF: "v.blk.{bid}.attn_out", HF: []string{l + "self_attn.o_proj"}},
		// llama.cpp d32676d7's gguf-py maps this name to
		// V_ENC_ATTN_POST_NORM (an entry Gemma 4 added for the same
		// Hugging Face name), not to ln2, where its clip.cpp's ViT reads
		// the second block norm: kept as the converter writes it, for the
		// byte identity (testdata/vision/README.md says what that means).
		{GGUF: "v.blk.{bid}.attn_post_norm", HF: []string{l + "post_attention_layernorm"}},
		{GGUF: "v.blk.{bid}.ffn_up", HF: []string{l + "mlp.fc1"}},
		{GGUF: "v.blk.{bid}.ffn_down", HF: []string{l + "mlp.fc2"}},
		{GGUF: "mm.model.mlp.1", HF: []string{"vision_model.vision_adapter.mlp.fc1"}},
		{GGUF: "mm.model.mlp.2", HF: []string{"vision_model.vision_adapter.mlp.fc2"}},
	}
}

// llama4VisionPrefixes are Llama4Vision's Prefixes; llama4VisionDrops its
// TextDrops, which the llama4 family states.
var (
	llama4VisionPrefixes = []string{"vision_model.", "multi_modal_projector."}
	llama4VisionDrops    = mmprojDrops(llama4VisionPrefixes)
)
