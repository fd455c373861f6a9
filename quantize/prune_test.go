package quantize

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/tensor"
)

func TestParsePruneLayers(t *testing.T) {
	for in, want := range map[string][]int{"1,3": {1, 3}, "3,1,3": {1, 3}, " 0 , 7": {0, 7}, "5": {5}} {
		got, err := ParsePruneLayers(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%q: %v %v, want %v", in, got, err, want)
		}
	}
	// llama-quantize's stoi would read "2x" as 2 and "" as an error.
	for _, in := range []string{"", "1,", "-1", "2x", "1;3", "a"} {
		if got, err := ParsePruneLayers(in); err == nil {
			t.Errorf("%q: %v, want an error", in, got)
		}
	}
}

// Pruning renames the blocks after a pruned one down (blk.2 of 8 pruned of
// 1 and 3 is blk.1, blk.4 is blk.2), leaves the others, and the plan keeps
// llama-quantize's order; a layer out of range, or every layer, is refused.
func TestPlanPruneLayers(t *testing.T) {
	c := open(t, filepath.Join(testdata, "mixtures-f16.gguf"))
	q8 := target(t, "q8_0")
	plan, err := Plan(c, Options{Target: q8, PruneLayers: []int{1, 3}})
	if err != nil {
		t.Fatal(err)
	}
	full, err := Plan(c, Options{Target: q8})
	if err != nil {
		t.Fatal(err)
	}
	// The mixtures model has 9 tensors per block and 3 outside.
	if len(full) != 3+8*9 || len(plan) != 3+6*9 {
		t.Fatalf("%d and %d choices", len(full), len(plan))
	}
	from := map[string]string{"blk.0.": "blk.0.", "blk.2.": "blk.1.", "blk.4.": "blk.2.", "blk.5.": "blk.3.", "blk.6.": "blk.4.", "blk.7.": "blk.5."}
	var want []string
	for _, ch := range full {
		n := ch.Tensor.Name
		if !strings.HasPrefix(n, "blk.") {
			want = append(want, n)
			continue
		}
		for old, nu := range from {
			if strings.HasPrefix(n, old) {
				want = append(want, nu+strings.TrimPrefix(n, old))
			}
		}
	}
	var got []string
	for _, ch := range plan {
		got = append(got, ch.Tensor.Name)
	}
	if !slices.Equal(got, want) {
		t.Errorf("pruned names\n%v\nwant\n%v", got, want)
	}
	// The renamed tensors read their input's data.
	for _, ch := range plan {
		if ch.Tensor.Name == "blk.1.attn_q.weight" {
			orig, _ := c.Tensor("blk.2.attn_q.weight")
			if ch.Tensor.Offset != orig.Offset || ch.Tensor.File != orig.File {
				t.Errorf("blk.1.attn_q.weight reads %s@%d, want blk.2's %s@%d", ch.Tensor.File, ch.Tensor.Offset, orig.File, orig.Offset)
			}
		}
	}
	for _, p := range [][]int{{8}, {0, 1, 2, 3, 4, 5, 6, 7}} {
		if _, err := Plan(c, Options{Target: q8, PruneLayers: p}); err == nil {
			t.Errorf("prune %v of 8 layers: no error", p)
		}
	}
}

// PruneMetadata drops the pruned layers' entries from the per-layer arrays
// llama.cpp reads (llama-quantize leaves them, and llama.cpp then refuses
// the file), leaves other arrays and keys alone, and gives the new
// block_count as a uint32.
func TestPruneMetadata(t *testing.T) {
	m := tensor.Metadata{
		{Key: "general.architecture", Value: tensor.String("llama")},
		{Key: "llama.block_count", Value: tensor.Uint32(4)},
		{Key: "llama.attention.head_count", Value: tensor.ArrayOf([]int32{8, 9, 10, 11})},
		{Key: "llama.feed_forward_length", Value: tensor.ArrayOf([]uint32{100, 101, 102, 103})},
		{Key: "llama.attention.head_count_kv", Value: tensor.Uint32(2)},
		{Key: "llama.rope.dimension_sections", Value: tensor.ArrayOf([]int32{1, 2, 3, 4})},
		{Key: "llama.attention.sliding_window_pattern", Value: tensor.ArrayOf([]bool{true, false, true, false})},
	}
	got, bc, err := PruneMetadata(m, []int{1, 3})
	if err != nil {
		t.Fatal(err)
	}
	want := tensor.Metadata{
		m[0], m[1],
		{Key: "llama.attention.head_count", Value: tensor.ArrayOf([]int32{8, 10})},
		{Key: "llama.feed_forward_length", Value: tensor.ArrayOf([]uint32{100, 102})},
		m[4], m[5],
		{Key: "llama.attention.sliding_window_pattern", Value: tensor.ArrayOf([]bool{true, true})},
	}
	if !got.Equal(want) {
		t.Errorf("metadata %v\nwant %v", got, want)
	}
	if a, _ := m[2].Value.Array(); a.Len() != 4 {
		t.Error("PruneMetadata changed its input")
	}
	if !bc.Value.Equal(tensor.Uint32(2)) || bc.Key != "llama.block_count" {
		t.Errorf("block count %v", bc)
	}
	if _, _, err := PruneMetadata(m, []int{4}); err == nil {
		t.Error("layer 4 of 4: no error")
	}
}

// mxfp4_moe gives stacked experts (ggml ne[2] > 1) MXFP4 and every other
// quantizable tensor Q8_0, token_embd and output included; a row MXFP4
// cannot hold falls back to F16, as tfconv does wherever llama-quantize has
// no fallback type and stops (newer llama-quantize: "no tensor type
// fallback is defined for type mxfp4").
func TestPlanMXFP4MoE(t *testing.T) {
	mk := func(name string, shape ...int64) *checkpoint.Tensor {
		info := tensor.Info{Name: name, DType: tensor.F32, Shape: shape}
		info.Size, _ = info.DType.ShapeBytes(info.Shape)
		return checkpoint.MemTensor(info, nil)
	}
	meta := tensor.Metadata{{Key: "general.architecture", Value: tensor.String("llama")},
		{Key: "llama.block_count", Value: tensor.Uint32(1)}, {Key: "llama.expert_count", Value: tensor.Uint32(4)}}
	ts := []*checkpoint.Tensor{mk("token_embd.weight", 100, 64), mk("output.weight", 100, 64), mk("output_norm.weight", 64),
		mk("blk.0.attn_q.weight", 64, 64), mk("blk.0.ffn_gate_inp.weight", 4, 64),
		mk("blk.0.ffn_up_exps.weight", 4, 96, 64), mk("blk.0.ffn_down_exps.weight", 4, 64, 96),
		mk("blk.0.ffn_up_shexp.weight", 96, 64)}
	c := checkpoint.Assemble("moe.gguf", checkpoint.GGUF, meta, ts)
	plan, err := Plan(c, Options{Target: target(t, "mxfp4_moe")})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]tensor.DType{"token_embd.weight": tensor.Q8_0, "output.weight": tensor.Q8_0, "output_norm.weight": tensor.F32,
		"blk.0.attn_q.weight": tensor.Q8_0, "blk.0.ffn_gate_inp.weight": tensor.F32, "blk.0.ffn_up_exps.weight": tensor.MXFP4,
		"blk.0.ffn_down_exps.weight": tensor.MXFP4, "blk.0.ffn_up_shexp.weight": tensor.Q8_0}
	for _, ch := range plan {
		if ch.Type != want[ch.Tensor.Name] {
			t.Errorf("%s: %v (%s), want %v", ch.Tensor.Name, ch.Type, ch.Reason, want[ch.Tensor.Name])
		}
	}
	if len(plan) != len(want) {
		t.Errorf("%d choices", len(plan))
	}
	ts[6] = mk("blk.0.ffn_down_exps.weight", 4, 64, 80)
	plan, err = Plan(checkpoint.Assemble("moe.gguf", checkpoint.GGUF, meta, ts), Options{Target: target(t, "mxfp4_moe")})
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range plan {
		if ch.Tensor.Name == "blk.0.ffn_down_exps.weight" && (ch.Type != tensor.F16 || !strings.Contains(ch.Reason, "fallback")) {
			t.Errorf("rows of 80 in MXFP4: %v (%s)", ch.Type, ch.Reason)
		}
	}
}
