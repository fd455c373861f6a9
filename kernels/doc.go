// Package kernels holds the numeric inner loops of the reference
// transformer: matrix multiplication of f32 activations by weights kept in
// their checkpoint dtype (f32, f16, bf16, int8 with per-row scales, and the
// ggml block types), attention that never materializes the full T×T score
// matrix, softmax, LayerNorm/RMSNorm, rotary embeddings and activations.
//
// Every kernel has a plain-Go version whose doc comment is its math; that
// version always builds (CGO_ENABLED=0, any GOARCH, -tags noasm) and is what
// the SIMD versions are tested against. Work is split across goroutines by
// output rows; SetThreads sets how many.
//
// Conventions: matrices are row-major; a weight Matrix has the shape of a
// PyTorch nn.Linear weight, [out][in], so MatMul computes y = x·Wᵀ. Kernels
// take the destination first and do not allocate in their inner loops.
package kernels
