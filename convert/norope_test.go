package convert

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoRopeLayersOtherPattern: SmolLM3's GGUF cannot say which layers
// skip RoPE (llama.cpp's graph fixes every fourth), so a config.json whose
// no_rope_layers follow another pattern is refused, naming the key, rather
// than converted into a model that computes something else. The fixture's
// own list converts.
func TestNoRopeLayersOtherPattern(t *testing.T) {
	t.Parallel()
	src := "../testdata/arch/smollm3/hf"
	for _, tc := range []struct {
		name   string
		layers []int
		ok     bool
	}{
		{"fixture", []int{1, 1, 1, 0}, true},
		{"second", []int{1, 0, 1, 1}, false},
		{"none", []int{1, 1, 1, 1}, false},
		{"short", []int{1, 1, 1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := withConfig(t, src, "x/smollm3", "no_rope_layers", tc.layers)
			_, err := Run(dir, filepath.Join(t.TempDir(), "out.gguf"), Options{OutType: OutF32})
			switch {
			case tc.ok && err != nil:
				t.Fatal(err)
			case !tc.ok && (err == nil || !strings.Contains(err.Error(), "no_rope_layers")):
				t.Fatalf("err = %v, want a refusal naming no_rope_layers", err)
			}
		})
	}
}

// withConfig copies the Hugging Face fixture src into a Hub-cache-shaped
// folder (hubSnapshot, as repo) whose config.json has key set to v, and
// returns that folder.
func withConfig(t *testing.T, src, repo, key string, v any) string {
	t.Helper()
	return withConfigs(t, src, repo, map[string]any{key: v})
}

// withConfigs is withConfig with every key of kv set (in text_config when
// config.json nests the text model's there).
func withConfigs(t *testing.T, src, repo string, kv map[string]any) string {
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
	for k, v := range kv {
		if tc, ok := cfg["text_config"].(map[string]any); ok {
			tc[k] = v // the text model's key of a multimodal config.json
		} else {
			cfg[k] = v
		}
	}
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
