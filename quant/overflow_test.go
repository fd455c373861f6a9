package quant

import (
	"errors"
	"math"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

// TestQuantizeOverflow: finite values that an encoding turns into ±Inf or
// NaN are an *OverflowError with their count and largest magnitude, dst
// still written; values that fit, and inputs already non-finite, are not.
func TestQuantizeOverflow(t *testing.T) {
	t.Parallel()
	inf := float32(math.Inf(1))
	row := func(vals ...float32) []float32 {
		x := make([]float32, 256)
		for i := range x {
			x[i] = float32(i%13) * 0.01
		}
		copy(x[100:], vals)
		return x
	}
	cases := []struct {
		dt     tensor.DType
		src    []float32
		count  int64
		maxAbs float32
	}{
		{tensor.F16, row(65504, -65519.99, 1000), 0, 0},
		{tensor.F16, row(65520, -1e6, 7e4, inf, float32(math.NaN())), 3, 1e6},
		{tensor.BF16, row(3.3e38, -3.38e38), 0, 0},
		{tensor.BF16, row(math.MaxFloat32, -1e6), 1, math.MaxFloat32},
		{tensor.F32, row(math.MaxFloat32, inf), 0, 0},
		{tensor.Q8_0, row(1e6, -8e6), 0, 0}, // d = 8e6/127 fits f16
		{tensor.Q8_0, row(1e7), 32, 1e7},    // d = 1e7/127 overflows: the block's 32 values decode to NaN or ±Inf
		{tensor.Q4_K, row(1e2), 0, 0},
		{tensor.Q4_K, row(1e30), 256, 1e30},
	}
	for _, c := range cases {
		dst := make([]byte, int(c.dt.BlockBytes())*256/int(c.dt.BlockSize()))
		err := Quantize(dst, c.src, c.dt)
		var oe *OverflowError
		if c.count == 0 {
			if err != nil {
				t.Errorf("%v %v: %v", c.dt, c.src[100:103], err)
			}
			continue
		}
		if !errors.As(err, &oe) {
			t.Errorf("%v %v: %v, want an *OverflowError", c.dt, c.src[100:103], err)
			continue
		}
		if oe.DType != c.dt || oe.MaxAbs != c.maxAbs || oe.Count != c.count {
			t.Errorf("%v: %+v, want count %d, largest %g", c.dt, *oe, c.count, c.maxAbs)
		}
		// dst holds the encoding all the same.
		y := make([]float32, 256)
		if err := Dequantize(y, dst, c.dt); err != nil {
			t.Fatal(err)
		}
		if y[101] == 0 && c.dt == tensor.F16 {
			t.Errorf("%v: dst not written", c.dt)
		}
	}
	// QuantizeRows reports it too.
	dst := make([]byte, 512)
	var oe *OverflowError
	if err := QuantizeRows(dst, row(-7e4), tensor.F16, 256, nil); !errors.As(err, &oe) || oe.Count != 1 || oe.MaxAbs != 7e4 {
		t.Errorf("QuantizeRows F16: %v", err)
	}
}
