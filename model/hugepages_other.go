//go:build !linux

package model

// adviseHugePages is a no-op where madvise(MADV_HUGEPAGE) does not exist.
func adviseHugePages(b []byte) {}
