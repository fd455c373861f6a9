package arch

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

// hybridConfig reads a hybrid fixture's config.json (Python's Infinity
// read as the string it is made into).
func hybridConfig(t *testing.T, fam string) Config {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("../testdata/arch", fam, "hf", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	b = []byte(strings.ReplaceAll(string(b), "Infinity", `"Infinity"`))
	d := json.NewDecoder(strings.NewReader(string(b)))
	d.UseNumber()
	var c Config
	if err := d.Decode(&c); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestHybridRefusals: config.json values the falcon-h1 and nemotron_h
// GGUFs cannot keep, or that would make llama.cpp compute something else,
// are refused naming the key; the fixtures' own configs convert.
func TestHybridRefusals(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		fam  string
		edit map[string]any
		word string // the refusal names it
	}{
		{"falcon_h1", map[string]any{"mamba_norm_before_gate": true}, "mamba_norm_before_gate"},
		{"falcon_h1", map[string]any{"mamba_proj_bias": true}, "mamba_proj_bias"},
		{"falcon_h1", map[string]any{"projectors_bias": true}, "projectors_bias"},
		{"falcon_h1", map[string]any{"hidden_act": "gelu"}, "hidden_act"},
		{"falcon_h1", map[string]any{"rope_scaling": map[string]any{"type": "linear", "factor": 2.0}}, "rope_scaling"},
		{"falcon_h1", map[string]any{"tie_word_embeddings": true}, "lm_head_multiplier"},
		{"falcon_h1", map[string]any{"ssm_multipliers": []any{1.0, 1.0}}, "ssm_multipliers"},
		{"nemotron_h", map[string]any{"num_experts_per_tok": 2}, "nemotron_h_moe"},
		{"nemotron_h", map[string]any{"hybrid_override_pattern": "M-E*-"}, "hybrid_override_pattern"},
		{"nemotron_h", map[string]any{"hybrid_override_pattern": "-*-*-"}, "no Mamba layer"},
		{"nemotron_h", map[string]any{"hybrid_override_pattern": "M-M*"}, "4 letters for 5 layers"},
		{"nemotron_h", map[string]any{"mlp_hidden_act": "silu"}, "mlp_hidden_act"},
		{"nemotron_h", map[string]any{"time_step_limit": []any{0.001, 0.1}}, "time_step_limit"},
		{"nemotron_h", map[string]any{"vocab_size": 1001}, "multiple of 8"},
	} {
		f, _ := ByName(map[string]string{"falcon_h1": "falcon-h1", "nemotron_h": "nemotron_h"}[c.fam])
		cfg := hybridConfig(t, c.fam)
		if _, err := f.GGUFMetadata(cfg, 0); err != nil {
			t.Fatalf("%s as made: %v", c.fam, err)
		}
		for k, v := range c.edit {
			cfg[k] = v
		}
		_, err := f.GGUFMetadata(cfg, 0)
		if err == nil && c.edit["ssm_multipliers"] != nil {
			_, err = falconInProj(cfg)
		}
		if err == nil || !strings.Contains(err.Error(), c.word) || !errors.Is(err, tensor.ErrUnsupported) {
			t.Errorf("%s %v: %v, want an ErrUnsupported naming %q", c.fam, c.edit, err, c.word)
		}
	}
}

// TestNemotronHPatternRoundTrip: the GGUF's per-layer arrays give back
// config.json's hybrid_override_pattern, and the pattern's layers.
func TestNemotronHPatternRoundTrip(t *testing.T) {
	t.Parallel()
	cfg := hybridConfig(t, "nemotron_h")
	md, err := NemotronH.GGUFMetadata(cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	back, err := NemotronH.HFConfig(md)
	if err != nil {
		t.Fatal(err)
	}
	if back["hybrid_override_pattern"] != "M-M*-" || back["intermediate_size"] != int64(128) || back["num_key_value_heads"] != int64(2) {
		t.Errorf("GGUF → HF: pattern %v, intermediate_size %v, num_key_value_heads %v", back["hybrid_override_pattern"],
			back["intermediate_size"], back["num_key_value_heads"])
	}
	ls, err := NemotronH.LayerPattern(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range ls {
		names = append(names, l.Name())
		if l.NoFFN == (l.Mixer == NoMixer) {
			t.Errorf("layer %s: NoFFN %v", l.Name(), l.NoFFN)
		}
	}
	if got := strings.Join(names, " "); got != "mamba2 none mamba2 full_attention none" {
		t.Errorf("layers %s", got)
	}
}
