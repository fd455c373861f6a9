package kernels

import "unsafe"

// unsafeBytes views a []float32 as its little-endian bytes (every GOARCH Go
// supports for this project is little-endian; gguf and safetensors reject
// big-endian data before it gets here).
func unsafeBytes(w []float32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), 4*len(w))
}
