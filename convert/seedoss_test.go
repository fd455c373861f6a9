package convert

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestSeedOssRopeScaling: the newer converter writes no llama3 frequency
// factors for Seed-OSS (only its LlamaModel does), so a config.json with
// a llama3 rope_scaling is refused naming the key rather than converted
// into a GGUF that rotates unscaled; a linear one is written as LLaMA's.
func TestSeedOssRopeScaling(t *testing.T) {
	t.Parallel()
	src := "../testdata/arch/seedoss/hf"
	for _, tc := range []struct {
		name string
		rs   map[string]any
		ok   bool
	}{
		{"none", nil, true},
		{"linear", map[string]any{"rope_type": "linear", "factor": 2.0}, true},
		{"llama3", map[string]any{"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
			"high_freq_factor": 4.0, "original_max_position_embeddings": 64}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := withConfig(t, src, "x/seedoss", "rope_scaling", tc.rs)
			_, err := Run(dir, filepath.Join(t.TempDir(), "out.gguf"), Options{OutType: OutF32})
			switch {
			case tc.ok && err != nil:
				t.Fatal(err)
			case !tc.ok && (err == nil || !strings.Contains(err.Error(), "rope_scaling")):
				t.Fatalf("err = %v, want a refusal naming rope_scaling", err)
			}
		})
	}
}
