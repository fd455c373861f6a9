//go:build noasm || !(amd64 || arm64)

package kernels

// simdSets is empty: this build has no assembly, every kernel is plain Go.
var simdSets []*simdSet

// prefetchRows is a no-op: gemmSIMD, its only caller, needs a simdSet.
func prefetchRows(p *byte, stride, rows, n int) {}
