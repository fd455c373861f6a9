package convert

import (
	"path/filepath"
	"strings"
	"testing"
)

// mistral3VL is the tiny Mistral3ForConditionalGeneration of testdata/vision
// (gen_pixtral.py).
var mistral3VL = filepath.Join("..", "testdata", "vision", "mistral3", "hf")

// TestMistral3VLMatchesLlamaCpp: the tiny Mistral3ForConditionalGeneration
// (a Pixtral tower, Mistral 3's patch merger and projection) converts with
// --mmproj to the text GGUF and the pixtral mmproj llama.cpp d32676d7
// writes, at f32, f16 and q8_0: keys, values, tensor order, types and bytes
// (the tower's Q/K rows permuted per head; the patch embedding and merger
// F32 at q8_0, F16 at f16).
func TestMistral3VLMatchesLlamaCpp(t *testing.T) {
	t.Parallel()
	matchesLlamaCpp(t, "mistral3", mistral3VL, OutF32, OutF16, OutQ8_0)
}

// TestMistral3VLModes: without a flag the conversion is refused naming the
// flags; --text-only reports the pixtral projector's 35 tensors left out.
func TestMistral3VLModes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, err := Run(mistral3VL, filepath.Join(dir, "m.gguf"), Options{OutType: OutF32})
	if err == nil || !strings.Contains(err.Error(), "--mmproj") || !strings.Contains(err.Error(), "pixtral") {
		t.Fatalf("%v, want a refusal naming --mmproj and the pixtral projector", err)
	}
	rep, err := Run(mistral3VL, filepath.Join(dir, "t.gguf"), Options{OutType: OutF32, Multimodal: MultimodalText})
	if err != nil {
		t.Fatal(err)
	}
	// 2 + 3·9 tower tensors, 4 of the projection
	if rep.LeftOut == nil || rep.LeftOut.Tensors != 33 || rep.LeftOut.Projector != "pixtral" {
		t.Errorf("--text-only left out %+v, want the pixtral projector's 33 tensors", rep.LeftOut)
	}
}
