package convert

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestMistral3Text: Mistral3ForConditionalGeneration converts with
// --text-only to its text model's GGUF with the Pixtral vision tower
// dropped and said in a warning (a conversion naming no half is refused:
// TestMistral3VLModes); a text_config the mistral3 GGUF would
// compute otherwise (a sliding window, which llama.cpp's mistral3 graph
// lacks; rope scaling; a ministral3 text model with its YaRN keys) is
// refused naming the key.
func TestMistral3Text(t *testing.T) {
	t.Parallel()
	src := "../testdata/arch/mistral3/hf"
	for _, tc := range []struct {
		name string
		kv   map[string]any
		key  string // "" converts
	}{
		{"fixture", nil, ""},
		{"window", map[string]any{"sliding_window": 4096}, "sliding_window"},
		{"rope_scaling", map[string]any{"rope_scaling": map[string]any{"rope_type": "yarn", "factor": 4.0}}, "rope_scaling"},
		{"ministral3", map[string]any{"model_type": "ministral3"}, "model_type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := withConfigs(t, src, "x/mistral3", tc.kv)
			rep, err := Run(dir, filepath.Join(t.TempDir(), "out.gguf"), Options{OutType: OutF32, Multimodal: MultimodalText})
			if tc.key != "" {
				if err == nil || !strings.Contains(err.Error(), tc.key) {
					t.Fatalf("err = %v, want a refusal naming %s", err, tc.key)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			vision := 0
			for _, d := range rep.Dropped {
				if strings.HasPrefix(d.Name, "vision_tower.") || strings.HasPrefix(d.Name, "multi_modal_projector.") {
					vision++
				}
			}
			warned := false
			for _, w := range rep.Warnings {
				warned = warned || strings.Contains(w, "15 tensors left out") && strings.Contains(w, "vision tower")
			}
			if vision != 15 || !warned {
				t.Errorf("%d vision tensors dropped (the checkpoint has 15), warnings %q", vision, rep.Warnings)
			}
		})
	}
}
