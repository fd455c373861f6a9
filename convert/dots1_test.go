package convert

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestDots1LayerTypes: transformers' dots1 masks keys beyond sliding_window
// in the layers layer_types calls sliding_attention, which llama.cpp's
// dots1 (no window) cannot do: such a config.json is refused naming the
// key rather than converted into a GGUF that attends to every key; the
// fixture's all-full list converts.
func TestDots1LayerTypes(t *testing.T) {
	t.Parallel()
	src := "../testdata/arch/dots1/hf"
	for _, tc := range []struct {
		name  string
		types []any
		ok    bool
	}{
		{"full", []any{"full_attention", "full_attention", "full_attention"}, true},
		{"sliding", []any{"full_attention", "full_attention", "sliding_attention"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := withConfig(t, src, "x/dots1", "layer_types", tc.types)
			_, err := Run(dir, filepath.Join(t.TempDir(), "out.gguf"), Options{OutType: OutF32})
			switch {
			case tc.ok && err != nil:
				t.Fatal(err)
			case !tc.ok && (err == nil || !strings.Contains(err.Error(), "layer_types")):
				t.Fatalf("err = %v, want a refusal naming layer_types", err)
			}
		})
	}
}
