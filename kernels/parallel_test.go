package kernels

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
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

// TestParallelForConcurrent posts jobs from several goroutines at once and
// from inside chunks of another job: every job must still run each index
// exactly once and return.
func TestParallelForConcurrent(t *testing.T) {
	defer SetThreads(Threads())
	SetThreads(3)
	const n = 997
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for rep := 0; rep < 50; rep++ {
				var outer atomic.Int64
				parallelFor(8, 1, func(lo, hi int) {
					for i := lo; i < hi; i++ {
						var inner atomic.Int64
						parallelFor(n, 7, func(lo, hi int) { inner.Add(int64(hi - lo)) })
						if inner.Load() != n {
							t.Errorf("nested job covered %d of %d", inner.Load(), n)
						}
						outer.Add(1)
					}
				})
				if outer.Load() != 8 {
					t.Errorf("outer job covered %d of 8", outer.Load())
				}
				// Let the workers park now and then, so that waking
				// them is exercised too.
				if rep%10 == 9 {
					time.Sleep(2 * spinFor)
				}
			}
		}()
	}
	wg.Wait()
}

// BenchmarkParallelForLatency is the cost of handing a small product's
// worth of work (2048 rows of ~100 ns) to Threads() goroutines and waiting
// for it, back to back as decoding does: compare -cpu 1,2.
func BenchmarkParallelForLatency(b *testing.B) {
	defer SetThreads(Threads())
	SetThreads(runtime.GOMAXPROCS(0))
	x := make([]float32, 2048*64)
	sums := make([]float32, 2048)
	for b.Loop() {
		parallelFor(2048, 16, func(lo, hi int) {
			for r := lo; r < hi; r++ {
				var s float32
				for _, v := range x[r*64 : (r+1)*64] {
					s += v
				}
				sums[r] = s
			}
		})
	}
}
