package kernels

import (
	"sync/atomic"
	"testing"
)

// TestParallelFor checks that the chunks handed out cover [0,n) exactly
// once, start on multiples of grain and never exceed n, for thread counts
// below, at and above the number of grains.
func TestParallelFor(t *testing.T) {
	defer SetThreads(Threads())
	for _, th := range []int{1, 2, 3, 8} {
		SetThreads(th)
		for _, n := range []int{0, 1, 15, 16, 17, 100, 1000, 4099} {
			for _, grain := range []int{0, 1, 16, 64} {
				hits := make([]atomic.Int32, n)
				parallelFor(n, grain, func(lo, hi int) {
					if lo < 0 || hi > n || lo >= hi || (grain > 1 && lo%grain != 0) {
						t.Errorf("threads %d n %d grain %d: chunk [%d,%d)", th, n, grain, lo, hi)
						return
					}
					for i := lo; i < hi; i++ {
						hits[i].Add(1)
					}
				})
				for i := range hits {
					if c := hits[i].Load(); c != 1 {
						t.Fatalf("threads %d n %d grain %d: index %d run %d times", th, n, grain, i, c)
					}
				}
			}
		}
	}
}
