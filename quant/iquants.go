package quant

import "encoding/binary"

// The IQ ("importance") decoders, transcribed from ggml's
// dequantize_row_iq*. Their grids (tables.go) map an index to 4 or 8 small
// unsigned magnitudes, one byte each, little-endian in the table word; the
// ksigns table expands 7 stored sign bits to 8 with even parity.

// iqSign returns -1 when bit j of signs is set, else 1: ggml multiplies by
// this (an exact sign flip) rather than negating.
func iqSign(signs uint8, j int) float32 {
	if signs&(1<<j) != 0 {
		return -1
	}
	return 1
}

func gridByte(g uint64, j int) float32 { return float32(uint8(g >> (8 * j))) }

func dequantIQ2_XXS(y []float32, b []byte) {
	d := half(b)
	qs := b[2:66]
	for ib32 := range 8 {
		a0 := binary.LittleEndian.Uint32(qs[8*ib32:])
		a1 := binary.LittleEndian.Uint32(qs[8*ib32+4:])
		db := float32(d*(0.5+float32(a1>>28))) * 0.25
		for l := range 4 {
			g := iq2xxsGrid[uint8(a0>>(8*l))]
			signs := ksignsIQ2XS[(a1>>(7*l))&127]
			for j := range 8 {
				y[j] = float32(db*gridByte(g, j)) * iqSign(signs, j)
			}
			y = y[8:]
		}
	}
}

func dequantIQ2_XS(y []float32, b []byte) {
	d := half(b)
	qs := b[2:66]
	scales := b[66:74]
	for ib32 := range 8 {
		db := [2]float32{
			float32(d*(0.5+float32(scales[ib32]&0xf))) * 0.25,
			float32(d*(0.5+float32(scales[ib32]>>4))) * 0.25,
		}
		for l := range 4 {
			q := binary.LittleEndian.Uint16(qs[2*(4*ib32+l):])
			g := iq2xsGrid[q&511]
			signs := ksignsIQ2XS[q>>9]
			for j := range 8 {
				y[j] = float32(db[l/2]*gridByte(g, j)) * iqSign(signs, j)
			}
			y = y[8:]
		}
	}
}

func dequantIQ2_S(y []float32, b []byte) {
	d := half(b)
	qs := b[2:34]
	signs := b[34:66]
	qh := b[66:74]
	scales := b[74:82]
	for ib32 := range 8 {
		db := [2]float32{
			float32(d*(0.5+float32(scales[ib32]&0xf))) * 0.25,
			float32(d*(0.5+float32(scales[ib32]>>4))) * 0.25,
		}
		for l := range 4 {
			dl := db[l/2]
			idx := uint16(qs[l]) | (uint16(qh[ib32])<<(8-2*l))&0x300
			g := iq2sGrid[idx]
			for j := range 8 {
				y[j] = float32(dl*gridByte(g, j)) * iqSign(signs[l], j)
			}
			y = y[8:]
		}
		qs = qs[4:]
		signs = signs[4:]
	}
}

func dequantIQ3_XXS(y []float32, b []byte) {
	d := half(b)
	qs := b[2:66]
	ss := b[66:98]
	for ib32 := range 8 {
		aux := binary.LittleEndian.Uint32(ss[4*ib32:])
		db := float32(d*(0.5+float32(aux>>28))) * 0.5
		for l := range 4 {
			signs := ksignsIQ2XS[(aux>>(7*l))&127]
			g1 := uint64(iq3xxsGrid[qs[2*l]])
			g2 := uint64(iq3xxsGrid[qs[2*l+1]])
			for j := range 4 {
				y[j] = float32(db*gridByte(g1, j)) * iqSign(signs, j)
				y[j+4] = float32(db*gridByte(g2, j)) * iqSign(signs, j+4)
			}
			y = y[8:]
		}
		qs = qs[8:]
	}
}

func dequantIQ3_S(y []float32, b []byte) {
	d := half(b)
	qs := b[2:66]
	qh := b[66:74]
	signs := b[74:106]
	scales := b[106:110]
	for ib32 := 0; ib32 < 8; ib32 += 2 {
		db1 := d * float32(1+2*int32(scales[ib32/2]&0xf))
		db2 := d * float32(1+2*int32(scales[ib32/2]>>4))
		for half, db := range [2]float32{db1, db2} {
			h := uint16(qh[half])
			for l := range 4 {
				g1 := uint64(iq3sGrid[uint16(qs[2*l])|(h<<(8-2*l))&256])
				g2 := uint64(iq3sGrid[uint16(qs[2*l+1])|(h<<(7-2*l))&256])
				for j := range 4 {
					y[j] = float32(db*gridByte(g1, j)) * iqSign(signs[l], j)
					y[j+4] = float32(db*gridByte(g2, j)) * iqSign(signs[l], j+4)
				}
				y = y[8:]
			}
			qs = qs[8:]
			signs = signs[4:]
		}
		qh = qh[2:]
	}
}

// iq1Delta is ggml's IQ1S_DELTA (also IQ1M_DELTA): the grid's shift.
const iq1Delta = 0.125

func dequantIQ1_S(y []float32, b []byte) {
	d := half(b)
	qs := b[2:34]
	for ib := range 8 {
		qh := binary.LittleEndian.Uint16(b[34+2*ib:])
		dl := d * float32(2*((qh>>12)&7)+1)
		delta := float32(iq1Delta)
		if qh&0x8000 != 0 {
			delta = -iq1Delta
		}
		for l := range 4 {
			g := iq1sGrid[uint16(qs[l])|((qh>>(3*l))&7)<<8]
			for j := range 8 {
				y[j] = dl * (float32(int8(uint8(g>>(8*j)))) + delta)
			}
			y = y[8:]
		}
		qs = qs[4:]
	}
}

func dequantIQ1_M(y []float32, b []byte) {
	qs := b[0:32]
	qh := b[32:48]
	var sc [4]uint16
	for i := range sc {
		sc[i] = binary.LittleEndian.Uint16(b[48+2*i:])
	}
	d := F16ToF32(sc[0]>>12 | (sc[1]>>8)&0x00f0 | (sc[2]>>4)&0x0f00 | sc[3]&0xf000)
	for ib := range 8 {
		s := sc[ib/2] >> (6 * (ib % 2))
		dl1 := d * float32(2*(s&7)+1)
		dl2 := d * float32(2*((s>>3)&7)+1)
		idx := [4]uint16{
			uint16(qs[0]) | (uint16(qh[0])<<8)&0x700,
			uint16(qs[1]) | (uint16(qh[0])<<4)&0x700,
			uint16(qs[2]) | (uint16(qh[1])<<8)&0x700,
			uint16(qs[3]) | (uint16(qh[1])<<4)&0x700,
		}
		var delta [4]float32
		for k, bit := range [4]uint8{qh[0] & 0x08, qh[0] & 0x80, qh[1] & 0x08, qh[1] & 0x80} {
			delta[k] = iq1Delta
			if bit != 0 {
				delta[k] = -iq1Delta
			}
		}
		for l := range 4 {
			dl := dl1
			if l >= 2 {
				dl = dl2
			}
			g := iq1sGrid[idx[l]]
			for j := range 8 {
				y[j] = dl * (float32(int8(uint8(g>>(8*j)))) + delta[l])
			}
			y = y[8:]
		}
		qs = qs[4:]
		qh = qh[2:]
	}
}

func dequantIQ4_XS(y []float32, b []byte) {
	d := half(b)
	scalesH := binary.LittleEndian.Uint16(b[2:])
	scalesL := b[4:8]
	qs := b[8:136]
	for ib := range 8 {
		ls := int32((scalesL[ib/2]>>(4*(ib%2)))&0xf) | int32((scalesH>>(2*ib))&3)<<4
		dl := d * float32(ls-32)
		for j := range 16 {
			y[j] = dl * float32(kvaluesIQ4NL[qs[j]&0xf])
			y[j+16] = dl * float32(kvaluesIQ4NL[qs[j]>>4])
		}
		y, qs = y[32:], qs[16:]
	}
}
