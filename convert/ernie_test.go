package convert

import (
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
	}{{"ernie4_5", false}, {"ernie4_5", true}} {
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
