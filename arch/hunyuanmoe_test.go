package arch

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
)

// hunyuanA13BConfig is the part of tencent/Hunyuan-A13B-Instruct's
// config.json the converter reads (its rope_scaling and per-layer lists as
// published, 32 layers; no head_dim: it states attention_head_dim).
const hunyuanA13BConfig = `{"architectures": ["HunYuanMoEV1ForCausalLM"], "model_type": "hunyuan", "hidden_size": 4096,
 "intermediate_size": 3072, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
 "attention_head_dim": 128, "num_experts": 64, "max_position_embeddings": 32768, "rms_norm_eps": 1e-05,
 "rope_theta": 10000.0, "vocab_size": 128167, "tie_word_embeddings": true,
 "rope_scaling": {"alpha": 1000.0, "beta_fast": 32, "beta_slow": 1, "factor": 1.0, "mscale": 1.0, "mscale_all_dim": 1.0, "type": "dynamic"}}`

// TestHunyuanMoEMetadata: Hunyuan-A13B's config.json gives the keys
// d32676d7's converter writes, in its order (checked against its GGUF of a
// 1-layer HunYuanMoEV1ForCausalLM with heads of 128 and alpha 1000, which
// tfconv converts byte for byte): the alpha scaling baked into
// rope.freq_base (1.115884e+07) with a context of 262144, the expert keys
// after general.file_type from the per-layer lists, then the scaling keys.
func TestHunyuanMoEMetadata(t *testing.T) {
	var c Config
	d := json.NewDecoder(strings.NewReader(hunyuanA13BConfig))
	d.UseNumber()
	if err := d.Decode(&c); err != nil {
		t.Fatal(err)
	}
	list := func(v int) []any {
		out := make([]any, 32)
		for i := range out {
			out[i] = json.Number(fmt.Sprint(v))
		}
		return out
	}
	c["moe_topk"], c["moe_intermediate_size"], c["num_shared_expert"] = list(8), list(3072), list(1)
	f, ok := ForConfig(c)
	if !ok || f != HunyuanMoE {
		t.Fatalf("family %v", f)
	}
	md, err := f.GGUFMetadata(c, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, kv := range md {
		got = append(got, strings.TrimPrefix(kv.Key, "hunyuan-moe.")+"="+fmt.Sprint(kv.Value.Any()))
	}
	want := []string{"block_count=32", "context_length=262144", "embedding_length=4096", "feed_forward_length=3072",
		"attention.head_count=32", "attention.head_count_kv=8", "rope.freq_base=1.1158840e+07",
		"attention.layer_norm_rms_epsilon=1e-05", "expert_count=64", "general.file_type=0",
		"expert_shared_feed_forward_length=3072", "expert_feed_forward_length=3072", "expert_used_count=8",
		"expert_shared_count=1", "rope.scaling.type=none", "rope.scaling.factor=1",
		"rope.scaling.original_context_length=262144"}
	if base, _ := md.Get("hunyuan-moe.rope.freq_base"); fmt.Sprintf("%.7e", base.Any()) != "1.1158840e+07" {
		t.Errorf("rope.freq_base %v", base.Any())
	} else {
		got[6] = "rope.freq_base=1.1158840e+07"
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("metadata\n got %v\nwant %v", got, want)
	}
	b, _ := md.Get("hunyuan-moe.rope.freq_base")
	if x, _ := b.Float(); float32(x) != float32(10000*math.Pow(1000, 128.0/126)) {
		t.Errorf("rope.freq_base %v", x)
	}
	// The converter's assertions: alpha 1000 and heads of 128.
	for _, edit := range []map[string]any{
		{"rope_scaling": map[string]any{"type": "dynamic", "alpha": 500.0}},
		{"num_attention_heads": json.Number("16")},
	} {
		e := Config{}
		for k, v := range c {
			e[k] = v
		}
		for k, v := range edit {
			e[k] = v
		}
		if _, err := f.GGUFMetadata(e, 0); err == nil || !strings.Contains(err.Error(), "rope_scaling") {
			t.Errorf("%v: err %v, want a refusal naming rope_scaling", edit, err)
		}
	}
}
