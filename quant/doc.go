// Package quant converts tensor data between float32 and the stored element
// types: IEEE half and bfloat16, symmetric int8, and every ggml block type.
// Codecs take the destination first and never allocate.
//
// # Half precision
//
// EncodeF16/DecodeF16 and EncodeBF16/DecodeBF16 (and the …Bytes variants,
// little-endian) round to nearest, ties to even. f16 keeps subnormals,
// overflows to ±Inf at 65520 and keeps NaN payloads (quieted), as F16C does;
// bf16 follows PyTorch (c10::detail::round_to_nearest_even): every NaN
// becomes 0x7FC0. Decoding is exact.
//
// # Speed
//
// Each hot kernel (f16, bf16, Q8_0 in both directions) has a plain-Go version
// and, on amd64 with AVX2 and F16C, an assembly version (half_amd64.s) chosen
// once at start-up; build with -tags noasm to use only Go. Where the CPU has
// AVX-512F, Q8_0 quantization uses an eight-blocks-at-a-time kernel instead
// ("avx512"). All produce the same bits. Implementation reports which one
// runs.
//
// The k-quant encoders spend their time in the scale searches (ggml's
// make_qkx2_quants for Q2_K, Q4_K and Q5_K, make_qkx3_quants for the last
// two with importance weights, make_qx_quants for Q6_K with or without,
// make_q3_quants for Q3_K). With AVX2 these run one sub-block per vector
// lane (kquants_amd64.s), with AVX-512 sixteen sub-blocks at once (two
// Q4_K/Q5_K super-blocks, one Q2_K, Q3_K or Q6_K; Q3_K has only this
// form): each lane performs the scalar code's float32 operations in its
// order, without FMA, so the result is the scalar one bit for bit; a
// super-block holding a NaN goes to the plain Go search, since which NaN
// survives an operation on two NaNs is the one thing the order of a
// commutative operation's operands decides. The final divisions of every
// element by its sub-block's scale run eight to a vector too. ErrorSums,
// quantize's error measure, has an AVX2 form. Q2_K and Q3_K with
// importance weights search in plain Go.
//
// # One record per type
//
// Every type quant encodes or decodes has one Type record (types.go),
// registered once (Register panics on a second one): its codec, its
// weighted codec, whether it ignores or needs importance weights, the
// activation type of its row-dot kernel in kernels, its GGUF file type,
// llama-quantize's fallback for rows its blocks do not divide and where it
// may be named for output. Its layout is tensor's table. CanQuantize,
// CanDequantize, CanQuantizeWeighted, FileTypeOf, OutTypes, TensorTypes,
// and the lists quantize, convert and kernels use, are read from the
// records: a new type is a row in tensor's table, its record and its codec.
//
// # ggml blocks
//
// Dequantize handles every ggml type and Quantize the ones llama-quantize
// can produce without an importance matrix, bit-exact with ggml's reference
// code. QuantizeRows adds the importance weights llama-quantize --imatrix
// passes (ggml's quantize_row_*_impl) for Q4_0, Q4_1, Q5_0, Q5_1,
// Q2_K…Q6_K, IQ4_NL, IQ4_XS, IQ3_XXS and IQ3_S (weighted.go, iq4nl.go,
// iq3.go), IQ2_XXS, IQ2_XS and IQ2_S (iq2.go: the first two only with
// weights, as in ggml; IQ2_S also without, through Quantize), and IQ1_S and
// IQ1_M (iq1.go: IQ1_S only with weights; IQ1_M also without); the other
// types' weighted quantizers are not transcribed and are refused with
// weights. All multi-byte fields are little-endian; "f16" is an IEEE half; qs
// are quants, d the scale, m/dmin the offset. Element j of a block is
// written x[j].
//
//	Q4_0 (32 elements, 18 bytes): x = d·(q-8)
//	  0    2                 18
//	  | d  | qs[16]          |   x[j] = low nibble of qs[j], x[j+16] = high nibble
//
//	Q4_1 (32, 20): x = d·q + m
//	  0    2    4                 20
//	  | d  | m  | qs[16]          |
//
//	Q5_0 (32, 22): x = d·(q-16); bit 4 of q[j] is bit j of qh
//	  0    2       6                22
//	  | d  | qh u32 | qs[16] nibbles |
//
//	Q5_1 (32, 24): x = d·q + m
//	  0    2    4       8                24
//	  | d  | m  | qh u32 | qs[16] nibbles |
//
//	Q8_0 (32, 34): x = d·q, q int8
//	  0    2                                 34
//	  | d  | qs[32] int8                     |
//
//	Q8_1 (32, 36): as Q8_0 plus s = d·Σq
//	  0    2    4                            36
//	  | d  | s  | qs[32] int8                |
//
//	MXFP4 (32, 17): x = 2^(e-128)·v[q], v the doubled E2M1 values
//	  0   1                 17
//	  | e | qs[16] nibbles  |
//
//	NVFP4 (64, 36): four 16-value sub-blocks, x = u(d[s])·v[q], u the
//	UE4M3 scale halved, v the doubled E2M1 values (nvfp4.go)
//	  0      4                                  36
//	  | d[4] | qs[32] 8 bytes per sub-block     |
//
//	Q1_0 (128, 18): x = ±d, the sign bit j of qs (nvfp4.go)
//	  0    2                 18
//	  | d  | qs[16] bits     |
//
//	IQ4_NL (32, 18): x = d·v[q], v the 16 non-linear levels -127..113
//	  0    2                 18
//	  | d  | qs[16] nibbles  |
//
// The k-quants group 256 elements in a super-block of 16 or 8 sub-blocks
// whose scales are quantized against the super-block's f16 d (and dmin):
//
//	Q2_K (256, 84): x = d·sc·q - dmin·mn, q 2 bits, sc/mn 4 bits each
//	  0           16                  80   82    84
//	  | scales[16] | qs[64] 4 per byte | d  | dmin |
//
//	Q3_K (256, 110): x = d·(sc-32)·(q - 4·!h), q 2 bits + high bit h, sc 6 bits
//	  0          32            96           108  110
//	  | hmask[32] | qs[64]      | scales[12] | d  |
//
//	Q4_K (256, 144): x = d·sc·q - dmin·mn, q 4 bits, sc/mn 6 bits in 12 bytes
//	  0    2      4            16                  144
//	  | d  | dmin | scales[12] | qs[128]           |
//
//	Q5_K (256, 176): as Q4_K with a fifth bit in qh
//	  0    2      4            16       48                176
//	  | d  | dmin | scales[12] | qh[32] | qs[128]         |
//
//	Q6_K (256, 210): x = d·sc·(q-32), q 6 bits (4 in ql, 2 in qh), sc int8
//	  0         128       192          208  210
//	  | ql[128] | qh[64]  | scales[16] | d  |
//
//	Q8_K (256, 292): x = d·q with a float32 d; bsums are sums of 16 quants
//	  0       4           260           292
//	  | d f32 | qs[256]   | bsums[16] i16 |
//
//	TQ1_0 (256, 54): ternary, 5 digits per byte in qs, 4 per byte in qh
//	  0        48      52   54
//	  | qs[48] | qh[4] | d  |
//
//	TQ2_0 (256, 66): ternary as 2-bit fields
//	  0        64   66
//	  | qs[64] | d  |
//
// The IQ types index grids of 4 or 8 magnitudes (tables.go, data from
// ggml-common.h) and store signs separately:
//
//	IQ2_XXS (256, 66)  | d | qs[32] u16 |
//	IQ2_XS  (256, 74)  | d | qs[32] u16 | scales[8] |
//	IQ2_S   (256, 82)  | d | qs[32] | signs[32] | qh[8] | scales[8] |
//	IQ3_XXS (256, 98)  | d | qs[64] | scales+signs[32] |
//	IQ3_S   (256, 110) | d | qs[64] | qh[8] | signs[32] | scales[4] |
//	IQ1_S   (256, 50)  | d | qs[32] | qh[8] u16 |
//	IQ1_M   (256, 56)  | qs[32] | qh[16] | scales[8] (the f16 d is spread over their top nibbles) |
//	IQ4_XS  (256, 136) | d | scales_h u16 | scales_l[4] | qs[128] |
//	  x = d·(ls−32)·v[q] per 32-value block, ls 6 bits: a nibble of
//	  scales_l and 2 bits of scales_h; v the IQ4_NL levels (iq4nl.go)
//
// # int8
//
// QuantizeInt8Rows / QuantizeInt8 implement symmetric int8 with one float32
// scale per row (output channel) or per tensor: scale = max|x|/127, q =
// clamp(round-half-away(x/scale), ±127).
package quant
