package arch

import "github.com/tfconv/tfconv/tensor"

// Idefics3Vision is SmolVLM's projector (Idefics3ForConditionalGeneration:
// HuggingFaceTB's SmolVLM; SmolVLMForConditionalGeneration: SmolVLM2, the
// same model under transformers' own class), as llama.cpp's SmolVLMModel
// writes it: a SigLIP
// ViT (patch convolution with its bias, learned positions, pre-norm blocks
// with LayerNorm and GELU, a final LayerNorm) and the connector: the patch
// grid pixel-shuffled by scale_factor (each scale_factor × scale_factor
// block of patches concatenated into one token) and one linear map to the
// text width. The text half is the llama family.
var Idefics3Vision = registerProjector(&Projector{
	Type:      "idefics3",
	HFClasses: []string{"Idefics3ForConditionalGeneration", "SmolVLMForConditionalGeneration"},
	Text:      "llama",
	Encoder:   "vision_config",
	Prefixes:  idefics3VisionPrefixes,
	Summary:   "SigLIP ViT; pixel shuffle by scale_factor, linear",
	Tower: Family{
		Name: MmprojArch,
		Params: withParams(mmprojVisionParams(),
			constString("projector_type", "idefics3"),
			Param{Key: "vision.attention.layer_norm_epsilon", HF: []string{"layer_norm_eps"}, Kind: tensor.KindFloat32,
				Need: Default, Default: 1e-5},
			fromTop("vision.projector.scale_factor", "scale_factor", 2),
			constBool("use_gelu", true),
			preprocLongestEdge("vision.preproc_image_size"),
		),
		Tensors: siglipTensors("model.vision_model.", []Tensor{
			{GGUF: "mm.model.fc", HF: []string{"model.connector.modality_projection.proj"}},
		}),
		// SmolVLMModel.tensor_force_quant: the embeddings stay F32.
		F32: []Role{"v.patch_embd", "v.position_embd"},
	},
})

// idefics3VisionPrefixes are Idefics3Vision's Prefixes; the llama family
// states their drops (TextDrops) for its Idefics3 class.
var idefics3VisionPrefixes = []string{"model.vision_model.", "model.connector."}

// fromTop is a uint32 key read from the top level of config.json
// (TowerTop: beside text_config and vision_config), def when absent.
func fromTop(key, name string, def int64) Param {
	return Param{Key: key, Kind: tensor.KindUint32, Derive: func(c Config) (tensor.Value, bool, error) {
		top, _ := c.Map(TowerTop)
		n, ok := top.Int(name)
		if !ok {
			n = def
		}
		if n <= 0 || n > 1<<32-1 {
			return tensor.Value{}, false, errUnsupported("config.json: %s %d is not a positive integer", name, n)
		}
		return tensor.Uint32(uint32(n)), true, nil
	}}
}

// preprocLongestEdge is the processor's size.longest_edge (the image is
// resized to it before it is split), else the tower's image_size, as
// SmolVLMModel writes it.
func preprocLongestEdge(key string) Param {
	return Param{Key: key, Kind: tensor.KindUint32, Derive: func(c Config) (tensor.Value, bool, error) {
		pre, _ := c.Map(TowerPreprocessor)
		size, _ := pre.Map("size")
		n, ok := size.Int("longest_edge")
		if !ok {
			n, ok = c.Int("image_size")
		}
		if !ok || n <= 0 || n > 1<<32-1 {
			return tensor.Value{}, false, errUnsupported("preprocessor_config.json: size.longest_edge (or vision_config image_size) is missing or not a positive integer")
		}
		return tensor.Uint32(uint32(n)), true, nil
	}}
}
