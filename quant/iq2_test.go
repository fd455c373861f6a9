package quant

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

// TestQuantizeIQ2MatchesGGML encodes ggml's IQ2_XXS, IQ2_XS and IQ2_S
// inputs of testdata/quant/ggml/vectors.json (4 rows of 256 at scales
// 10⁻³…10¹; IQ2_XXS and IQ2_XS with the importance matrix given there,
// IQ2_S without one) and compares the super-blocks byte for byte with
// ggml_quantize_chunk's.
func TestQuantizeIQ2MatchesGGML(t *testing.T) {
	n := 0
	for _, v := range readGGMLVectors(t) {
		dt, ok := tensor.DTypeFromGGML(v.GGMLType)
		if !ok || !isIQ2(dt) {
			continue
		}
		n++
		x := f32s(unhex(t, v.Input))
		want := unhex(t, v.Blocks)
		var qw []float32
		if v.Imatrix != "" {
			qw = f32s(unhex(t, v.Imatrix))
		}
		if (qw == nil) != (dt == tensor.IQ2_S) {
			t.Fatalf("%v: importance matrix %v", dt, qw != nil)
		}
		got := make([]byte, len(want))
		if err := QuantizeRows(got, x, dt, v.RowLen, qw); err != nil {
			t.Fatal(err)
		}
		sameBlocks(t, fmt.Sprintf("%v %dx%d", dt, v.Rows, v.RowLen), dt, got, want)
	}
	if n != 3 {
		t.Fatalf("%d IQ2 vectors, want 3", n)
	}
}

// TestQuantizeIQ2CasesMatchGGML encodes the rows of
// testdata/quant/ggml/iq2.json (gen_iq2.py: normal rows at three scales,
// outliers, heavy tails, and edge rows — all zero, a zero block, blocks
// below GROUP_MAX_EPS and GROUP_MAX_EPS_IQ2_S, one non-zero value,
// constant, alternating, odd negatives in every group of 8) as IQ2_XXS,
// IQ2_XS and IQ2_S, each with a random importance matrix and with one
// holding zeros (IQ2_S also without one), and requires the bytes
// ggml_quantize_chunk wrote for them.
func TestQuantizeIQ2CasesMatchGGML(t *testing.T) {
	count := map[string]int{}
	for _, c := range readGGMLCases(t, "iq2.json") {
		dt, ok := tensor.Parse(c.Type)
		if !ok || !isIQ2(dt) {
			t.Fatalf("%s: type %q", c.Name, c.Type)
		}
		x, qw, want := c.decode(t, dt)
		count[fmt.Sprintf("%v %v", dt, qw != nil)]++
		got := make([]byte, len(want))
		if err := QuantizeRows(got, x, dt, c.RowLen, qw); err != nil {
			t.Fatal(err)
		}
		sameBlocks(t, fmt.Sprintf("%v %s (imatrix %v)", dt, c.Name, qw != nil), dt, got, want)
	}
	want := map[string]int{"IQ2_XXS true": 12, "IQ2_XS true": 12, "IQ2_S true": 12, "IQ2_S false": 6}
	if !maps.Equal(count, want) {
		t.Fatalf("cases %v, want %v", count, want)
	}
}

// TestQuantizeIQ2Aborts: where ggml aborts (an IQ2_XXS block of 32 values
// whose importance weights are all zero leaves its scale NaN, which
// GGML_ASSERT(scale >= 0) stops on), QuantizeRows returns an error naming
// the block; IQ2_XXS and IQ2_XS without weights are refused as ggml
// refuses them.
func TestQuantizeIQ2Aborts(t *testing.T) {
	x := make([]float32, 512)
	for i := range x {
		x[i] = float32(i%7) - 3
	}
	qw := make([]float32, 512)
	for i := range qw {
		qw[i] = 1
	}
	clear(qw[64:96])
	err := QuantizeRows(make([]byte, 2*66), x, tensor.IQ2_XXS, 512, qw)
	if err == nil || !strings.Contains(err.Error(), "block 2") || !strings.Contains(err.Error(), "super-block 0") {
		t.Errorf("IQ2_XXS with a zero-weight block: %v", err)
	}
	for _, dt := range []tensor.DType{tensor.IQ2_XXS, tensor.IQ2_XS} {
		if err := QuantizeRows(make([]byte, 2*int(dt.BlockBytes())), x, dt, 512, nil); !errors.Is(err, tensor.ErrUnsupported) {
			t.Errorf("%v without weights: %v", dt, err)
		}
	}
}

// fuzzFloat maps a byte to a float32 that exercises the encoders: 0,
// ±Inf, NaN, a subnormal, and ±(1+m/8)·2^(e−8) over a wide range of scales.
func fuzzFloat(c byte) float32 {
	switch c {
	case 0:
		return 0
	case 0xff:
		return float32(math.NaN())
	case 0xfe:
		return float32(math.Inf(1))
	case 0xfd:
		return float32(math.Inf(-1))
	case 0xfc:
		return math.Float32frombits(1) // the smallest subnormal
	}
	v := (1 + float32(c&7)/8) * float32(math.Ldexp(1, int(c>>3&15)*4-32))
	if c&0x80 != 0 {
		v = -v
	}
	return v
}

// FuzzQuantizeIQ2 feeds arbitrary values (one byte each through
// fuzzFloat: NaN, Inf, subnormals, scales 2⁻³²…2²⁸) to the three encoders,
// with importance weights from the same bytes read backwards: an error is
// allowed where ggml aborts, a panic never.
func FuzzQuantizeIQ2(f *testing.F) {
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
		dt := []tensor.DType{tensor.IQ2_XXS, tensor.IQ2_XS, tensor.IQ2_S}[which%3]
		out := make([]byte, dt.BlockBytes())
		_ = QuantizeRows(out, x[:], dt, 256, qw[:])
		if dt == tensor.IQ2_S {
			_ = Quantize(out, x[:], dt)
		}
	})
}
