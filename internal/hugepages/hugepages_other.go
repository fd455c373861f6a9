//go:build !linux

package hugepages

// Advise is a no-op where madvise(MADV_HUGEPAGE) does not exist.
func Advise(b []byte) {}
