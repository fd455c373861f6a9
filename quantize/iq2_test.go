package quantize

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/tensor"
)

// TestIQ2MixturesPlans: for the 2-bit grid mixtures (mixtures-iq2.json,
// llama-quantize c392e509 on mixtures-f16.gguf with mixtures.imatrix.dat,
// which covers every blk.* matrix) and the 1-bit ones (mixtures-iq1.json,
// the same way: IQ2_XXS attn_output, Q2_K token_embd and attn_v of
// non-GQA models, and under IQ1_M --pure IQ1_M output and token_embd,
// which the matrix does not cover and llama-quantize quantizes without it),
// Plan chooses the type llama-quantize chose for every tensor, and a
// tensor the matrix does not cover that would be IQ2 is refused, as
// llama-quantize refuses it.
func TestIQ2MixturesPlans(t *testing.T) {
	var ref map[string]struct {
		Tensors [][2]string `json:"tensors"`
		Flags   []string    `json:"flags"`
	}
	readMixtures(t, &ref)
	c := open(t, filepath.Join(testdata, "mixtures-f16.gguf"))
	imp := map[string][]float32{}
	for _, tn := range c.Tensors {
		if strings.HasPrefix(tn.Name, "blk.") && len(tn.Shape) == 2 {
			imp[tn.Name] = make([]float32, tn.Shape.RowLen())
		}
	}
	n := 0
	for name, want := range ref {
		if strings.HasPrefix(name, "8x IQ2_") || strings.HasPrefix(name, "8x IQ1_") {
			n++
			continue // TestIQ2MixturesPlans8x
		}
		if !(strings.HasPrefix(name, "IQ2_") || strings.HasPrefix(name, "IQ1_")) || len(want.Tensors) == 0 {
			continue
		}
		n++
		typ, _, _ := strings.Cut(name, "+")
		opts := Options{Target: target(t, strings.ToLower(typ)), Imatrix: imp}
		for i, f := range want.Flags {
			switch f {
			case "--pure":
				opts.Pure = true
			case "--token-embedding-type":
				opts.EmbeddingType = parseType(t, want.Flags[i+1])
			case "--output-tensor-type":
				opts.OutputType = parseType(t, want.Flags[i+1])
			}
		}
		plan, err := Plan(c, opts)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(plan) != len(want.Tensors) {
			t.Fatalf("%s: %d choices, llama-quantize wrote %d tensors", name, len(plan), len(want.Tensors))
		}
		for i, ch := range plan {
			if ch.Tensor.Name != want.Tensors[i][0] || ch.Type.String() != want.Tensors[i][1] {
				t.Errorf("%s: %s -> %v (%s); llama-quantize: %s -> %s", name, ch.Tensor.Name, ch.Type, ch.Reason, want.Tensors[i][0], want.Tensors[i][1])
			}
		}
	}
	if n != 12 {
		t.Fatalf("%d IQ2 and IQ1 mixtures in the reference, want 12", n)
	}
	// --pure iq2_m with no types for output and token_embd, which the matrix
	// lacks: output.weight comes first in llama-quantize's order.
	_, err := Plan(c, Options{Target: target(t, "iq2_m"), Imatrix: imp, Pure: true})
	if err == nil || !strings.Contains(err.Error(), `"output.weight"`) || !strings.Contains(err.Error(), "importance matrix") {
		t.Errorf("--pure iq2_m, output not in the imatrix: %v", err)
	}
	// --pure iq1_s likewise; iq1_m is not refused there (above).
	_, err = Plan(c, Options{Target: target(t, "iq1_s"), Imatrix: imp, Pure: true})
	if err == nil || !strings.Contains(err.Error(), `"output.weight"`) || !strings.Contains(err.Error(), "importance matrix") {
		t.Errorf("--pure iq1_s, output not in the imatrix: %v", err)
	}
}

func parseType(t *testing.T, s string) tensor.DType {
	t.Helper()
	d, err := ParseTensorType(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestIQ2MixturesPlans8x: on the 8-expert model of mixtures-iq2.json and
// mixtures-iq1.json ("8x IQ2_XXS+imatrix", "8x IQ2_M+imatrix", "8x
// IQ1_S+imatrix", "8x IQ1_M+imatrix": names, shapes and metadata of
// llama-quantize's run with a matrix covering every blk.* weight but the
// expert gate), Plan chooses llama-quantize's type for every tensor:
// attn_k Q4_K and attn_output Q5_K for 8 experts, the stacked ffn_down of
// the first layer (counted) Q2_K or IQ3_S.
func TestIQ2MixturesPlans8x(t *testing.T) {
	var ref map[string]struct {
		Metadata map[string]any `json:"metadata"`
		Tensors  [][3]any       `json:"tensors"`
	}
	readMixtures(t, &ref)
	for _, tc := range []struct{ key, typ string }{
		{"8x IQ2_XXS+imatrix", "iq2_xxs"}, {"8x IQ2_M+imatrix", "iq2_m"}, {"8x IQ1_S+imatrix", "iq1_s"}, {"8x IQ1_M+imatrix", "iq1_m"},
	} {
		r, ok := ref[tc.key]
		if !ok || len(r.Tensors) == 0 {
			t.Fatalf("no %s reference", tc.key)
		}
		meta := tensor.Metadata{{Key: "general.architecture", Value: tensor.String(r.Metadata["general.architecture"].(string))}}
		for _, k := range slices.Sorted(maps.Keys(r.Metadata)) {
			if k != "general.architecture" {
				meta = append(meta, tensor.KV{Key: k, Value: tensor.Uint32(uint32(r.Metadata[k].(float64)))})
			}
		}
		var ts []*checkpoint.Tensor
		imp := map[string][]float32{}
		for _, x := range r.Tensors {
			var shape tensor.Shape
			for _, d := range x[2].([]any) {
				shape = append(shape, int64(d.(float64)))
			}
			name := x[0].(string)
			info := tensor.Info{Name: name, DType: tensor.F16, Shape: shape}
			if len(shape) == 1 {
				info.DType = tensor.F32
			} else if strings.HasPrefix(name, "blk.") && !strings.Contains(name, "ffn_gate_inp") {
				mats := int64(1)
				if len(shape) == 3 {
					mats = shape[0]
				}
				imp[name] = make([]float32, shape.RowLen()*mats)
			}
			info.Size, _ = info.DType.ShapeBytes(shape)
			ts = append(ts, checkpoint.MemTensor(info, nil))
		}
		c := checkpoint.Assemble(tc.key+".gguf", checkpoint.GGUF, meta, ts)
		plan, err := Plan(c, Options{Target: target(t, tc.typ), Imatrix: imp})
		if err != nil {
			t.Fatal(err)
		}
		if len(plan) != len(r.Tensors) {
			t.Fatalf("%s: %d choices, llama-quantize wrote %d tensors", tc.key, len(plan), len(r.Tensors))
		}
		for i, ch := range plan {
			if ch.Tensor.Name != r.Tensors[i][0] || ch.Type.String() != r.Tensors[i][1] {
				t.Errorf("%s: %s -> %v (%s); llama-quantize: %s -> %s", tc.key, ch.Tensor.Name, ch.Type, ch.Reason, r.Tensors[i][0], r.Tensors[i][1])
			}
		}
	}
}
