//go:build noasm || !(amd64 || arm64)

package kernels

// simdSets is empty: this build has no assembly, every kernel is plain Go.
var simdSets []*simdSet
