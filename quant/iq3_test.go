package quant

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

// TestQuantizeIQ3CasesMatchGGML encodes the rows of
// testdata/quant/ggml/iq3.json (gen_iq3.py: for IQ3_XXS and IQ3_S, normal
// rows at three scales, heavy-tailed rows, outliers, and edge rows — all
// zero, a zero block, blocks below and just under IQ3_XXS's threshold, one
// non-zero value, constant, alternating, one negative per eight — each
// without and with an importance matrix, and one importance matrix with a
// zero block) and requires the bytes ggml_quantize_chunk wrote for them.
func TestQuantizeIQ3CasesMatchGGML(t *testing.T) {
	count := map[string]int{}
	for _, c := range readGGMLCases(t, "iq3.json") {
		dt, ok := tensor.Parse(c.Type)
		if !ok {
			t.Fatalf("%s: type %q", c.Name, c.Type)
		}
		x, qw, want := c.decode(t, dt)
		got := make([]byte, len(want))
		if err := QuantizeRows(got, x, dt, c.RowLen, qw); err != nil {
			t.Fatal(err)
		}
		sameBlocks(t, fmt.Sprintf("%s %s (imatrix %v)", c.Type, c.Name, qw != nil), dt, got, want)
		count[c.Type]++
		if qw != nil {
			count[c.Type+"+imatrix"]++
		}
	}
	for _, k := range []string{"IQ3_XXS", "IQ3_S"} {
		if count[k] != 13 || count[k+"+imatrix"] != 7 {
			t.Errorf("%s: %d cases, %d with an importance matrix; want 13 and 7", k, count[k], count[k+"+imatrix"])
		}
	}
}

// TestQuantizeIQ3NonFinite checks that NaN, ±Inf and values near the
// float32 limit, where ggml's search can abort, give blocks and no panic.
func TestQuantizeIQ3NonFinite(t *testing.T) {
	x := make([]float32, 512)
	for i := range x {
		x[i] = float32(i%7) - 3
	}
	x[3] = float32(math.NaN())
	x[40] = float32(math.Inf(1))
	x[300] = float32(math.Inf(-1))
	x[301] = 3e38
	x[400] = -3e38
	qw := make([]float32, 512)
	for i := range qw {
		qw[i] = float32(i % 3)
	}
	for _, dt := range []tensor.DType{tensor.IQ3_XXS, tensor.IQ3_S} {
		for _, w := range [][]float32{nil, qw} {
			dst := make([]byte, 2*int(dt.BlockBytes()))
			// ±3e38 may overflow the blocks' f16 scales: reported, dst
			// written.
			var oe *OverflowError
			if err := QuantizeRows(dst, x, dt, 512, w); err != nil && (!errors.As(err, &oe) || oe.MaxAbs != 3e38) {
				t.Fatalf("%v: %v, want nil or an overflow of largest magnitude 3e38", dt, err)
			}
		}
	}
}

// TestQuantizeIQ3VectorsMatchGGML encodes the IQ3_XXS and IQ3_S inputs of
// testdata/quant/ggml/vectors.json (4 rows of 256, no importance matrix,
// scales 10⁻³…10¹, made by a separate program) and requires ggml's blocks.
func TestQuantizeIQ3VectorsMatchGGML(t *testing.T) {
	n := 0
	for _, v := range readGGMLVectors(t) {
		dt, ok := tensor.DTypeFromGGML(v.GGMLType)
		if !ok || (dt != tensor.IQ3_XXS && dt != tensor.IQ3_S) {
			continue
		}
		n++
		var qw []float32
		if v.Imatrix != "" {
			qw = f32s(unhex(t, v.Imatrix))
		}
		want := unhex(t, v.Blocks)
		got := make([]byte, len(want))
		if err := QuantizeRows(got, f32s(unhex(t, v.Input)), dt, v.RowLen, qw); err != nil {
			t.Fatal(err)
		}
		sameBlocks(t, dt.String(), dt, got, want)
	}
	if n != 2 {
		t.Fatalf("%d IQ3 vectors, want 2", n)
	}
}

// FuzzQuantizeIQ3 feeds arbitrary float32 rows (any bit pattern: NaN, Inf,
// subnormals, ±0) and importance weights to both IQ3 encoders: they must
// fill their blocks without a panic, and the blocks must decode.
func FuzzQuantizeIQ3(f *testing.F) {
	seed := make([]byte, 4*256)
	for i := range 256 {
		binary.LittleEndian.PutUint32(seed[4*i:], math.Float32bits(float32(i%9)-4))
	}
	f.Add(seed, false)
	f.Add(seed, true)
	f.Fuzz(func(t *testing.T, data []byte, weighted bool) {
		if len(data) < 4*256 {
			data = append(data, make([]byte, 4*256-len(data))...)
		}
		x := f32s(data[:4*256])
		var qw []float32
		if weighted {
			qw = make([]float32, 256)
			for i := range qw {
				qw[i] = abs32(x[(i*7)%256])
			}
		}
		for _, dt := range []tensor.DType{tensor.IQ3_XXS, tensor.IQ3_S} {
			b := make([]byte, dt.BlockBytes())
			// A finite value past the type's range is reported as an
			// overflow, with the blocks still written.
			var overflow *OverflowError
			if err := QuantizeRows(b, x, dt, 256, qw); err != nil && !errors.As(err, &overflow) {
				t.Fatal(err)
			}
			y := make([]float32, 256)
			if err := Dequantize(y, b, dt); err != nil {
				t.Fatal(err)
			}
		}
	})
}
