package arch

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

func readRWKV7Config(t *testing.T) Config {
	t.Helper()
	b, err := os.ReadFile("../testdata/arch/rwkv7/hf/config.json")
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

// TestRWKV7Refusals: what llama.cpp's RWKV-7 cannot compute is refused
// naming the key (the fixture's own config converts).
func TestRWKV7Refusals(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		key   string
		value any
		want  string
	}{
		{"value_dim", []any{128, 256, 128}, "value_dim[1]"},
		{"value_dim", 256, "value_dim"},
		{"norm_eps", 2e-5, "norm_eps"},
		{"attn", map[string]any{"layers": []any{1}}, "attn"},
		{"norm_bias", false, "norm_bias"},
		{"norm_first", false, "norm_first"},
		{"hidden_act", "silu", "hidden_act"},
		{"intermediate_size", nil, "intermediate_size"}, // with hidden_ratio 3.5: fla 448, the converter 512
		{"head_dim", 48, "head_dim"},
	} {
		cfg := readRWKV7Config(t)
		if _, err := RWKV7Family.GGUFMetadata(cfg, 0); err != nil {
			t.Fatalf("the fixture's own config: %v", err)
		}
		cfg[c.key] = c.value
		if c.key == "intermediate_size" {
			cfg["hidden_ratio"] = 3.5
		}
		_, err := RWKV7Family.GGUFMetadata(cfg, 0)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s = %v: error %v, want one naming %s", c.key, c.value, err, c.want)
		}
	}
}

// TestRWKV7Defaults: null low ranks and feed-forward width are the
// converter's (calc_lora_rank, 4·hidden), accepted where fla builds the
// same: at RWKV-7 0.1B's width 768, decay and ICLR 64, value 32, gate 128.
func TestRWKV7Defaults(t *testing.T) {
	t.Parallel()
	cfg := readRWKV7Config(t)
	cfg["hidden_size"], cfg["value_dim"], cfg["num_heads"] = json.Number("768"), nil, nil
	for _, k := range []string{"decay_low_rank_dim", "a_low_rank_dim", "v_low_rank_dim", "gate_low_rank_dim", "intermediate_size"} {
		cfg[k] = nil
	}
	md, err := RWKV7Family.GGUFMetadata(cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]int64{"attention.decay_lora_rank": 64, "attention.iclr_lora_rank": 64,
		"attention.value_residual_mix_lora_rank": 32, "attention.gate_lora_rank": 128, "feed_forward_length": 3072,
		"wkv.head_size": 64} {
		v, ok := md.Get("rwkv7." + key)
		if n, _ := v.Int(); !ok || n != want {
			t.Errorf("%s = %v, want %d", key, v, want)
		}
	}
}
