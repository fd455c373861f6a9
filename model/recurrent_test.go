package model

import (
	"path/filepath"
	"slices"
	"testing"

	spec "github.com/tfconv/tfconv/arch"
	"github.com/tfconv/tfconv/kernels"
)

// maxStepDiff bounds the logits of a sequence fed at once against token by
// token with the plain-Go kernels (-tags noasm), where both sum in one
// order (Mamba's agree exactly). maxStepDiffSIMD bounds them with the SIMD
// kernels, whose gemm (several rows) and gemv (one) sum in different
// orders: their float32 roundings alone move Mamba's logits by 1.2e-6 at
// position 0, where no state is carried yet (its mixer has four
// projections in a row), and by up to 6.7e-6 at later ones, as the state
// carries the differences on; Jamba's (4 layers, attention and experts
// besides) by up to 1.12e-5. A state carried wrongly moves them by far
// more (TestMambaMatchesLlamaCpp: 6.05 without it).
const (
	maxStepDiff     = 1e-6
	maxStepDiffSIMD = 2e-5
)

// TestRecurrentStepByStep feeds every family fixture with recurrent layers
// a sequence at once and token by token: the state carried from step to
// step must give the same logits (≤ 1e-6 with one summation order), for every recurrent mixer kind
// the fixtures hold.
func TestRecurrentStepByStep(t *testing.T) {
	t.Parallel()
	tokens := []int{1, 7, 42, 3, 99, 5, 11, 260, 8, 13, 21, 34}
	bound := maxStepDiff
	if kernels.Implementation() != "generic" {
		bound = maxStepDiffSIMD
	}
	for _, fam := range familyFixtures(t) {
		dir := filepath.Join("../testdata/arch", fam, "hf")
		m, err := Load(dir, LoadOptions{})
		if err != nil {
			t.Fatalf("%s: %v", fam, err)
		}
		d, ok := m.impl.(*decoder)
		if !ok || !slices.ContainsFunc(d.layers, func(l spec.Layer) bool { return l.Mixer.Recurrent() }) {
			continue
		}
		t.Run(fam, func(t *testing.T) {
			t.Parallel()
			all, err := m.NewSession().StepAll(tokens, nil)
			if err != nil {
				t.Fatal(err)
			}
			s := m.NewSession()
			for i, tok := range tokens {
				got, err := s.Step([]int{tok})
				if err != nil {
					t.Fatal(err)
				}
				for j, v := range got {
					if diff := float64(v - all.Logits[i][j]); diff > bound || diff < -bound {
						t.Fatalf("position %d logit %d: %v token by token, %v at once", i, j, v, all.Logits[i][j])
					}
				}
			}
		})
	}
}
