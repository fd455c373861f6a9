package kernels

import (
	"encoding/binary"

	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/tensor"
)

// Block decoders for the ggml types a quantized GGUF model is made of. Each
// decodes one block (32 or 256 elements) into y with the same float32
// operations, in the same order, as ggml's dequantize_row_* (and so as
// quant.Dequantize): the values are bit-identical, the tests check it. They
// exist beside quant's because they are the inner loop of MatMul on these
// types: fixed-size slices let the compiler drop the bounds checks, and the
// k-quant scales are unpacked once per block rather than per sub-block.
//
// The explicit float32(...) conversions around products stop Go from
// fusing a·b−c into one FMA on the architectures that have one: ggml rounds
// the product first.

// blockDecoders maps a dtype to its block decoder; dtypes without one go
// through quant.Dequantize.
var blockDecoders = map[tensor.DType]func(y []float32, b []byte){
	tensor.Q4_0: decQ4_0,
	tensor.Q4_1: decQ4_1,
	tensor.Q5_0: decQ5_0,
	tensor.Q5_1: decQ5_1,
	tensor.Q8_0: decQ8_0,
	tensor.Q2_K: decQ2_K,
	tensor.Q3_K: decQ3_K,
	tensor.Q4_K: decQ4_K,
	tensor.Q5_K: decQ5_K,
	tensor.Q6_K: decQ6_K,
}

// decodeRow decodes the whole blocks in src (dtype t, not I8's row scale)
// into dst, which holds exactly their elements.
func decodeRow(dst []float32, src []byte, t tensor.DType) {
	dec := blockDecoders[t]
	if dec == nil {
		if err := quant.Dequantize(dst, src, t); err != nil {
			panic(err) // NewMatrix checked dtype and sizes
		}
		return
	}
	bs, bb := int(t.BlockSize()), int(t.BlockBytes())
	for i, o := 0, 0; i < len(dst); i, o = i+bs, o+bb {
		dec(dst[i:i+bs], src[o:o+bb])
	}
}

func f16At(b []byte) float32 { return quant.F16ToF32(binary.LittleEndian.Uint16(b)) }

func decQ4_0(y []float32, b []byte) {
	y, b = y[:32], b[:18]
	d := f16At(b)
	q := b[2:18]
	for j := range 16 {
		y[j] = float32(int32(q[j]&0xf)-8) * d
		y[j+16] = float32(int32(q[j]>>4)-8) * d
	}
}

func decQ8_0(y []float32, b []byte) {
	y, b = y[:32], b[:34]
	d := f16At(b)
	q := b[2:34]
	for j := range 32 {
		y[j] = float32(int8(q[j])) * d
	}
}

func decQ4_1(y []float32, b []byte) {
	y, b = y[:32], b[:20]
	d, m := f16At(b), f16At(b[2:])
	q := b[4:20]
	for j := range 16 {
		y[j] = float32(float32(q[j]&0xf)*d) + m
		y[j+16] = float32(float32(q[j]>>4)*d) + m
	}
}

func decQ5_0(y []float32, b []byte) {
	y, b = y[:32], b[:22]
	d := f16At(b)
	qh := binary.LittleEndian.Uint32(b[2:])
	q := b[6:22]
	for j := range 16 {
		h0 := byte(qh>>j<<4) & 0x10
		h1 := byte(qh>>(j+12)) & 0x10
		y[j] = float32(int32(q[j]&0xf|h0)-16) * d
		y[j+16] = float32(int32(q[j]>>4|h1)-16) * d
	}
}

func decQ5_1(y []float32, b []byte) {
	y, b = y[:32], b[:24]
	d, m := f16At(b), f16At(b[2:])
	qh := binary.LittleEndian.Uint32(b[4:])
	q := b[8:24]
	for j := range 16 {
		h0 := byte(qh>>j<<4) & 0x10
		h1 := byte(qh>>(j+12)) & 0x10
		y[j] = float32(float32(q[j]&0xf|h0)*d) + m
		y[j+16] = float32(float32(q[j]>>4|h1)*d) + m
	}
}

func decQ2_K(y []float32, b []byte) {
	y, b = y[:256], b[:84]
	d, mn := f16At(b[80:]), f16At(b[82:])
	for n := 0; n < 2; n++ {
		q := b[16+32*n : 48+32*n]
		for g := 0; g < 8; g++ { // 16-element groups, shift 2·(g/2)
			s := b[8*n+g]
			dl := d * float32(s&0xf)
			ml := mn * float32(s>>4)
			shift := uint(g>>1) * 2
			qq := q[16*(g&1) : 16*(g&1)+16]
			yy := y[128*n+16*g : 128*n+16*g+16]
			for l := range 16 {
				yy[l] = float32(dl*float32((qq[l]>>shift)&3)) - ml
			}
		}
	}
}

// q3KScalesSigned unpacks the sixteen 6-bit Q3_K scales, minus 32.
func q3KScalesSigned(sc []byte) (s [16]int32) {
	sc = sc[:12]
	a0 := binary.LittleEndian.Uint32(sc[0:])
	a1 := binary.LittleEndian.Uint32(sc[4:])
	tmp := binary.LittleEndian.Uint32(sc[8:])
	const kmask1, kmask2 = 0x03030303, 0x0f0f0f0f
	aux := [4]uint32{
		a0&kmask2 | (tmp>>0&kmask1)<<4,
		a1&kmask2 | (tmp>>2&kmask1)<<4,
		(a0>>4)&kmask2 | (tmp>>4&kmask1)<<4,
		(a1>>4)&kmask2 | (tmp>>6&kmask1)<<4,
	}
	for i, a := range aux {
		for k := range 4 {
			s[4*i+k] = int32(int8(uint8(a>>(8*k)))) - 32
		}
	}
	return s
}

func decQ3_K(y []float32, b []byte) {
	y, b = y[:256], b[:110]
	dAll := f16At(b[108:])
	hm := b[0:32]
	scales := q3KScalesSigned(b[96:108])
	for n := 0; n < 2; n++ {
		q := b[32+32*n : 64+32*n]
		for g := 0; g < 8; g++ {
			dl := dAll * float32(scales[8*n+g])
			shift := uint(g>>1) * 2
			m := uint8(1) << (4*n + g>>1)
			qq := q[16*(g&1) : 16*(g&1)+16]
			hh := hm[16*(g&1) : 16*(g&1)+16]
			yy := y[128*n+16*g : 128*n+16*g+16]
			for l := range 16 {
				v := int32((qq[l] >> shift) & 3)
				if hh[l]&m == 0 {
					v -= 4
				}
				yy[l] = dl * float32(v)
			}
		}
	}
}

// scaleMinK4 unpacks the eight 6-bit scales and mins of a Q4_K/Q5_K block
// (ggml's get_scale_min_k4 for j = 0..7).
func scaleMinK4(q []byte) (sc, mn [8]float32) {
	si, mi := scaleMinK4Int(q)
	for j := range si {
		sc[j], mn[j] = float32(si[j]), float32(mi[j])
	}
	return sc, mn
}

func decQ4_K(y []float32, b []byte) {
	y, b = y[:256], b[:144]
	d, dmin := f16At(b), f16At(b[2:])
	sc, mn := scaleMinK4(b[4:16])
	for j := range 4 {
		d1, m1 := d*sc[2*j], dmin*mn[2*j]
		d2, m2 := d*sc[2*j+1], dmin*mn[2*j+1]
		q := b[16+32*j : 48+32*j]
		yy := y[64*j : 64*j+64]
		for l := range 32 {
			yy[l] = float32(d1*float32(q[l]&0xf)) - m1
			yy[l+32] = float32(d2*float32(q[l]>>4)) - m2
		}
	}
}

func decQ5_K(y []float32, b []byte) {
	y, b = y[:256], b[:176]
	d, dmin := f16At(b), f16At(b[2:])
	sc, mn := scaleMinK4(b[4:16])
	qh := b[16:48]
	for j := range 4 {
		d1, m1 := d*sc[2*j], dmin*mn[2*j]
		d2, m2 := d*sc[2*j+1], dmin*mn[2*j+1]
		q := b[48+32*j : 80+32*j]
		yy := y[64*j : 64*j+64]
		s := uint(2 * j)
		for l := range 32 {
			h1 := (qh[l] >> s & 1) << 4
			h2 := (qh[l] >> (s + 1) & 1) << 4
			yy[l] = float32(d1*float32(q[l]&0xf|h1)) - m1
			yy[l+32] = float32(d2*float32(q[l]>>4|h2)) - m2
		}
	}
}

func decQ6_K(y []float32, b []byte) {
	y, b = y[:256], b[:210]
	d := f16At(b[208:])
	var s [16]float32
	for i := range s {
		s[i] = d * float32(int8(b[192+i]))
	}
	for n := 0; n < 2; n++ {
		ql := b[64*n : 64*n+64]
		qh := b[128+32*n : 160+32*n]
		yy := y[128*n : 128*n+128]
		ss := s[8*n : 8*n+8]
		for l := range 32 {
			is := l / 16
			q1 := int32(ql[l]&0xf|(qh[l]&3)<<4) - 32
			q2 := int32(ql[l+32]&0xf|(qh[l]>>2&3)<<4) - 32
			q3 := int32(ql[l]>>4|(qh[l]>>4&3)<<4) - 32
			q4 := int32(ql[l+32]>>4|(qh[l]>>6&3)<<4) - 32
			yy[l] = ss[is] * float32(q1)
			yy[l+32] = ss[is+2] * float32(q2)
			yy[l+64] = ss[is+4] * float32(q3)
			yy[l+96] = ss[is+6] * float32(q4)
		}
	}
}
