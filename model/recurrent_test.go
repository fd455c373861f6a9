package model

import (
	"path/filepath"
	"slices"
	"testing"

	spec "github.com/tfconv/tfconv/arch"
)

// maxStepDiff bounds the logits of a sequence fed at once against token by
// token. The state carried from step to step is exact; the projections are
// not: kernels.MatMul sums one row (a decode step) in another order than a
// block of rows (prefill), so the attention fixtures already differ by up
// to 3.2e-6 (llama3) and Mamba-2's grouped norm, which rescales y·SiLU(z)
// to unit RMS, carries that to 6.7e-6 (mamba2). A state carried wrong, or
// a convolution that forgets its last inputs, moves them by O(1).
const maxStepDiff = 1e-5

// TestRecurrentStepByStep feeds every family fixture with recurrent layers
// a sequence at once and token by token: the state carried from step to
// step must give the same logits (≤ maxStepDiff), for every recurrent
// mixer kind the fixtures hold.
func TestRecurrentStepByStep(t *testing.T) {
	t.Parallel()
	tokens := []int{1, 7, 42, 3, 99, 5, 11, 260, 8, 13, 21, 34}
	for _, fam := range familyFixtures(t) {
		dir := filepath.Join("../testdata/arch", fam, "hf")
		m, err := Load(dir, LoadOptions{})
		if err != nil {
			t.Fatalf("%s: %v", fam, err)
		}
		d, ok := m.impl.(*decoder)
		if !ok || !slices.ContainsFunc(d.layers, func(l spec.Layer) bool { return l.Recurrent() }) {
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
					if diff := float64(v - all.Logits[i][j]); diff > maxStepDiff || diff < -maxStepDiff {
						t.Fatalf("position %d logit %d: %v token by token, %v at once", i, j, v, all.Logits[i][j])
					}
				}
			}
		})
	}
}
