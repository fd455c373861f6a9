// Package mlx owns the layout of an MLX checkpoint as mlx-lm saves it
// (mlx_lm.convert, mlx_lm.utils.save): a Hugging Face-shaped directory whose
// tensors keep the Hugging Face names of the layers, with two differences
// this package knows and no other does.
//
// config.json carries "quantization" (and a copy under
// "quantization_config", which mlx-lm writes for the Hub's benefit):
//
//	"quantization": {
//	    "group_size": 64,            // values per scale and bias: 32, 64, 128
//	    "bits": 4,                   // 2, 3, 4, 5, 6, 8
//	    "mode": "affine",            // absent in older mlx-lm: affine
//	    "model.layers.0.mlp.down_proj": {"group_size": 64, "bits": 8},  // a layer's own
//	    "lm_head": false             // a layer left in float
//	}
//
// and each quantized layer P (an nn.Linear or nn.Embedding whose input
// dimension is a multiple of the group size) is three tensors in place of
// P.weight [rows, cols]:
//
//	P.weight  uint32 [rows, cols·bits/32]   codes, one little-endian bit stream per row
//	P.scales  T      [rows, cols/group]     T: the float type the layer had
//	P.biases  T      [rows, cols/group]
//
// (quant.Affine is the codec.) In MLX's floating-point modes ("mode":
// "mxfp4", "mxfp8" or "nvfp4": FPModes, each with its one group size and
// bits) a layer is two tensors, no biases:
//
//	P.weight  uint32 [rows, cols·bits/32]   e2m1 (4 bits) or e4m3 (8 bits) codes, the same bit stream
//	P.scales  uint8  [rows, cols/group]     e8m0 (mxfp4, mxfp8) or e4m3 (nvfp4)
//
// (quant.MLXFP is their codec). The safetensors files carry the metadata
// {"format": "mlx"}; more than one is named model-0000i-of-0000n.safetensors
// with model.safetensors.index.json, whose weight_map is sorted by name.
package mlx
