package quant

import (
	"errors"
	"math"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

// TestDequantizeKnownBlocks decodes hand-built blocks whose values follow
// directly from ggml's block definitions (d = 1 or 0.5 in f16, levels from
// ggml-common.h's tables).
func TestDequantizeKnownBlocks(t *testing.T) {
	one := []byte{0x00, 0x3c} // f16 1.0
	cases := []struct {
		dt    tensor.DType
		block []byte
		check func(y []float32) bool
	}{
		// IQ4_NL: d=1, nibbles j&15 → kvalues_iq4nl.
		{tensor.IQ4_NL, append(append([]byte{}, one...), 0x10, 0x32, 0x54, 0x76, 0x98, 0xba, 0xdc, 0xfe, 0, 0, 0, 0, 0, 0, 0, 0), func(y []float32) bool {
			return y[0] == -127 && y[16] == -104 && y[7] == 89 && y[23] == 113 && y[8] == -127
		}},
		// MXFP4: e=128 → d = 2^(128-128) = 1; nibble 7 → 12, nibble 0xf → -12 (doubled E2M1).
		{tensor.MXFP4, append([]byte{128}, 0xf7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), func(y []float32) bool {
			return y[0] == 12 && y[16] == -12 && y[1] == 0
		}},
		// TQ2_0: 2-bit fields 0,1,2 → -1,0,1 times d=1.
		{tensor.TQ2_0, append(append(make([]byte, 0, 66), repeat(0x24, 64)...), one...), func(y []float32) bool {
			// 0x24 = fields 0,1,2,0 → -1, 0, 1, -1 for l = 0..3
			return y[0] == -1 && y[32] == 0 && y[64] == 1 && y[96] == -1 && y[255] == -1
		}},
		// TQ1_0: byte 0 is ceil(0·256/243) = 0 → all digits 0 → -1;
		// byte 255 → (255·3)>>8 = 2 → +1 for the first digit.
		{tensor.TQ1_0, append(append(repeat(0xff, 52), 0, 0)[:52], one...), func(y []float32) bool {
			return y[0] == 1
		}},
		// Q8_K: float32 d = 0.5, q = -3.
		{tensor.Q8_K, append(append([]byte{0, 0, 0, 0x3f}, repeat(0xfd, 256)...), make([]byte, 32)...), func(y []float32) bool {
			return y[0] == -1.5 && y[255] == -1.5
		}},
		// IQ2_XXS with all-zero indices: grid 0 is 0x08 (=8) in every byte,
		// scale nibble 0 → db = d·0.5·0.25 = 0.125, no signs: 1.0 everywhere.
		{tensor.IQ2_XXS, append(append([]byte{}, one...), make([]byte, 64)...), func(y []float32) bool {
			for _, v := range y {
				if v != 1 {
					return false
				}
			}
			return true
		}},
	}
	for _, c := range cases {
		if len(c.block) != int(c.dt.BlockBytes()) {
			t.Fatalf("%v: test block has %d bytes", c.dt, len(c.block))
		}
		y := make([]float32, c.dt.BlockSize())
		if err := Dequantize(y, c.block, c.dt); err != nil {
			t.Fatalf("%v: %v", c.dt, err)
		}
		if !c.check(y) {
			t.Errorf("%v: unexpected values %v", c.dt, y[:min(len(y), 40)])
		}
	}
}

func repeat(b byte, n int) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = b
	}
	return out
}

// TestRoundTripAllTypes checks decode(quantize(x)) for every type Quantize
// supports against the ggml formulas' error bounds, and that every block
// type decodes any bytes without panicking.
func TestRoundTripAllTypes(t *testing.T) {
	for _, dt := range tensor.All() {
		if !CanDequantize(dt) {
			if err := Dequantize(make([]float32, dt.BlockSize()), make([]byte, dt.BlockBytes()), dt); !errors.Is(err, tensor.ErrUnsupported) {
				t.Errorf("%v: Dequantize error %v, want ErrUnsupported", dt, err)
			}
			continue
		}
		n := int(dt.BlockSize()) * 8
		raw := make([]byte, int(dt.BlockBytes())*8)
		for i := range raw {
			raw[i] = byte(i*131 + 7)
		}
		if err := Dequantize(make([]float32, n), raw, dt); err != nil {
			t.Errorf("%v: %v", dt, err)
		}
		if tol, ok := maxErr[dt]; ok {
			x := make([]float32, 256*8)
			for i := range x {
				x[i] = float32(math.Sin(float64(i)*0.37)) * float32(1+i%5)
			}
			q := make([]byte, len(x)/int(dt.BlockSize())*int(dt.BlockBytes()))
			if err := Quantize(q, x, dt); err != nil {
				t.Fatal(err)
			}
			y := make([]float32, len(x))
			if err := Dequantize(y, q, dt); err != nil {
				t.Fatal(err)
			}
			checkDequantError(t, "sine", x, y, dt)
			_ = tol
		}
	}
}

func TestSizeErrors(t *testing.T) {
	if err := Dequantize(make([]float32, 32), make([]byte, 33), tensor.Q8_0); err == nil {
		t.Error("partial block accepted")
	}
	if err := Dequantize(make([]float32, 64), make([]byte, 34), tensor.Q8_0); err == nil {
		t.Error("dst of the wrong length accepted")
	}
	if err := Quantize(make([]byte, 34), make([]float32, 31), tensor.Q8_0); err == nil {
		t.Error("partial block of input accepted")
	}
	if err := Quantize(make([]byte, 66), make([]float32, 256), tensor.IQ2_XXS); !errors.Is(err, tensor.ErrUnsupported) {
		t.Errorf("IQ2_XXS quantize: %v, want ErrUnsupported", err)
	}
	if err := Quantize(nil, nil, tensor.Invalid); !errors.Is(err, tensor.ErrUnsupported) {
		t.Errorf("invalid dtype: %v", err)
	}
}

func TestInt8(t *testing.T) {
	src := []float32{
		1, -2, 0.5, 254, // row 0: scale 2, 0.5/2 = 0.25 → 0, 1/2 = 0.5 → 1 (away from zero)
		-3, 1.5, 0, 0.75, // row 1: scale 3/127
		0, 0, 0, 0, // row 2: all zero
	}
	q := make([]int8, 12)
	scales := make([]float32, 3)
	if err := QuantizeInt8Rows(q, scales, src, 3, 4); err != nil {
		t.Fatal(err)
	}
	if scales[0] != 2 || scales[1] != float32(3)/127 || scales[2] != 0 {
		t.Fatalf("scales %v", scales)
	}
	want := []int8{1, -1, 0, 127, -127, 64, 0, 32, 0, 0, 0, 0} // 1.5·127/3 = 63.5 → 64; 0.75·127/3 = 31.75 → 32
	for i := range want {
		if q[i] != want[i] {
			t.Fatalf("q = %v, want %v", q, want)
		}
	}
	back := make([]float32, 12)
	if err := DequantizeInt8Rows(back, q, scales, 3, 4); err != nil {
		t.Fatal(err)
	}
	if back[3] != 254 || back[4] != -3 {
		t.Errorf("dequantized %v", back)
	}
	if err := QuantizeInt8Rows(q, scales, src, 4, 4); err == nil {
		t.Error("wrong shape accepted")
	}
	if s := QuantizeInt8(q[:2], []float32{float32(math.NaN()), 4}); s != 4.0/127 || q[0] != 0 || q[1] != 127 {
		t.Errorf("NaN handling: scale %v q %v", s, q[:2])
	}
}

// FuzzDequantize feeds arbitrary bytes to every decoder: none may panic.
func FuzzDequantize(f *testing.F) {
	f.Add([]byte{0, 0x3c, 1, 2, 3}, uint8(tensor.Q4_0))
	f.Add(make([]byte, 210), uint8(tensor.Q6_K))
	f.Add(repeat(0xff, 110), uint8(tensor.IQ3_S))
	f.Add(repeat(0x7f, 36), uint8(tensor.NVFP4))
	f.Add(repeat(0xff, 18), uint8(tensor.Q1_0))
	f.Fuzz(func(t *testing.T, b []byte, d uint8) {
		dt := tensor.DType(d)
		if !dt.Valid() {
			return
		}
		bb, bs := int(dt.BlockBytes()), int(dt.BlockSize())
		n := len(b) / bb
		_ = Dequantize(make([]float32, n*bs), b[:n*bb], dt)
		_ = Dequantize(make([]float32, 1), b, dt)
	})
}
