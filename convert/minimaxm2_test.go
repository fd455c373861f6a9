package convert

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestMiniMaxM2SlidingWindow: the publisher's MiniMax-M2 class (Mixtral's
// model) masks keys beyond config.json's sliding_window in every layer
// when it is set; llama.cpp's minimax-m2 graph has no window, so such a
// config.json is refused naming the key; null (the published value)
// converts.
func TestMiniMaxM2SlidingWindow(t *testing.T) {
	t.Parallel()
	src := "../testdata/arch/minimax-m2/hf"
	for _, tc := range []struct {
		name   string
		window any
		ok     bool
	}{
		{"null", nil, true},
		{"window", 8, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := withConfig(t, src, "x/minimax-m2", "sliding_window", tc.window)
			_, err := Run(dir, filepath.Join(t.TempDir(), "out.gguf"), Options{OutType: OutF32})
			switch {
			case tc.ok && err != nil:
				t.Fatal(err)
			case !tc.ok && (err == nil || !strings.Contains(err.Error(), "sliding_window")):
				t.Fatalf("err = %v, want a refusal naming sliding_window", err)
			}
		})
	}
}
