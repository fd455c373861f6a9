package kernels

import (
	"runtime"
	"sync"
	"sync/atomic"
)

var threads atomic.Int32

func init() { threads.Store(int32(runtime.GOMAXPROCS(0))) }

// SetThreads sets how many goroutines the kernels split their work over; n < 1
// means runtime.GOMAXPROCS(0).
func SetThreads(n int) {
	if n < 1 {
		n = runtime.GOMAXPROCS(0)
	}
	threads.Store(int32(n))
}

// Threads reports the thread count set by SetThreads.
func Threads() int { return int(threads.Load()) }

// parallelFor calls fn over [0,n) split into at most Threads() contiguous
// chunks whose boundaries are multiples of grain (except the last), and
// waits for all of them.
func parallelFor(n, grain int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	if grain < 1 {
		grain = 1
	}
	t := Threads()
	chunks := (n + grain - 1) / grain
	if t > chunks {
		t = chunks
	}
	if t <= 1 {
		fn(0, n)
		return
	}
	per := (chunks + t - 1) / t * grain
	var wg sync.WaitGroup
	for lo := 0; lo < n; lo += per {
		hi := min(lo+per, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(lo, hi)
		}()
	}
	wg.Wait()
}
