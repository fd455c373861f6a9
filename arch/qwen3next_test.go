package arch

import (
	"slices"
	"strings"
	"testing"
)

func qwen3NextConfig() Config {
	return Config{"num_hidden_layers": 4, "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
		"head_dim": 16, "num_experts": 4, "num_experts_per_tok": 2, "linear_num_key_heads": 2, "linear_key_head_dim": 3,
		"linear_num_value_heads": 4, "linear_value_head_dim": 5, "linear_conv_kernel_dim": 4, "full_attention_interval": 2}
}

// TestQwen3NextPattern: the layers' kinds by full_attention_interval and
// by layer_types, the mixtures by decoder_sparse_step and mlp_only_layers,
// the DeltaNet's state, and the refusals of what GGUF cannot keep.
func TestQwen3NextPattern(t *testing.T) {
	t.Parallel()
	c := qwen3NextConfig()
	ls, err := Qwen3Next.LayerPattern(c)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []Mixer
	for _, l := range ls {
		kinds = append(kinds, l.Mixer)
		if !l.MoE || l.Rope != (l.Mixer == FullAttention) {
			t.Errorf("layer %+v", l)
		}
		// (K−1)·(2·2·3 + 4·5) + 4·3·5
		if want := int64(0); l.Mixer == GatedDeltaNet && l.StateFloats != 3*32+60 || l.Mixer == FullAttention && l.StateFloats != want {
			t.Errorf("layer %+v: state", l)
		}
	}
	if want := []Mixer{GatedDeltaNet, FullAttention, GatedDeltaNet, FullAttention}; !slices.Equal(kinds, want) {
		t.Errorf("kinds %v, want %v", kinds, want)
	}
	if _, err := Qwen3Next.GGUFMetadata(c, 0); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct {
		key  string
		v    any
		said string
	}{
		{"mlp_only_layers", []any{int64(1)}, "layer 1 is dense"},
		{"decoder_sparse_step", int64(2), "layer 0 is dense"},
		{"norm_topk_prob", false, "norm_topk_prob false"},
		{"layer_types", []any{"full_attention", "linear_attention", "linear_attention", "full_attention"}, "layer_types[0]"},
		{"layer_types", []any{"sliding_attention", "full_attention", "linear_attention", "full_attention"}, "sliding_attention"},
	} {
		c := qwen3NextConfig()
		c[bad.key] = bad.v
		if _, err := Qwen3Next.GGUFMetadata(c, 0); err == nil || !strings.Contains(err.Error(), bad.said) {
			t.Errorf("%s %v: %v, want an error saying %q", bad.key, bad.v, err, bad.said)
		}
	}
}

// TestQwen3NextQKVZ: in_proj_qkvz's rows regroup into attn_qkv (all q, all
// k, all v) and attn_gate (all z), and back.
func TestQwen3NextQKVZ(t *testing.T) {
	t.Parallel()
	order, counts, err := qwen3NextQKVZ(qwen3NextConfig())
	if err != nil {
		t.Fatal(err)
	}
	// per key head g: q 3 rows, k 3, v 2·5, z 2·5 (26 rows a group)
	want := []int64{0, 1, 2, 26, 27, 28, 3, 4, 5, 29, 30, 31}
	if !slices.Equal(order[:12], want) || !slices.Equal(counts, []int64{2*2*3 + 4*5, 4 * 5}) || len(order) != 52 {
		t.Fatalf("order %v counts %v", order, counts)
	}
	if order[12] != 6 || order[12+10] != 32 || order[32] != 16 {
		t.Errorf("v and z rows: %v", order)
	}
	seen := map[int64]bool{}
	for _, r := range order {
		seen[r] = true
	}
	if len(seen) != 52 {
		t.Errorf("not a permutation: %v", order)
	}
}

// TestQwen3NextMTPNames: mtp.* is the layers after the decoder's, and back.
func TestQwen3NextMTPNames(t *testing.T) {
	t.Parallel()
	for hf, layer := range map[string]string{
		"mtp.fc.weight":                             "model.layers.48.eh_proj.weight",
		"mtp.pre_fc_norm_embedding.weight":          "model.layers.48.enorm.weight",
		"mtp.pre_fc_norm_hidden.weight":             "model.layers.48.hnorm.weight",
		"mtp.norm.weight":                           "model.layers.48.shared_head.norm.weight",
		"mtp.layers.0.self_attn.q_proj.weight":      "model.layers.48.self_attn.q_proj.weight",
		"mtp.layers.1.mlp.experts.3.up_proj.weight": "model.layers.49.mlp.experts.3.up_proj.weight",
		"model.layers.3.input_layernorm.weight":     "model.layers.3.input_layernorm.weight",
	} {
		if got := qwen3NextMTPNames(hf, 48, false); got != layer {
			t.Errorf("%s → %s, want %s", hf, got, layer)
		}
		if got := qwen3NextMTPNames(layer, 48, true); got != hf {
			t.Errorf("%s ← %s, want %s", got, layer, hf)
		}
	}
	if got := qwen3NextMTPNames("model.mtp.fc.weight", 48, false); got != "model.layers.48.eh_proj.weight" {
		t.Errorf("model.mtp.fc.weight → %s", got)
	}
	c := Config{}
	qwen3NextMTPCount(c, []string{"mtp.layers.0.x.weight", "mtp.layers.2.y.weight", "model.layers.0.z.weight"})
	if n, _ := c.Int(qwen3NextMTPKey); n != 3 {
		t.Errorf("MTP layers counted %d, want 3", n)
	}
}
