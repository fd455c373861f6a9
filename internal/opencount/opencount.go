// Package opencount counts, per path, how many times checkpoint.Open has
// opened a checkpoint in this process. It exists so that a test can hold a
// pipeline to opening each input once (verify loads a model and keeps what
// it read rather than reopening the file to ask again); nothing else reads
// it. Counting costs a map update per Open, not per tensor.
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
