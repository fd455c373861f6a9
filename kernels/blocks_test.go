package kernels

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/tensor"
)

// TestBlockDecoders checks that every block decoder, plain Go and SIMD
// (simdSet.decode), gives the bits
// quant.Dequantize (the transcription of ggml's dequantize_row_*) gives, on
// blocks quantized from random values and on random bytes with every scale
// field a finite half.
func TestBlockDecoders(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for dt := range blockDecoders {
		if halfFields[dt] == nil {
			t.Fatalf("%v: no scale offsets for the random blocks", dt)
		}
		bs, bb := int(dt.BlockSize()), int(dt.BlockBytes())
		const nb = 64
		raw := make([]byte, nb*bb)
		if err := quant.Quantize(raw, randVec(r, nb*bs), dt); err != nil {
			t.Fatal(err)
		}
		rnd := make([]byte, nb*bb)
		for i := range rnd {
			rnd[i] = byte(r.Uint32())
		}
		for b := 0; b < nb; b++ {
			for _, o := range halfFields[dt] {
				binary.LittleEndian.PutUint16(rnd[b*bb+o:], quant.F32ToF16(float32(r.NormFloat64())))
			}
		}
		for _, src := range [][]byte{raw, rnd} {
			want := make([]float32, nb*bs)
			if err := quant.Dequantize(want, src, dt); err != nil {
				t.Fatal(err)
			}
			for _, impl := range implementations() {
				got := make([]float32, nb*bs+1)
				got[nb*bs] = guardVal
				decodeRowOn(impl, got[:nb*bs], src, dt)
				if got[nb*bs] != guardVal {
					t.Fatalf("%s %v: write past the end", implName(impl), dt)
				}
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s %v: element %d = %g, quant.Dequantize gives %g", implName(impl), dt, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// halfFields lists the byte offsets of the f16 scale fields in a block.
var halfFields = map[tensor.DType][]int{
	tensor.Q4_0: {0}, tensor.Q4_1: {0, 2}, tensor.Q5_0: {0}, tensor.Q5_1: {0, 2}, tensor.Q8_0: {0},
	tensor.Q2_K: {80, 82}, tensor.Q3_K: {108}, tensor.Q4_K: {0, 2}, tensor.Q5_K: {0, 2}, tensor.Q6_K: {208},
}

// TestElementwiseDecoders checks the F16 and BF16 row decoders MatMul uses
// for M ≥ 2 (whole vectors of 16 in assembly, the tail in Go) against
// quant.Dequantize, bit for bit, at every length around the vector width.
func TestElementwiseDecoders(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, dt := range []tensor.DType{tensor.F16, tensor.BF16} {
		for n := 0; n <= 50; n++ {
			src := make([]byte, 2*n)
			for i := 0; i < n; i++ {
				v := float32(r.NormFloat64())
				if dt == tensor.F16 {
					binary.LittleEndian.PutUint16(src[2*i:], quant.F32ToF16(v))
				} else {
					binary.LittleEndian.PutUint16(src[2*i:], quant.F32ToBF16(v))
				}
			}
			want := make([]float32, n)
			if err := quant.Dequantize(want, src, dt); err != nil {
				t.Fatal(err)
			}
			for _, impl := range implementations() {
				got := make([]float32, n+1)
				got[n] = guardVal
				rowDecoder(impl, dt)(got[:n], src)
				if got[n] != guardVal {
					t.Fatalf("%s %v n=%d: write past the end", implName(impl), dt, n)
				}
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s %v n=%d: element %d = %g, quant.Dequantize gives %g", implName(impl), dt, n, i, got[i], want[i])
					}
				}
			}
		}
	}
}
