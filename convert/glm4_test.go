package convert

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestGlmRopeScaling: tfconv runs GLM-4 and GLM-4.5 without RoPE scaling,
// so a config.json with a rope_scaling is refused naming the key rather
// than converted into a GGUF whose scaling tfconv could not check; null
// converts.
func TestGlmRopeScaling(t *testing.T) {
	t.Parallel()
	for _, fam := range []string{"glm4", "glm4moe"} {
		for _, tc := range []struct {
			name string
			rs   map[string]any
			ok   bool
		}{
			{"none", nil, true},
			{"yarn", map[string]any{"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32}, false},
		} {
			t.Run(fam+"/"+tc.name, func(t *testing.T) {
				dir := withConfig(t, "../testdata/arch/"+fam+"/hf", "x/"+fam, "rope_scaling", tc.rs)
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
}
