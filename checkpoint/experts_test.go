package checkpoint

import (
	"encoding/json"
	"os"
	"testing"
)

// TestSummaryMixture checks inspect's expert figures on the Mixtral and
// Qwen2-MoE fixtures (HF and llama.cpp's GGUF) against a count from
// config.json: each layer holds num_local_experts (num_experts) routed
// feed-forwards of three hidden × intermediate_size (moe_intermediate_size)
// matrices, a token uses num_experts_per_tok of them, and a shared expert
// is not a routed one.
func TestSummaryMixture(t *testing.T) {
	for _, fam := range []string{"mixtral", "qwen2moe", "olmoe", "qwen3moe", "deepseek2", "deepseek2-short", "deepseek3"} {
		b, err := os.ReadFile("../testdata/arch/" + fam + "/hf/config.json")
		if err != nil {
			t.Fatal(err)
		}
		var cfg struct {
			Hidden      int64 `json:"hidden_size"`
			FFN         int64 `json:"intermediate_size"`
			MoEFFN      int64 `json:"moe_intermediate_size"`
			Layers      int64 `json:"num_hidden_layers"`
			Experts     int64 `json:"num_local_experts"`
			QwenExperts int64 `json:"num_experts"`
			Used        int64 `json:"num_experts_per_tok"`
			// DeepSeek-2: n_routed_experts, and its first_k_dense_replace
			// leading layers are dense.
			Routed     int64 `json:"n_routed_experts"`
			DenseLayer int64 `json:"first_k_dense_replace"`
		}
		if err := json.Unmarshal(b, &cfg); err != nil {
			t.Fatal(err)
		}
		if cfg.MoEFFN > 0 {
			cfg.FFN = cfg.MoEFFN
		}
		if cfg.QwenExperts > 0 {
			cfg.Experts = cfg.QwenExperts
		}
		if cfg.Routed > 0 {
			cfg.Experts = cfg.Routed
		}
		checkMixture(t, fam, cfg.Hidden, cfg.FFN, cfg.Layers-cfg.DenseLayer, cfg.Experts, cfg.Used)
	}
	dense, err := Open("../testdata/arch/qwen2/hf")
	if err != nil {
		t.Fatal(err)
	}
	defer dense.Close()
	if s, err := Summarize(dense); err != nil || s.ActiveParams != 0 || s.ExpertParams != 0 {
		t.Errorf("dense model: %+v, %v", s, err)
	}
}

// checkMixture checks a family of layers mixture layers (the dense ones
// not counted).
func checkMixture(t *testing.T, fam string, hidden, ffn, layers, experts, used int64) {
	t.Helper()
	perExpert := 3 * hidden * ffn
	wantExperts := layers * experts * perExpert
	for _, path := range []string{"../testdata/arch/" + fam + "/hf", "../testdata/arch/" + fam + "/gguf/" + fam + "-f32.gguf"} {
		c, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Summarize(c)
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		if s.Experts != experts || s.ExpertsUsed != used {
			t.Errorf("%s: experts %d, %d used; config %d, %d", path, s.Experts, s.ExpertsUsed, experts, used)
		}
		if s.ExpertParams != wantExperts {
			t.Errorf("%s: expert parameters %d, config says %d", path, s.ExpertParams, wantExperts)
		}
		wantActive := s.Params - wantExperts + layers*used*perExpert
		if s.ActiveParams != wantActive {
			t.Errorf("%s: active parameters %d, config says %d", path, s.ActiveParams, wantActive)
		}
	}
}

// TestSummaryLayerPattern checks inspect's per-layer pattern on fixtures
// made by the reference tools, read from config.json and from llama.cpp's
// GGUF alike: Gemma 3's sliding layers (all but every sixth, window 4),
// SmolLM3's fourth layer without RoPE, DeepSeek-V3's dense first layer
// (first_k_dense_replace 1) before its expert layers.
func TestSummaryLayerPattern(t *testing.T) {
	t.Parallel()
	full := func(i int) LayerKind { return LayerKind{Layer: i, Mixer: "full_attention", Rope: true} }
	sliding := func(i int) LayerKind {
		return LayerKind{Layer: i, Mixer: "sliding_attention", Window: 4, Rope: true}
	}
	noRope := full(3)
	noRope.Rope = false
	moe := func(i int) LayerKind { l := full(i); l.MoE = true; return l }
	gemma3 := []LayerKind{sliding(0), sliding(1), sliding(2), sliding(3), sliding(4), full(5)}
	smollm3 := []LayerKind{full(0), full(1), full(2), noRope}
	deepseek3 := []LayerKind{full(0), moe(1), moe(2)}
	for _, tc := range []struct {
		path string
		want []LayerKind
	}{
		{"../testdata/arch/gemma3/hf", gemma3},
		{"../testdata/arch/gemma3/gguf/gemma3-f32.gguf", gemma3},
		{"../testdata/arch/smollm3/hf", smollm3},
		{"../testdata/arch/smollm3/gguf/smollm3-f32.gguf", smollm3},
		{"../testdata/arch/deepseek3/hf", deepseek3},
	} {
		c, err := Open(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Summarize(c)
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(s.LayerPattern) != len(tc.want) {
			t.Fatalf("%s: %d layers in the pattern, want %d: %+v", tc.path, len(s.LayerPattern), len(tc.want), s.LayerPattern)
		}
		for i := range tc.want {
			if s.LayerPattern[i] != tc.want[i] {
				t.Errorf("%s: layer %d: %+v, want %+v", tc.path, i, s.LayerPattern[i], tc.want[i])
			}
		}
	}
}
