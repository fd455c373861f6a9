package arch

import (
	"math"

	"github.com/tfconv/tfconv/tensor"
)

// Gemma3Vision is Gemma 3's projector (Gemma3ForConditionalGeneration, the
// class of every Gemma 3 from 4B up), as llama.cpp's Gemma3VisionModel
// writes it: a SigLIP ViT (patch convolution, learned positions, pre-norm
// blocks with LayerNorm and GELU, a final LayerNorm; no pooling head) and
// Gemma 3's projection (the patch grid average-pooled to
// mm_tokens_per_image tokens, an RMSNorm with (1 + w) and a linear map to
// the text width). The text half is the gemma3 family.
var Gemma3Vision = registerProjector(&Projector{
	Type:        "gemma3",
	HFClasses:   []string{"Gemma3ForConditionalGeneration"},
	Text:        "gemma3",
	Encoder:     "vision_config",
	Prefixes:    gemma3VisionPrefixes,
	Summary:     "SigLIP ViT; patches average-pooled to mm_tokens_per_image, RMSNorm (1 + w), linear",
	PoolDefault: 4,
	HFModelType: "gemma3", TextModelType: "gemma3_text",
	TokenKeys: []TokenKey{{"boi_token_index", "<start_of_image>"}, {"eoi_token_index", "<end_of_image>"},
		{"image_token_index", "<image_soft_token>"}},
	TokensKey: "mm_tokens_per_image",
	// google/gemma-3-4b-it's (testdata/vision/README.md says where they
	// were read).
	Preprocessor: map[string]any{"do_convert_rgb": nil, "do_normalize": true, "do_pan_and_scan": nil, "do_rescale": true,
		"do_resize": true, "image_processor_type": "Gemma3ImageProcessor", "pan_and_scan_max_num_crops": nil,
		"pan_and_scan_min_crop_size": nil, "pan_and_scan_min_ratio_to_activate": nil, "processor_class": "Gemma3Processor",
		"resample": 2, "rescale_factor": 0.00392156862745098},
	ProcessorFile: map[string]any{"processor_class": "Gemma3Processor"},
	Tower: Family{
		Name:      MmprojArch,
		ModelType: "siglip_vision_model",
		HFConst: map[string]any{"hidden_act": "gelu_pytorch_tanh", "num_channels": 3, "vision_use_head": false,
			"attention_dropout": 0.0},
		Params: withParams(mmprojVisionParams(),
			constString("projector_type", "gemma3"),
			Param{Key: "vision.attention.layer_norm_epsilon", HF: []string{"layer_norm_eps"}, Kind: tensor.KindFloat32,
				Need: Default, Default: 1e-6},
			constBool("use_gelu", true),
			gemma3ScaleFactor(),
		),
		Tensors: siglipTensors("vision_tower.vision_model.", []Tensor{
			{GGUF: "mm.input_projection", HF: []string{"multi_modal_projector.mm_input_projection"}, HFSuffix: "_weight"},
			// Gemma3RMSNorm scales by (1 + w); the converter adds the 1.
			{GGUF: "mm.soft_emb_norm", HF: []string{"multi_modal_projector.mm_soft_emb_norm"}, Layout: LayoutNormPlusOne},
		}),
		SuffixAliases: map[string]string{"mm_input_projection_weight": "mm_input_projection.weight"},
		// "vision_model.head." (a SigLIP pooling head) is skipped by the
		// converter; Gemma 3 has none (vision_use_head false).
		Drops: []Drop{{Prefix: "vision_tower.vision_model.head.", Reason: "SigLIP's pooling head: Gemma 3 does not use it (the converter skips it)"}},
		// Gemma3VisionModel.tensor_force_quant: the embeddings stay F32 and
		// the projection F16 at every outtype (llama.cpp issue 13025).
		F32: []Role{"v.patch_embd", "v.position_embd"},
		F16: []Role{"mm.input_projection"},
	},
})

// gemma3ScaleFactor is clip.vision.projector.scale_factor: the pooling
// kernel, (image_size / patch_size) / √image_seq_length (the processor's,
// 256 when unstated), written only when it is not llama.cpp's default 4.
func gemma3ScaleFactor() Param {
	return Param{Key: "vision.projector.scale_factor", Kind: tensor.KindUint32, Derive: func(c Config) (tensor.Value, bool, error) {
		pre, _ := c.Map(TowerPreprocessor)
		seq, ok := pre.Int("image_seq_length")
		if !ok {
			seq = 256
		}
		img, _ := c.Int("image_size")
		patch, _ := c.Int("patch_size")
		if seq <= 0 || patch <= 0 || img <= 0 {
			return tensor.Value{}, false, errUnsupported("config.json: vision_config image_size %d, patch_size %d and image_seq_length %d must be positive", img, patch, seq)
		}
		side := int64(math.Sqrt(float64(seq))) // Python's int(seq ** 0.5)
		if side == 0 {
			return tensor.Value{}, false, errUnsupported("preprocessor_config.json: image_seq_length %d leaves no tokens per side", seq)
		}
		f := (img / patch) / side
		if f <= 0 || f == 4 || f > 1<<32-1 {
			return tensor.Value{}, false, nil
		}
		return tensor.Uint32(uint32(f)), true, nil
	}}
}

// siglipTensors are a SigLIP / CLIP ViT's tensors under prefix (its
// vision_model.), as gguf-py's tensor map names them (V_ENC_*), then
// extra's.
func siglipTensors(prefix string, extra []Tensor) []Tensor {
	l := prefix + "encoder.layers.{bid}."
	ts := []Tensor{
		{GGUF: "v.patch_embd", HF: []string{prefix + "embeddings.patch_embedding"}},
		{GGUF: "v.position_embd", HF: []string{prefix + "embeddings.position_embedding"}},
		{GGUF: "v.blk.{bid}.attn_q", HF: []string{l + "self_attn.q_proj"}},
		{GGUF: "v.blk.{bid}.attn_k", HF: []string{l + "self_attn.k_proj"}},
		{GGUF: "v.blk.{bid}.attn_v", HF: []string{l + "self_attn.v_proj"}},
		{GGUF: "v.blk.{bid}.attn_out", HF: []string{l + "self_attn.out_proj"}},
		{GGUF: "v.blk.{bid}.ln1", HF: []string{l + "layer_norm1"}},
		{GGUF: "v.blk.{bid}.ln2", HF: []string{l + "layer_norm2"}},
		{GGUF: "v.blk.{bid}.ffn_up", HF: []string{l + "mlp.fc1"}},
		{GGUF: "v.blk.{bid}.ffn_down", HF: []string{l + "mlp.fc2"}},
		{GGUF: "v.post_ln", HF: []string{prefix + "post_layernorm"}},
	}
	return append(ts, extra...)
}

// gemma3VisionPrefixes are Gemma3Vision's Prefixes; gemma3VisionDrops its
// TextDrops, which the gemma3 family states (without the projector's
// value, which package initialisation orders after the family's).
var (
	gemma3VisionPrefixes = []string{"vision_tower.", "multi_modal_projector."}
	gemma3VisionDrops    = mmprojDrops(gemma3VisionPrefixes)
)
