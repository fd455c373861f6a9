package model

import (
	"math"
	"path/filepath"
	"testing"
)

// TestDeepSeek2CachesLatent checks that a DeepSeek-2 session keeps, per
// layer and position, the kv_lora_rank latent and the rotated key (16 + 8
// floats on the fixture), not per-head keys and values (4·24 + 4·16), and
// that decoding through that cache one token at a time gives the logits of
// the whole sequence run at once.
func TestDeepSeek2CachesLatent(t *testing.T) {
	for _, fam := range []string{"deepseek2", "deepseek2-short", "deepseek3"} {
		t.Run(fam, func(t *testing.T) {
			m, err := Load(filepath.Join("../testdata/arch", fam, "hf"), LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			tokens := []int{1, 15, 250, 999, 3, 87}
			whole, err := m.Forward(Input{Tokens: tokens}, nil)
			if err != nil {
				t.Fatal(err)
			}
			s := m.NewSession()
			if _, err := s.StepAll(tokens[:3], nil); err != nil {
				t.Fatal(err)
			}
			for i := 3; i < len(tokens); i++ {
				logits, err := s.Step(tokens[i : i+1])
				if err != nil {
					t.Fatal(err)
				}
				var worst float64
				for j, v := range logits {
					worst = max(worst, math.Abs(float64(v-whole.Logits[i][j])))
				}
				if worst > maxLogitDiffF32 {
					t.Errorf("position %d: incremental logits differ from the whole run's by %g", i, worst)
				}
			}
			for l := range s.cache.K {
				if k, v := len(s.cache.K[l]), len(s.cache.V[l]); k != len(tokens)*16 || v != len(tokens)*8 {
					t.Fatalf("layer %d caches %d and %d floats for %d positions, want the 16-wide latent and 8-wide key", l, k, v, len(tokens))
				}
			}
		})
	}
}
