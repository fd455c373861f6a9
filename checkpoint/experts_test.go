package checkpoint

import (
	"encoding/json"
	"os"
	"testing"
)

// TestSummaryMixture checks inspect's expert figures on the Mixtral
// fixture (HF and llama.cpp's GGUF) against a count from config.json: each
// layer holds num_local_experts feed-forwards of three hidden×intermediate
// matrices, and a token uses num_experts_per_tok of them.
func TestSummaryMixture(t *testing.T) {
	b, err := os.ReadFile("../testdata/arch/mixtral/hf/config.json")
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Hidden  int64 `json:"hidden_size"`
		FFN     int64 `json:"intermediate_size"`
		Layers  int64 `json:"num_hidden_layers"`
		Experts int64 `json:"num_local_experts"`
		Used    int64 `json:"num_experts_per_tok"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	perExpert := 3 * cfg.Hidden * cfg.FFN
	wantExperts := cfg.Layers * cfg.Experts * perExpert
	for _, path := range []string{"../testdata/arch/mixtral/hf", "../testdata/arch/mixtral/gguf/mixtral-f32.gguf"} {
		c, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Summarize(c)
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		if s.Experts != cfg.Experts || s.ExpertsUsed != cfg.Used {
			t.Errorf("%s: experts %d, %d used; config %d, %d", path, s.Experts, s.ExpertsUsed, cfg.Experts, cfg.Used)
		}
		if s.ExpertParams != wantExperts {
			t.Errorf("%s: expert parameters %d, config says %d", path, s.ExpertParams, wantExperts)
		}
		wantActive := s.Params - wantExperts + cfg.Layers*cfg.Used*perExpert
		if s.ActiveParams != wantActive {
			t.Errorf("%s: active parameters %d, config says %d", path, s.ActiveParams, wantActive)
		}
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
