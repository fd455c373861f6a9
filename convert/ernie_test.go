package convert

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestErnieUseBias: llama.cpp's ERNIE 4.5 graph adds no output-projection
// or feed-forward biases, so a config.json with use_bias true is refused
// naming the key rather than converted into a GGUF that computes without
// them; use_bias false converts.
func TestErnieUseBias(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		fixture string
		bias    bool
	}{{"ernie4_5", false}, {"ernie4_5", true}, {"ernie4_5moe", true}} {
		t.Run(tc.fixture+map[bool]string{false: "/false", true: "/true"}[tc.bias], func(t *testing.T) {
			dir := withConfig(t, "../testdata/arch/"+tc.fixture+"/hf", "x/"+tc.fixture, "use_bias", tc.bias)
			_, err := Run(dir, filepath.Join(t.TempDir(), "out.gguf"), Options{OutType: OutF32})
			switch {
			case !tc.bias && err != nil:
				t.Fatal(err)
			case tc.bias && (err == nil || !strings.Contains(err.Error(), "use_bias")):
				t.Fatalf("err = %v, want a refusal naming use_bias", err)
			}
		})
	}
}

// TestErnieMoELayout: the GGUF keeps no moe_layer_end_index (llama.cpp
// routes every layer from leading_dense_block_count on) and writes the
// shared experts' width as intermediate_size / num_key_value_heads, so a
// config.json whose mixtures stop before the last layer, or whose shared
// width is another, is refused naming the key; the fixture's (-1, and
// 128 / 2 = 32 · 2) converts, and so does the last layer's index.
func TestErnieMoELayout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		key  string
		v    any
		want string // "" converts
	}{
		{"moe_layer_end_index", -1, ""},
		{"moe_layer_end_index", 2, ""},
		{"moe_layer_end_index", 1, "moe_layer_end_index"},
		{"intermediate_size", 128, ""},
		{"intermediate_size", 96, "intermediate_size"},
	} {
		t.Run(fmt.Sprintf("%s=%v", tc.key, tc.v), func(t *testing.T) {
			dir := withConfig(t, "../testdata/arch/ernie4_5moe/hf", "x/ernie4_5moe", tc.key, tc.v)
			_, err := Run(dir, filepath.Join(t.TempDir(), "out.gguf"), Options{OutType: OutF32})
			switch {
			case tc.want == "" && err != nil:
				t.Fatal(err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("err = %v, want a refusal naming %s", err, tc.want)
			}
		})
	}
}
