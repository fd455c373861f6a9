package kernels

// Argmax returns the first index of the largest value of x, as
// torch.argmax does: a later equal value does not replace an earlier one.
// NaN is never the largest unless it stands first. x must not be empty.
func Argmax[T float32 | float64](x []T) int {
	best := 0
	for i := 1; i < len(x); i++ {
		if x[i] > x[best] {
			best = i
		}
	}
	return best
}

// TopK returns the indices of the k largest values of x, largest first,
// the lower index first among equal values (as torch.topk returns them on
// CPU); k is clamped to len(x). It inserts into a sorted list of at most k
// entries, O(len(x)·k) at worst, which suits the small k of sampling,
// expert routing and top-k overlap.
func TopK[T float32 | float64](x []T, k int) []int {
	if k > len(x) {
		k = len(x)
	}
	if k <= 0 {
		return nil
	}
	idx := make([]int, 0, k)
	for i := range x {
		if len(idx) == k && !(x[i] > x[idx[k-1]]) {
			continue
		}
		j := len(idx)
		if j < k {
			idx = append(idx, i)
		} else {
			j = k - 1
		}
		for j > 0 && x[i] > x[idx[j-1]] {
			idx[j] = idx[j-1]
			j--
		}
		idx[j] = i
	}
	return idx
}
