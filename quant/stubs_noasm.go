//go:build noasm || !amd64

package quant

// simdKernels is nil: this build has no assembly.
var simdKernels *kernelSet

// simdSets is empty: this build has no assembly.
var simdSets []kernelSet
