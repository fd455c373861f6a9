package kernels

import (
	"encoding/binary"
	"math"

	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/tensor"
)

// The dot products of llama.cpp's x86 CPU backend (ggml_vec_dot_*_q8_*,
// the AVX2 code that AVX-512 builds also run, and llamafile's
// tinyBLAS_Q0_AVX, which sums in the same order), written out in plain Go.
// Every one has the same shape:
//
//   - per block (32 elements) or super-block (256), eight int32 "lane" sums:
//     lane l sums w·x over the elements e whose position inside their
//     32-element chunk is 4l ≤ e mod 32 < 4l+4 (the four bytes one
//     VPDPBUSD or VPMADDUBSW+VPMADDWD lane sees), with w the weight's
//     integer value including any k-quant sub-block scale. These sums are
//     exact, so how they are formed does not matter;
//   - acc[l] = fma(d, float32(lane[l]), acc[l]) in float32, d the product of
//     the two block scales, block after block: the order is fixed;
//   - the result hsum8(acc) (plus a separately accumulated min term for
//     the types that have one).
//
// The SIMD versions form the same integers and do the same float32
// operations in the same order, so every implementation returns the same
// bits, and the same bits as llama.cpp (without AMX; the fixtures' README
// gives the size of AMX's different rounding). One exception to vec_dot:
// Q4_0 matrices of 8k rows, which llama.cpp repacks and sums in one float
// chain per output (chainOrder, dotQ4_0Chain).

// iq4Levels are the IQ4_XS levels (quant owns the table).
var iq4Levels = quant.IQ4NLLevels()

// The IQ3 grids and sign masks (quant owns the tables).
var iq3xxsGrid, iq3sGrid, iq3Signs = quant.IQ3Grids()

// fp16 reads a little-endian binary16 at b as float32.
func fp16(b []byte) float32 { return quant.F16ToF32(binary.LittleEndian.Uint16(b)) }

// lanes32 returns the eight lane sums of 32 weights q by the 32 int8
// activations a.
func lanes32(q *[32]int8, a []byte) (s [8]int32) {
	a = a[:32]
	for l := range s {
		var v int32
		for t := 0; t < 4; t++ {
			v += int32(q[4*l+t]) * int32(int8(a[4*l+t]))
		}
		s[l] = v
	}
	return s
}

// unpack0 decodes one block of a 32-element weight type into its integer
// values (signed for Q4_0, Q5_0, Q8_0; the unsigned 0..31 of Q4_1 and
// Q5_1) and returns its scale d and, for Q4_1/Q5_1, its min m.
func unpack0(t tensor.DType, q *[32]int8, b []byte) (d, m float32) {
	switch t {
	case tensor.Q8_0:
		b = b[:34]
		for j := range q {
			q[j] = int8(b[2+j])
		}
		return fp16(b), 0
	case tensor.Q4_0:
		b = b[:18]
		for j := 0; j < 16; j++ {
			q[j] = int8(b[2+j]&15) - 8
			q[j+16] = int8(b[2+j]>>4) - 8
		}
		return fp16(b), 0
	case tensor.Q5_0:
		b = b[:22]
		qh := binary.LittleEndian.Uint32(b[2:])
		for j := 0; j < 16; j++ {
			q[j] = int8(b[6+j]&15|byte(qh>>j&1)<<4) - 16
			q[j+16] = int8(b[6+j]>>4|byte(qh>>(j+16)&1)<<4) - 16
		}
		return fp16(b), 0
	case tensor.Q4_1:
		b = b[:20]
		for j := 0; j < 16; j++ {
			q[j] = int8(b[4+j] & 15)
			q[j+16] = int8(b[4+j] >> 4)
		}
		return fp16(b), fp16(b[2:])
	case tensor.Q5_1:
		b = b[:24]
		qh := binary.LittleEndian.Uint32(b[4:])
		for j := 0; j < 16; j++ {
			q[j] = int8(b[8+j]&15 | byte(qh>>j&1)<<4)
			q[j+16] = int8(b[8+j]>>4 | byte(qh>>(j+16)&1)<<4)
		}
		return fp16(b), fp16(b[2:])
	case tensor.MXFP4:
		return quant.MXFP4Ints(q, b), 0
	}
	panic("kernels: unpack0 " + t.String())
}

// dotQ0Generic is ggml_vec_dot_{q8_0,q4_0,q5_0}_q8_0 and
// ggml_vec_dot_{q4_1,q5_1}_q8_1 over nb blocks: w holds the weight blocks,
// a the Q8_0 (or Q8_1) activation blocks.
//
//	acc[l] = fma(dw·dx, lane_l, acc[l]);   Q4_1/Q5_1: summs = fma(m, s, summs)
//	result = hsum8(acc) (+ summs)
func dotQ0Generic(t tensor.DType, w, a []byte, nb int) float32 {
	wb := int(t.BlockBytes())
	ab, qo := q8_0Bytes, 2
	one := t == tensor.Q4_1 || t == tensor.Q5_1
	if one {
		ab, qo = q8_1Bytes, 4
	}
	var acc [8]float32
	var summs float32
	var q [32]int8
	for b := 0; b < nb; b++ {
		ablk := a[b*ab : (b+1)*ab]
		dw, m := unpack0(t, &q, w[b*wb:(b+1)*wb])
		d := dw * fp16(ablk)
		s := lanes32(&q, ablk[qo:])
		for l := range acc {
			acc[l] = fma32(d, float32(s[l]), acc[l])
		}
		if one {
			// GCC contracts ggml's summs += m·s into one FMA.
			summs = fma32(m, fp16(ablk[2:]), summs)
		}
	}
	return hsum8(&acc) + summs
}

// chainOrder reports whether MatMulQ sums w's products in the order of
// llama.cpp's repacked Q4_0 kernels rather than vec_dot's. On every x86
// CPU with AVX2, ggml's CPU backend stores a Q4_0 matrix whose row count
// is a multiple of 8 as 8-row interleaved blocks when it loads it
// (ggml_aarch64_get_optimal_repack_type) and multiplies it with
// ggml_gemv_q4_0_8x8_q8_0 / ggml_gemm_q4_0_8x8_q8_0, which accumulate
// each output as one float32 chain (dotQ4_0Chain) where vec_dot keeps
// eight lanes. Other row counts, and every other type, stay with vec_dot.
func chainOrder(w *Matrix) bool { return w.DType == tensor.Q4_0 && w.Rows%8 == 0 }

// dotQ4_0Chain is one output of ggml_gemv_q4_0_8x8_q8_0 and
// ggml_gemm_q4_0_8x8_q8_0 (their AVX2 and AVX-512 code) over nb blocks of
// a Q4_0 weight row w and a Q8_0 activation row a: per block the exact
// integer Σ (q−8)·x, then
//
//	acc = fma(float32(Σ), dw·dx, acc)   block after block, acc from 0
//
// How the integer is formed does not matter (it is exact); the float32
// chain is the order.
func dotQ4_0Chain(w, a []byte, nb int) float32 {
	wb := int(tensor.Q4_0.BlockBytes())
	var acc float32
	var q [32]int8
	for b := 0; b < nb; b++ {
		ablk := a[b*q8_0Bytes : (b+1)*q8_0Bytes]
		dw, _ := unpack0(tensor.Q4_0, &q, w[b*wb:(b+1)*wb])
		var s int32
		for j, v := range q {
			s += int32(v) * int32(int8(ablk[2+j]))
		}
		acc = fma32(float32(s), float32(dw*fp16(ablk)), acc)
	}
	return acc
}

// unpackK writes the integer weights of one k-quant super-block, scale
// included (sub-block scale × centred quant), to W, and returns the
// block's d, dmin and the sub-block mins (Q2_K: per 16 elements; Q4_K,
// Q5_K: per 32; zero for Q3_K and Q6_K).
func unpackK(t tensor.DType, W *[256]int16, b []byte) (d, dmin float32, mins [16]int32) {
	switch t {
	case tensor.Q2_K:
		b = b[:84]
		for n := 0; n < 2; n++ {
			q := b[16+32*n : 48+32*n]
			for g := 0; g < 8; g++ {
				s := b[8*n+g]
				mins[8*n+g] = int32(s >> 4)
				shift := uint(g>>1) * 2
				for l := 0; l < 16; l++ {
					W[128*n+16*g+l] = int16(s&15) * int16((q[16*(g&1)+l]>>shift)&3)
				}
			}
		}
		return fp16(b[80:]), fp16(b[82:]), mins
	case tensor.Q3_K:
		b = b[:110]
		sc := quant.Q3KScales(b[96:108])
		hm := b[0:32]
		for n := 0; n < 2; n++ {
			q := b[32+32*n : 64+32*n]
			for g := 0; g < 8; g++ {
				shift := uint(g>>1) * 2
				m := uint8(1) << (4*n + g>>1)
				for l := 0; l < 16; l++ {
					v := int16((q[16*(g&1)+l] >> shift) & 3)
					if hm[16*(g&1)+l]&m == 0 {
						v -= 4
					}
					W[128*n+16*g+l] = int16(sc[8*n+g]) * v
				}
			}
		}
		return fp16(b[108:]), 0, mins
	case tensor.Q4_K:
		b = b[:144]
		sc, mn := quant.K4ScalesMins(b[4:16])
		for j := 0; j < 4; j++ {
			q := b[16+32*j : 48+32*j]
			for l := 0; l < 32; l++ {
				W[64*j+l] = int16(sc[2*j]) * int16(q[l]&15)
				W[64*j+32+l] = int16(sc[2*j+1]) * int16(q[l]>>4)
			}
		}
		for j, m := range mn {
			mins[j] = int32(m)
		}
		return fp16(b), fp16(b[2:]), mins
	case tensor.Q5_K:
		b = b[:176]
		sc, mn := quant.K4ScalesMins(b[4:16])
		qh := b[16:48]
		for j := 0; j < 4; j++ {
			q := b[48+32*j : 80+32*j]
			s := uint(2 * j)
			for l := 0; l < 32; l++ {
				W[64*j+l] = int16(sc[2*j]) * int16(q[l]&15|(qh[l]>>s&1)<<4)
				W[64*j+32+l] = int16(sc[2*j+1]) * int16(q[l]>>4|(qh[l]>>(s+1)&1)<<4)
			}
		}
		for j, m := range mn {
			mins[j] = int32(m)
		}
		return fp16(b), fp16(b[2:]), mins
	case tensor.Q6_K:
		b = b[:210]
		for n := 0; n < 2; n++ {
			ql := b[64*n : 64*n+64]
			qh := b[128+32*n : 160+32*n]
			sc := b[192+8*n : 200+8*n]
			for l := 0; l < 32; l++ {
				is := l / 16
				q1 := int16(ql[l]&0xf|(qh[l]&3)<<4) - 32
				q2 := int16(ql[l+32]&0xf|(qh[l]>>2&3)<<4) - 32
				q3 := int16(ql[l]>>4|(qh[l]>>4&3)<<4) - 32
				q4 := int16(ql[l+32]>>4|(qh[l]>>6&3)<<4) - 32
				W[128*n+l] = int16(int8(sc[is])) * q1
				W[128*n+l+32] = int16(int8(sc[is+2])) * q2
				W[128*n+l+64] = int16(int8(sc[is+4])) * q3
				W[128*n+l+96] = int16(int8(sc[is+6])) * q4
			}
		}
		return fp16(b[208:]), 0, mins
	case tensor.IQ4_XS:
		// ggml's AVX2 dot multiplies the levels by the activations in
		// pairs (int16), then by the 6-bit block scale: the same exact
		// integers as W = scale·level.
		b = b[:136]
		sh := binary.LittleEndian.Uint16(b[2:])
		for ib := 0; ib < 8; ib++ {
			ls := int16(b[4+ib/2]>>(4*(ib%2))&0xf|byte(sh>>(2*ib)&3)<<4) - 32
			q := b[8+16*ib : 24+16*ib]
			for j := 0; j < 16; j++ {
				W[32*ib+j] = ls * int16(iq4Levels[q[j]&0xf])
				W[32*ib+16+j] = ls * int16(iq4Levels[q[j]>>4])
			}
		}
		return fp16(b), 0, mins
	case tensor.IQ3_XXS:
		// ggml's AVX2 dot multiplies the grid bytes by the signed
		// activations in pairs (int16), then by 2·ls+1, and scales the
		// float sum by 1/4 at the end (dotK): W = ±(2·ls+1)·grid. Q8_K
		// quants lie in −127..127, so negating one never wraps.
		b = b[:98]
		for ib := 0; ib < 8; ib++ {
			aux := binary.LittleEndian.Uint32(b[66+4*ib:])
			ls := int16(2*(aux>>28) + 1)
			for k := 0; k < 8; k++ {
				g := iq3xxsGrid[b[2+8*ib+k]]
				sg := iq3Signs[aux>>(7*(k/2))&127]
				for j := 0; j < 4; j++ {
					v := ls * int16(uint8(g>>(8*j)))
					if sg>>(4*(k%2)+j)&1 != 0 {
						v = -v
					}
					W[32*ib+4*k+j] = v
				}
			}
		}
		return fp16(b), 0, mins
	case tensor.IQ3_S:
		// As IQ3_XXS with a 9-bit grid index (high bit in qh), one sign bit
		// per value and no final 1/4: W = ±(2·ls+1)·grid.
		b = b[:110]
		for ib := 0; ib < 8; ib++ {
			ls := int16(2*(b[106+ib/2]>>(4*(ib%2))&0xf) + 1)
			for k := 0; k < 8; k++ {
				g := iq3sGrid[int(b[2+8*ib+k])|int(b[66+ib]>>k&1)<<8]
				sg := b[74+4*ib+k/2]
				for j := 0; j < 4; j++ {
					v := ls * int16(uint8(g>>(8*j)))
					if sg>>(4*(k%2)+j)&1 != 0 {
						v = -v
					}
					W[32*ib+4*k+j] = v
				}
			}
		}
		return fp16(b), 0, mins
	case tensor.IQ2_XXS, tensor.IQ2_XS, tensor.IQ2_S:
		// ggml's AVX2 dots multiply the grid magnitudes by the signed
		// activations in pairs (int16), then by the odd scale of each 16
		// values: the same exact integers as W = scale·±magnitude; the
		// result is scaled by 1/8 at the end (dotK).
		var q [256]int8
		var ls [16]int16
		quant.IQ2Unpack(t, &q, &ls, b[:t.BlockBytes()])
		for i, v := range q {
			W[i] = ls[i/16] * int16(v)
		}
		return fp16(b), 0, mins
	}
	panic("kernels: unpackK " + t.String())
}

// lanesK returns the eight lane sums of a super-block: lane l over the
// elements 32c+4l..32c+4l+3 of the eight 32-element chunks c.
func lanesK(W *[256]int16, a []byte) (s [8]int32) {
	a = a[:256]
	for c := 0; c < 8; c++ {
		for l := range s {
			o := 32*c + 4*l
			s[l] += int32(W[o])*int32(int8(a[o])) + int32(W[o+1])*int32(int8(a[o+1])) +
				int32(W[o+2])*int32(int8(a[o+2])) + int32(W[o+3])*int32(int8(a[o+3]))
		}
	}
	return s
}

// dotKGeneric is ggml_vec_dot_{q2_K,q3_K,q4_K,q5_K,q6_K,iq4_xs,iq3_xxs,
// iq3_s}_q8_K over nb super-blocks. With D = dx·dw and Dm = (−dx)·dmin per
// super-block:
//
//	Q2_K:       acc[l] = fma(Dm, mins·bsums pair l, acc[l]); acc[l] = fma(D, lane_l, acc[l])
//	Q3_K, Q6_K, IQ4_XS, IQ3_S: acc[l] = fma(D, lane_l, acc[l])
//	IQ3_XXS:    likewise, result 0.25·hsum8(acc)
//	IQ2_XXS, IQ2_XS, IQ2_S: likewise, result hsum8(acc)·0.125
//	Q4_K:       acc[l] likewise; accm[k] = fma(Dm, mins·sums pair k, accm[k]) over 4 lanes,
//	            result hsum8(acc) + ((accm0+accm2)+(accm1+accm3))
//	Q5_K:       acc[l] likewise; summs = fma(Dm, Σ mins·sums, summs), result hsum8(acc) + summs
func dotKGeneric(t tensor.DType, w, a []byte, nb int) float32 {
	return dotK(t, w, a, nb, lanesK)
}

// dotK is dotKGeneric with the lane sums formed by lanes (lanesK or a SIMD
// version of it: the sums are exact, so any gives the same bits).
func dotK(t tensor.DType, w, a []byte, nb int, lanes func(W *[256]int16, a []byte) [8]int32) float32 {
	if t == tensor.IQ1_S || t == tensor.IQ1_M {
		return dotIQ1(t, w, a, nb, lanes)
	}
	wb := int(t.BlockBytes())
	var acc [8]float32
	var accm [4]float32
	var summs float32
	var W [256]int16
	for b := 0; b < nb; b++ {
		ablk := a[b*q8_KBytes : (b+1)*q8_KBytes]
		dx := math.Float32frombits(binary.LittleEndian.Uint32(ablk))
		q := ablk[4:260]
		var bs [16]int32
		for g := range bs {
			bs[g] = int32(int16(binary.LittleEndian.Uint16(ablk[260+2*g:])))
		}
		dw, dmw, mins := unpackK(t, &W, w[b*wb:(b+1)*wb])
		d := dx * dw
		dm := -dx * dmw
		switch t {
		case tensor.Q2_K:
			for l := range acc {
				p := mins[2*l]*bs[2*l] + mins[2*l+1]*bs[2*l+1]
				acc[l] = fma32(dm, float32(p), acc[l])
			}
		case tensor.Q4_K, tensor.Q5_K:
			var sum int32
			for k := range accm {
				// bsums pairs: the 32-element sub-block sums (ggml adds them as int16).
				s0 := int32(int16(bs[4*k] + bs[4*k+1]))
				s1 := int32(int16(bs[4*k+2] + bs[4*k+3]))
				p := mins[2*k]*s0 + mins[2*k+1]*s1
				if t == tensor.Q4_K {
					accm[k] = fma32(dm, float32(p), accm[k])
				}
				sum += p
			}
			if t == tensor.Q5_K {
				summs = fma32(dm, float32(sum), summs)
			}
		}
		s := lanes(&W, q)
		for l := range acc {
			acc[l] = fma32(d, float32(s[l]), acc[l])
		}
	}
	r := hsum8(&acc)
	switch t {
	case tensor.IQ3_XXS:
		r *= 0.25
	case tensor.Q4_K:
		r += (accm[0] + accm[2]) + (accm[1] + accm[3])
	case tensor.Q5_K:
		r += summs
	case tensor.IQ2_XXS, tensor.IQ2_XS, tensor.IQ2_S:
		r *= 0.125
	}
	return r
}

// qdotGeneric returns the dot product of one weight row w (K elements of
// dtype t) with one activation row a in ActDType(t) blocks.
func qdotGeneric(t tensor.DType, w, a []byte, K int) float32 {
	switch {
	case ActDType(t) == tensor.Q8_K:
		return dotKGeneric(t, w, a, K/256)
	case t == tensor.MXFP4:
		return dotMXFP4(w, a, K/32)
	case t == tensor.Q1_0:
		return dotQ1_0(w, a, K/128)
	case t == tensor.NVFP4:
		return dotNVFP4(w, a, K/64)
	}
	return dotQ0Generic(t, w, a, K/32)
}

// dotMXFP4 is ggml_vec_dot_mxfp4_q8_0 (AVX2) over nb blocks: the even and
// the odd blocks in two accumulators, added before the horizontal sum, and
// an odd last block added in scalar, its 32 products summed as one
// integer (GCC contracts ggml's sumf += d·sumi), the products formed with
// the sign trick as ggml's are (lanesSign):
//
//	acc1[l] = fma(d_2i, lane_l, acc1[l]);  acc2[l] = fma(d_2i+1, lane_l, acc2[l])
//	result  = hsum8(acc1 + acc2) (+ d_last·Σ lanes of the last block)
//
// with d = dx·dw, dw the block's E8M0 half scale.
func dotMXFP4(w, a []byte, nb int) float32 {
	const wb = 17
	var acc [2][8]float32
	var q [32]int8
	pairs := nb &^ 1
	for b := 0; b < pairs; b++ {
		ablk := a[b*q8_0Bytes : (b+1)*q8_0Bytes]
		d := fp16(ablk) * quant.MXFP4Ints(&q, w[b*wb:(b+1)*wb])
		s := lanesSign(q[:], ablk[2:])
		acc := &acc[b&1]
		for l := range acc {
			acc[l] = fma32(d, float32(s[l]), acc[l])
		}
	}
	for l := range acc[0] {
		acc[0][l] += acc[1][l]
	}
	sum := hsum8(&acc[0])
	if pairs < nb {
		ablk := a[pairs*q8_0Bytes : (pairs+1)*q8_0Bytes]
		d := fp16(ablk) * quant.MXFP4Ints(&q, w[pairs*wb:(pairs+1)*wb])
		var si int32
		for _, v := range lanesSign(q[:], ablk[2:]) {
			si += v
		}
		sum = fma32(d, float32(si), sum)
	}
	return sum
}

// lanesSign returns the eight lane sums of |q|·sign(a, q) over 32 weights
// q and int8 activations a, where sign(a, q) is a, -a or 0 as q is
// positive, negative or zero, negated in int8 (VPSIGNB, or the
// xor-and-subtract of ggml's Q1_0 kernel), so that -(-128) stays -128 as
// it does in ggml's AVX2 code. |q| ≤ 12 keeps the pairwise int16 sums
// (VPMADDUBSW) far from saturation.
func lanesSign(q []int8, a []byte) (s [8]int32) {
	q, a = q[:32], a[:32]
	for l := range s {
		q4, a4 := q[4*l:4*l+4], a[4*l:4*l+4]
		s[l] = signProd(q4[0], a4[0]) + signProd(q4[1], a4[1]) + signProd(q4[2], a4[2]) + signProd(q4[3], a4[3])
	}
	return s
}

// signProd is one product of lanesSign: x·y, except that a negative x
// meets −y wrapped in int8, so x < 0 with y = −128 gives −(x·y).
func signProd(x int8, y byte) int32 {
	p := int32(x) * int32(int8(y))
	if y == 0x80 && x < 0 {
		p = -p
	}
	return p
}

// dotQ1_0 is ggml_vec_dot_q1_0_q8_0 (AVX2) over nb Q1_0 blocks of 128,
// each against four Q8_0 activation blocks k = 0..3 with scales dx_k and
// lane sums s_k of the activations signed by the weight bits; dw is the
// weight block's scale:
//
//	blk[l] = dx_0·s_0[l]; blk[l] = fma(dx_k, s_k[l], blk[l]) for k = 1..3
//	acc[l] = fma(dw, blk[l], acc[l]);   result hsum8(acc)
func dotQ1_0(w, a []byte, nb int) float32 {
	var acc [8]float32
	var q [128]int8
	for b := 0; b < nb; b++ {
		dw := quant.Q1_0Signs(&q, w[b*18:(b+1)*18])
		var blk [8]float32
		for k := range 4 {
			ablk := a[(4*b+k)*q8_0Bytes : (4*b+k+1)*q8_0Bytes]
			dx := fp16(ablk)
			s := lanesSign(q[32*k:], ablk[2:])
			for l := range blk {
				if k == 0 {
					blk[l] = dx * float32(s[l])
				} else {
					blk[l] = fma32(dx, float32(s[l]), blk[l])
				}
			}
		}
		for l := range acc {
			acc[l] = fma32(dw, blk[l], acc[l])
		}
	}
	return hsum8(&acc)
}

// dotNVFP4 is ggml_vec_dot_nvfp4_q8_0 (AVX2) over nb NVFP4 blocks of 64,
// each against two Q8_0 activation blocks (scales dx_0, dx_1): lanes 0–3
// of the first half's sums belong to sub-block 0, lanes 4–7 to sub-block
// 1, and so on, each scaled by its sub-block's UE4M3 scale u_s times the
// activation block's:
//
//	acc[l] = fma(u_{l/4}·dx_0, s_0[l], acc[l])
//	acc[l] = fma(u_{2+l/4}·dx_1, s_1[l], acc[l]);   result hsum8(acc)
func dotNVFP4(w, a []byte, nb int) float32 {
	var acc [8]float32
	var q [64]int8
	for b := 0; b < nb; b++ {
		u := quant.NVFP4Ints(&q, w[b*36:(b+1)*36])
		for h := range 2 {
			ablk := a[(2*b+h)*q8_0Bytes : (2*b+h+1)*q8_0Bytes]
			dx := fp16(ablk)
			lo, hi := u[2*h]*dx, u[2*h+1]*dx
			s := lanesSign(q[32*h:], ablk[2:])
			for l := range acc {
				d := lo
				if l >= 4 {
					d = hi
				}
				acc[l] = fma32(d, float32(s[l]), acc[l])
			}
		}
	}
	return hsum8(&acc)
}

// dotIQ1 is ggml_vec_dot_iq1_s_q8_K and ggml_vec_dot_iq1_m_q8_K (AVX2) over
// nb super-blocks, the lane sums formed by lanes. The grid values (−1, 0,
// 1) times the odd block scales are the integer weights W of lanesK; the
// shift ±1/8 is summed apart, as an integer times the same scales, and
// scaled by 1/8 at the end. With d = dx·dw per super-block:
//
//	IQ1_S: acc[l] = fma(d, lane_l, acc[l]); acc1 = fma(d, Σ_b ±ls_b·(bsums pair of block b), acc1)
//	       (GCC contracts ggml's accum1 += d·sumi1), result hsum8(acc) + 0.125·acc1
//	IQ1_M: acc[l] = fma(d, lane_l, acc[l]); acc2[l] = fma(d, lane_l of the ±ls shifts, acc2[l])
//	       result hsum8(acc) + 0.125·hsum8(acc2)
//
// (The final multiply by 1/8 is exact, so a contraction there changes
// nothing.)
func dotIQ1(t tensor.DType, w, a []byte, nb int, lanes func(W *[256]int16, a []byte) [8]int32) float32 {
	wb := int(t.BlockBytes())
	var acc, acc2 [8]float32
	var acc1 float32
	var W, Wd [256]int16
	var q [256]int8
	var ls [16]int16
	var neg [32]bool
	for b := 0; b < nb; b++ {
		ablk := a[b*q8_KBytes : (b+1)*q8_KBytes]
		dx := math.Float32frombits(binary.LittleEndian.Uint32(ablk))
		dw := quant.IQ1Unpack(t, &q, &ls, &neg, w[b*wb:(b+1)*wb])
		for i, v := range q {
			W[i] = ls[i/16] * int16(v)
			Wd[i] = ls[i/16]
			if neg[i/8] {
				Wd[i] = -Wd[i]
			}
		}
		d := dx * dw
		s := lanes(&W, ablk[4:260])
		for l := range acc {
			acc[l] = fma32(d, float32(s[l]), acc[l])
		}
		if t == tensor.IQ1_S {
			// The shift's sum from the activations' 16-value sums.
			var sum1 int32
			for g := 0; g < 16; g += 2 {
				bs := int32(int16(binary.LittleEndian.Uint16(ablk[260+2*g:]))) + int32(int16(binary.LittleEndian.Uint16(ablk[262+2*g:])))
				sum1 += bs * int32(Wd[16*g])
			}
			acc1 = fma32(d, float32(sum1), acc1)
			continue
		}
		s2 := lanes(&Wd, ablk[4:260])
		for l := range acc2 {
			acc2[l] = fma32(d, float32(s2[l]), acc2[l])
		}
	}
	if t == tensor.IQ1_S {
		return hsum8(&acc) + 0.125*acc1
	}
	return hsum8(&acc) + 0.125*hsum8(&acc2)
}
