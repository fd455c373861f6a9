package tensor

import (
	"fmt"
	"math/bits"
)

// DType is an element type: one of the safetensors dtypes or one of the ggml
// tensor types used in GGUF files. The numbering is tfconv's own and is not a
// file-format id: use GGMLType / DTypeFromGGML and SafetensorsName /
// DTypeFromSafetensors to translate.
//
// Every dtype is described as blocks: BlockSize elements stored in BlockBytes
// bytes. Plain types have BlockSize 1 (F32: 1 element in 4 bytes); sub-byte
// types pack several elements (F4: 2 in 1 byte, F6_*: 4 in 3 bytes); the
// ggml block-quantized types carry their scales inside the block (Q8_0: 32
// elements in 34 bytes: an f16 scale then 32 int8 quants).
type DType uint8

// ScaleSuffix names the per-row scale tensor that goes with an I8 weight
// written by tfconv quantize: "<name>.scale", F32, one value per row (the
// shape without its last dimension), the weight's value being scale · int8.
// The same name is used in safetensors and native files (where the
// quant.scale attribute also points at it).
const ScaleSuffix = ".scale"

// The dtypes. Invalid is the zero value and never valid in a file.
const (
	Invalid DType = iota

	// Plain and sub-byte types (safetensors names; F32, F16, BF16, F64, I8,
	// I16, I32 and I64 also exist in ggml).
	BOOL
	U8
	I8
	U16
	I16
	F16
	BF16
	U32
	I32
	F32
	U64
	I64
	F64
	C64
	F8_E4M3
	F8_E5M2
	F8_E8M0
	F8_E4M3FNUZ
	F8_E5M2FNUZ
	F4
	F6_E2M3
	F6_E3M2

	// ggml block types.
	Q4_0
	Q4_1
	Q5_0
	Q5_1
	Q8_0
	Q8_1
	Q2_K
	Q3_K
	Q4_K
	Q5_K
	Q6_K
	Q8_K
	IQ2_XXS
	IQ2_XS
	IQ3_XXS
	IQ1_S
	IQ4_NL
	IQ3_S
	IQ2_S
	IQ4_XS
	IQ1_M
	TQ1_0
	TQ2_0
	MXFP4
	NVFP4
	Q1_0

	numDTypes
)

// noGGML marks a dtype that has no ggml type id.
const noGGML = -1

type dtypeInfo struct {
	name       string // canonical upper-case name, as safetensors and gguf-py spell it
	blockSize  int64  // elements per block
	blockBytes int64  // bytes per block
	ggml       int    // ggml type id, or noGGML
	st         bool   // a safetensors dtype
	float      bool   // a floating-point type (plain or block)
}

var dtypes = [numDTypes]dtypeInfo{
	Invalid:     {"INVALID", 0, 0, noGGML, false, false},
	BOOL:        {"BOOL", 1, 1, noGGML, true, false},
	U8:          {"U8", 1, 1, noGGML, true, false},
	I8:          {"I8", 1, 1, 24, true, false},
	U16:         {"U16", 1, 2, noGGML, true, false},
	I16:         {"I16", 1, 2, 25, true, false},
	F16:         {"F16", 1, 2, 1, true, true},
	BF16:        {"BF16", 1, 2, 30, true, true},
	U32:         {"U32", 1, 4, noGGML, true, false},
	I32:         {"I32", 1, 4, 26, true, false},
	F32:         {"F32", 1, 4, 0, true, true},
	U64:         {"U64", 1, 8, noGGML, true, false},
	I64:         {"I64", 1, 8, 27, true, false},
	F64:         {"F64", 1, 8, 28, true, true},
	C64:         {"C64", 1, 8, noGGML, true, true},
	F8_E4M3:     {"F8_E4M3", 1, 1, noGGML, true, true},
	F8_E5M2:     {"F8_E5M2", 1, 1, noGGML, true, true},
	F8_E8M0:     {"F8_E8M0", 1, 1, noGGML, true, true},
	F8_E4M3FNUZ: {"F8_E4M3FNUZ", 1, 1, noGGML, true, true},
	F8_E5M2FNUZ: {"F8_E5M2FNUZ", 1, 1, noGGML, true, true},
	F4:          {"F4", 2, 1, noGGML, true, true},
	F6_E2M3:     {"F6_E2M3", 4, 3, noGGML, true, true},
	F6_E3M2:     {"F6_E3M2", 4, 3, noGGML, true, true},

	Q4_0:    {"Q4_0", 32, 18, 2, false, true},
	Q4_1:    {"Q4_1", 32, 20, 3, false, true},
	Q5_0:    {"Q5_0", 32, 22, 6, false, true},
	Q5_1:    {"Q5_1", 32, 24, 7, false, true},
	Q8_0:    {"Q8_0", 32, 34, 8, false, true},
	Q8_1:    {"Q8_1", 32, 36, 9, false, true},
	Q2_K:    {"Q2_K", 256, 84, 10, false, true},
	Q3_K:    {"Q3_K", 256, 110, 11, false, true},
	Q4_K:    {"Q4_K", 256, 144, 12, false, true},
	Q5_K:    {"Q5_K", 256, 176, 13, false, true},
	Q6_K:    {"Q6_K", 256, 210, 14, false, true},
	Q8_K:    {"Q8_K", 256, 292, 15, false, true},
	IQ2_XXS: {"IQ2_XXS", 256, 66, 16, false, true},
	IQ2_XS:  {"IQ2_XS", 256, 74, 17, false, true},
	IQ3_XXS: {"IQ3_XXS", 256, 98, 18, false, true},
	IQ1_S:   {"IQ1_S", 256, 50, 19, false, true},
	IQ4_NL:  {"IQ4_NL", 32, 18, 20, false, true},
	IQ3_S:   {"IQ3_S", 256, 110, 21, false, true},
	IQ2_S:   {"IQ2_S", 256, 82, 22, false, true},
	IQ4_XS:  {"IQ4_XS", 256, 136, 23, false, true},
	IQ1_M:   {"IQ1_M", 256, 56, 29, false, true},
	TQ1_0:   {"TQ1_0", 256, 54, 34, false, true},
	TQ2_0:   {"TQ2_0", 256, 66, 35, false, true},
	MXFP4:   {"MXFP4", 32, 17, 39, false, true},
	NVFP4:   {"NVFP4", 64, 36, 40, false, true},
	Q1_0:    {"Q1_0", 128, 18, 41, false, true},
}

var (
	byName = map[string]DType{}
	// byGGML maps a ggml type id to a dtype; ids that ggml removed (4, 5:
	// Q4_2/Q4_3; 31-33: Q4_0_4_4/_4_8/_8_8; 36-38: IQ4_NL_4_4/_4_8/_8_8)
	// and unknown ids are absent.
	byGGML = map[uint32]DType{}
)

func init() {
	for d := DType(1); d < numDTypes; d++ {
		in := dtypes[d]
		byName[in.name] = d
		if in.ggml != noGGML {
			byGGML[uint32(in.ggml)] = d
		}
	}
}

// All returns every valid dtype in a stable order.
func All() []DType {
	out := make([]DType, 0, numDTypes-1)
	for d := DType(1); d < numDTypes; d++ {
		out = append(out, d)
	}
	return out
}

// Valid reports whether d is one of the dtypes above (not Invalid).
func (d DType) Valid() bool { return d > Invalid && d < numDTypes }

// String returns the canonical name ("F32", "BF16", "Q4_K", "F8_E4M3").
func (d DType) String() string {
	if d >= numDTypes {
		return fmt.Sprintf("DType(%d)", uint8(d))
	}
	return dtypes[d].name
}

// BlockSize is the number of elements in one block (1 for plain types).
func (d DType) BlockSize() int64 {
	if d >= numDTypes {
		return 0
	}
	return dtypes[d].blockSize
}

// BlockBytes is the number of bytes one block occupies.
func (d DType) BlockBytes() int64 {
	if d >= numDTypes {
		return 0
	}
	return dtypes[d].blockBytes
}

// Quantized reports whether d is a ggml block type whose blocks carry scales
// (Q*, IQ*, TQ*, MXFP4, NVFP4).
func (d DType) Quantized() bool { return d.Valid() && d >= Q4_0 }

// Integer reports whether d is a plain integer type (BOOL, U8 … I64):
// neither a float nor a block type.
func (d DType) Integer() bool { return d.Valid() && !d.Float() && !d.Quantized() }

// Float reports whether d holds floating-point values (plain or quantized).
func (d DType) Float() bool { return d.Valid() && dtypes[d].float }

// BitsPerElement is the storage cost of one element in bits (8.5 for Q8_0).
func (d DType) BitsPerElement() float64 {
	if !d.Valid() {
		return 0
	}
	return float64(dtypes[d].blockBytes*8) / float64(dtypes[d].blockSize)
}

// Parse returns the dtype with the given canonical name. Case is ignored, so
// the lower-case ggml spellings ("q4_k", "bf16") are accepted too.
func Parse(name string) (DType, bool) {
	d, ok := byName[upper(name)]
	return d, ok
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// SafetensorsName returns d's name in a safetensors header and whether d is
// a safetensors dtype at all.
func (d DType) SafetensorsName() (string, bool) {
	if !d.Valid() || !dtypes[d].st {
		return "", false
	}
	return dtypes[d].name, true
}

// DTypeFromSafetensors maps a safetensors header dtype string (exact case,
// as the reference parser requires) to a dtype.
func DTypeFromSafetensors(name string) (DType, bool) {
	d, ok := byName[name]
	if !ok || !dtypes[d].st {
		return Invalid, false
	}
	return d, true
}

// GGMLType returns d's ggml type id and whether d has one.
func (d DType) GGMLType() (uint32, bool) {
	if !d.Valid() || dtypes[d].ggml == noGGML {
		return 0, false
	}
	return uint32(dtypes[d].ggml), true
}

// DTypeFromGGML maps a ggml type id to a dtype. Removed ids (4, 5, 31-33,
// 36-38) and ids ggml never assigned return false.
func DTypeFromGGML(id uint32) (DType, bool) {
	d, ok := byGGML[id]
	return d, ok
}

// ByteSize returns the number of bytes that n elements of d occupy. n must be
// a whole number of blocks; the multiplication is overflow-checked.
func (d DType) ByteSize(n int64) (int64, error) {
	if !d.Valid() {
		return 0, fmt.Errorf("tensor: invalid dtype %d", uint8(d))
	}
	if n < 0 {
		return 0, fmt.Errorf("tensor: negative element count %d", n)
	}
	bs := dtypes[d].blockSize
	if n%bs != 0 {
		return 0, fmt.Errorf("tensor: %d elements is not a whole number of %s blocks of %d", n, d, bs)
	}
	return MulInt64(n/bs, dtypes[d].blockBytes)
}

// MulInt64 multiplies two non-negative int64s, failing on overflow.
func MulInt64(a, b int64) (int64, error) {
	if a < 0 || b < 0 {
		return 0, fmt.Errorf("tensor: negative factor in %d*%d", a, b)
	}
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > 1<<63-1 {
		return 0, fmt.Errorf("tensor: %d*%d overflows int64", a, b)
	}
	return int64(lo), nil
}

// AddInt64 adds two non-negative int64s, failing on overflow.
func AddInt64(a, b int64) (int64, error) {
	if a < 0 || b < 0 {
		return 0, fmt.Errorf("tensor: negative term in %d+%d", a, b)
	}
	s := a + b
	if s < a {
		return 0, fmt.Errorf("tensor: %d+%d overflows int64", a, b)
	}
	return s, nil
}

// AlignUp rounds off up to a multiple of align (a power of two or any
// positive value), failing on overflow.
func AlignUp(off, align int64) (int64, error) {
	if align <= 0 {
		return 0, fmt.Errorf("tensor: alignment %d is not positive", align)
	}
	r := off % align
	if r == 0 {
		return off, nil
	}
	return AddInt64(off, align-r)
}
