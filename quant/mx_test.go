package quant

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

// TestMXFP4FromOCP: blocks moved from the OCP layout decode (by ggml's
// MXFP4 rule) to the values the OCP layout means — E2M1 value v[q] of
// nibble 2j (low) and 2j+1 (high) of byte j, times 2^(scale-127), as
// transformers' convert_moe_packed_tensors reads them — and move back to
// the same bytes.
func TestMXFP4FromOCP(t *testing.T) {
	e2m1 := []float64{0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6}
	r := rand.New(rand.NewPCG(1, 2))
	const n = 64
	vals, scales := make([]byte, 16*n), make([]byte, n)
	for i := range vals {
		vals[i] = byte(r.UintN(256))
	}
	for i := range scales {
		scales[i] = byte(100 + r.UintN(50))
	}
	blocks := make([]byte, 17*n)
	if err := MXFP4FromOCP(blocks, vals, scales); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, 32*n)
	if err := Dequantize(got, blocks, tensor.MXFP4); err != nil {
		t.Fatal(err)
	}
	for b := 0; b < n; b++ {
		for i := 0; i < 32; i++ {
			q := vals[16*b+i/2] >> (4 * (i % 2)) & 0xf
			want := float32(math.Ldexp(e2m1[q], int(scales[b])-127))
			if got[32*b+i] != want {
				t.Fatalf("block %d value %d: %g, want %g", b, i, got[32*b+i], want)
			}
		}
	}
	v2, s2 := make([]byte, len(vals)), make([]byte, len(scales))
	if err := OCPFromMXFP4(v2, s2, blocks); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(v2, vals) || !bytes.Equal(s2, scales) {
		t.Fatal("OCPFromMXFP4 does not give the OCP bytes back")
	}
	if err := MXFP4FromOCP(blocks[:17], vals, scales); err == nil {
		t.Fatal("a short output was accepted")
	}
}
