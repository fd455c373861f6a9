package convert

import (
	"testing"

	"github.com/tfconv/tfconv/arch"
	"github.com/tfconv/tfconv/tensor"
)

// TestRouterStaysF32 checks the converter's rule for a mixture's router:
// blk.N.ffn_gate_inp stays F32 whatever --outtype says (llama.cpp's
// convert_hf_to_gguf.py and llama-quantize keep it so); the shared
// expert's gate is an ordinary matrix.
func TestRouterStaysF32(t *testing.T) {
	shape := tensor.Shape{8, 64}
	if got := arch.GGUFTensorType("blk.3.ffn_gate_inp.weight", shape, tensor.F16); got != tensor.F32 {
		t.Errorf("router: %v, want F32", got)
	}
	if got := arch.GGUFTensorType("blk.3.ffn_gate_inp_shexp.weight", tensor.Shape{1, 64}, tensor.BF16); got != tensor.BF16 {
		t.Errorf("shared expert gate: %v, want BF16", got)
	}
	if got := arch.GGUFTensorType("blk.3.ffn_gate_exps.weight", tensor.Shape{8, 128, 64}, tensor.F16); got != tensor.F16 {
		t.Errorf("experts: %v, want F16", got)
	}
}
