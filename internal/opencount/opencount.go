package opencount

import (
	"sync"
	"sync/atomic"
)

var (
	on     atomic.Bool
	mu     sync.Mutex
	counts = map[string]int{}
)

// Start forgets every count and starts counting. Until it is called,
// Note does nothing, so a long-running program that opens many files
// keeps no record of them.
func Start() {
	mu.Lock()
	clear(counts)
	mu.Unlock()
	on.Store(true)
}

// Note records one opening of path, once Start was called.
func Note(path string) {
	if !on.Load() {
		return
	}
	mu.Lock()
	counts[path]++
	mu.Unlock()
}

// Of returns how many times path was opened since the last Start.
func Of(path string) int {
	mu.Lock()
	defer mu.Unlock()
	return counts[path]
}
