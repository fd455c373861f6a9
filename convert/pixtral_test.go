package convert

import (
	"encoding/json"
	"os"
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
	text := filepath.Join(dir, "t.gguf")
	rep, err := Run(mistral3VL, text, Options{OutType: OutF32, Multimodal: MultimodalText})
	if err != nil {
		t.Fatal(err)
	}
	// 2 + 3·9 tower tensors, 4 of the projection
	if rep.LeftOut == nil || rep.LeftOut.Tensors != 33 || rep.LeftOut.Projector != "pixtral" {
		t.Errorf("--text-only left out %+v, want the pixtral projector's 33 tensors", rep.LeftOut)
	}
	// What llama.cpp's pixtral graph fixes is refused, naming the key.
	for key, v := range map[string]any{"projector_hidden_act": "silu", "vision_feature_layer": -2} {
		src := withTopConfig(t, mistral3VL, "x/"+key, key, v)
		if _, err := Run(src, filepath.Join(dir, key+".gguf"), Options{OutType: OutF32, Multimodal: MultimodalBoth}); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s %v: %v, want a refusal naming it", key, v, err)
		}
	}
	// GGUF → HF of the pair: refused (no Hugging Face side in the record yet).
	mm := filepath.Join(dir, "mm.gguf")
	if _, err := Run(mistral3VL, mm, Options{OutType: OutF32, Multimodal: MultimodalProjector}); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(text, filepath.Join(dir, "back"), Options{MmprojFile: mm}); err == nil || !strings.Contains(err.Error(), "pixtral") {
		t.Errorf("GGUF → HF with a pixtral mmproj: %v, want a refusal naming it", err)
	}
}

// withTopConfig is a snapshot of src whose config.json has key = v at its
// top level (withConfigs sets a multimodal config's text_config).
func withTopConfig(t *testing.T, src, repo, key string, v any) string {
	t.Helper()
	return withConfigIn(t, src, repo, "", key, v)
}

// withVisionConfig is a snapshot of src whose config.json's vision_config
// has key = v.
func withVisionConfig(t *testing.T, src, repo, key string, v any) string {
	t.Helper()
	return withConfigIn(t, src, repo, "vision_config", key, v)
}

// withConfigIn is a snapshot of src whose config.json has key = v in its
// object obj (the top level when obj is "").
func withConfigIn(t *testing.T, src, repo, obj, key string, v any) string {
	t.Helper()
	dir := hubSnapshot(t, src, repo)
	b, err := os.ReadFile(filepath.Join(src, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	at := cfg
	if obj != "" {
		m, ok := cfg[obj].(map[string]any)
		if !ok {
			t.Fatalf("%s: config.json has no %s object", src, obj)
		}
		at = m
	}
	at[key] = v
	b, _ = json.Marshal(cfg)
	p := filepath.Join(dir, "config.json")
	if err := os.Remove(p); err != nil { // a link to the fixture's
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
