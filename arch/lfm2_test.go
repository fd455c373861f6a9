package arch

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestLFM2FFN: the feed-forward width LFM2 builds from intermediate_size
// (LFM2-1.2B's block_ff_dim 12288 → 8192; the fixture's 200 → 160), as
// transformers and the converter agree on it, and the case where they
// do not (no multiplier: transformers does not round, the converter does)
// refused naming it.
func TestLFM2FFN(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cfg  Config
		want int64
		err  string
	}{
		{Config{"intermediate_size": 12288, "block_auto_adjust_ff_dim": true, "block_ffn_dim_multiplier": 1.0, "block_multiple_of": 256}, 8192, ""},
		{Config{"block_ff_dim": 12288, "intermediate_size": 1, "block_auto_adjust_ff_dim": true, "block_ffn_dim_multiplier": 1.0, "block_multiple_of": 256}, 8192, ""},
		{Config{"intermediate_size": 200, "block_auto_adjust_ff_dim": true, "block_ffn_dim_multiplier": 1.0, "block_multiple_of": 32}, 160, ""},
		{Config{"intermediate_size": 4608, "block_auto_adjust_ff_dim": true, "block_ffn_dim_multiplier": 1.5, "block_multiple_of": 256}, 4608, ""},
		{Config{"intermediate_size": 200, "block_auto_adjust_ff_dim": false, "block_multiple_of": 32}, 200, ""},
		{Config{"intermediate_size": 200, "block_auto_adjust_ff_dim": true, "block_ffn_dim_multiplier": nil, "block_multiple_of": 32}, 0, "block_ffn_dim_multiplier null"},
		{Config{"intermediate_size": 192, "block_auto_adjust_ff_dim": true, "block_ffn_dim_multiplier": nil, "block_multiple_of": 32}, 128, ""},
	} {
		hf, gguf, err := lfm2FFN(c.cfg)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v: error %v, want one naming %s", c.cfg, err, c.err)
			}
			continue
		}
		if err != nil || hf != c.want || gguf != c.want {
			t.Errorf("%v: %d (transformers), %d (converter), %v; want %d", c.cfg, hf, gguf, err, c.want)
		}
	}
}

// TestLFM2Refusals: config.json values llama.cpp's LFM2 graphs do not
// compute are refused naming the key, not converted into a GGUF that
// computes something else.
func TestLFM2Refusals(t *testing.T) {
	t.Parallel()
	read := func(fam string) Config {
		b, err := os.ReadFile("../testdata/arch/" + fam + "/hf/config.json")
		if err != nil {
			t.Fatal(err)
		}
		d := json.NewDecoder(strings.NewReader(string(b)))
		d.UseNumber()
		var c Config
		if err := d.Decode(&c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	for _, c := range []struct {
		fam, key string
		value    any
	}{
		{"lfm2", "conv_bias", true},
		{"lfm2", "layer_types", []any{"conv", "conv", "sliding_attention", "conv"}},
		{"lfm2", "block_ffn_dim_multiplier", nil},
		{"lfm2moe", "routed_scaling_factor", 2.5},
		{"lfm2moe", "norm_topk_prob", false},
		{"lfm2moe", "use_expert_bias", false},
		{"lfm2moe", "conv_bias", true},
	} {
		cfg := read(c.fam)
		f, ok := ForConfig(cfg)
		if !ok {
			t.Fatalf("%s: no family", c.fam)
		}
		if _, err := f.GGUFMetadata(cfg, 0); err != nil {
			t.Fatalf("%s: the fixture's own config: %v", c.fam, err)
		}
		cfg[c.key] = c.value
		_, err := f.GGUFMetadata(cfg, 0)
		if err == nil || !strings.Contains(err.Error(), strings.TrimSuffix(c.key, "_dim_multiplier")) {
			t.Errorf("%s with %s = %v: error %v, want one naming it", c.fam, c.key, c.value, err)
		}
	}
}
