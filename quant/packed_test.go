package quant

import (
	"encoding/binary"
	"testing"
)

// DequantizePacked's values are checked against AutoGPTQ's and AutoAWQ's own
// dequantization in checkpoint (TestPackedMatchesReferenceDequantization);
// here, one hand-packed word per method, and the fuzz target.

func TestDequantizePackedWord(t *testing.T) {
	// 8 output columns × 8 input rows at 4 bits, one group, scale 1 and 0.5.
	word := func(nib [8]uint32) []byte {
		var w uint32
		for i, v := range nib {
			w |= v << (4 * i)
		}
		return binary.LittleEndian.AppendUint32(nil, w)
	}
	scales := []float32{1, 0.5, 1, 1, 1, 1, 1, 1}
	t.Run("gptq", func(t *testing.T) {
		p := PackedLinear{Method: GPTQ, Bits: 4, GroupSize: 8, In: 8, Out: 8}
		var qw []byte
		for n := 0; n < 8; n++ { // qweight[0][n] packs rows 0..7 of column n
			qw = append(qw, word([8]uint32{0, 1, 2, 3, 4, 5, 6, uint32(n)})...)
		}
		qz := word([8]uint32{7, 7, 7, 7, 7, 7, 7, 15}) // stored zero − 1: 8 … and 15+1 wraps to 0
		dst := make([]float32, 64)
		if err := DequantizePacked(dst, p, qw, qz, scales, nil); err != nil {
			t.Fatal(err)
		}
		// w[n][k] = scale[n]·(q − z): column 0, row 3: 3 − 8; column 1, row 7: 0.5·(1 − 8); column 7, row 7: 7 − 0.
		for _, c := range []struct {
			n, k int
			want float32
		}{{0, 3, -5}, {1, 7, -3.5}, {7, 7, 7}, {7, 0, 0}} {
			if got := dst[c.n*8+c.k]; got != c.want {
				t.Errorf("w[%d][%d] = %v, want %v", c.n, c.k, got, c.want)
			}
		}
	})
	t.Run("awq", func(t *testing.T) {
		p := PackedLinear{Method: AWQ, Bits: 4, GroupSize: 8, In: 8, Out: 8}
		var qw []byte
		for k := 0; k < 8; k++ { // qweight[k][0] packs columns in the order 0 2 4 6 1 3 5 7
			qw = append(qw, word([8]uint32{0, 2, 4, 6, 1, 3, 5, uint32(7 + k)})...)
		}
		qz := word([8]uint32{1, 1, 1, 1, 1, 1, 1, 1})
		dst := make([]float32, 64)
		if err := DequantizePacked(dst, p, qw, qz, scales, nil); err != nil {
			t.Fatal(err)
		}
		// Column n holds n everywhere but column 7, which holds 7+k: w = scale·(q − 1).
		for _, c := range []struct {
			n, k int
			want float32
		}{{0, 0, -1}, {1, 5, 0}, {4, 2, 3}, {6, 0, 5}, {7, 0, 6}, {7, 8 - 1, 13}} {
			if got := dst[c.n*8+c.k]; got != c.want {
				t.Errorf("w[%d][%d] = %v, want %v", c.n, c.k, got, c.want)
			}
		}
	})
}

func FuzzDequantizePacked(f *testing.F) {
	f.Add(uint8(0), uint8(4), uint8(8), uint8(8), uint8(8), []byte{1, 2, 3})
	f.Add(uint8(2), uint8(4), uint8(8), uint8(8), uint8(16), []byte{0xff})
	f.Add(uint8(1), uint8(2), uint8(16), uint8(16), uint8(16), []byte{})
	f.Add(uint8(3), uint8(4), uint8(32), uint8(96), uint8(24), []byte{2, 0x81})
	f.Add(uint8(3), uint8(8), uint8(20), uint8(20), uint8(3), []byte{1})
	f.Fuzz(func(t *testing.T, method, bits, group, in, out uint8, data []byte) {
		p := PackedLinear{Method: PackedMethod(method % 4), Bits: int(bits), GroupSize: int(group), In: int(in), Out: int(out),
			Symmetric: len(data) > 0 && data[0]&2 != 0}
		if p.Validate() != nil {
			return
		}
		qw, qz, sc := p.QWeightShape(), p.QZerosShape(), p.ScalesShape()
		fill := func(n int) []byte {
			b := make([]byte, n)
			for i := range b {
				if len(data) > 0 {
					b[i] = data[i%len(data)]
				}
			}
			return b
		}
		scales := make([]float32, sc[0]*sc[1])
		for i := range scales {
			scales[i] = float32(i%7) - 3
		}
		var gIdx []int32
		if len(data) > 0 && data[0]&1 == 1 {
			gIdx = make([]int32, p.In)
			for k := range gIdx {
				gIdx[k] = int32(int(data[k%len(data)]) % (p.Groups() + 1)) // sometimes out of range
			}
		}
		dst := make([]float32, p.In*p.Out)
		err := DequantizePacked(dst, p, fill(4*qw[0]*qw[1]), fill(4*qz[0]*qz[1]), scales, gIdx)
		if err == nil {
			for _, g := range gIdx {
				if int(g) >= p.Groups() {
					t.Fatalf("g_idx %d accepted with %d groups", g, p.Groups())
				}
			}
		}
		// Wrong lengths are refused, never read past.
		if DequantizePacked(dst, p, fill(4*qw[0]*qw[1]-1), fill(4*qz[0]*qz[1]), scales, nil) == nil {
			t.Fatal("short qweight accepted")
		}
	})
}
