package quantize

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

// TestIQ2MixturesPlans: for the 2-bit grid mixtures (mixtures-iq2.json,
// llama-quantize c392e509 on mixtures-f16.gguf with mixtures.imatrix.dat,
// which covers every blk.* matrix), Plan chooses the type llama-quantize
// chose for every tensor — IQ3_S included, which cmd/tfconv's
// TestQuantizeMixturesWithFlags cannot yet write — and a tensor the
// matrix does not cover that would be IQ2 is refused, as llama-quantize
// refuses it.
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
		if !strings.HasPrefix(name, "IQ2_") || len(want.Tensors) == 0 {
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
	if n != 5 {
		t.Fatalf("%d IQ2 mixtures in the reference, want 5", n)
	}
	// --pure iq2_m with no types for output and token_embd, which the matrix
	// lacks: output.weight comes first in llama-quantize's order.
	_, err := Plan(c, Options{Target: target(t, "iq2_m"), Imatrix: imp, Pure: true})
	if err == nil || !strings.Contains(err.Error(), `"output.weight"`) || !strings.Contains(err.Error(), "importance matrix") {
		t.Errorf("--pure iq2_m, output not in the imatrix: %v", err)
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
