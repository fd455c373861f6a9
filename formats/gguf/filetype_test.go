package gguf_test

import (
	"testing"

	"github.com/tfconv/tfconv/formats/gguf"
	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/tensor"
)

// The file type number a quant record carries is the one gguf names after
// the record's type (llama.h: LLAMA_FTYPE_ALL_F32, LLAMA_FTYPE_MOSTLY_<T>).
func TestRecordFileTypesNamed(t *testing.T) {
	t.Parallel()
	n := 0
	for _, r := range quant.Types() {
		if !r.HasFileType {
			continue
		}
		n++
		want := r.DType.String()
		if r.DType == tensor.F32 {
			want = "ALL_F32"
		}
		if got := gguf.FileType(r.FileType).String(); got != want {
			t.Errorf("%v's file type %d is named %s, want %s", r.DType, r.FileType, got, want)
		}
	}
	if n != 11 {
		t.Errorf("%d records carry a file type, want 11 (F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q6_K, Q1_0)", n)
	}
}
