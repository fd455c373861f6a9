package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"

	"github.com/tfconv/tfconv/tensor"
)

// Type is everything tfconv knows about one element type it encodes or
// decodes, in one record: the codec and the facts the packages above derive
// their lists from (quantize's writable types, convert's --outtype values,
// the GGUF file type, kernels' activation type). Its layout (block size,
// block bytes, ggml id, safetensors name) is tensor's table, read through
// DType, never repeated here. A new ggml type is one record in the records
// list below plus its codec.
type Type struct {
	DType tensor.DType
	// Encode writes src as blocks of DType to dst; the caller has checked
	// that src is a whole number of blocks and dst exactly their size. nil
	// when tfconv cannot encode the type without importance weights.
	Encode func(dst []byte, src []float32) error
	// Decode reads src, whole blocks, into dst (exactly their elements).
	Decode func(dst []float32, src []byte)
	// EncodeRows is ggml's quantizer given importance weights (an
	// imatrix): rows of rowLen elements, weights[rowLen] for every row; the
	// caller has checked the sizes. nil when the type has none (see
	// IgnoresWeights).
	EncodeRows func(dst []byte, src []float32, rowLen int, weights []float32) error
	// IgnoresWeights: ggml's quantizer takes importance weights and does
	// not use them, so an imatrix is accepted and changes nothing.
	IgnoresWeights bool
	// NeedsImatrix: llama-quantize refuses to write the type for a tensor
	// without importance weights ("the result will be garbage").
	NeedsImatrix bool
	// RowDot is the dtype kernels converts activations to before taking
	// the dot product of a row of this type with them, as llama.cpp's CPU
	// backend does (its vec_dot_type): Q8_0, Q8_1, Q8_K, F16 or BF16.
	// tensor.Invalid when kernels has no row-dot kernel of its own for the
	// type and multiplies dequantized f32 rows instead.
	RowDot tensor.DType
	// FileType is llama.cpp's llama_ftype (general.file_type) of a GGUF
	// whose tensors are all of this type but the 1-D ones, when the type
	// has a file type of its own (HasFileType). It is the number rather
	// than a gguf.FileType because quant imports only tensor; formats/gguf
	// keeps the names of the numbers.
	FileType    uint32
	HasFileType bool
	// Fallback is the type llama-quantize writes instead for a tensor whose
	// rows are not a whole number of blocks (llama.cpp c392e509,
	// llama_tensor_get_type's fallback table), or tensor.Invalid.
	Fallback tensor.DType
	// Write says where tfconv may write the type besides what its layout
	// allows (any GGUF type to GGUF, any safetensors dtype to safetensors,
	// anything to native).
	Write Use
}

// Use is a set of the places a type may be named for output.
type Use uint8

const (
	// TensorType: a per-tensor type of quantize (--tensor-type,
	// --output-tensor-type, --embedding-type).
	TensorType Use = 1 << iota
	// OutType: a convert --outtype.
	OutType
)

var registry [256]*Type

// Register adds a type's record. Registering a dtype twice, or a record
// whose dtype is not one of tensor's, panics (at init), as
// archive/zip.RegisterDecompressor does.
func Register(t Type) {
	if !t.DType.Valid() {
		panic(fmt.Sprintf("quant: Register of invalid dtype %d", uint8(t.DType)))
	}
	if registry[t.DType] != nil {
		panic(fmt.Sprintf("quant: Register called twice for %v", t.DType))
	}
	registry[t.DType] = &t
}

// Lookup returns a copy of the record of d; ok is false when quant has
// none.
func Lookup(d tensor.DType) (t Type, ok bool) {
	if r := registry[d]; r != nil {
		return *r, true
	}
	return Type{}, false
}

// Types returns copies of every registered record, in dtype order.
func Types() []Type {
	var out []Type
	for _, t := range registry {
		if t != nil {
			out = append(out, *t)
		}
	}
	return out
}

// FileTypeOf is the llama_ftype number of a GGUF file whose tensors are all
// (but the 1-D ones) of type d, for the types that have one of their own.
func FileTypeOf(d tensor.DType) (uint32, bool) {
	if t := registry[d]; t != nil && t.HasFileType {
		return t.FileType, true
	}
	return 0, false
}

// OutTypes lists the dtypes convert --outtype names, widest first (bits
// per element, then dtype order): F32, F16, BF16, Q8_0.
func OutTypes() []tensor.DType { return uses(OutType) }

// TensorTypes lists the dtypes quantize's per-tensor options accept, in
// dtype order.
func TensorTypes() []tensor.DType {
	var out []tensor.DType
	for _, t := range Types() {
		if t.Write&TensorType != 0 {
			out = append(out, t.DType)
		}
	}
	return out
}

func uses(u Use) []tensor.DType {
	var out []tensor.DType
	for _, t := range Types() {
		if t.Write&u != 0 {
			out = append(out, t.DType)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].BitsPerElement() > out[j].BitsPerElement() })
	return out
}

// blocks makes a whole-slice encoder of a one-block encoder.
func blocks(f encodeFunc, d tensor.DType) func(dst []byte, src []float32) error {
	bs, bb := int(d.BlockSize()), int(d.BlockBytes())
	return func(dst []byte, src []float32) error {
		for i, o := 0, 0; i < len(src); i, o = i+bs, o+bb {
			f(dst[o:o+bb], src[i:i+bs])
		}
		return nil
	}
}

// unblocks makes a whole-slice decoder of a one-block decoder.
func unblocks(f blockFunc, d tensor.DType) func(dst []float32, src []byte) {
	bs, bb := int(d.BlockSize()), int(d.BlockBytes())
	return func(dst []float32, src []byte) {
		for i, o := 0, 0; o < len(src); i, o = i+bs, o+bb {
			f(dst[i:i+bs], src[o:o+bb])
		}
	}
}

// rows makes a weighted whole-slice encoder of a weighted row encoder.
func rows(f rowFunc, d tensor.DType) func(dst []byte, src []float32, rowLen int, weights []float32) error {
	bs, bb := int(d.BlockSize()), int(d.BlockBytes())
	return func(dst []byte, src []float32, rowLen int, weights []float32) error {
		rowBytes := rowLen / bs * bb
		for r := 0; r < len(src)/rowLen; r++ {
			f(dst[r*rowBytes:(r+1)*rowBytes], src[r*rowLen:(r+1)*rowLen], weights)
		}
		return nil
	}
}

// plain makes a decoder of a per-element one for a plain type of n bytes.
func plain(n int, f func(b []byte) float32) func(dst []float32, src []byte) {
	return func(dst []float32, src []byte) {
		for i := range dst {
			dst[i] = f(src[n*i:])
		}
	}
}

// withRows is an IQ2/IQ1 encoder of t: rows of the whole slice, weights or nil.
func withRows(f func(dst []byte, src []float32, t tensor.DType, rowLen int, qw []float32) error, t tensor.DType) (
	func(dst []byte, src []float32) error, func(dst []byte, src []float32, rowLen int, weights []float32) error) {
	return func(dst []byte, src []float32) error { return f(dst, src, t, qkK, nil) },
		func(dst []byte, src []float32, rowLen int, weights []float32) error {
			return f(dst, src, t, rowLen, weights)
		}
}

func init() {
	fp8 := func(d tensor.DType) Type {
		return Type{DType: d, Decode: func(dst []float32, src []byte) { DecodeFP8(dst, src, d) }}
	}
	iq2s, iq2sRows := withRows(quantizeIQ2Rows, tensor.IQ2_S)
	_, iq2xxsRows := withRows(quantizeIQ2Rows, tensor.IQ2_XXS)
	_, iq2xsRows := withRows(quantizeIQ2Rows, tensor.IQ2_XS)
	iq1m, iq1mRows := withRows(quantizeIQ1Rows, tensor.IQ1_M)
	_, iq1sRows := withRows(quantizeIQ1Rows, tensor.IQ1_S)
	const tt, ot = TensorType, OutType
	for _, t := range []Type{
		// Plain types: F32, F16 and BF16 are written, the others read.
		{DType: tensor.F32, FileType: 0, HasFileType: true, Write: tt | ot, IgnoresWeights: true,
			Encode: func(dst []byte, src []float32) error {
				for i, f := range src {
					binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(f))
				}
				return nil
			},
			Decode: func(dst []float32, src []byte) {
				for i := range dst {
					dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
				}
			}},
		{DType: tensor.F16, FileType: 1, HasFileType: true, Write: tt | ot, IgnoresWeights: true, RowDot: tensor.F16,
			Encode: func(dst []byte, src []float32) error { EncodeF16Bytes(dst, src); return nil },
			Decode: func(dst []float32, src []byte) { DecodeF16Bytes(dst, src) }},
		{DType: tensor.BF16, FileType: 32, HasFileType: true, Write: tt | ot, IgnoresWeights: true, RowDot: tensor.BF16,
			Encode: func(dst []byte, src []float32) error { EncodeBF16Bytes(dst, src); return nil },
			Decode: func(dst []float32, src []byte) { DecodeBF16Bytes(dst, src) }},
		{DType: tensor.F64, Decode: plain(8, func(b []byte) float32 { return float32(math.Float64frombits(binary.LittleEndian.Uint64(b))) })},
		{DType: tensor.I8, Decode: plain(1, func(b []byte) float32 { return float32(int8(b[0])) })},
		{DType: tensor.I16, Decode: plain(2, func(b []byte) float32 { return float32(int16(binary.LittleEndian.Uint16(b))) })},
		{DType: tensor.I32, Decode: plain(4, func(b []byte) float32 { return float32(int32(binary.LittleEndian.Uint32(b))) })},
		{DType: tensor.I64, Decode: plain(8, func(b []byte) float32 { return float32(int64(binary.LittleEndian.Uint64(b))) })},
		fp8(tensor.F8_E4M3), fp8(tensor.F8_E5M2), fp8(tensor.F8_E4M3FNUZ), fp8(tensor.F8_E5M2FNUZ), fp8(tensor.F8_E8M0),

		// 32-element blocks.
		{DType: tensor.Q4_0, FileType: 2, HasFileType: true, Write: tt, RowDot: tensor.Q8_0,
			Encode: blocks(quantQ4_0, tensor.Q4_0), Decode: unblocks(dequantQ4_0, tensor.Q4_0), EncodeRows: rows(quantRowQ4_0W, tensor.Q4_0)},
		{DType: tensor.Q4_1, FileType: 3, HasFileType: true, Write: tt, RowDot: tensor.Q8_1,
			Encode: blocks(quantQ4_1, tensor.Q4_1), Decode: unblocks(dequantQ4_1, tensor.Q4_1), EncodeRows: rows(quantRowQ4_1W, tensor.Q4_1)},
		{DType: tensor.Q5_0, FileType: 8, HasFileType: true, Write: tt, RowDot: tensor.Q8_0,
			Encode: blocks(quantQ5_0, tensor.Q5_0), Decode: unblocks(dequantQ5_0, tensor.Q5_0), EncodeRows: rows(quantRowQ5_0W, tensor.Q5_0)},
		{DType: tensor.Q5_1, FileType: 9, HasFileType: true, Write: tt, RowDot: tensor.Q8_1,
			Encode: blocks(quantQ5_1, tensor.Q5_1), Decode: unblocks(dequantQ5_1, tensor.Q5_1), EncodeRows: rows(quantRowQ5_1W, tensor.Q5_1)},
		{DType: tensor.Q8_0, FileType: 7, HasFileType: true, Write: tt | ot, IgnoresWeights: true, RowDot: tensor.Q8_0,
			Encode: func(dst []byte, src []float32) error { active.quantQ8_0(dst, src); return nil },
			Decode: func(dst []float32, src []byte) { active.dequantQ8_0(dst, src) }},
		{DType: tensor.Q8_1, Encode: blocks(quantQ8_1, tensor.Q8_1), Decode: unblocks(dequantQ8_1, tensor.Q8_1)},
		{DType: tensor.IQ4_NL, Write: tt,
			Encode: blocks(quantIQ4_NL, tensor.IQ4_NL), Decode: unblocks(dequantIQ4_NL, tensor.IQ4_NL),
			EncodeRows: rows(func(b []byte, x, qw []float32) {
				for i := 0; i < len(x)/qk; i++ {
					quantIQ4_NLW(b[18*i:18*i+18], x[qk*i:qk*i+qk], qw[qk*i:qk*i+qk])
				}
			}, tensor.IQ4_NL)},
		// MXFP4: quantize_mxfp4 in llama.cpp after c392e509 drops the weights;
		// ggml's CPU dot product takes Q8_0 activations.
		{DType: tensor.MXFP4, Write: tt, IgnoresWeights: true, RowDot: tensor.Q8_0,
			Encode: blocks(quantMXFP4, tensor.MXFP4), Decode: unblocks(dequantMXFP4, tensor.MXFP4)},
		// NVFP4 (64-element blocks of four 16-element sub-blocks) and Q1_0
		// (128): llama.cpp 2026. quantize_nvfp4 drops the weights,
		// quantize_q1_0 only walks the rows with them; both have no
		// fallback type (llama-quantize aborts on a row they do not divide)
		// and take Q8_0 activations. llama-quantize offers Q1_0 as a --type
		// (LLAMA_FTYPE_MOSTLY_Q1_0 = 40), NVFP4 only per tensor.
		{DType: tensor.NVFP4, Write: tt, IgnoresWeights: true, RowDot: tensor.Q8_0,
			Encode: blocks(quantNVFP4, tensor.NVFP4), Decode: unblocks(dequantNVFP4, tensor.NVFP4)},
		{DType: tensor.Q1_0, FileType: 40, HasFileType: true, Write: tt, IgnoresWeights: true, RowDot: tensor.Q8_0,
			Encode: blocks(quantQ1_0, tensor.Q1_0), Decode: unblocks(dequantQ1_0, tensor.Q1_0)},

		// 256-element super-blocks.
		{DType: tensor.Q2_K, Fallback: tensor.IQ4_NL, FileType: 10, HasFileType: true, Write: tt, RowDot: tensor.Q8_K,
			Encode: blocks(quantQ2_K, tensor.Q2_K), Decode: unblocks(dequantQ2_K, tensor.Q2_K), EncodeRows: rows(superBlocks(quantQ2_KW, 84), tensor.Q2_K)},
		{DType: tensor.Q3_K, Fallback: tensor.IQ4_NL, Write: tt, RowDot: tensor.Q8_K,
			Encode: blocks(quantQ3_K, tensor.Q3_K), Decode: unblocks(dequantQ3_K, tensor.Q3_K), EncodeRows: rows(superBlocks(quantQ3_KW, 110), tensor.Q3_K)},
		{DType: tensor.Q4_K, Fallback: tensor.Q5_0, Write: tt, RowDot: tensor.Q8_K,
			Encode:     func(dst []byte, src []float32) error { quantRowsQ45K(dst, src, q4KSearch, &active); return nil },
			Decode:     unblocks(dequantQ4_K, tensor.Q4_K),
			EncodeRows: rows(func(b []byte, x, qw []float32) { quantRowQ45KW(b, x, qw, q4KWSearch, &active) }, tensor.Q4_K)},
		{DType: tensor.Q5_K, Fallback: tensor.Q5_1, Write: tt, RowDot: tensor.Q8_K,
			Encode:     func(dst []byte, src []float32) error { quantRowsQ45K(dst, src, q5KSearch, &active); return nil },
			Decode:     unblocks(dequantQ5_K, tensor.Q5_K),
			EncodeRows: rows(func(b []byte, x, qw []float32) { quantRowQ45KW(b, x, qw, q5KWSearch, &active) }, tensor.Q5_K)},
		{DType: tensor.Q6_K, Fallback: tensor.Q8_0, FileType: 18, HasFileType: true, Write: tt, RowDot: tensor.Q8_K,
			Encode: blocks(quantQ6_K, tensor.Q6_K), Decode: unblocks(dequantQ6_K, tensor.Q6_K), EncodeRows: rows(superBlocks(quantQ6_KW, 210), tensor.Q6_K)},
		{DType: tensor.Q8_K, Encode: blocks(quantQ8_K, tensor.Q8_K), Decode: unblocks(dequantQ8_K, tensor.Q8_K)},
		{DType: tensor.IQ4_XS, Fallback: tensor.IQ4_NL, Write: tt, RowDot: tensor.Q8_K,
			Encode: blocks(quantIQ4_XS, tensor.IQ4_XS), Decode: unblocks(dequantIQ4_XS, tensor.IQ4_XS), EncodeRows: rows(superBlocks(quantIQ4_XSW, 136), tensor.IQ4_XS)},
		{DType: tensor.IQ3_XXS, Fallback: tensor.IQ4_NL, Write: tt, RowDot: tensor.Q8_K,
			Encode: blocks(quantIQ3_XXS, tensor.IQ3_XXS), Decode: unblocks(dequantIQ3_XXS, tensor.IQ3_XXS), EncodeRows: rows(iq3Rows(quantIQ3_XXSW, 98), tensor.IQ3_XXS)},
		{DType: tensor.IQ3_S, Fallback: tensor.IQ4_NL, Write: tt, RowDot: tensor.Q8_K,
			Encode: blocks(quantIQ3_S, tensor.IQ3_S), Decode: unblocks(dequantIQ3_S, tensor.IQ3_S), EncodeRows: rows(iq3Rows(quantIQ3_SW, 110), tensor.IQ3_S)},
		{DType: tensor.IQ2_XXS, Fallback: tensor.IQ4_NL, NeedsImatrix: true, RowDot: tensor.Q8_K, Decode: unblocks(dequantIQ2_XXS, tensor.IQ2_XXS), EncodeRows: iq2xxsRows},
		{DType: tensor.IQ2_XS, Fallback: tensor.IQ4_NL, NeedsImatrix: true, RowDot: tensor.Q8_K, Decode: unblocks(dequantIQ2_XS, tensor.IQ2_XS), EncodeRows: iq2xsRows},
		{DType: tensor.IQ2_S, Fallback: tensor.IQ4_NL, NeedsImatrix: true, RowDot: tensor.Q8_K, Encode: iq2s, Decode: unblocks(dequantIQ2_S, tensor.IQ2_S), EncodeRows: iq2sRows},
		{DType: tensor.IQ1_S, Fallback: tensor.IQ4_NL, NeedsImatrix: true, RowDot: tensor.Q8_K, Decode: unblocks(dequantIQ1_S, tensor.IQ1_S), EncodeRows: iq1sRows},
		{DType: tensor.IQ1_M, Fallback: tensor.IQ4_NL, NeedsImatrix: true, RowDot: tensor.Q8_K, Encode: iq1m, Decode: unblocks(dequantIQ1_M, tensor.IQ1_M), EncodeRows: iq1mRows},
		// quantize_tq1_0/tq2_0 leave quant_weights unused.
		{DType: tensor.TQ1_0, Fallback: tensor.Q4_0, IgnoresWeights: true, Encode: blocks(quantTQ1_0, tensor.TQ1_0), Decode: unblocks(dequantTQ1_0, tensor.TQ1_0)},
		{DType: tensor.TQ2_0, Fallback: tensor.Q4_0, IgnoresWeights: true, Encode: blocks(quantTQ2_0, tensor.TQ2_0), Decode: unblocks(dequantTQ2_0, tensor.TQ2_0)},
	} {
		Register(t)
	}
}
