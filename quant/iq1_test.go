package quant

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

// TestQuantizeIQ1MatchesGGML encodes ggml's IQ1_S and IQ1_M inputs of
// testdata/quant/ggml/vectors.json (4 rows of 256 at scales 10⁻³…10¹, with
// the importance matrix given there) and compares the super-blocks byte for
// byte with ggml_quantize_chunk's.
func TestQuantizeIQ1MatchesGGML(t *testing.T) {
	n := 0
	for _, v := range readGGMLVectors(t) {
		dt, ok := tensor.DTypeFromGGML(v.GGMLType)
		if !ok || !isIQ1(dt) {
			continue
		}
		n++
		if v.Imatrix == "" {
			t.Fatalf("%v: no importance matrix", dt)
		}
		x := f32s(unhex(t, v.Input))
		qw := f32s(unhex(t, v.Imatrix))
		want := unhex(t, v.Blocks)
		got := make([]byte, len(want))
		if err := QuantizeRows(got, x, dt, v.RowLen, qw); err != nil {
			t.Fatal(err)
		}
		sameBlocks(t, fmt.Sprintf("%v %dx%d", dt, v.Rows, v.RowLen), dt, got, want)
	}
	if n != 2 {
		t.Fatalf("%d IQ1 vectors, want 2", n)
	}
}

// TestQuantizeIQ1CasesMatchGGML encodes the rows of
// testdata/quant/ggml/iq1.json (gen_iq1.py: normal rows at three scales,
// f16-rounded rows and rows of a few repeated values, whose ties the split
// search must sort as glibc does, outliers, heavy tails, and edge rows —
// all zero, a zero block, 16- and 32-value blocks below the IQ1_M and
// IQ1_S epsilons, which store the shift carried from the block before
// them, one non-zero value, constant, alternating) as IQ1_S and IQ1_M,
// each with a random importance matrix and with one holding zeros (IQ1_M
// also without one), all the rows of a case in one call as ggml was given
// them, and requires the bytes ggml_quantize_chunk wrote for them.
func TestQuantizeIQ1CasesMatchGGML(t *testing.T) {
	count := map[string]int{}
	for _, c := range readGGMLCases(t, "iq1.json") {
		dt, ok := tensor.Parse(c.Type)
		if !ok || !isIQ1(dt) {
			t.Fatalf("%s: type %q", c.Name, c.Type)
		}
		x, qw, want := c.decode(t, dt)
		count[fmt.Sprintf("%v %v", dt, qw != nil)]++
		got := make([]byte, len(want))
		var err error
		if qw == nil {
			err = Quantize(got, x, dt)
		} else {
			err = QuantizeRows(got, x, dt, c.RowLen, qw)
		}
		if err != nil {
			t.Fatal(err)
		}
		sameBlocks(t, fmt.Sprintf("%v %s (imatrix %v)", dt, c.Name, qw != nil), dt, got, want)
	}
	want := map[string]int{"IQ1_S true": 16, "IQ1_M true": 16, "IQ1_M false": 8}
	if !maps.Equal(count, want) {
		t.Fatalf("cases %v, want %v", count, want)
	}
}

// TestQuantizeIQ1Aborts: where ggml aborts (a 32-value IQ1_S block whose
// importance weights are all zero has no split with sumq2 > 0, which
// GGML_ASSERT(besti1 >= 0 …) stops on), QuantizeRows returns an error
// naming the block; IQ1_S without weights is refused as ggml refuses it,
// IQ1_M without weights is not.
func TestQuantizeIQ1Aborts(t *testing.T) {
	x := make([]float32, 512)
	for i := range x {
		x[i] = float32(i%7) - 3
	}
	qw := make([]float32, 512)
	for i := range qw {
		qw[i] = 1
	}
	clear(qw[320:352])
	err := QuantizeRows(make([]byte, 2*50), x, tensor.IQ1_S, 512, qw)
	if err == nil || !strings.Contains(err.Error(), "block 2") || !strings.Contains(err.Error(), "super-block 1") {
		t.Errorf("IQ1_S with a zero-weight block: %v", err)
	}
	clear(qw[16:32])
	err = QuantizeRows(make([]byte, 2*56), x, tensor.IQ1_M, 512, qw)
	if err == nil || !strings.Contains(err.Error(), "block 1") || !strings.Contains(err.Error(), "super-block 0") {
		t.Errorf("IQ1_M with a zero-weight block: %v", err)
	}
	if err := QuantizeRows(make([]byte, 2*50), x, tensor.IQ1_S, 512, nil); !errors.Is(err, tensor.ErrUnsupported) {
		t.Errorf("IQ1_S without weights: %v", err)
	}
	if !CanQuantizeWeighted(tensor.IQ1_S) || !CanQuantizeWeighted(tensor.IQ1_M) || CanQuantize(tensor.IQ1_S) || !CanQuantize(tensor.IQ1_M) {
		t.Error("CanQuantizeWeighted(IQ1_S, IQ1_M) must be true, CanQuantize true for IQ1_M only")
	}
}

// FuzzQuantizeIQ1 feeds arbitrary values (one byte each through
// fuzzFloat: NaN, Inf, subnormals, scales 2⁻³²…2²⁸) to the two encoders,
// with importance weights from the same bytes read backwards: an error is
// allowed where ggml aborts, a panic never.
func FuzzQuantizeIQ1(f *testing.F) {
	f.Add(make([]byte, 256), uint8(0))
	f.Add(bytes.Repeat([]byte{0x41, 0xc1, 0x45, 0x3a}, 64), uint8(1))
	f.Add(bytes.Repeat([]byte{0xfe, 0x41, 0xff, 0x01}, 64), uint8(2))
	f.Fuzz(func(t *testing.T, b []byte, which uint8) {
		if len(b) < 256 {
			return
		}
		var x, qw [256]float32
		for i := range x {
			x[i] = fuzzFloat(b[i])
			qw[i] = fuzzFloat(b[255-i])
		}
		dt := []tensor.DType{tensor.IQ1_S, tensor.IQ1_M}[which%2]
		out := make([]byte, dt.BlockBytes())
		_ = QuantizeRows(out, x[:], dt, 256, qw[:])
		if dt == tensor.IQ1_M {
			_ = Quantize(out, x[:], dt)
		}
	})
}
