package convert

import (
	"strconv"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/arch"
	"github.com/tfconv/tfconv/tensor"
)

// TestStackedRoles checks StableLM's per-head norms both ways on names
// alone: the HF parts become one stacked GGUF tensor at the place of the
// last part, a missing or doubled part is an error naming it, and GGUF →
// HF cuts the stack back into one tensor per head.
func TestStackedRoles(t *testing.T) {
	a := family{arch.StableLM}
	var in []tensor.Info
	add := func(name string, shape ...int64) {
		in = append(in, tensor.Info{Name: name, DType: tensor.F32, Shape: shape})
	}
	for h := 0; h < 2; h++ {
		add("model.layers.0.self_attn.k_layernorm.norms."+strconv.Itoa(h)+".weight", 16)
	}
	add("model.layers.0.self_attn.k_proj.weight", 32, 64)
	for h := 0; h < 4; h++ {
		add("model.layers.0.self_attn.q_layernorm.norms."+strconv.Itoa(h)+".weight", 16)
	}
	maps, _, err := a.mapFamily(in, true, 4, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range maps {
		names = append(names, m.Name)
	}
	want := "blk.0.attn_k_norm.weight blk.0.attn_k.weight blk.0.attn_q_norm.weight"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("GGUF tensors %q, want %q", got, want)
	}
	if q := maps[2]; !q.Shape.Equal(tensor.Shape{4, 16}) || len(q.Stack) != 4 || q.Stack[3] != "model.layers.0.self_attn.q_layernorm.norms.3.weight" {
		t.Fatalf("q norm mapping %+v", q)
	}

	_, _, err = a.mapFamily(in[:len(in)-1], true, 4, 2, 0)
	if err == nil || !strings.Contains(err.Error(), "blk.0.attn_q_norm.weight") || !strings.Contains(err.Error(), "[3]") {
		t.Fatalf("missing part: %v", err)
	}
	dup := append(append([]tensor.Info(nil), in...), in[0])
	if _, _, err = a.mapFamily(dup, true, 4, 2, 0); err == nil || !strings.Contains(err.Error(), "both part 0") {
		t.Fatalf("doubled part: %v", err)
	}
	bad := append(append([]tensor.Info(nil), in[:2]...), tensor.Info{Name: "model.layers.0.self_attn.q_layernorm.norms.4.weight", DType: tensor.F32, Shape: tensor.Shape{16}})
	if _, _, err = a.mapFamily(bad, true, 4, 2, 0); err == nil || !strings.Contains(err.Error(), "index 4 out of 4") {
		t.Fatalf("part past the head count: %v", err)
	}

	back, _, err := a.mapFamily([]tensor.Info{{Name: "blk.0.attn_q_norm.weight", DType: tensor.F32, Shape: tensor.Shape{4, 16}}}, false, 4, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != 4 || back[2].Name != "model.layers.0.self_attn.q_layernorm.norms.2.weight" || back[2].Part != 2 ||
		back[2].Parts != 4 || !back[2].Shape.Equal(tensor.Shape{16}) {
		t.Fatalf("GGUF → HF: %+v", back)
	}
	if _, _, err = a.mapFamily([]tensor.Info{{Name: "blk.0.attn_q_norm.weight", DType: tensor.F32, Shape: tensor.Shape{3, 16}}}, false, 4, 2, 0); err == nil {
		t.Fatal("a stack of 3 accepted for 4 heads")
	}
}

// TestRouterStaysF32 checks the converter's rule for a mixture's router:
// blk.N.ffn_gate_inp stays F32 whatever --outtype says (llama.cpp's
// convert_hf_to_gguf.py and llama-quantize keep it so); the shared
// expert's gate is an ordinary matrix.
func TestRouterStaysF32(t *testing.T) {
	shape := tensor.Shape{8, 64}
	if got := GGUFTensorType("blk.3.ffn_gate_inp.weight", shape, tensor.F16); got != tensor.F32 {
		t.Errorf("router: %v, want F32", got)
	}
	if got := GGUFTensorType("blk.3.ffn_gate_inp_shexp.weight", tensor.Shape{1, 64}, tensor.BF16); got != tensor.BF16 {
		t.Errorf("shared expert gate: %v, want BF16", got)
	}
	if got := GGUFTensorType("blk.3.ffn_gate_exps.weight", tensor.Shape{8, 128, 64}, tensor.F16); got != tensor.F16 {
		t.Errorf("experts: %v, want F16", got)
	}
}
