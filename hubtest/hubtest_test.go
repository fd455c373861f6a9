package hubtest_test

import (
	"testing"

	"github.com/tfconv/tfconv/hubtest"
)

// TestShapes: the Kimi-K2- and DeepSeek-V3-shaped checkpoints have the
// published parameter counts and shard counts.
func TestShapes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		m      hubtest.MoE
		lo, hi float64 // parameters, billions
		shards int
	}{
		{"kimi-k2", hubtest.KimiK2(), 1025, 1035, 61},
		{"deepseek-v3", hubtest.DeepSeekV3(), 680, 690, 163},
	} {
		p := float64(tc.m.Params()) / 1e9
		t.Logf("%s: %.1f B parameters", tc.name, p)
		if p < tc.lo || p > tc.hi {
			t.Errorf("%s: %.1f B parameters, want %v–%v", tc.name, p, tc.lo, tc.hi)
		}
		r, err := tc.m.Repo("org/"+tc.name, tc.m.Layers, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(r.Files) - 2; n != tc.shards {
			t.Errorf("%s: %d shards, want %d", tc.name, n, tc.shards)
		}
	}
}
