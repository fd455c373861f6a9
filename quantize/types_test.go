package quantize

import (
	"strings"
	"testing"

	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/tensor"
)

// quantize's type lists agree with quant's records: every --type's base
// type has an encoder (with importance weights when the record needs them),
// a single-type target carries its record's file type, and the per-tensor
// types are exactly the records that allow it.
func TestTargetsFollowTypeRecords(t *testing.T) {
	t.Parallel()
	for _, tg := range targets {
		if tg.Copy || tg.Type == tensor.I8 {
			continue
		}
		r, ok := quant.Lookup(tg.Type)
		if !ok || r.Encode == nil && r.EncodeRows == nil {
			t.Errorf("--type %s: %v has no encoder", tg.Name, tg.Type)
			continue
		}
		if ft, ok := quant.FileTypeOf(tg.Type); ok && tg.Name == strings.ToLower(tg.Type.String()) && uint32(tg.FileType) != ft {
			t.Errorf("--type %s: file type %d, its record's %d", tg.Name, tg.FileType, ft)
		}
	}
	want := map[tensor.DType]bool{}
	for _, d := range quant.TensorTypes() {
		want[d] = true
	}
	for _, d := range tensor.All() {
		_, err := ParseTensorType(strings.ToLower(d.String()))
		if (err == nil) != want[d] {
			t.Errorf("ParseTensorType(%v): %v; its record allows it: %v", d, err, want[d])
		}
	}
	if len(want) != 20 { // 18, and NVFP4 and Q1_0 of llama.cpp 2026
		t.Errorf("%d per-tensor types, want 20", len(want))
	}
	for _, name := range []string{"iq1_s.weight", "blk.0.ffn_down.weight"} {
		for _, d := range []tensor.DType{tensor.IQ2_XXS, tensor.IQ2_XS, tensor.IQ2_S, tensor.IQ1_S, tensor.IQ1_M, tensor.Q4_K} {
			if got := needsImatrix(name, d); got != (d != tensor.Q4_K) {
				t.Errorf("needsImatrix(%s, %v) = %v", name, d, got)
			}
		}
	}
	// llama_tensor_get_type's fallback table (llama.cpp c392e509).
	var fb []string
	for _, d := range tensor.All() {
		if f := fallback(d); f != tensor.Invalid {
			fb = append(fb, d.String()+">"+f.String())
		}
	}
	if got, want := strings.Join(fb, " "), "Q2_K>IQ4_NL Q3_K>IQ4_NL Q4_K>Q5_0 Q5_K>Q5_1 Q6_K>Q8_0 IQ2_XXS>IQ4_NL IQ2_XS>IQ4_NL "+
		"IQ3_XXS>IQ4_NL IQ1_S>IQ4_NL IQ3_S>IQ4_NL IQ2_S>IQ4_NL IQ4_XS>IQ4_NL IQ1_M>IQ4_NL TQ1_0>Q4_0 TQ2_0>Q4_0"; got != want {
		t.Errorf("fallbacks %s\nwant %s", got, want)
	}
	if needsImatrix("output.weight", tensor.IQ1_M) || !needsImatrix("output.weight", tensor.IQ1_S) {
		t.Error("IQ1_M's output.weight exception")
	}
}
