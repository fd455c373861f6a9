package quant

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"testing"

	"github.com/tfconv/tfconv/formats/safetensors"
	"github.com/tfconv/tfconv/tensor"
)

// TestAffineMatchesMLX holds Affine to MLX's own mx::quantize and
// mx::dequantize (MLX 846d176, CPU backend; testdata/mlx/README.md): for
// every bits × group size MLX accepts and each weight type, on 8 rows of a
// fixture weight and 7 edge rows, the codes, scales and biases are MLX's
// byte for byte and the dequantized values are MLX's bit for bit.
func TestAffineMatchesMLX(t *testing.T) {
	t.Parallel()
	for _, typ := range []struct {
		name string
		d    tensor.DType
	}{{"f32", tensor.F32}, {"f16", tensor.F16}, {"bf16", tensor.BF16}} {
		f, err := safetensors.Open(filepath.Join("testdata", "mlx", "affine-"+typ.name+".safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		read := func(name string) ([]byte, tensor.Info) {
			tt, ok := f.Tensor(name)
			if !ok {
				t.Fatalf("%s: no tensor %q", typ.name, name)
			}
			b, err := io.ReadAll(tt.Open())
			if err != nil {
				t.Fatal(err)
			}
			return b, tt.Info
		}
		inRaw, in := read("input")
		if in.DType != typ.d {
			t.Fatalf("input is %v, want %v", in.DType, typ.d)
		}
		w := make([]float32, in.NumElements())
		if err := Dequantize(w, inRaw, typ.d); err != nil {
			t.Fatal(err)
		}
		cases := 0
		for _, bits := range AffineBits {
			for _, g := range AffineGroupSizes {
				a := Affine{Bits: bits, GroupSize: g}
				k := fmt.Sprintf("b%dg%d", bits, g)
				wantW, _ := read(k + ".weight")
				wantS, _ := read(k + ".scales")
				wantB, _ := read(k + ".biases")
				wantD, _ := read(k + ".dequantized")
				groups := len(w) / g
				codes := make([]byte, a.PackedBytes(len(w)))
				sc, bi := make([]float32, groups), make([]float32, groups)
				a.Quantize(codes, sc, bi, w)
				sb, bb := make([]byte, groups*int(typ.d.BlockBytes())), make([]byte, groups*int(typ.d.BlockBytes()))
				if err := Quantize(sb, sc, typ.d); err != nil {
					t.Fatal(err)
				}
				if err := Quantize(bb, bi, typ.d); err != nil {
					t.Fatal(err)
				}
				for _, c := range []struct {
					what      string
					got, want []byte
				}{{"codes", codes, wantW}, {"scales", sb, wantS}, {"biases", bb, wantB}} {
					if !bytes.Equal(c.got, c.want) {
						t.Errorf("%s %s: %s differ from MLX's (%d bytes): %s", typ.name, k, c.what, len(c.want), firstDiff(c.got, c.want))
					}
				}
				// Dequantize MLX's own codes, scales and biases.
				ms, mb := make([]float32, groups), make([]float32, groups)
				if err := Dequantize(ms, wantS, typ.d); err != nil {
					t.Fatal(err)
				}
				if err := Dequantize(mb, wantB, typ.d); err != nil {
					t.Fatal(err)
				}
				got := make([]float32, len(w))
				if err := a.Dequantize(got, wantW, ms, mb, typ.d); err != nil {
					t.Fatal(err)
				}
				gb := make([]byte, len(wantD))
				if err := Quantize(gb, got, typ.d); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(gb, wantD) {
					t.Errorf("%s %s: dequantized values differ from MLX's (%d bytes): %s", typ.name, k, len(wantD), firstDiff(gb, wantD))
				}
				cases++
			}
		}
		f.Close()
		if cases != 18 {
			t.Errorf("%s: %d cases, want 18", typ.name, cases)
		}
	}
}
