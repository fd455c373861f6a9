package opencount

import "sync"

var (
	mu     sync.Mutex
	counts = map[string]int{}
)

// Note records one opening of path.
func Note(path string) {
	mu.Lock()
	counts[path]++
	mu.Unlock()
}

// Of returns how many times path was opened since the last Reset.
func Of(path string) int {
	mu.Lock()
	defer mu.Unlock()
	return counts[path]
}

// Reset forgets every count.
func Reset() {
	mu.Lock()
	clear(counts)
	mu.Unlock()
}
