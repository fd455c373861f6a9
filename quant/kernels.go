package quant

// kernelSet is one implementation of the hot codecs. The generic set is
// plain Go and always present; a SIMD set replaces it at start-up when the
// CPU supports it (see stubs_amd64.go). Every kernel takes slices of
// matching length (for Q8_0: whole blocks).
type kernelSet struct {
	name    string
	encF16  func(dst []uint16, src []float32)
	decF16  func(dst []float32, src []uint16)
	encBF16 func(dst []uint16, src []float32)
	decBF16 func(dst []float32, src []uint16)
	// quantQ8_0 writes len(src)/32 Q8_0 blocks; len(src)%32 == 0.
	quantQ8_0 func(dst []byte, src []float32)
	// dequantQ8_0 reads len(src)/34 Q8_0 blocks into dst.
	dequantQ8_0 func(dst []float32, src []byte)
	// kq picks the k-quant kernels (kquantKernels): a value rather than
	// function fields, because the block quantizers' arrays stay on the
	// stack only when the calls are static.
	kq kquantKernels
	// errorSums is ErrorSums (len(y) == len(x)).
	errorSums func(x, y []float32) (sig, noise, maxAbs float64)
}

var genericKernels = kernelSet{
	name:        "generic",
	encF16:      encodeF16Generic,
	decF16:      decodeF16Generic,
	encBF16:     encodeBF16Generic,
	decBF16:     decodeBF16Generic,
	quantQ8_0:   quantizeQ8_0Generic,
	dequantQ8_0: dequantizeQ8_0Generic,
	errorSums:   errorSumsGeneric,
}

// active is the set the public functions use, chosen once in init.
var active = genericKernels

func init() {
	if simdKernels != nil {
		active = *simdKernels
	}
}

// Implementation names the kernel set in use: "generic", or the SIMD set's
// name ("avx2") when the CPU supports it and the package was built without
// the noasm tag.
func Implementation() string { return active.name }
