package convert

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestDeepSeekYaRNRamp: the newer converter's deepseek2 form keeps YaRN's
// ramp (rope.scaling.yarn_beta_fast/slow), so a Kimi-K2-shaped config.json
// (model_type kimi_k2, DeepseekV3ForCausalLM, beta_fast 1) converts, with
// its ramp, and with the latent's key_length and value_length where the
// converter writes them for a model type transformers does not know:
// after kv_lora_rank (for deepseek_v3, among TextModel's keys, before
// general.file_type). A separate mscale is still refused naming the key:
// the GGUF keeps mscale_all_dim alone.
func TestDeepSeekYaRNRamp(t *testing.T) {
	t.Parallel()
	src := "../testdata/arch/deepseek3/hf"
	yarn := func(fast, slow, mscale float64) map[string]any {
		return map[string]any{"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16,
			"beta_fast": fast, "beta_slow": slow, "mscale": mscale, "mscale_all_dim": 1.0}
	}
	for _, tc := range []struct {
		name      string
		modelType string
		rs        map[string]any
		key       string // "" converts
		fast      float64
		late      bool // key_length after kv_lora_rank
	}{
		{"deepseek-v3", "deepseek_v3", yarn(32, 1, 1), "", 32, false},
		{"kimi-k2", "kimi_k2", yarn(1, 1, 1), "", 1, true},
		{"mscale", "kimi_k2", yarn(32, 1, 0.707), "mscale", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := withConfigs(t, src, "x/kimi", map[string]any{"rope_scaling": tc.rs, "model_type": tc.modelType})
			out := filepath.Join(t.TempDir(), "out.gguf")
			rep, err := Run(dir, out, Options{OutType: OutF32})
			switch {
			case tc.key != "":
				if err == nil || !strings.Contains(err.Error(), "rope_scaling."+tc.key) {
					t.Fatalf("err = %v, want a refusal naming rope_scaling.%s", err, tc.key)
				}
				return
			case err != nil:
				t.Fatal(err)
			case rep.Arch != "deepseek2":
				t.Fatalf("arch %q, want deepseek2", rep.Arch)
			}
			md, _ := ggufMeta(t, out)
			if v, _ := md.Get("deepseek2.rope.scaling.yarn_beta_fast"); func() float64 { f, _ := v.Float(); return f }() != tc.fast {
				t.Errorf("yarn_beta_fast %v, want %v", v, tc.fast)
			}
			keys := make([]string, len(md))
			for i, kv := range md {
				keys[i] = kv.Key
			}
			kl := slices.Index(keys, "deepseek2.attention.key_length")
			lora := slices.Index(keys, "deepseek2.attention.kv_lora_rank")
			ft := slices.Index(keys, "general.file_type")
			if kl < 0 || lora < 0 || ft < 0 || (kl > lora) != tc.late || (kl < ft) == tc.late {
				t.Errorf("key_length at %d, kv_lora_rank at %d, file_type at %d: want key_length late %v", kl, lora, ft, tc.late)
			}
			if n, _ := md.Int("deepseek2.attention.key_length"); n != 16+8 {
				t.Errorf("key_length %d, want kv_lora_rank + qk_rope_head_dim = 24", n)
			}
		})
	}
}
