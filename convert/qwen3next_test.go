package convert

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/tensor"
)

// TestQwen3NextF16Types converts the qwen3next fixture at f16 and checks
// which tensors stay F32: those llama.cpp d32676d7's converter keeps F32
// when run with --outtype f16 on the same checkpoint (1-D tensors, norms,
// the bias, the router, and also the shared expert's gate and the
// DeltaNet's convolution), listed here from that run.
func TestQwen3NextF16Types(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "q.gguf")
	if _, err := Run(filepath.Join("..", "testdata", "arch", "qwen3next", "hf"), out, Options{OutType: OutF16}); err != nil {
		t.Fatal(err)
	}
	c, err := checkpoint.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var f32 []string
	for _, ti := range c.Tensors {
		switch ti.DType {
		case tensor.F32:
			f32 = append(f32, ti.Name)
		case tensor.F16:
		default:
			t.Errorf("tensor %q is %v", ti.Name, ti.DType)
		}
	}
	var want []string
	for _, b := range []string{"0", "1", "2"} {
		want = append(want, "blk."+b+".attn_norm.weight", "blk."+b+".post_attention_norm.weight",
			"blk."+b+".ffn_gate_inp.weight", "blk."+b+".ffn_gate_inp_shexp.weight")
	}
	want = append(want, "blk.0.ssm_a", "blk.0.ssm_conv1d.weight", "blk.0.ssm_dt.bias", "blk.0.ssm_norm.weight",
		"blk.1.attn_q_norm.weight", "blk.1.attn_k_norm.weight", "blk.2.attn_q_norm.weight", "blk.2.attn_k_norm.weight",
		"blk.2.nextn.enorm.weight", "blk.2.nextn.hnorm.weight", "blk.2.nextn.shared_head_norm.weight", "output_norm.weight")
	slices.Sort(f32)
	slices.Sort(want)
	if !slices.Equal(f32, want) {
		t.Errorf("F32 tensors %v\nthe converter's %v", f32, want)
	}
}
