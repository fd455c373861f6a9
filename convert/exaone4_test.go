package convert

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestExaone4Config: the GGUF holds llama3 rope scaling as rope_freqs
// (the newer converter's Exaone4Model writes them; checked byte for byte
// against it when written) and no other scaling, and one sliding flag per
// layer: a linear rope_scaling, or a layer_types list of the wrong length,
// is refused naming the key.
func TestExaone4Config(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, key string
		v         any
		want      string // "" converts
		freqs     bool   // rope_freqs.weight written
	}{
		{"llama3", "rope_scaling", map[string]any{"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
			"high_freq_factor": 4.0, "original_max_position_embeddings": 64}, "", true},
		{"linear", "rope_scaling", map[string]any{"rope_type": "linear", "factor": 2.0}, "rope_scaling", false},
		{"layer_types", "layer_types", []any{"sliding_attention", "full_attention"}, "layer_types", false},
		{"no window", "sliding_window", nil, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := withConfig(t, "../testdata/arch/exaone4/hf", "x/exaone4", tc.key, tc.v)
			out := filepath.Join(t.TempDir(), "out.gguf")
			_, err := Run(dir, out, Options{OutType: OutF32})
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("err = %v, want a refusal naming %s", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			md, n := ggufMeta(t, out)
			if want := 46; tc.freqs {
				want++
				if n != want {
					t.Errorf("%d tensors, want %d (rope_freqs)", n, want)
				}
			} else if n != want {
				t.Errorf("%d tensors, want %d", n, want)
			}
			_, window := md.Get("exaone4.attention.sliding_window")
			_, pattern := md.Get("exaone4.attention.sliding_window_pattern")
			if wantWindow := tc.key != "sliding_window"; window != wantWindow || pattern != wantWindow {
				t.Errorf("sliding_window present %v, pattern present %v, want %v", window, pattern, wantWindow)
			}
		})
	}
}
