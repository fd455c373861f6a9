package arch

import "github.com/tfconv/tfconv/tensor"

// PixtralVision is Mistral 3.1's projector (Mistral3ForConditionalGeneration:
// Mistral Small 3.1 and 3.2), as llama.cpp's LlavaVisionModel writes it for
// a Pixtral tower (projector type "pixtral"): a Pixtral ViT (patch
// convolution without bias, RMSNorm ln_pre, pre-norm blocks with RMSNorm,
// 2-D RoPE attention, a gated SiLU or GELU feed-forward) and Mistral 3's
// projection (RMSNorm, the patch merger that concatenates each
// spatial_merge_size² patch block and maps it back to the tower width,
// then two linear maps with GELU between). The tower's Q and K rows are
// permuted per head as a LLaMA's are (num_attention_heads of vision_config;
// no grouped keys): llama.cpp's 2-D RoPE rotates adjacent pairs. The text
// half is the mistral3 family.
//
// GGUF → HF of a pixtral mmproj is refused (the record states no
// HFModelType yet: Pixtral's processor files and top-level keys are not
// written back).
//
// The converter names the two projection matrices by block index
// (multi_modal_projector.linear_{1,2} → mm.{1,2}), so it maps them only for
// a tower of 3 layers or more; tfconv names them whatever the depth.
var PixtralVision = registerProjector(&Projector{
	Type:      "pixtral",
	HFClasses: []string{"Mistral3ForConditionalGeneration"},
	Text:      "mistral3",
	Encoder:   "vision_config",
	Prefixes:  pixtralPrefixes,
	Summary:   "Pixtral ViT (2-D RoPE); RMSNorm, spatial_merge_size² patch merger, linear, GELU, linear",
	Tower: Family{
		Name: MmprojArch,
		Params: withParams(mmprojVisionParams(),
			constString("projector_type", "pixtral"),
			// modeling_pixtral's RMSNorms take 1e-5; vision_config does not state it.
			Param{Key: "vision.attention.layer_norm_epsilon", HF: []string{"layer_norm_eps"}, Kind: tensor.KindFloat32,
				Need: Default, Default: 1e-5},
			pixtralFixed(),
			pixtralActivation("silu"),
			pixtralActivation("gelu"),
			Param{Key: "vision.spatial_merge_size", Kind: tensor.KindUint32, Derive: func(c Config) (tensor.Value, bool, error) {
				top, _ := c.Map(TowerTop)
				n, ok := top.Int("spatial_merge_size")
				if !ok {
					return tensor.Value{}, false, nil
				}
				if n <= 0 || n > 1<<16 {
					return tensor.Value{}, false, errUnsupported("config.json: spatial_merge_size %d is not a positive patch count", n)
				}
				return tensor.Uint32(uint32(n)), true, nil
			}},
		),
		Tensors: pixtralTensors(),
		// The converter never quantizes these (MmprojModel.tensor_force_quant).
		Unquantized: []Role{"v.patch_embd", "mm.patch_merger"},
	},
})

// pixtralFixed refuses what llama.cpp's pixtral graph fixes and the mmproj
// cannot state (clip.cpp: rope theta 10000 for the tower's 2-D RoPE, GELU
// between the projection's linears, the last layer's states), naming the
// config key; it writes no key.
func pixtralFixed() Param {
	return Param{Key: "pixtral.fixed", Kind: tensor.KindUint32, Derive: func(c Config) (tensor.Value, bool, error) {
		if th, ok := c.Float("rope_theta"); ok && th != 10000 {
			return tensor.Value{}, false, errUnsupported("config.json: vision_config rope_theta %g: llama.cpp's pixtral tower rotates with 10000 and the mmproj cannot state another", th)
		}
		top, _ := c.Map(TowerTop)
		if a, ok := top.Str("projector_hidden_act"); ok && a != "gelu" {
			return tensor.Value{}, false, errUnsupported("config.json: projector_hidden_act %q: llama.cpp's pixtral projection applies gelu", a)
		}
		if l, ok := top.Int("vision_feature_layer"); ok && l != -1 {
			return tensor.Value{}, false, errUnsupported("config.json: vision_feature_layer %d: llama.cpp's pixtral projector takes the last layer's states (-1)", l)
		}
		return tensor.Value{}, false, nil
	}}
}

// pixtralActivation is clip.use_<act>, written when vision_config's
// hidden_act is act; the silu one refuses an activation the mmproj cannot
// state (the converter raises on it).
func pixtralActivation(act string) Param {
	return Param{Key: "use_" + act, Kind: tensor.KindBool, Derive: func(c Config) (tensor.Value, bool, error) {
		h, ok := c.Str("hidden_act")
		if !ok {
			h = "gelu" // PixtralVisionConfig's default
		}
		if act == "silu" && h != "silu" && h != "gelu" {
			return tensor.Value{}, false, errUnsupported("config.json: vision_config hidden_act %q: the pixtral mmproj states only silu or gelu", h)
		}
		return tensor.Bool(true), h == act, nil
	}}
}

// pixtralTensors are the Pixtral tower's and Mistral 3 projection's
// tensors as gguf-py's tensor map names them.
func pixtralTensors() []Tensor {
	l := "vision_tower.transformer.layers.{bid}."
	return []Tensor{
		{GGUF: "v.patch_embd", HF: []string{"vision_tower.patch_conv"}},
		{GGUF: "v.pre_ln", HF: []string{"vision_tower.ln_pre"}},
		{GGUF: "v.blk.{bid}.attn_q", HF: []string{l + "attention.q_proj"}, Layout: LayoutPermuteQ},
		{GGUF: "v.blk.{bid}.attn_k", HF: []string{l + "attention.k_proj"}, Layout: LayoutPermuteK},
		{GGUF: "v.blk.{bid}.attn_v", HF: []string{l + "attention.v_proj"}},
		{GGUF: "v.blk.{bid}.attn_out", HF: []string{l + "attention.o_proj"}},
		{GGUF: "v.blk.{bid}.ln1", HF: []string{l + "attention_norm"}},
		{GGUF: "v.blk.{bid}.ln2", HF: []string{l + "ffn_norm"}},
		{GGUF: "v.blk.{bid}.ffn_gate", HF: []string{l + "feed_forward.gate_proj"}},
		{GGUF: "v.blk.{bid}.ffn_up", HF: []string{l + "feed_forward.up_proj"}},
		{GGUF: "v.blk.{bid}.ffn_down", HF: []string{l + "feed_forward.down_proj"}},
		{GGUF: "mm.input_norm", HF: []string{"multi_modal_projector.norm"}},
		{GGUF: "mm.patch_merger", HF: []string{"multi_modal_projector.patch_merger.merging_layer"}},
		{GGUF: "mm.1", HF: []string{"multi_modal_projector.linear_1"}},
		{GGUF: "mm.2", HF: []string{"multi_modal_projector.linear_2"}},
	}
}

// pixtralPrefixes are PixtralVision's Prefixes; pixtralDrops its
// TextDrops, which the mistral3 family states.
var (
	pixtralPrefixes = []string{"vision_tower.", "multi_modal_projector."}
	pixtralDrops    = mmprojDrops(pixtralPrefixes)
)
