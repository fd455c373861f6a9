package kernels

import (
	"os"
	"os/exec"
	"runtime"
	"testing"
)

// TestPoolStartsLazily checks, in a fresh process (other tests start the
// pool), that loading the package starts no worker goroutine, that work of
// one chunk starts none either, and that the first parallel call starts
// Threads()-1: commands that never compute pay nothing for the pool.
func TestPoolStartsLazily(t *testing.T) {
	if os.Getenv("TFCONV_LAZY_POOL_CHILD") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPoolStartsLazily$", "-test.count=1")
		cmd.Env = append(os.Environ(), "TFCONV_LAZY_POOL_CHILD=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		return
	}
	workers := func() int {
		if ws := workPool.workers.Load(); ws != nil {
			return len(*ws)
		}
		return 0
	}
	if n := workers(); n != 0 {
		t.Fatalf("%d workers after loading the package, want 0", n)
	}
	before := runtime.NumGoroutine()
	SetThreads(4)
	defer SetThreads(0)
	parallelFor(10, 10, func(lo, hi int) {}) // one grain: runs inline
	if n := workers(); n != 0 {
		t.Fatalf("%d workers after a one-chunk call, want 0", n)
	}
	sum := make([]int, 64)
	parallelFor(64, 1, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			sum[i] = i
		}
	})
	for i, v := range sum {
		if v != i {
			t.Fatalf("parallelFor skipped index %d", i)
		}
	}
	if n := workers(); n != 3 {
		t.Fatalf("%d workers after the first parallel call with 4 threads, want 3", n)
	}
	if g := runtime.NumGoroutine() - before; g != 3 {
		t.Fatalf("%d goroutines started, want 3", g)
	}
}
