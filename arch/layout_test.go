package arch

import (
	"slices"
	"testing"
)

// TestPermuteRowsByHand checks the Q/K permutation on a case worked out
// from llama.cpp's definition, reshape(n_head, 2, d/2, …).swapaxes(1, 2):
// one head of 4 rows goes from [r0 r1 r2 r3] to [r0 r2 r1 r3]; with two
// heads of 4 each head is permuted on its own.
func TestPermuteRowsByHand(t *testing.T) {
	src := []float32{0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7} // 8 rows × 2 cols
	dst := make([]float32, len(src))
	permuteRows(2, 8, 2, false)(dst, src)
	want := []float32{0, 0, 2, 2, 1, 1, 3, 3, 4, 4, 6, 6, 5, 5, 7, 7}
	if !slices.Equal(dst, want) {
		t.Fatalf("permuted %v, want %v", dst, want)
	}
	back := make([]float32, len(src))
	permuteRows(2, 8, 2, true)(back, dst)
	if !slices.Equal(back, src) {
		t.Fatalf("inverse gave %v", back)
	}
	// Head dimension 8: [0..7] → [0 4 1 5 2 6 3 7].
	src8 := []float32{0, 1, 2, 3, 4, 5, 6, 7}
	dst8 := make([]float32, 8)
	permuteRows(1, 8, 1, false)(dst8, src8)
	if want := []float32{0, 4, 1, 5, 2, 6, 3, 7}; !slices.Equal(dst8, want) {
		t.Fatalf("permuted %v, want %v", dst8, want)
	}
}

func TestTranspose(t *testing.T) {
	src := []float32{1, 2, 3, 4, 5, 6} // [2,3]
	dst := make([]float32, 6)
	transpose(2, 3)(dst, src)
	if want := []float32{1, 4, 2, 5, 3, 6}; !slices.Equal(dst, want) {
		t.Fatalf("transposed %v, want %v", dst, want)
	}
}
