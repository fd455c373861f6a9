package arch

import (
	"slices"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

// TestSplitAxis: a Split with an Axis cuts a [2][3][2][2][2] tensor into its
// two slices along axis 3 ([2][3][2][2] each, element for element as
// numpy's w[:, :, k] gives them), leaves a bias (which lacks the axis) whole
// to the first part, and GGUF → HF stacks the slices back into the
// original bytes.
func TestSplitAxis(t *testing.T) {
	t.Parallel()
	f := &Family{Name: "t", Tensors: []Tensor{
		{GGUF: "v.patch_embd", HF: []string{"p.proj"}, Split: &Split{Part: 1, Axis: 3}},
		{GGUF: "v.patch_embd.weight.1", HF: []string{"p.proj"}, Split: &Split{Part: 2, Axis: 3}, NoSuffixGGUF: true},
	}}
	shape := tensor.Shape{2, 3, 2, 2, 2}
	n := int(elems(shape))
	src := make([]float32, n)
	for i := range src {
		src[i] = float32(i)
	}
	c := Config{"num_attention_heads": 1}
	maps, _, err := f.ToGGUF(c, []tensor.Info{{Name: "p.proj.weight", Shape: shape, DType: tensor.F32}, {Name: "p.proj.bias", Shape: tensor.Shape{2}, DType: tensor.F32}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]float32{}
	var infos []tensor.Info
	for _, m := range maps {
		if m.Source == "p.proj.bias" {
			if m.Name != "v.patch_embd.bias" || m.Transform != nil {
				t.Errorf("bias → %s (transform %v), want v.patch_embd.bias whole", m.Name, m.Transform != nil)
			}
			continue
		}
		if !m.Shape.Equal(tensor.Shape{2, 3, 2, 2}) {
			t.Fatalf("%s: shape %v, want [2 3 2 2]", m.Name, m.Shape)
		}
		dst := make([]float32, n/2)
		m.Transform(dst, src)
		got[m.Name] = dst
		infos = append(infos, tensor.Info{Name: m.Name, Shape: m.Shape, DType: tensor.F32})
	}
	for k, name := range []string{"v.patch_embd.weight", "v.patch_embd.weight.1"} {
		var want []float32
		for o := 0; o < 6; o++ { // [out][in] pairs
			want = append(want, src[o*8+k*4:o*8+k*4+4]...)
		}
		if !slices.Equal(got[name], want) {
			t.Errorf("%s = %v, want %v", name, got[name], want)
		}
	}
	back, _, err := f.ToHF(tensor.Metadata{{Key: "t.attention.head_count", Value: tensor.Uint32(1)}}, infos)
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != 1 || back[0].Name != "p.proj.weight" || !back[0].Shape.Equal(shape) {
		t.Fatalf("GGUF → HF: %+v, want p.proj.weight %v", back, shape)
	}
	joined := make([]float32, n)
	var stacked []float32
	for _, s := range back[0].Stack {
		stacked = append(stacked, got[s]...)
	}
	back[0].Transform(joined, stacked)
	if !slices.Equal(joined, src) {
		t.Errorf("joined back %v, want %v", joined, src)
	}
}
