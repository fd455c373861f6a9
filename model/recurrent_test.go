package model

import (
	"math"
	"path/filepath"
	"slices"
	"testing"

	spec "github.com/tfconv/tfconv/arch"
	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/kernels"
)

// maxStepByStepDiff bounds logits at once against token by token. The
// SIMD kernels multiply one row (a step: gemv) and many (a prefill: gemm)
// summing in different orders, which moves a fixture's logits by up to a
// few 1e-6 through its layers whether or not they are recurrent (qwen3,
// attention only: 2.7e-6; lfm2: 4.5e-6); under -tags noasm the two agree
// exactly (0), and that is held to 1e-6. A state carried wrongly moves them
// by far more (lfm2 with its convolution state dropped: see
// TestShortConvSplits).
//
// Jamba (4 layers: Mamba, attention and experts) carries it furthest:
// 1.12e-5 with the AVX kernels, 2.1e-5 with arm64's NEON ones (under qemu,
// in CI).
var maxStepByStepDiff = map[bool]float64{false: 5e-5, true: 1e-6}

// TestRecurrentStepByStep feeds every family fixture with recurrent layers
// a sequence at once and token by token: the state carried from step to
// step must give the same logits (maxStepByStepDiff), for every recurrent
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
					if diff := float64(v - all.Logits[i][j]); math.Abs(diff) > maxStepByStepDiff[kernels.Implementation() == "generic"] {
						t.Fatalf("position %d logit %d: %v token by token, %v at once", i, j, v, all.Logits[i][j])
					}
				}
			}
		})
	}
}

// TestRecurrentStateCounted: the state each recurrent mixer keeps
// (stateSize, from the tensors it loaded) is what the memory estimate counts
// for its layer (checkpoint.Summary's LayerPattern, from the config), for
// every fixture with recurrent layers, HF folder and llama.cpp's GGUF alike;
// and the layers the summary calls recurrent are those that keep a state.
func TestRecurrentStateCounted(t *testing.T) {
	t.Parallel()
	for _, fam := range familyFixtures(t) {
		for _, path := range []string{filepath.Join("../testdata/arch", fam, "hf"), filepath.Join("../testdata/arch", fam, "gguf", fam+"-f32.gguf")} {
			m, err := Load(path, LoadOptions{})
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			d, ok := m.impl.(*decoder)
			if !ok || !slices.ContainsFunc(d.layers, func(l spec.Layer) bool { return l.Recurrent() }) {
				continue
			}
			ck, err := checkpoint.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			s, err := checkpoint.Summarize(ck)
			ck.Close()
			if err != nil {
				t.Fatal(err)
			}
			if len(s.LayerPattern) != len(d.w.Blocks) {
				t.Fatalf("%s: %d layers in the summary, %d loaded", path, len(s.LayerPattern), len(d.w.Blocks))
			}
			for l, b := range d.w.Blocks {
				k := s.LayerPattern[l]
				var n int64
				if b.Mix != nil {
					// RWKV-7's channel mix keeps its token shift beside the mixer's state.
					n = int64(b.Mix.stateSize() + stateSizeOrZeroOf(b.FFNMix))
				}
				if k.Recurrent != (b.Mix != nil) || n != k.StateFloats {
					t.Errorf("%s: layer %d (%s): the mixer keeps %d floats of state, the summary counts %d (recurrent %v)", path, l, k.Mixer, n, k.StateFloats, k.Recurrent)
				}
			}
		}
	}
}
