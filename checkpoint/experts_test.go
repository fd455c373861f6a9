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
