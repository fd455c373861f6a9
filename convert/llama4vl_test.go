package convert

import (
	"path/filepath"
	"strings"
	"testing"
)

// llama4VL is the tiny Llama4ForConditionalGeneration of testdata/vision
// (gen_llama4.py).
var llama4VL = filepath.Join("..", "testdata", "vision", "llama4", "hf")

// TestLlama4VLMatchesLlamaCpp: the tiny Llama4ForConditionalGeneration (a
// 3-layer ViT with 2-D RoPE and a class embedding, the pixel-shuffle
// adapter, the linear projector; Llama 4's MoE text model) converts with
// --mmproj to the text GGUF and the llama4 mmproj llama.cpp d32676d7
// writes, at f32 and f16: keys, values, tensor order, types and bytes (the
// text GGUF but for quantization_version's place; the mmproj byte-identical
// to the converter's file where /work/fixtures-out holds it).
func TestLlama4VLMatchesLlamaCpp(t *testing.T) {
	t.Parallel()
	matchesLlamaCpp(t, "llama4", llama4VL, OutF32, OutF16)
}

// TestLlama4VLModes: without a flag the conversion is refused naming the
// flags; --text-only reports the llama4 projector's tensors left out; what
// llama.cpp's llama4 tower fixes is refused naming the key.
func TestLlama4VLModes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, err := Run(llama4VL, filepath.Join(dir, "m.gguf"), Options{OutType: OutF32})
	if err == nil || !strings.Contains(err.Error(), "--mmproj") || !strings.Contains(err.Error(), "llama4") {
		t.Fatalf("%v, want a refusal naming --mmproj and the llama4 projector", err)
	}
	rep, err := Run(llama4VL, filepath.Join(dir, "t.gguf"), Options{OutType: OutF32, Multimodal: MultimodalText})
	if err != nil {
		t.Fatal(err)
	}
	// 6 outside the blocks (class and position embeddings, patch
	// embedding, two LayerNorms of weight and bias = 7), 3 × 16 in the
	// blocks, 2 of the adapter, 1 of the projector: 7 + 48 + 3
	if rep.LeftOut == nil || rep.LeftOut.Tensors != 58 || rep.LeftOut.Projector != "llama4" {
		t.Errorf("--text-only left out %+v, want the llama4 projector's 58 tensors", rep.LeftOut)
	}
	for key, v := range map[string]any{"rope_theta": 500000.0, "hidden_act": "silu", "pixel_shuffle_ratio": 0.3} {
		src := withVisionConfig(t, llama4VL, "x/"+key, key, v)
		if _, err := Run(src, filepath.Join(dir, key+".gguf"), Options{OutType: OutF32, Multimodal: MultimodalProjector}); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("vision_config %s %v: %v, want a refusal naming it", key, v, err)
		}
	}
	// GGUF → HF of the pair: refused (the record writes no Hugging Face
	// side for it yet).
	mm := filepath.Join(dir, "mm.gguf")
	if _, err := Run(llama4VL, mm, Options{OutType: OutF32, Multimodal: MultimodalProjector}); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(filepath.Join(dir, "t.gguf"), filepath.Join(dir, "back"), Options{MmprojFile: mm}); err == nil || !strings.Contains(err.Error(), "llama4") {
		t.Errorf("GGUF → HF with a llama4 mmproj: %v, want a refusal naming it", err)
	}
}
