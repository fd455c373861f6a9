package quant

import (
	"bytes"
	"io"
	"math"
	"path/filepath"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

// TestMLXFPMatchesMLX holds MLXFP.Dequantize to MLX's own mx::dequantize
// (MLX 846d176, CPU backend; testdata/mlx/README.md) for mxfp4, mxfp8 and
// nvfp4: on mx::quantize's own output for a fixture weight and 8 edge rows
// in each weight type, and on every scale byte 0..255 with codes cycling
// through every code, in bf16 (dequantize's default for these modes), f32
// and (every scale byte) f16. Values equal MLX's bit for bit; a NaN (0 ×
// 2^128, from e8m0 255, which MLX's quantize never writes) need only be NaN.
func TestMLXFPMatchesMLX(t *testing.T) {
	t.Parallel()
	outs := []struct {
		suffix string
		d      tensor.DType
	}{{".dequantized", tensor.BF16}, {".dequantized_f32", tensor.F32}, {".dequantized_f16", tensor.F16}}
	modes := []struct {
		name string
		MLXFP
	}{{"mxfp4", MLXFP{Bits: 4, GroupSize: 32}}, {"mxfp8", MLXFP{Bits: 8, GroupSize: 32}}, {"nvfp4", MLXFP{Bits: 4, GroupSize: 16, E4M3Scales: true}}}
	cases := 0
	for _, file := range []string{"f32", "f16", "bf16", "all"} {
		f := openST(t, filepath.Join("testdata", "mlx", "mlxfp-"+file+".safetensors"))
		for _, m := range modes {
			k := m.name
			if file == "all" {
				k += "_all"
			}
			read := func(name string) ([]byte, tensor.Info, bool) {
				tt, ok := f.Tensor(name)
				if !ok {
					return nil, tensor.Info{}, false
				}
				b, err := io.ReadAll(tt.Open())
				if err != nil {
					t.Fatal(err)
				}
				return b, tt.Info, true
			}
			w, wi, ok1 := read(k + ".weight")
			s, si, ok2 := read(k + ".scales")
			if !ok1 || !ok2 || wi.DType != tensor.U32 || si.DType != tensor.U8 {
				t.Fatalf("%s: %s: want uint32 weight and uint8 scales, have %v and %v", file, k, wi.DType, si.DType)
			}
			for _, o := range outs {
				want, wantInfo, ok := read(k + o.suffix)
				if !ok {
					continue
				}
				if wantInfo.DType != o.d {
					t.Fatalf("%s %s%s is %v, want %v", file, k, o.suffix, wantInfo.DType, o.d)
				}
				got := make([]float32, wantInfo.NumElements())
				if int64(len(got)) != si.NumElements()*int64(m.GroupSize) {
					t.Fatalf("%s %s: %d values for %d scales", file, k, len(got), si.NumElements())
				}
				if err := m.Dequantize(got, w, s, o.d); err != nil {
					t.Fatal(err)
				}
				wantF := make([]float32, len(got))
				if err := Dequantize(wantF, want, o.d); err != nil {
					t.Fatal(err)
				}
				bad := 0
				for i := range got {
					g, w := got[i], wantF[i]
					if math.Float32bits(g) == math.Float32bits(w) || math.IsNaN(float64(g)) && math.IsNaN(float64(w)) {
						continue
					}
					if bad++; bad <= 3 {
						t.Errorf("%s %s%s: value %d is %v (%#x), MLX's %v (%#x)", file, k, o.suffix, i, g, math.Float32bits(g), w, math.Float32bits(w))
					}
				}
				cases++
			}
		}
	}
	if cases != 3*3*2+3*3 {
		t.Errorf("%d cases, want %d", cases, 3*3*2+3*3)
	}
}

// TestMLXFP8 holds MLXFP8 to OCP's E4M3FN (DecodeFP8) on every byte but
// the two MLX reads as ±480.
func TestMLXFP8(t *testing.T) {
	t.Parallel()
	for c := 0; c < 256; c++ {
		var want [1]float32
		DecodeFP8(want[:], []byte{byte(c)}, tensor.F8_E4M3)
		got := MLXFP8(byte(c))
		switch c {
		case 0x7f, 0xff:
			if math.Abs(float64(got)) != 480 {
				t.Errorf("MLXFP8(%#x) = %v, want ±480", c, got)
			}
		default:
			if math.Float32bits(got) != math.Float32bits(want[0]) {
				t.Errorf("MLXFP8(%#x) = %v, want %v", c, got, want[0])
			}
		}
	}
}

// TestMLXFPQuantizeMatchesMLX holds MLXFP.Quantize to MLX's own
// mx::quantize in each mode and weight type (testdata/mlx/mlxfp-*): the
// codes and scale bytes are MLX's byte for byte.
func TestMLXFPQuantizeMatchesMLX(t *testing.T) {
	t.Parallel()
	modes := []struct {
		name string
		MLXFP
	}{{"mxfp4", MLXFP{Bits: 4, GroupSize: 32}}, {"mxfp8", MLXFP{Bits: 8, GroupSize: 32}}, {"nvfp4", MLXFP{Bits: 4, GroupSize: 16, E4M3Scales: true}}}
	for _, typ := range []struct {
		name string
		d    tensor.DType
	}{{"f32", tensor.F32}, {"f16", tensor.F16}, {"bf16", tensor.BF16}} {
		f := openST(t, filepath.Join("testdata", "mlx", "mlxfp-"+typ.name+".safetensors"))
		read := func(name string) []byte {
			tt, ok := f.Tensor(name)
			if !ok {
				t.Fatalf("%s: no %q", typ.name, name)
			}
			b, err := io.ReadAll(tt.Open())
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		raw := read("input")
		w := make([]float32, len(raw)/int(typ.d.BlockBytes()))
		if err := Dequantize(w, raw, typ.d); err != nil {
			t.Fatal(err)
		}
		for _, m := range modes {
			wantW, wantS := read(m.name+".weight"), read(m.name+".scales")
			codes, sc := make([]byte, m.PackedBytes(len(w))), make([]byte, len(w)/m.GroupSize)
			if err := m.Quantize(codes, sc, w, typ.d); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(sc, wantS) {
				t.Errorf("%s %s: scales differ from MLX's: %s", typ.name, m.name, firstDiff(sc, wantS))
			}
			if !bytes.Equal(codes, wantW) {
				t.Errorf("%s %s: codes differ from MLX's: %s", typ.name, m.name, firstDiff(codes, wantW))
			}
		}
	}
}
