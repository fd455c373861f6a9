package verify

import (
	"testing"

	"github.com/tfconv/tfconv/checkpoint"
)

// TestDiffLlama4Experts: diff of Llama 4's HF checkpoint against llama.cpp's
// GGUF of it matches every tensor as identical, the GGUF's gate and up
// experts joined back into HF's gate_up_proj (before, the joined tensor's
// canonical shape held twice the elements of the one GGUF tensor read).
func TestDiffLlama4Experts(t *testing.T) {
	a, err := checkpoint.Open("../testdata/arch/llama4/hf")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := checkpoint.Open("../testdata/arch/llama4/gguf/llama4-f32.gguf")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	d, err := Diff(a, b, ConvertNames, ConvertNames)
	if err != nil {
		t.Fatal(err)
	}
	if d.Matched != 45 || d.Identical != 45 || d.Missing+d.Extra+d.Different != 0 {
		t.Errorf("matched %d, identical %d, different %d, missing %d, extra %d; want all 45 identical",
			d.Matched, d.Identical, d.Different, d.Missing, d.Extra)
	}
}
