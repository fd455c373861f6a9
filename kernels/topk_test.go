package kernels

import (
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

// TopK agrees with a stable sort by value, descending, on values with many
// ties; Argmax with its first element.
func TestTopK(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 7, 64, 513} {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.IntN(9)) - 4 // ties
		}
		all := make([]int, n)
		for i := range all {
			all[i] = i
		}
		sort.SliceStable(all, func(a, b int) bool { return x[all[a]] > x[all[b]] })
		for _, k := range []int{0, 1, 2, 5, n, n + 3} {
			want := all[:min(k, n)]
			if got := TopK(x, k); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
				t.Fatalf("n=%d k=%d: TopK %v, want %v", n, k, got, want)
			}
		}
		if got := Argmax(x); got != all[0] {
			t.Fatalf("n=%d: Argmax %d, want %d", n, got, all[0])
		}
	}
	if got := TopK([]float32{1, 5, 3, 5, 0, 4}, 3); !slices.Equal(got, []int{1, 3, 5}) {
		t.Errorf("TopK = %v, want [1 3 5]", got)
	}
	if Argmax([]float32{2, 7, 7}) != 1 {
		t.Error("Argmax must keep the first of equal maxima")
	}
	if got := TopK([]float64{1, 3, 3, 2}, 3); !slices.Equal(got, []int{1, 2, 3}) {
		t.Errorf("float64: %v", got)
	}
}
