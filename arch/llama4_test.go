package arch

import (
	"slices"
	"testing"
)

// TestLlama3FreqsOriginalContext: the newer converter (Llama 4's) reads
// llama3 rope scaling's original context inside rope_scaling, c392e509's
// (LLaMA's fixtures) at the top level of config.json, default 8192.
func TestLlama3FreqsOriginalContext(t *testing.T) {
	c := Config{"hidden_size": int64(64), "num_attention_heads": int64(4), "rope_theta": 500000.0,
		"rope_scaling": map[string]any{"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
			"high_freq_factor": 4.0, "original_max_position_embeddings": int64(64)}}
	newer, err := llama3Freqs(c, contextScalingThenTop)
	if err != nil {
		t.Fatal(err)
	}
	old, err := llama3Freqs(c, contextTop)
	if err != nil {
		t.Fatal(err)
	}
	r := Llama3Rope{Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalContext: 64}
	if !slices.Equal(newer, r.Factors(500000, 16)) {
		t.Errorf("newer: %v, want the factors of an original context of 64", newer)
	}
	r.OriginalContext = 8192
	if !slices.Equal(old, r.Factors(500000, 16)) || slices.Equal(old, newer) {
		t.Errorf("c392e509: %v, want the factors of 8192 (newer %v)", old, newer)
	}
}
