package arch

import (
	"math"
	"slices"
	"strings"

	"github.com/tfconv/tfconv/tensor"
)

// Qwen2VL is the text model of Qwen2_5_VLForConditionalGeneration (Qwen2.5-VL),
// as llama.cpp's converter writes it (its Qwen2VLModel, GGUF "qwen2vl"):
// Qwen2's block and keys, plus M-RoPE's rope.dimension_sections (the
// text_config's rope_scaling mrope_section, padded to 4). The vision tower
// (visual.*) is left out of the text GGUF; it is Qwen25VLVision's, the
// mmproj's. GGUF → HF gives the text model as Qwen2ForCausalLM: for text
// alone the three M-RoPE positions are equal, and M-RoPE is Qwen2's rotation.
var Qwen2VL = register(&Family{
	Name:       "qwen2vl",
	HFClasses:  []string{"Qwen2_5_VLForConditionalGeneration"},
	ModelTypes: []string{"qwen2_5_vl", "qwen2_5_vl_text"},
	HFClass:    "Qwen2ForCausalLM", ModelType: "qwen2",
	Params:    withAfter(withParams(baseParams(), mropeScaling()), "attention.head_count_kv", mropeSections()),
	Tensors:   withLanguageModelPrefix(decoderTensors(false, LayoutSame)),
	Drops:     append([]Drop{rotaryBuffer}, qwen25VisionDrops...),
	HFConst:   map[string]any{"hidden_act": "silu", "use_sliding_window": false},
	HFWarning: mropeWarning,
	Graph:     Graph{Norm: RMSNorm, FFN: Gated, Activation: "silu", NeoxRopeGGUF: true},
})

// Qwen3VL is the text model of Qwen3VLForConditionalGeneration (Qwen3-VL), as
// llama.cpp's converter writes it (its Qwen3VLTextModel, GGUF "qwen3vl"):
// Qwen3's block and keys, M-RoPE's rope.dimension_sections (Qwen3-VL
// interleaves the sections; llama.cpp's qwen3vl graph does so itself, no key
// says it), and n_deepstack_layers, the number of vision layers whose
// features the projector adds to the first text layers' outputs
// (vision_config's deepstack_visual_indexes). The vision tower
// (model.visual.*) is left out: it is Qwen3VLVision's, the mmproj's. GGUF →
// HF gives the text model as Qwen3ForCausalLM, as for Qwen2VL.
var Qwen3VL = register(&Family{
	Name:       "qwen3vl",
	HFClasses:  []string{"Qwen3VLForConditionalGeneration"},
	ModelTypes: []string{"qwen3_vl", "qwen3_vl_text"},
	HFClass:    "Qwen3ForCausalLM", ModelType: "qwen3",
	Params: withParams(withAfter(withParams(baseParams(), mropeScaling()), "attention.head_count_kv", mropeSections()),
		deepstackLayers()),
	Tensors: withLanguageModelPrefix(append(decoderTensors(false, LayoutSame),
		Tensor{GGUF: "blk.{bid}.attn_q_norm", HF: []string{hfLayer + "self_attn.q_norm"}, Shape: []Dim{DimHeadDim}},
		Tensor{GGUF: "blk.{bid}.attn_k_norm", HF: []string{hfLayer + "self_attn.k_norm"}, Shape: []Dim{DimHeadDim}})),
	Drops:     append([]Drop{rotaryBuffer}, qwen3VisionDrops...),
	HFConst:   map[string]any{"hidden_act": "silu"},
	HFWarning: mropeWarning,
	BiasFlag:  "attention_bias",
	Graph:     Graph{Norm: RMSNorm, FFN: Gated, Activation: "silu", QKNormPerHead: true, NeoxRopeGGUF: true},
})

// qwenVLNoHF is why the Qwen-VL projectors do not convert back yet.
const qwenVLNoHF = "not written yet: config.json's Qwen-VL keys (mrope_section, fullatt_block_indexes, window_size, deepstack_visual_indexes, the vision_config key names) and the deepstack mergers' numbering would have to be rebuilt from the mmproj; convert the text GGUF alone, or keep the Hugging Face checkpoint"

// mropeWarning is said on GGUF → HF of a Qwen-VL text model.
const mropeWarning = "the text model is written as its text-only class: M-RoPE's sections (rope.dimension_sections) place image tokens, which that class does not take; for text the rotation is the same"

// withLanguageModelPrefix gives every role under "model." a second Hugging
// Face pattern under "model.language_model.", where transformers ≥ 4.52
// saves the text model of Qwen-VL classes (Qwen3-VL's published checkpoints
// too; Qwen2.5-VL's keep "model."). The first stays what GGUF → HF writes.
func withLanguageModelPrefix(ts []Tensor) []Tensor {
	for i := range ts {
		if rest, ok := strings.CutPrefix(ts[i].HF[0], "model."); ok {
			ts[i].HF = append(ts[i].HF, "model.language_model."+rest)
		}
	}
	return ts
}

// mropeSections is rope.dimension_sections: rope_scaling's mrope_section,
// padded with zeros to 4 entries (time, height, width, extra) or cut to 4, as
// the converter writes it; no key when rope_scaling has none.
func mropeSections() Param {
	return Param{Key: "rope.dimension_sections", Kind: tensor.KindArray,
		Derive: func(c Config) (tensor.Value, bool, error) {
			rs, ok := c.Map("rope_scaling")
			if !ok {
				return tensor.Value{}, false, nil
			}
			s, ok, err := rs.Ints("mrope_section")
			if err != nil || !ok {
				return tensor.Value{}, false, err
			}
			out := make([]int32, 4)
			for i := 0; i < len(s) && i < 4; i++ {
				if s[i] < 0 || s[i] > 1<<20 {
					return tensor.Value{}, false, errUnsupported("config.json: rope_scaling mrope_section[%d] = %d is not a section width", i, s[i])
				}
				out[i] = int32(s[i])
			}
			return tensor.ArrayOf(out), true, nil
		},
		Inverse: func(Config, tensor.Value, Meta) {}}
}

// mropeScaling refuses a rope_scaling other than M-RoPE's (rope_type or type
// "default" or "mrope" with mrope_section): the converter would write
// scaling keys these families' GGUFs are not checked with. No key.
func mropeScaling() Param {
	return Param{Key: "rope.scaling.type", Kind: tensor.KindString,
		Derive: func(c Config) (tensor.Value, bool, error) {
			rs, ok := c.Map("rope_scaling")
			if !ok {
				return tensor.Value{}, false, nil
			}
			for _, k := range []string{"rope_type", "type"} {
				if t, ok := rs.Str(k); ok && t != "default" && t != "mrope" {
					return tensor.Value{}, false, errUnsupported("config.json: rope_scaling %s %q: only M-RoPE (mrope_section) converts for this family", k, t)
				}
			}
			return tensor.Value{}, false, nil
		},
		Inverse: func(Config, tensor.Value, Meta) {}}
}

// deepstackLayers is n_deepstack_layers: the length of vision_config's
// deepstack_visual_indexes (0 when it has none), written after
// general.file_type as the converter does.
func deepstackLayers() Param {
	return Param{Key: "n_deepstack_layers", Kind: tensor.KindUint32,
		Derive: func(c Config) (tensor.Value, bool, error) {
			vc, _ := c.Map("vision_config")
			idx, _, err := vc.Ints("deepstack_visual_indexes")
			if err != nil {
				return tensor.Value{}, false, err
			}
			return tensor.Uint32(uint32(len(idx))), true, nil
		},
		Inverse: func(Config, tensor.Value, Meta) {}}
}

// Qwen25VLVision is Qwen2.5-VL's projector, as llama.cpp's Qwen2VLVisionModel
// writes it (clip.projector_type "qwen2.5vl_merger"): a ViT whose Conv3d
// patch embedding over two frames is kept as its two temporal slices
// (Split.Axis), blocks with a fused qkv the converter cuts into q, k and v,
// RMSNorms and a gated SiLU MLP with biases, window attention in every block
// but those of fullatt_block_indexes (clip.vision.n_wa_pattern), and the
// merger: RMSNorm ln_q, 2×2 patches concatenated, Linear, GELU, Linear to
// the text width. Its 2-D rotary positions and window size are llama.cpp's
// own (no key). The text half is the qwen2vl family.
var Qwen25VLVision = registerProjector(&Projector{
	Type:      "qwen2.5vl_merger",
	HFClasses: []string{"Qwen2_5_VLForConditionalGeneration"},
	Text:      "qwen2vl",
	Encoder:   "vision_config",
	Prefixes:  qwen25VisionPrefixes,
	Summary:   "Qwen2.5-VL ViT (Conv3d patches, window attention, 2-D RoPE); 2×2 merger MLP",
	NoHF:      qwenVLNoHF,
	Tower: Family{
		Name:      MmprojArch,
		HeadKeys:  []string{"num_heads"},
		LayerKeys: []string{"depth"},
		Params: withParams(withParam(mmprojVisionParams(),
			// config.json has no image_size: the converter takes 560.
			Param{Key: "vision.image_size", HF: []string{"image_size"}, Kind: tensor.KindUint32, Need: Default, Default: 560}),
			constString("projector_type", "qwen2.5vl_merger"),
			constBool("use_silu", true),
			windowPattern(),
			// The converter reads rms_norm_eps at config.json's top level
			// (1e-6 when absent), not text_config's.
			Param{Key: "vision.attention.layer_norm_epsilon", Kind: tensor.KindFloat32, Derive: func(c Config) (tensor.Value, bool, error) {
				top, _ := c.Map(TowerTop)
				if f, ok := top.Float("rms_norm_eps"); ok {
					return tensor.Float32(float32(f)), true, nil
				}
				return tensor.Float32(1e-6), true, nil
			}},
		),
		Tensors: []Tensor{
			{GGUF: "v.patch_embd", HF: []string{"visual.patch_embed.proj"}, Split: &Split{Part: 1, Axis: 3}},
			{GGUF: "v.patch_embd.weight.1", HF: []string{"visual.patch_embed.proj"}, Split: &Split{Part: 2, Axis: 3}, NoSuffixGGUF: true},
			{GGUF: "v.blk.{bid}.attn_q", HF: []string{"visual.blocks.{bid}.attn.qkv"}, Split: &Split{Part: 1}},
			{GGUF: "v.blk.{bid}.attn_k", HF: []string{"visual.blocks.{bid}.attn.qkv"}, Split: &Split{Part: 2}},
			{GGUF: "v.blk.{bid}.attn_v", HF: []string{"visual.blocks.{bid}.attn.qkv"}, Split: &Split{Part: 3}},
			{GGUF: "v.blk.{bid}.attn_out", HF: []string{"visual.blocks.{bid}.attn.proj"}},
			{GGUF: "v.blk.{bid}.ln1", HF: []string{"visual.blocks.{bid}.norm1"}},
			{GGUF: "v.blk.{bid}.ln2", HF: []string{"visual.blocks.{bid}.norm2"}},
			{GGUF: "v.blk.{bid}.ffn_gate", HF: []string{"visual.blocks.{bid}.mlp.gate_proj"}},
			{GGUF: "v.blk.{bid}.ffn_up", HF: []string{"visual.blocks.{bid}.mlp.up_proj"}},
			{GGUF: "v.blk.{bid}.ffn_down", HF: []string{"visual.blocks.{bid}.mlp.down_proj"}},
			{GGUF: "v.post_ln", HF: []string{"visual.merger.ln_q"}},
			{GGUF: "mm.0", HF: []string{"visual.merger.mlp.0"}},
			{GGUF: "mm.2", HF: []string{"visual.merger.mlp.2"}},
		},
	},
})

// qwen25VisionPrefixes are Qwen25VLVision's Prefixes; qwen25VisionDrops the
// qwen2vl family's drops for them.
var (
	qwen25VisionPrefixes = []string{"visual."}
	qwen25VisionDrops    = mmprojDrops(qwen25VisionPrefixes)
)

// withParam returns params with the param of p's key replaced by p.
func withParam(params []Param, p Param) []Param {
	out := slices.Clone(params)
	for i := range out {
		if out[i].Key == p.Key {
			out[i] = p
		}
	}
	return out
}

// windowPattern is clip.vision.n_wa_pattern: blocks come in runs of n, the
// last of each attending over the whole image (fullatt_block_indexes
// n-1, 2n-1, …), the others within windows, as the converter derives it;
// other index lists are refused, as it refuses them.
func windowPattern() Param {
	return Param{Key: "vision.n_wa_pattern", Kind: tensor.KindUint32, Derive: func(c Config) (tensor.Value, bool, error) {
		idx, ok, err := c.Ints("fullatt_block_indexes")
		if err != nil {
			return tensor.Value{}, false, err
		}
		if !ok || len(idx) == 0 {
			return tensor.Value{}, false, errUnsupported("config.json: vision_config has no fullatt_block_indexes: Qwen2.5-VL's projector states its window pattern from them")
		}
		n := idx[0] + 1
		for i := 1; i < len(idx); i++ {
			if idx[i]-idx[i-1] != n {
				return tensor.Value{}, false, errUnsupported("config.json: vision_config fullatt_block_indexes %v: not every %d-th block, the one pattern llama.cpp's qwen2.5vl_merger has", idx, n)
			}
		}
		if n <= 0 || n > 1<<20 {
			return tensor.Value{}, false, errUnsupported("config.json: vision_config fullatt_block_indexes %v: no window pattern", idx)
		}
		return tensor.Uint32(uint32(n)), true, nil
	}}
}

// Qwen3VLVision is Qwen3-VL's projector, as llama.cpp's Qwen3VLVisionModel
// writes it (clip.projector_type "qwen3vl_merger"): a ViT with the Conv3d
// patch embedding kept as two temporal Conv2d slices and its bias, learned
// position embeddings for a square grid (num_position_embeddings: the image
// size is its side times the patch), fused qkv, LayerNorms, a GELU MLP, the
// merger (LayerNorm, Linear, GELU, Linear) and one deepstack merger per
// vision layer of deepstack_visual_indexes, whose outputs the text model
// adds to its first layers' (clip.vision.is_deepstack_layers). The text
// half is the qwen3vl family.
var Qwen3VLVision = registerProjector(&Projector{
	Type:      "qwen3vl_merger",
	HFClasses: []string{"Qwen3VLForConditionalGeneration"},
	Text:      "qwen3vl",
	Encoder:   "vision_config",
	Prefixes:  qwen3VisionPrefixes,
	Summary:   "Qwen3-VL ViT (Conv3d patches, learned + 2-D RoPE positions); 2×2 merger MLP and deepstack mergers",
	NoHF:      qwenVLNoHF,
	Tower: Family{
		Name:      MmprojArch,
		HeadKeys:  []string{"num_heads"},
		LayerKeys: []string{"depth"},
		Params: withParams(withParam(mmprojVisionParams(), qwen3ImageSize()),
			constString("projector_type", "qwen3vl_merger"),
			constBool("use_gelu", true),
			u32("vision.spatial_merge_size", Optional, "spatial_merge_size"),
			// The text model's rms_norm_eps (1e-6 when absent).
			Param{Key: "vision.attention.layer_norm_epsilon", Kind: tensor.KindFloat32, Derive: func(c Config) (tensor.Value, bool, error) {
				text, _ := c.Map(TowerText)
				if f, ok := text.Float("rms_norm_eps"); ok {
					return tensor.Float32(float32(f)), true, nil
				}
				return tensor.Float32(1e-6), true, nil
			}},
			deepstackFlags(),
		),
		Tensors: []Tensor{
			{GGUF: "v.patch_embd", HF: []string{"model.visual.patch_embed.proj"}, Split: &Split{Part: 1, Axis: 3}},
			{GGUF: "v.patch_embd.weight.1", HF: []string{"model.visual.patch_embed.proj"}, Split: &Split{Part: 2, Axis: 3}, NoSuffixGGUF: true},
			{GGUF: "v.position_embd", HF: []string{"model.visual.pos_embed"}},
			{GGUF: "v.blk.{bid}.attn_qkv", HF: []string{"model.visual.blocks.{bid}.attn.qkv"}},
			{GGUF: "v.blk.{bid}.attn_out", HF: []string{"model.visual.blocks.{bid}.attn.proj"}},
			{GGUF: "v.blk.{bid}.ln1", HF: []string{"model.visual.blocks.{bid}.norm1"}},
			{GGUF: "v.blk.{bid}.ln2", HF: []string{"model.visual.blocks.{bid}.norm2"}},
			{GGUF: "v.blk.{bid}.ffn_up", HF: []string{"model.visual.blocks.{bid}.mlp.linear_fc1"}},
			{GGUF: "v.blk.{bid}.ffn_down", HF: []string{"model.visual.blocks.{bid}.mlp.linear_fc2"}},
			{GGUF: "v.deepstack.{bid}.norm", HF: []string{"model.visual.deepstack_merger_list.{bid}.norm"}, Blocks: deepstackIndexes, Optional: true},
			{GGUF: "v.deepstack.{bid}.fc1", HF: []string{"model.visual.deepstack_merger_list.{bid}.linear_fc1"}, Blocks: deepstackIndexes, Optional: true},
			{GGUF: "v.deepstack.{bid}.fc2", HF: []string{"model.visual.deepstack_merger_list.{bid}.linear_fc2"}, Blocks: deepstackIndexes, Optional: true},
			{GGUF: "v.post_ln", HF: []string{"model.visual.merger.norm"}},
			{GGUF: "mm.0", HF: []string{"model.visual.merger.linear_fc1"}},
			{GGUF: "mm.2", HF: []string{"model.visual.merger.linear_fc2"}},
		},
		// V_ENC_EMBD_POS is among the converter's always-F32 tensors.
		F32: []Role{"v.position_embd"},
	},
})

// deepstackIndexes is vision_config's list of the vision layers with a
// deepstack merger.
const deepstackIndexes = "deepstack_visual_indexes"

// qwen3VisionPrefixes are Qwen3VLVision's Prefixes; qwen3VisionDrops the
// qwen3vl family's drops for them.
var (
	qwen3VisionPrefixes = []string{"model.visual."}
	qwen3VisionDrops    = mmprojDrops(qwen3VisionPrefixes)
)

// qwen3ImageSize is clip.vision.image_size: vision_config's image_size, else
// the side of the square position grid times the patch,
// int(√num_position_embeddings · patch_size) (2304 and 16 when absent), as
// the converter computes it.
func qwen3ImageSize() Param {
	return Param{Key: "vision.image_size", Kind: tensor.KindUint32, Derive: func(c Config) (tensor.Value, bool, error) {
		if n, ok := c.Int("image_size"); ok && n > 0 && n <= 1<<32-1 {
			return tensor.Uint32(uint32(n)), true, nil
		}
		pos, ok := c.Int("num_position_embeddings")
		if !ok {
			pos = 2304
		}
		patch, ok := c.Int("patch_size")
		if !ok {
			patch = 16
		}
		size := int64(math.Sqrt(float64(pos)) * float64(patch))
		if pos <= 0 || patch <= 0 || size <= 0 || size > 1<<32-1 {
			return tensor.Value{}, false, errUnsupported("config.json: vision_config num_position_embeddings %d and patch_size %d give no image size", pos, patch)
		}
		return tensor.Uint32(uint32(size)), true, nil
	}}
}

// deepstackFlags is clip.vision.is_deepstack_layers: per vision layer
// (depth), whether deepstack_visual_indexes names it; an index outside the
// layers is refused, as the converter's list assignment fails on it.
func deepstackFlags() Param {
	return Param{Key: "vision.is_deepstack_layers", Kind: tensor.KindArray, Derive: func(c Config) (tensor.Value, bool, error) {
		depth, ok := c.Int("depth")
		if !ok || depth <= 0 || depth > 1<<16 {
			return tensor.Value{}, false, nil
		}
		idx, _, err := c.Ints(deepstackIndexes)
		if err != nil {
			return tensor.Value{}, false, err
		}
		flags := make([]bool, depth)
		for _, i := range idx {
			if i < 0 || i >= depth {
				return tensor.Value{}, false, errUnsupported("config.json: vision_config %s %v: layer %d is not one of the %d", deepstackIndexes, idx, i, depth)
			}
			flags[i] = true
		}
		return tensor.ArrayOf(flags), true, nil
	}}
}
