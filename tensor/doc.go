// Package tensor is tfconv's shared vocabulary: element types (every
// safetensors dtype and every ggml tensor type, with block sizes), shapes,
// tensor descriptions, typed metadata values, overflow-checked size
// arithmetic and the format error type. It imports nothing of tfconv's and
// every other package may import it.
package tensor
