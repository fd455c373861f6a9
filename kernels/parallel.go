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

// chunksPerThread is how many pieces parallelFor cuts the work into per
// thread. The pieces are handed out on demand, so a thread that the OS
// deschedules (the machines this runs on are shared) delays only the piece
// it holds instead of a fixed 1/Threads() share that the others then wait
// for; more pieces balance better but cost an atomic add and a call each.
const chunksPerThread = 8

// parallelFor calls fn over [0,n) in contiguous chunks whose boundaries are
// multiples of grain (except the last), on up to Threads() goroutines (the
// caller's included) that take the chunks in turn, and waits for all of
// them. Every index is in exactly one chunk; which goroutine runs a chunk
// does not affect what fn computes.
func parallelFor(n, grain int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	if grain < 1 {
		grain = 1
	}
	t := Threads()
	grains := (n + grain - 1) / grain
	if t > grains {
		t = grains
	}
	if t <= 1 {
		fn(0, n)
		return
	}
	per := max(1, grains/(t*chunksPerThread)) * grain
	var next atomic.Int64
	work := func() {
		for {
			lo := int(next.Add(int64(per))) - per
			if lo >= n {
				return
			}
			fn(lo, min(lo+per, n))
		}
	}
	var wg sync.WaitGroup
	wg.Add(t - 1)
	for i := 0; i < t-1; i++ {
		go func() {
			defer wg.Done()
			work()
		}()
	}
	work()
	wg.Wait()
}
