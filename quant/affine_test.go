package quant

import (
	"math"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

// TestAffineBitStream: every code of every width goes in and comes out at
// its place in the little-endian stream, whatever its neighbours.
func TestAffineBitStream(t *testing.T) {
	t.Parallel()
	for _, bits := range AffineBits {
		n := 96
		b := make([]byte, n*bits/8)
		for i := 0; i < n; i++ {
			putBits(b, i*bits, bits, uint32(i*7+3)&(1<<bits-1))
		}
		for i := 0; i < n; i++ {
			if got, want := getBits(b, i*bits, bits), uint32(i*7+3)&(1<<bits-1); got != want {
				t.Fatalf("bits %d: code %d is %d, want %d", bits, i, got, want)
			}
		}
		if bits == 4 && b[0] != 0xa3 { // codes 3 and 10: 3 in the low nibble
			t.Errorf("bits 4: first byte %#x, want 0xa3", b[0])
		}
	}
}

// TestAffineRoundTripBound: dequantized values are within half a step of
// the input clamped to the span of the codes, for every parameter.
func TestAffineRoundTripBound(t *testing.T) {
	t.Parallel()
	w := make([]float32, 256)
	for i := range w {
		w[i] = float32(math.Sin(float64(i)*0.731)) * float32(1+i%5)
	}
	for _, bits := range AffineBits {
		for _, g := range AffineGroupSizes {
			a := Affine{Bits: bits, GroupSize: g}
			codes := make([]byte, a.PackedBytes(len(w)))
			sc, bi := make([]float32, len(w)/g), make([]float32, len(w)/g)
			a.Quantize(codes, sc, bi, w)
			got := make([]float32, len(w))
			if err := a.Dequantize(got, codes, sc, bi, tensor.F32); err != nil {
				t.Fatal(err)
			}
			for i := range w {
				// Codes span bias … bias + (2^bits−1)·scale; a value beyond
				// (the edge adjustment can shrink the span) is clamped to
				// its end.
				s, b := float64(sc[i/g]), float64(bi[i/g])
				lo, hi := b, b+float64(int(1)<<bits-1)*s
				if lo > hi {
					lo, hi = hi, lo
				}
				want := math.Min(math.Max(float64(w[i]), lo), hi)
				if d := math.Abs(float64(got[i]) - want); d > math.Abs(s)/2*(1+1e-5) {
					t.Fatalf("bits %d group %d: value %d: %v back as %v, more than half a step (%v) from %v", bits, g, i, w[i], got[i], s, want)
				}
			}
		}
	}
	if err := (Affine{Bits: 7, GroupSize: 64}).Check(); err == nil {
		t.Error("7 bits accepted")
	}
	if err := (Affine{Bits: 4, GroupSize: 16}).Check(); err == nil {
		t.Error("group size 16 accepted")
	}
}
