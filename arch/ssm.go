package arch

import "github.com/tfconv/tfconv/tensor"

// The Mamba-2 mixer's roles and GGUF keys as the hybrid families state
// them (llama.cpp's ssm_* tensors and ssm.* keys).

// mamba2Tensors are the roles of a Mamba-2 mixer whose Hugging Face
// parameters sit under prefix (with its layer placeholder: Falcon-H1's
// "model.layers.{bid}.mamba.", Nemotron-H's "backbone.layers.{bid}.mixer."),
// as the converter's Mamba2Model writes them: in_proj (z, x, B, C and dt
// stacked), the depthwise conv1d squeezed to [channels, taps], dt_bias as
// ssm_dt's bias, A = −exp(A_log) and D as columns, the gated norm's weight
// as one row per group (config.json's groups keys), out_proj. They are
// optional: in a hybrid only some layers hold them.
func mamba2Tensors(prefix string, groups ...string) []Tensor {
	return []Tensor{
		{GGUF: "blk.{bid}.ssm_in", HF: []string{prefix + "in_proj"}, Optional: true},
		{GGUF: "blk.{bid}.ssm_conv1d", HF: []string{prefix + "conv1d"}, Layout: LayoutSqueeze, Optional: true},
		{GGUF: "blk.{bid}.ssm_dt", HF: []string{prefix + "dt"}, HFSuffix: "_bias", Optional: true},
		{GGUF: "blk.{bid}.ssm_a", HF: []string{prefix + "A_log"}, Layout: LayoutNegExp, BareGGUF: true, BareHF: true, Optional: true},
		{GGUF: "blk.{bid}.ssm_d", HF: []string{prefix + "D"}, Layout: LayoutColumn, BareGGUF: true, BareHF: true, Optional: true},
		{GGUF: "blk.{bid}.ssm_norm", HF: []string{prefix + "norm"}, Layout: LayoutGroups, Groups: groups, Optional: true},
		{GGUF: "blk.{bid}.ssm_out", HF: []string{prefix + "out_proj"}, Optional: true},
	}
}

// dtBiasAlias reads Mamba-2's dt_bias as ssm_dt's bias (mamba2Tensors).
var dtBiasAlias = map[string]string{".dt_bias": ".dt.bias"}

// ssmParam is one of llama.cpp's ssm.* keys read from the first present of
// config.json's keys hf, the converter's find_hparam with the family's
// "mamba_" prefix (keys, then the prefixed keys).
func ssmParam(key string, need Need, def float64, prefixed bool, hf ...string) Param {
	keys := append([]string(nil), hf...)
	if prefixed {
		for _, k := range hf {
			keys = append(keys, "mamba_"+k)
		}
	}
	return Param{Key: key, HF: keys, Kind: tensor.KindUint32, Need: need, Default: def}
}
