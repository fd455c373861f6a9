package kernels

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/tensor"
)

// The block decoders MatMul fills its weight buffer with: quant.Dequantize
// (the one plain-Go transcription of ggml's dequantize_row_*, checked
// against ggml's own output in package quant) for every type, and on the
// SIMD sets an assembly decoder per type in simdSet.decode. The tests below
// hold every assembly decoder to quant.Dequantize, bit for bit.

// halfFields lists the byte offsets of the f16 scale fields of each block
// type a SIMD set decodes.
var halfFields = map[tensor.DType][]int{
	tensor.Q4_0: {0}, tensor.Q4_1: {0, 2}, tensor.Q5_0: {0}, tensor.Q5_1: {0, 2}, tensor.Q8_0: {0},
	tensor.Q2_K: {80, 82}, tensor.Q3_K: {108}, tensor.Q4_K: {0, 2}, tensor.Q5_K: {0, 2}, tensor.Q6_K: {208},
}

// edgeHalves are the f16 scales at the ends of the format: zeros, the
// smallest and largest subnormals, the smallest normal, ±65504, ±Inf and
// a quiet NaN.
var edgeHalves = []uint16{0x0000, 0x8000, 0x0001, 0x03ff, 0x0400, 0x3c00, 0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7e00}

// edgeFills are the quant bytes of the edge blocks: every quant 0, every
// quant at its top level, and the two alternating bit patterns.
var edgeFills = []byte{0x00, 0xff, 0x55, 0xaa}

// blockInputs returns, for dtype dt, nb blocks quantized from random values
// (where quant can quantize dt), nb blocks of random bytes with finite
// random scales, and edge blocks: every pair of edge scale and quant fill
// (scales also mixed within a block for the two-scale types).
func blockInputs(t *testing.T, r *rand.Rand, dt tensor.DType, nb int) map[string][]byte {
	bs, bb := int(dt.BlockSize()), int(dt.BlockBytes())
	in := map[string][]byte{}
	if quant.CanQuantize(dt) {
		raw := make([]byte, nb*bb)
		if err := quant.Quantize(raw, randVec(r, nb*bs), dt); err != nil {
			t.Fatal(err)
		}
		in["quantized"] = raw
	}
	rnd := make([]byte, nb*bb)
	for i := range rnd {
		rnd[i] = byte(r.Uint32())
	}
	for b := range nb {
		for _, o := range halfFields[dt] {
			binary.LittleEndian.PutUint16(rnd[b*bb+o:], quant.F32ToF16(float32(r.NormFloat64())))
		}
	}
	in["random"] = rnd
	var edge []byte
	for _, fill := range edgeFills {
		for i := range edgeHalves {
			blk := make([]byte, bb)
			for j := range blk {
				blk[j] = fill
			}
			for k, o := range halfFields[dt] {
				// the second scale field (min, dmin) takes another edge value
				binary.LittleEndian.PutUint16(blk[o:], edgeHalves[(i+5*k)%len(edgeHalves)])
			}
			edge = append(edge, blk...)
		}
	}
	in["edge"] = edge
	return in
}

// sameBits reports whether got and want hold the same float32 bits, and
// the first index where they differ. A NaN matches any NaN: the sign and
// payload of a NaN made from a NaN or infinite scale follow the CPU's rules
// for the instruction that made it (arm64's default NaN is positive,
// x86's negative), not anything ggml specifies.
func sameBits(got, want []float32) (int, bool) {
	for i := range want {
		if got[i] != got[i] && want[i] != want[i] {
			continue
		}
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			return i, false
		}
	}
	return 0, true
}

// TestBlockDecoders checks every implementation's row decoder (the SIMD
// set's assembly decoder where it has one for the type) against
// quant.Dequantize, bit for bit, on random, quantized and edge blocks, for
// runs of 1 to 17 blocks starting at unaligned byte offsets, with guard
// values after the output.
func TestBlockDecoders(t *testing.T) {
	for _, impl := range simdSets {
		for dt := range impl.decode {
			if dt.BlockSize() > 1 && halfFields[dt] == nil {
				t.Errorf("%s decodes %v, which this test does not cover: add its scale offsets to halfFields", impl.name, dt)
			}
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for dt := range halfFields {
		bb := int(dt.BlockBytes())
		for name, src := range blockInputs(t, r, dt, 64) {
			n := len(src) / bb * int(dt.BlockSize())
			want := make([]float32, n)
			if err := quant.Dequantize(want, src, dt); err != nil {
				t.Fatal(err)
			}
			for _, impl := range implementations() {
				dec := rowDecoder(impl, dt)
				got := make([]float32, n+guardCount)
				for i := range got {
					got[i] = guardVal
				}
				dec(got[:n], src)
				if i, ok := sameBits(got, want); !ok {
					t.Fatalf("%s %v %s blocks: element %d = %g (%#08x), quant.Dequantize gives %g (%#08x)",
						implName(impl), dt, name, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
				}
				for i := n; i < len(got); i++ {
					if got[i] != guardVal {
						t.Fatalf("%s %v %s blocks: write past the end at %d", implName(impl), dt, name, i-n)
					}
				}
				// Short runs from unaligned addresses: the blocks copied
				// one byte into a buffer, decoded 1..17 at a time.
				shifted := make([]byte, len(src)+1)[1:]
				copy(shifted, src)
				bs := int(dt.BlockSize())
				for nb := 1; nb <= 17 && nb*bb <= len(src); nb++ {
					part := make([]float32, nb*bs+1)
					part[nb*bs] = guardVal
					dec(part[:nb*bs], shifted[:nb*bb])
					if i, ok := sameBits(part[:nb*bs], want[:nb*bs]); !ok {
						t.Fatalf("%s %v %s blocks, %d unaligned: element %d = %g, quant.Dequantize gives %g",
							implName(impl), dt, name, nb, i, part[i], want[i])
					}
					if part[nb*bs] != guardVal {
						t.Fatalf("%s %v %s blocks, %d unaligned: write past the end", implName(impl), dt, name, nb)
					}
				}
			}
		}
	}
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
				if i, ok := sameBits(got, want); !ok {
					t.Fatalf("%s %v n=%d: element %d = %g, quant.Dequantize gives %g", implName(impl), dt, n, i, got[i], want[i])
				}
			}
		}
	}
}
