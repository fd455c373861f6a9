//go:build noasm || !amd64

package quant

// simdKernels is nil: this build has no assembly.
var simdKernels *kernelSet
