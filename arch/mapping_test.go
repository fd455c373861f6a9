package arch

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

func TestNames(t *testing.T) {
	for _, c := range []struct{ arch, hf, gguf string }{
		{"llama", "model.layers.3.self_attn.q_proj.weight", "blk.3.attn_q.weight"},
		{"llama", "lm_head.weight", "output.weight"},
		{"gpt2", "transformer.h.11.attn.c_attn.bias", "blk.11.attn_qkv.bias"},
		{"bert", "encoder.layer.0.output.LayerNorm.weight", "blk.0.layer_output_norm.weight"},
		{"t5", "encoder.block.1.layer.1.DenseReluDense.wo.weight", "enc.blk.1.ffn_down.weight"},
		{"t5", "decoder.block.0.layer.1.EncDecAttention.q.weight", "dec.blk.0.cross_attn_q.weight"},
		// no suffix in either form
		{"mamba", "backbone.layers.2.mixer.A_log", "blk.2.ssm_a"},
		{"mamba", "backbone.layers.0.mixer.D", "blk.0.ssm_d"},
		{"mamba", "backbone.layers.1.mixer.conv1d.bias", "blk.1.ssm_conv1d.bias"},
	} {
		if g, ok := GGUFName(c.arch, c.hf); !ok || g != c.gguf {
			t.Errorf("GGUFName(%s, %s) = %q %v, want %q", c.arch, c.hf, g, ok, c.gguf)
		}
		if h, ok := HFName(c.arch, c.gguf); !ok || h != c.hf {
			t.Errorf("HFName(%s, %s) = %q %v, want %q", c.arch, c.gguf, h, ok, c.hf)
		}
	}
	if _, ok := GGUFName("llama", "model.layers.0.self_attn.rotary_emb.inv_freq"); ok {
		t.Error("inv_freq has a GGUF name")
	}
	if _, err := Lookup("xlstm"); err == nil || !strings.Contains(err.Error(), "llama") || !errors.Is(err, tensor.ErrUnsupported) {
		t.Errorf("unknown arch error: %v", err)
	}
}

// TestStackedRoles checks StableLM's per-head norms both ways on names
// alone: the HF parts become one stacked GGUF tensor at the place of the
// last part, a missing or doubled part is an error naming it, and GGUF →
// HF cuts the stack back into one tensor per head.
func TestStackedRoles(t *testing.T) {
	a := StableLM
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
	maps, _, err := a.mapTensors(in, true, 4, 2, 0)
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

	_, _, err = a.mapTensors(in[:len(in)-1], true, 4, 2, 0)
	if err == nil || !strings.Contains(err.Error(), "blk.0.attn_q_norm.weight") || !strings.Contains(err.Error(), "[3]") {
		t.Fatalf("missing part: %v", err)
	}
	dup := append(append([]tensor.Info(nil), in...), in[0])
	if _, _, err = a.mapTensors(dup, true, 4, 2, 0); err == nil || !strings.Contains(err.Error(), "both part 0") {
		t.Fatalf("doubled part: %v", err)
	}
	bad := append(append([]tensor.Info(nil), in[:2]...), tensor.Info{Name: "model.layers.0.self_attn.q_layernorm.norms.4.weight", DType: tensor.F32, Shape: tensor.Shape{16}})
	if _, _, err = a.mapTensors(bad, true, 4, 2, 0); err == nil || !strings.Contains(err.Error(), "index 4 out of 4") {
		t.Fatalf("part past the head count: %v", err)
	}

	back, _, err := a.mapTensors([]tensor.Info{{Name: "blk.0.attn_q_norm.weight", DType: tensor.F32, Shape: tensor.Shape{4, 16}}}, false, 4, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != 4 || back[2].Name != "model.layers.0.self_attn.q_layernorm.norms.2.weight" || back[2].Part != 2 ||
		back[2].Parts != 4 || !back[2].Shape.Equal(tensor.Shape{16}) {
		t.Fatalf("GGUF → HF: %+v", back)
	}
	if _, _, err = a.mapTensors([]tensor.Info{{Name: "blk.0.attn_q_norm.weight", DType: tensor.F32, Shape: tensor.Shape{3, 16}}}, false, 4, 2, 0); err == nil {
		t.Fatal("a stack of 3 accepted for 4 heads")
	}
}
