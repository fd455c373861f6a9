// Package kernels holds the numeric inner loops of the reference
// transformer: matrix multiplication of f32 activations by weights kept in
// their checkpoint dtype (f32, f16, bf16, int8 with per-row scales, and the
// ggml block types), attention that never materializes the full T×T score
// matrix, softmax, LayerNorm/RMSNorm, rotary embeddings and activations.
//
// Every kernel has a plain-Go version whose doc comment is its math; that
// version always builds (CGO_ENABLED=0, any GOARCH, -tags noasm) and is what
// the SIMD versions are tested against. On amd64 a SIMD set is chosen once
// at start-up from the CPU's features (see Implementations below), on arm64
// a NEON one (see arm64 below); Implementation names the one in use. Work
// is split across goroutines by
// output columns (weight rows), in chunks the goroutines take in turn so
// that one descheduled thread does not hold up the others; SetThreads sets
// how many. The goroutines are a persistent pool that polls for the next
// job for 200 µs before parking (parallel.go): decoding a token hands out
// a few hundred sub-millisecond jobs, and waking a parked goroutine for
// each cost more than the job on a virtual machine.
//
// Attention and SiLU exponentiate in float32 with one vector call per block
// of values (exp.go: Cephes' reduction and polynomial, within 2 ulp of e^x),
// not with float64 math.Exp per element.
//
// Conventions: matrices are row-major; a weight Matrix has the shape of a
// PyTorch nn.Linear weight, [out][in], so MatMul computes y = x·Wᵀ. Kernels
// take the destination first and do not allocate in their inner loops.
//
// # Accuracy
//
// Weights are never rounded further than their dtype: every product is an
// f32 activation times the exact f32 value of the dequantized weight (for
// Q8_0, Q4_0, F16, BF16 and I8 the dequantized value d·q is exact in
// float32; for the other block types it is computed with the same float32
// operations as ggml's dequantize_row_*, never fused), accumulated in float32. The SIMD paths differ from the generic
// one only by the order of those float32 additions, within (K+3)·2⁻²⁴·Σ|x·w|.
// Exceptions, for speed, in the M = 1 kernels (decoding), which apply a
// block's scale once per block rather than once per weight:
//
//   - Q8_0 and Q4_0 (AVX-512 and AVX2) sum a block's 32 products x·q
//     (x·(q−8)) first and multiply the block sum by d: one more float32
//     rounding per block of 32, within the same bound.
//   - Q6_K (AVX2) does the same per 16-element sub-block, d·sc times
//     Σ(q−32)·x.
//   - Q4_K (AVX-512, AVX2) and Q4_0 (AVX2) split each weight s·q − m into
//     its two terms: Σ_j s_j·Σ q·x − Σ_j m_j·xs_j, with xs_j the sum of the
//     activations over sub-block j (32 elements), formed once per matrix
//     (simdSet.rowDotSums). As in ggml's own dots, the two terms are summed
//     separately, so the bound is in terms of Σ|x|·(|s·q| + |m|) rather
//     than Σ|x·w|: larger where s·q and m nearly cancel.
//
// MatMul never quantizes activations to 8 bits as llama.cpp does;
// MatMulQ does, on purpose: it rounds every activation row to the weight
// type's vec_dot_type (QuantizeActivations: ggml's Q8_0, Q8_1, Q8_K, f16
// or bf16 bytes exactly) and forms ggml's integer lane sums and float32
// accumulation in ggml's order (qdot.go; for Q4_0 matrices whose row count
// is a multiple of 8, the order of the repacked kernels every AVX2 build
// of ggml uses for them, chainOrder), so that its results are the same
// bits on every implementation and the same as llama.cpp's CPU backend
// without AMX. On AVX-512 VNNI it is the int8 fast path (qgemm_amd64.go);
// on AVX2 and AVX-VNNI every block type has 256-bit integer kernels
// (qgemm256_amd64.go); on arm64 every block type takes NEON integer dots
// (simdSet.qdot). IQ4_XS, IQ3_XXS, IQ3_S, IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S and
// IQ1_M (Q8_K activations) have no SIMD kernel yet and run the plain-Go
// lane sums everywhere (qdotGeneric; the same bits).
//
// # Implementations
//
// On amd64 (without -tags noasm) stubs_amd64.go lists the sets the CPU can
// run, best first, and the first is used; golang.org/x/sys/cpu reads the
// features, and honours GODEBUG's cpu.* options, so a set can be masked:
//
//	avx512   AVX-512 F, BW, VL (+ FMA, F16C); MatMulQ's int8 kernels need VNNI too,
//	         without it MatMulQ runs the avx2 set's kernels
//	avxvnni  AVX2, FMA, F16C, AVX-VNNI: avx2 with VEX VPDPBUSD in MatMulQ (32-element types)
//	avx2     AVX2, FMA, F16C
//	generic  plain Go: other CPUs, other GOARCHes, -tags noasm
//
// GODEBUG=cpu.avx512f=off gives what a CPU without AVX-512 runs (avxvnni
// where the CPU has it), cpu.avx512f=off,cpu.avxvnni=off the avx2 set. The
// tests run every set the CPU can execute in one process (implementations()
// in matmul_test.go swaps the active set), each against the plain-Go
// results and the reference tools' fixtures; CI runs the suite again under
// both GODEBUG settings so that the model's tests also run on the smaller
// sets, and with -tags noasm.
//
// # Matrix multiply (SIMD)
//
// For M ≥ 2 rows of activations the product is computed as Cᵀ = W·Xᵀ in
// register tiles (AVX-512: 12 weight rows × 32 activation rows, 24 zmm
// accumulators; AVX2: 6 × 16). The activations are repacked once per call
// into panels interleaved by k; each weight is broadcast from its row as
// stored, so f32 weights need no packing at load, and block-quantized or
// half-precision weights are decoded 12 rows × 256 columns at a time into
// an L1-resident buffer that every activation panel reuses:
//
//	xt panel p (nr activation rows m0..m0+nr-1), float32:
//	+------------+------------+-----+----------------+
//	| x[m0..][0] | x[m0..][1] | ... | x[m0..][K-1]   |   each cell nr floats
//	+------------+------------+-----+----------------+
//
// For M = 1 (decoding) each output is one dot product streaming one weight
// row, with the decoding fused into the loop: F32, F16, BF16, I8 and every
// ggml block type, on both AVX-512 and AVX2. The M ≥ 2 weight buffer is
// filled by assembly decoders for Q8_0, F16, BF16 and the k-quants on both
// sets; the other block types use quant.Dequantize, the one plain-Go
// block decoder per type, which every assembly decoder is tested against
// bit for bit (blocks_test.go). A k-quant kernel unpacks a super-block's 6-bit (or
// 4-bit) sub-block scales once, with ggml's own float32 products, into its
// stack frame, then widens the quants in registers and applies scale and
// min exactly as dequantize_row_* does, so every weight FMA'd is the
// dequantized float32 value bit for bit. Where no fused kernel applies (a
// K that is not a whole number of vectors) a row is decoded 2048 weights
// at a time into L1 with quant.Dequantize and dotted.
//
// Fused M = 1 kernels per block type (s = f16 scale, m = f16 min):
//
//	Q4_1  | d | m | qs[16] |                   w = q·d + m
//	Q5_0  | d | qh u32 | qs[16] |              w = (q|h<<4 − 16)·d
//	Q5_1  | d | m | qh u32 | qs[16] |          w = (q|h<<4)·d + m
//	Q2_K  | sc[16] | qs[64] | d | dmin |       w = (d·sc)·q − dmin·mn
//	Q3_K  | hmask[32] | qs[64] | sc[12] | d |  w = (d·(sc−32))·(q − 4·!h)
//	Q4_K  | d | dmin | sc[12] | qs[128] |      w = (d·sc)·q − dmin·mn
//	Q5_K  | d | dmin | sc[12] | qh[32] | qs[128] |
//	Q6_K  | ql[128] | qh[64] | sc[16] | d |    w = (d·sc)·(q − 32)
//
// # arm64
//
// Two sets, in Go assembly (*_arm64.s, stubs_arm64.go): "neon-dotprod"
// when golang.org/x/sys/cpu reports the dot-product extension
// (ARM64.HasASIMDDP; GODEBUG=cpu.asimddp=off masks it), else "neon".
// They differ only in MatMulQ's integer dots; NEON itself is part of every
// arm64 CPU Go supports.
//
//   - f32: dot and axpy (16 floats per step, four accumulators), the gemm
//     microkernel (6 weight rows × 16 activation rows, 24 q-register
//     accumulators, each weight broadcast with LD1R) and exp (the steps of
//     expGo, fused like the AVX kernels).
//   - M = 1 fused dots: F16 (FCVTL), BF16 (a zip with zeros, i.e. a 16-bit
//     shift), I8, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K and Q6_K; the
//     decoders for M ≥ 2: the same but I8, bit-identical to decodeRow. The
//     k-quants' sub-block scales are computed in Go (kquant_arm64.go) with
//     ggml's float32 products, the weights in assembly with its operations.
//   - MatMulQ, Q8_0, Q4_0, Q5_0, Q4_1, Q5_1: the weights unpacked to int8
//     in registers, ggml's eight lane sums per block by SDOT (four
//     int8 products per int32 lane, exactly ggml's lane), or without it by
//     SMULL (16-bit products), SADDLP and ADDP; then FMLA with the block's
//     d in ggml's order, so the bits are the plain-Go ones. The k-quants
//     (both sets): the super-block's int16 weights unpacked in Go, the
//     eight lane sums by SMLAL (lanesk_arm64.s), the float32 steps in Go
//     (dotK).
//
// Go's assembler lacks most NEON arithmetic (FADD/FMUL on vectors, FCVTL,
// SCVTF, SXTL, SDOT, SMULL, …): those are WORD encodings with the
// instruction in GNU syntax in the comment, which aarch64-linux-gnu-as
// re-encodes to the same word.
//
// Testing: every test iterates over implementations() (plain Go and each
// set the CPU runs). On an amd64 machine the arm64 build is tested under
// qemu-user, as .ci/run does:
//
//	GOARCH=arm64 go test -c -o /tmp/kernels.arm64 ./kernels
//	cd kernels && qemu-aarch64 -cpu max /tmp/kernels.arm64 -test.short -test.skip TestPoolStartsLazily
//
// (-cpu max has the dot-product extension, -cpu cortex-a53 has not;
// -test.short sizes the slowest tests for the emulator; the skipped test
// re-executes the binary, which needs a binfmt handler for arm64.) Speed measured
// under the emulator means nothing.
package kernels
