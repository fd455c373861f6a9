package quant

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

// Each record against tensor's table: every ggml block type has a record
// that decodes it, and a record's codec round-trips one block of the size
// tensor's table gives (the only table of sizes).
func TestTypesMatchTensorTable(t *testing.T) {
	t.Parallel()
	for _, d := range tensor.All() {
		if r, ok := Lookup(d); d.Quantized() && (!ok || r.Decode == nil) {
			t.Errorf("ggml type %v has no record with a decoder", d)
		}
	}
	for _, r := range Types() {
		d := r.DType
		if l, ok := Lookup(d); !ok || l.DType != d || l.FileType != r.FileType || l.Write != r.Write {
			t.Errorf("%v: Lookup does not return its record", d)
		}
		if (r.Encode != nil || r.EncodeRows != nil) && r.Decode == nil {
			t.Errorf("%v: encodes but does not decode", d)
		}
		if r.Write != 0 || r.HasFileType || r.RowDot != tensor.Invalid || r.NeedsImatrix {
			if _, ok := d.GGMLType(); !ok {
				t.Errorf("%v: a GGUF fact on a type with no ggml id", d)
			}
		}
		if r.Write&(TensorType|OutType) != 0 && r.Encode == nil {
			t.Errorf("%v: named for output but has no encoder without importance weights", d)
		}
		if f := r.Fallback; f != tensor.Invalid && (registry[f] == nil || registry[f].Encode == nil || f.BlockSize() >= d.BlockSize()) {
			t.Errorf("%v: fallback %v is no encodable type of smaller blocks", d, f)
		}
		if r.NeedsImatrix && r.EncodeRows == nil {
			t.Errorf("%v: needs an imatrix but has no weighted encoder", d)
		}
		if r.IgnoresWeights && r.EncodeRows != nil {
			t.Errorf("%v: ignores weights yet has a weighted encoder", d)
		}
		if r.Encode == nil && r.EncodeRows == nil {
			continue
		}
		// One row of 256 elements (a whole number of every block size)
		// encoded in tensor's size and decoded back.
		const n = 256
		src := make([]float32, n)
		var w []float32
		for i := range src {
			src[i] = float32(math.Sin(float64(i) * 0.37))
			w = append(w, 1+float32(i%7))
		}
		size, err := d.ByteSize(n)
		if err != nil || size != n/d.BlockSize()*d.BlockBytes() {
			t.Fatalf("%v: tensor's size of %d elements: %d, %v", d, n, size, err)
		}
		dst := make([]byte, size)
		if r.Encode != nil {
			err = Quantize(dst, src, d)
		} else {
			err = QuantizeRows(dst, src, d, n, w)
		}
		if err != nil {
			t.Errorf("%v: encode: %v", d, err)
			continue
		}
		back := make([]float32, n)
		if err := Dequantize(back, dst, d); err != nil {
			t.Errorf("%v: decode: %v", d, err)
			continue
		}
		var sig, noise float64
		for i := range src {
			sig += float64(src[i]) * float64(src[i])
			e := float64(back[i] - src[i])
			noise += e * e
		}
		// Ternary types keep only the sign pattern; the rest come within 25 %.
		if limit := 0.25 * sig; d != tensor.TQ1_0 && d != tensor.TQ2_0 && noise > limit {
			t.Errorf("%v: round trip noise %.3g of signal %.3g", d, noise, sig)
		}
	}
}

// The lists quant's callers derive from the records.
func TestTypesDerivedLists(t *testing.T) {
	t.Parallel()
	if got, want := OutTypes(), []tensor.DType{tensor.F32, tensor.F16, tensor.BF16, tensor.Q8_0}; !slices.Equal(got, want) {
		t.Errorf("OutTypes = %v, want %v", got, want)
	}
	var names []string
	for _, d := range TensorTypes() {
		names = append(names, d.String())
	}
	if got, want := strings.Join(names, " "), "F16 BF16 F32 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q3_K Q4_K Q5_K Q6_K IQ3_XXS IQ4_NL IQ3_S IQ4_XS MXFP4 NVFP4 Q1_0"; got != want {
		t.Errorf("TensorTypes = %s\nwant %s", got, want)
	}
	// llama.h's LLAMA_FTYPE_ALL_F32 … MOSTLY_Q6_K, MOSTLY_BF16 and MOSTLY_Q1_0.
	fts := map[tensor.DType]uint32{tensor.F32: 0, tensor.F16: 1, tensor.Q4_0: 2, tensor.Q4_1: 3, tensor.Q8_0: 7,
		tensor.Q5_0: 8, tensor.Q5_1: 9, tensor.Q2_K: 10, tensor.Q6_K: 18, tensor.BF16: 32, tensor.Q1_0: 40}
	for _, d := range tensor.All() {
		ft, ok := FileTypeOf(d)
		if want, has := fts[d]; ok != has || ft != want {
			t.Errorf("FileTypeOf(%v) = %d, %v; want %d, %v", d, ft, ok, want, has)
		}
	}
	var canQ, canW []string
	for _, d := range tensor.All() {
		if CanQuantize(d) {
			canQ = append(canQ, d.String())
		}
		if CanQuantizeWeighted(d) {
			canW = append(canW, d.String())
		}
	}
	if got, want := strings.Join(canQ, " "), "F16 BF16 F32 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q8_1 Q2_K Q3_K Q4_K Q5_K Q6_K Q8_K IQ3_XXS IQ4_NL IQ3_S IQ2_S IQ4_XS IQ1_M TQ1_0 TQ2_0 MXFP4 NVFP4 Q1_0"; got != want {
		t.Errorf("CanQuantize: %s\nwant %s", got, want)
	}
	if got, want := strings.Join(canW, " "), "F16 BF16 F32 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q3_K Q4_K Q5_K Q6_K IQ2_XXS IQ2_XS IQ3_XXS IQ1_S IQ4_NL IQ3_S IQ2_S IQ4_XS IQ1_M TQ1_0 TQ2_0 MXFP4 NVFP4 Q1_0"; got != want {
		t.Errorf("CanQuantizeWeighted: %s\nwant %s", got, want)
	}
}

// A second registration of a dtype, or an invalid one, panics.
func TestRegisterTwicePanics(t *testing.T) {
	t.Parallel()
	for _, d := range []tensor.DType{tensor.Q4_K, tensor.Invalid} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%v) did not panic", d)
				}
			}()
			Register(Type{DType: d})
		}()
	}
	if r, _ := Lookup(tensor.Q4_K); r.Encode == nil {
		t.Error("the refused registration replaced Q4_K's record")
	}
}
