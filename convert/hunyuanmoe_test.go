package convert

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestHunyuanMoEConfig: Hunyuan-A13B's config.json states moe_topk,
// moe_intermediate_size and num_shared_expert once per layer; the converter
// asserts every layer's value is the first and writes that one, so lists
// that differ are refused naming the key. Its alpha scaling assumes alpha
// 1000 and heads of 128 (hidden_size / num_attention_heads), refused
// otherwise naming rope_scaling; BOS is <|bos|> (127959) whatever
// config.json says.
func TestHunyuanMoEConfig(t *testing.T) {
	t.Parallel()
	src := "../testdata/arch/hunyuanmoe/hf"
	for _, tc := range []struct {
		name    string
		kv      map[string]any
		refused string // the key the refusal names; "" converts
		used    int64  // expert_used_count written
	}{
		{"fixture", nil, "", 2},
		{"topk-one", map[string]any{"moe_topk": []any{1, 1}}, "", 1},
		{"topk-int", map[string]any{"moe_topk": 3}, "", 3},
		{"topk-differs", map[string]any{"moe_topk": []any{2, 1}}, "moe_topk", 0},
		{"ffn-differs", map[string]any{"moe_intermediate_size": []any{16, 32}}, "moe_intermediate_size", 0},
		{"shared-differs", map[string]any{"num_shared_expert": []any{1, 2}}, "num_shared_expert", 0},
		{"alpha-narrow-heads", map[string]any{"max_position_embeddings": 32768,
			"rope_scaling": map[string]any{"type": "dynamic", "alpha": 1000.0, "factor": 1.0}}, "rope_scaling", 0},
		{"bos", map[string]any{"bos_token_id": 5}, "", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := src
			if tc.kv != nil {
				dir = withConfigs(t, src, "x/hunyuanmoe-"+tc.name, tc.kv)
			}
			out := filepath.Join(t.TempDir(), "out.gguf")
			_, err := Run(dir, out, Options{OutType: OutF32})
			if tc.refused != "" {
				if err == nil || !strings.Contains(err.Error(), tc.refused) {
					t.Fatalf("err = %v, want a refusal naming %s", err, tc.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			md, _ := ggufMeta(t, out)
			if n, _ := md.Int("hunyuan-moe.expert_used_count"); n != tc.used {
				t.Errorf("expert_used_count %d, want %d", n, tc.used)
			}
			if n, _ := md.Int("hunyuan-moe.expert_shared_count"); n != 1 {
				t.Errorf("expert_shared_count %d, want 1", n)
			}
			if bos, _ := md.Int("tokenizer.ggml.bos_token_id"); bos != 127959 {
				t.Errorf("bos_token_id %d, want 127959", bos)
			}
		})
	}
}
