package convert

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestDeepSeekYaRNRamp: the deepseek2 GGUF form keeps YaRN's factor,
// original context and mscale_all_dim but not its ramp (beta_fast,
// beta_slow: llama.cpp computes with 32 and 1) nor a separate mscale, so a
// Kimi-K2-shaped config.json (model_type kimi_k2, DeepseekV3ForCausalLM,
// beta_fast 1) is refused naming the key rather than converted into a GGUF
// that rotates with another ramp; DeepSeek-V3's own values convert.
func TestDeepSeekYaRNRamp(t *testing.T) {
	t.Parallel()
	src := "../testdata/arch/deepseek3/hf"
	yarn := func(fast, slow, mscale float64) map[string]any {
		return map[string]any{"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16,
			"beta_fast": fast, "beta_slow": slow, "mscale": mscale, "mscale_all_dim": 1.0}
	}
	for _, tc := range []struct {
		name string
		rs   map[string]any
		key  string // "" converts
	}{
		{"deepseek-v3", yarn(32, 1, 1), ""},
		{"kimi-k2", yarn(1, 1, 1), "beta_fast"},
		{"beta_slow", yarn(32, 2, 1), "beta_slow"},
		{"mscale", yarn(32, 1, 0.707), "mscale"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := withConfig(t, src, "x/kimi", "rope_scaling", tc.rs)
			dir = withConfig(t, dir, "x/kimi2", "model_type", "kimi_k2")
			rep, err := Run(dir, filepath.Join(t.TempDir(), "out.gguf"), Options{OutType: OutF32})
			switch {
			case tc.key == "" && err != nil:
				t.Fatal(err)
			case tc.key == "" && rep.Arch != "deepseek2":
				t.Fatalf("arch %q, want deepseek2", rep.Arch)
			case tc.key != "" && (err == nil || !strings.Contains(err.Error(), "rope_scaling."+tc.key)):
				t.Fatalf("err = %v, want a refusal naming rope_scaling.%s", err, tc.key)
			}
		})
	}
}
