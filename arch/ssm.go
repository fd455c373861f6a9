package arch

import (
	"strings"

	"github.com/tfconv/tfconv/tensor"
)

// mamba2Tensors are the roles of a Mamba-2 mixer whose Hugging Face
// parameters sit under prefix, with its layer placeholder (Mamba-2's and
// Nemotron-H's "backbone.layers.{bid}.mixer.", Falcon-H1's
// "model.layers.{bid}.mamba."), as the converter's Mamba2Model writes them:
// in_proj (z, x, B, C and Δ stacked), the depthwise conv1d squeezed to
// [channels][kernel], dt_bias as ssm_dt's bias (mamba2DTBias), A =
// −exp(A_log) and D as [heads][1] columns, the gated norm as
// [groups][inner/groups], out_proj. optional: only some layers hold them
// (a hybrid's), which its Pattern names as Mamba2 layers (Tensor.Mixers);
// dt_bias, a role the checkpoint may lack, is in Mamba-2 layers alone.
func mamba2Tensors(prefix string, optional bool) []Tensor {
	var in []Mixer
	if optional {
		in = []Mixer{Mamba2}
	}
	ts := []Tensor{
		{GGUF: "blk.{bid}.ssm_in", HF: []string{prefix + "in_proj"}, Shape: []Dim{DimSSMIn, DimHidden}, Optional: optional},
		{GGUF: "blk.{bid}.ssm_conv1d", HF: []string{prefix + "conv1d"},
			Shape: []Dim{DimConvChannels, DimOne, DimConvKernel}, Layout: LayoutSqueeze, Optional: optional},
		// dt_bias, which the converter names dt_proj.bias: a bias alone.
		{GGUF: "blk.{bid}.ssm_dt", HF: []string{strings.TrimSuffix(prefix, ".")}, HFSuffix: ".dt_bias", Shape: []Dim{DimSSMHeads},
			Optional: true},
		{GGUF: "blk.{bid}.ssm_a", HF: []string{prefix + "A_log"}, Shape: []Dim{DimSSMHeads}, NoSuffix: true,
			Layout: LayoutNegExp, Reshape: ReshapeColumn, Optional: optional},
		{GGUF: "blk.{bid}.ssm_d", HF: []string{prefix + "D"}, Shape: []Dim{DimSSMHeads}, NoSuffix: true,
			Reshape: ReshapeColumn, Optional: optional},
		{GGUF: "blk.{bid}.ssm_norm", HF: []string{prefix + "norm"}, Shape: []Dim{DimInner}, Reshape: ReshapeGroups, Optional: optional},
		{GGUF: "blk.{bid}.ssm_out", HF: []string{prefix + "out_proj"}, Shape: []Dim{DimHidden, DimInner}, Optional: optional},
	}
	for i := range ts {
		ts[i].Mixers = in
		if ts[i].GGUF == "blk.{bid}.ssm_dt" {
			ts[i].Mixers = []Mixer{Mamba2}
		}
	}
	return ts
}

// mamba2DTBias reads dt_bias as the bias of the mixer's ssm_dt role
// (mamba2Tensors).
var mamba2DTBias = map[string]string{".dt_bias": ".bias"}

// ssmParam is one of llama.cpp's ssm.* keys read from the first present of
// config.json's keys hf, as the hybrid converters' find_hparam reads them
// (the keys, then each with the "mamba_" prefix), written back to out on
// GGUF → HF.
func ssmParam(key string, need Need, def float64, out string, hf ...string) Param {
	keys := append([]string(nil), hf...)
	for _, k := range hf {
		keys = append(keys, "mamba_"+k)
	}
	return Param{Key: key, HF: keys, Out: out, Kind: tensor.KindUint32, Need: need, Default: def}
}
