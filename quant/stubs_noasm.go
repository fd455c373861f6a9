//go:build noasm || !amd64

package quant

// simdKernels is nil: this build has no assembly.
var simdKernels *kernelSet

// simdSets is empty: this build has no assembly.
var simdSets []kernelSet

// The k-quant kernels of kquants_amd64.s; kq is always kqGo in this build.

func searchQ45KSIMD(*[qkK]float32, *[qkK]float32, *qkx2Search, *[8]float32, *[8]float32) bool {
	return false
}
func searchQ45K16SIMD(*[2 * qkK]float32, *[2 * qkK]float32, *qkx2Search, *[16]float32, *[16]float32) bool {
	return false
}
func searchQ2KSIMD(*[qkK]float32, *qkx2Search, *[16]float32, *[16]float32) bool   { return false }
func searchQ2K16SIMD(*[qkK]float32, *qkx2Search, *[16]float32, *[16]float32) bool { return false }
func searchQ3K16SIMD(*[qkK]float32, *[16]float32) bool                            { return false }
func searchQ6K16SIMD(*[qkK]float32, *[qkK]float32, *[16]float32) bool             { return false }
func searchQ6KSIMD(*[qkK]float32, *[qkK]float32, *[16]float32) bool               { return false }
func levelsSIMD([]uint8, []float32, []float32, []float32, int32, int32, int32) bool {
	return false
}
