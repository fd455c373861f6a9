package arch

import (
	"strings"

	"github.com/tfconv/tfconv/tensor"
)

// GGUFTensorType is the type convert_hf_to_gguf.py gives a GGUF tensor for
// the file type want: 1-D tensors, norms (*_norm.weight), position and
// token-type embeddings (an mmproj's: Projector.TensorType), a
// mixture's router (ffn_gate_inp), the recurrent mixers' convolution taps (shortconv.conv, ssm_conv1d), RWKV-7's decay
// projections and token-shift mixes (time_mix_w1/w2, time_mix_lerp_fused)
// and anything not
// named *.weight (biases, stacked expert biases included) stay F32, because
// most of llama.cpp only handles F32 there; everything else gets want,
// except that a block type falls back to F16 when the rows are not whole
// blocks (gguf-py raises QuantError and the converter falls back). convert
// and synth both write by it.
func GGUFTensorType(name string, shape tensor.Shape, want tensor.DType) tensor.DType {
	if len(shape) <= 1 || strings.HasSuffix(name, "_norm.weight") {
		return tensor.F32
	}
	if name == "position_embd.weight" || name == "token_types.weight" || !strings.HasSuffix(name, ".weight") {
		return tensor.F32
	}
	switch pat, _, _ := SplitName(name); pat {
	case "blk.{bid}.ffn_gate_inp":
		return tensor.F32 // a mixture's router (not the shared expert's gate)
	case "blk.{bid}.shortconv.conv", "blk.{bid}.ssm_conv1d":
		return tensor.F32 // the recurrent mixers' depthwise convolutions (LFM2's taps; the gated DeltaNet's)
	case "blk.{bid}.time_mix_w1", "blk.{bid}.time_mix_w2", "blk.{bid}.time_mix_lerp_fused":
		return tensor.F32 // RWKV-7's decay projections and token-shift mixes
	}
	if want.Quantized() && shape[len(shape)-1]%want.BlockSize() != 0 {
		return tensor.F16
	}
	return want
}

// TensorType is GGUFTensorType for a tensor of family f: its F32 roles
// stay F32 as well, and its F16 roles' weight matrices are F16 (a bias
// beside one, 1-D or a column, follows the outtype's rule).
func (f *Family) TensorType(name string, shape tensor.Shape, want tensor.DType) tensor.DType {
	if pat, _, _ := SplitName(name); len(f.F32) > 0 || len(f.F16) > 0 || len(f.Unquantized) > 0 {
		for _, r := range f.F32 {
			if r == pat {
				return tensor.F32
			}
		}
		for _, r := range f.F16 {
			if r == pat && len(shape) >= 2 && strings.HasSuffix(name, ".weight") {
				return tensor.F16
			}
		}
		for _, r := range f.Unquantized {
			if r == pat {
				if want == tensor.F16 {
					return tensor.F16
				}
				return tensor.F32
			}
		}
	}
	return GGUFTensorType(name, shape, want)
}

// hasTypeRole reports whether role pat is one of f's F32, F16 or
// Unquantized roles: TensorType decides its type by the role.
func (f *Family) hasTypeRole(pat string) bool {
	for _, rs := range [][]Role{f.F32, f.F16, f.Unquantized} {
		for _, r := range rs {
			if r == pat {
				return true
			}
		}
	}
	return false
}
