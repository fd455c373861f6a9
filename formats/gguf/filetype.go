package gguf

import (
	"fmt"
)

// FileType is llama.cpp's llama_ftype (include/llama.h), the value of
// general.file_type: what most tensors of a file are, or which of
// llama-quantize's mixtures made it.
type FileType uint32

// The file types tfconv writes.
const (
	FileTypeF32   FileType = 0
	FileTypeF16   FileType = 1
	FileTypeQ4_0  FileType = 2
	FileTypeQ4_1  FileType = 3
	FileTypeQ8_0  FileType = 7
	FileTypeQ5_0  FileType = 8
	FileTypeQ5_1  FileType = 9
	FileTypeQ2_K  FileType = 10
	FileTypeQ3_KS FileType = 11
	FileTypeQ3_KM FileType = 12
	FileTypeQ3_KL FileType = 13
	FileTypeQ4_KS FileType = 14
	FileTypeQ4_KM FileType = 15
	FileTypeQ5_KS FileType = 16
	FileTypeQ5_KM FileType = 17
	FileTypeQ6_K  FileType = 18
	FileTypeQ2_KS FileType = 21
	FileTypeIQ4NL FileType = 25
	FileTypeIQ4XS FileType = 30
	FileTypeBF16  FileType = 32
	FileTypeTQ1_0 FileType = 36
	FileTypeTQ2_0 FileType = 37
	// FileTypeMXFP4MoE is LLAMA_FTYPE_MOSTLY_MXFP4_MOE of llama.cpp after
	// c392e509 (gpt-oss): MXFP4 stacked experts, Q8_0 elsewhere.
	FileTypeMXFP4MoE FileType = 38
	// FileTypeNVFP4 is LLAMA_FTYPE_MOSTLY_NVFP4 (llama.cpp 2026): what the
	// converter calls an NVFP4 checkpoint's GGUF (its blocks carried over).
	FileTypeNVFP4 FileType = 39
	// FileTypeQ1_0 is LLAMA_FTYPE_MOSTLY_Q1_0 (llama.cpp 2026): Q1_0
	// matrices, 1-bit signs and an f16 scale per 128 values.
	FileTypeQ1_0 FileType = 40
)

// The IQ3 mixtures (llama_ftype LLAMA_FTYPE_MOSTLY_IQ3_*).
const (
	FileTypeIQ3XS  FileType = 22
	FileTypeIQ3XXS FileType = 23
	FileTypeIQ3S   FileType = 26
	FileTypeIQ3M   FileType = 27
)

// The file types of llama-quantize's 2-bit grid mixtures.
const (
	FileTypeIQ2XXS FileType = 19
	FileTypeIQ2XS  FileType = 20
	FileTypeIQ2S   FileType = 28
	FileTypeIQ2M   FileType = 29
)

// The file types of llama-quantize's 1-bit grid mixtures.
const (
	FileTypeIQ1S FileType = 24
	FileTypeIQ1M FileType = 31
)

// fileTypeNames are llama.h's LLAMA_FTYPE_* names without the
// "LLAMA_FTYPE_MOSTLY_" (or "LLAMA_FTYPE_") prefix, the way llama.cpp's
// tools and gguf-dump users name a file's type; 4–6 and 33–35 are types
// llama.cpp has since removed, which older files still carry.
var fileTypeNames = map[FileType]string{
	FileTypeF32: "ALL_F32", FileTypeF16: "F16", FileTypeQ4_0: "Q4_0", FileTypeQ4_1: "Q4_1",
	4: "Q4_1_SOME_F16", 5: "Q4_2", 6: "Q4_3",
	FileTypeQ8_0: "Q8_0", FileTypeQ5_0: "Q5_0", FileTypeQ5_1: "Q5_1", FileTypeQ2_K: "Q2_K",
	FileTypeQ3_KS: "Q3_K_S", FileTypeQ3_KM: "Q3_K_M", FileTypeQ3_KL: "Q3_K_L",
	FileTypeQ4_KS: "Q4_K_S", FileTypeQ4_KM: "Q4_K_M", FileTypeQ5_KS: "Q5_K_S", FileTypeQ5_KM: "Q5_K_M",
	FileTypeQ6_K: "Q6_K", FileTypeIQ2XXS: "IQ2_XXS", FileTypeIQ2XS: "IQ2_XS", FileTypeQ2_KS: "Q2_K_S",
	FileTypeIQ3XS: "IQ3_XS", FileTypeIQ3XXS: "IQ3_XXS", FileTypeIQ1S: "IQ1_S", FileTypeIQ4NL: "IQ4_NL",
	FileTypeIQ3S: "IQ3_S", FileTypeIQ3M: "IQ3_M", FileTypeIQ2S: "IQ2_S", FileTypeIQ2M: "IQ2_M",
	FileTypeIQ4XS: "IQ4_XS", FileTypeIQ1M: "IQ1_M", FileTypeBF16: "BF16",
	33: "Q4_0_4_4", 34: "Q4_0_4_8", 35: "Q4_0_8_8",
	FileTypeTQ1_0: "TQ1_0", FileTypeTQ2_0: "TQ2_0", FileTypeMXFP4MoE: "MXFP4_MOE",
	FileTypeNVFP4: "NVFP4", FileTypeQ1_0: "Q1_0", 41: "Q2_0",
	1024: "GUESSED",
}

// String is the type's llama.h name ("Q4_K_M", "ALL_F32"), or
// "unknown (N)" for a value llama.h does not define.
func (f FileType) String() string {
	if s, ok := fileTypeNames[f]; ok {
		return s
	}
	return fmt.Sprintf("unknown (%d)", uint32(f))
}
