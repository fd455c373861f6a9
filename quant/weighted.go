package quant

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/tfconv/tfconv/tensor"
)

// Importance-weighted quantization: ggml's quantize_<type> given
// quant_weights (llama-quantize --imatrix), transcribed from ggml-quants.c
// at llama.cpp c392e509 (quantize_row_<type>_impl). Each column's
// importance qw[c] (the mean squared activation an importance matrix holds)
// turns into a per-element weight of the least-squares fits; as in
// kquants.go every float operation is a separate float32 operation.

// QuantizeRows encodes rows of rowLen elements of src into dst as t, with
// importance weights[rowLen] for every row, as ggml_quantize_chunk does
// with an importance matrix: Q4_0, Q4_1, Q5_0, Q5_1, Q2_K…Q6_K, IQ4_NL,
// IQ4_XS, IQ3_XXS and IQ3_S (iq3.go), IQ2_XXS, IQ2_XS and IQ2_S (iq2.go),
// IQ1_S and IQ1_M (iq1.go; rows passed together share ggml's state across
// rows, see iq1Row).
// With nil weights it is Quantize, and overflow is reported as Quantize
// reports it (*OverflowError, dst written in full). Types whose
// ggml quantizer ignores the weights (F32, F16, BF16, Q8_0, TQ1_0 and TQ2_0
// — quantize_tq1_0/tq2_0 leave quant_weights unused — and MXFP4, whose
// quantize_mxfp4 in llama.cpp after c392e509 drops them) ignore them here
// too; any other type without a weighted quantizer returns an error
// matching tensor.ErrUnsupported rather than a result llama-quantize would
// not give.
func QuantizeRows(dst []byte, src []float32, t tensor.DType, rowLen int, weights []float32) error {
	if err := quantizeRows(dst, src, t, rowLen, weights); err != nil {
		return err
	}
	if e := overflow(dst, src, t); e != nil {
		return e
	}
	return nil
}

// quantizeRows is QuantizeRows without the overflow check.
func quantizeRows(dst []byte, src []float32, t tensor.DType, rowLen int, weights []float32) error {
	r := registry[t]
	if weights == nil || r != nil && r.IgnoresWeights {
		return quantize(dst, src, t)
	}
	if r == nil || r.EncodeRows == nil {
		return tensor.Unsupported("quant: cannot quantize to %v with importance weights", t)
	}
	if err := checkRows(len(src), len(dst), t, rowLen, len(weights)); err != nil {
		return err
	}
	return r.EncodeRows(dst, src, rowLen, weights)
}

// checkRows validates QuantizeRows' sizes: nElem elements in rows of
// rowLen, nBytes bytes of t, nWeights importance weights.
func checkRows(nElem, nBytes int, t tensor.DType, rowLen, nWeights int) error {
	if _, err := checkSizes(nElem, nBytes, t, "QuantizeRows"); err != nil {
		return err
	}
	bs := int(t.BlockSize())
	if rowLen <= 0 || rowLen%bs != 0 || nElem%rowLen != 0 {
		return fmt.Errorf("quant: QuantizeRows %v: rows of %d elements for %d elements in blocks of %d", t, rowLen, nElem, bs)
	}
	if nWeights != rowLen {
		return fmt.Errorf("quant: QuantizeRows %v: %d importance weights for rows of %d", t, nWeights, rowLen)
	}
	return nil
}

// CanQuantizeWeighted reports whether QuantizeRows takes importance
// weights for t.
func CanQuantizeWeighted(t tensor.DType) bool {
	r := registry[t]
	return r != nil && (r.IgnoresWeights || r.EncodeRows != nil)
}

// rowFunc encodes one row x into b with importance qw.
type rowFunc func(b []byte, x, qw []float32)

// superBlocks applies a 256-element block quantizer along a row.
func superBlocks(f func(b []byte, x, qw []float32), bytes int) rowFunc {
	return func(b []byte, x, qw []float32) {
		for i := 0; i < len(x)/qkK; i++ {
			f(b[i*bytes:(i+1)*bytes], x[i*qkK:(i+1)*qkK], qw[i*qkK:(i+1)*qkK])
		}
	}
}

// rowSigma2 is the mean square of a row, what the 32-element impls scale
// their weights with.
func rowSigma2(x []float32) float32 {
	var s float32
	for _, v := range x {
		s += float32(v * v)
	}
	return s / float32(len(x))
}

// elementWeights sets w[j] = qw[j]·√(sigma2 + x[j]²).
func elementWeights(w, x, qw []float32, sigma2 float32) {
	for j := range w {
		w[j] = qw[j] * sqrt32(sigma2+float32(x[j]*x[j]))
	}
}

func sqrt32(f float32) float32 { return float32(math.Sqrt(float64(f))) }

// quantRowQ4_0W is quantize_row_q4_0_impl.
func quantRowQ4_0W(b []byte, x, qw []float32) {
	var w [qk]float32
	var L [qk]int8
	sigma2 := rowSigma2(x)
	for ib := 0; ib < len(x)/qk; ib++ {
		xb, o := x[qk*ib:qk*ib+qk], b[18*ib:]
		elementWeights(w[:], xb, qw[qk*ib:], sigma2)
		putHalf(o, makeQXQuants(8, xb, L[:], w[:]))
		for j := range 16 {
			o[2+j] = uint8(L[j]) | uint8(L[j+16])<<4
		}
	}
}

// quantRowQ5_0W is quantize_row_q5_0_impl.
func quantRowQ5_0W(b []byte, x, qw []float32) {
	var w [qk]float32
	var L [qk]int8
	sigma2 := rowSigma2(x)
	for ib := 0; ib < len(x)/qk; ib++ {
		xb, o := x[qk*ib:qk*ib+qk], b[22*ib:]
		elementWeights(w[:], xb, qw[qk*ib:], sigma2)
		putHalf(o, makeQXQuants(16, xb, L[:], w[:]))
		binary.LittleEndian.PutUint32(o[2:], pack5(o[6:22], L[:]))
	}
}

// pack5 stores 32 five-bit levels as nibbles in qs and returns the fifth
// bits (element j in bit j).
func pack5[T int8 | uint8](qs []byte, L []T) uint32 {
	var qh uint32
	for j := range 16 {
		x0, x1 := uint8(L[j]), uint8(L[j+16])
		qs[j] = x0&0xf | (x1&0xf)<<4
		qh |= uint32(x0&0x10) >> 4 << j
		qh |= uint32(x1&0x10) >> 4 << (j + 16)
	}
	return qh
}

// quantRowQ4_1W is quantize_row_q4_1_impl.
func quantRowQ4_1W(b []byte, x, qw []float32) {
	var w [qk]float32
	var L, laux [qk]uint8
	sigma2 := rowSigma2(x)
	for ib := 0; ib < len(x)/qk; ib++ {
		xb, o := x[qk*ib:qk*ib+qk], b[20*ib:]
		elementWeights(w[:], xb, qw[qk*ib:], sigma2)
		var mn float32
		d := makeQKX3Quants(15, xb, w[:], L[:], &mn, laux[:], -0.9, 0.05, 36, false)
		putHalf(o, d)
		putHalf(o[2:], -mn)
		for j := range 16 {
			o[4+j] = L[j] | L[j+16]<<4
		}
	}
}

// quantRowQ5_1W is quantize_row_q5_1_impl.
func quantRowQ5_1W(b []byte, x, qw []float32) {
	var w [qk]float32
	var L, laux [qk]uint8
	sigma2 := rowSigma2(x)
	for ib := 0; ib < len(x)/qk; ib++ {
		xb, o := x[qk*ib:qk*ib+qk], b[24*ib:]
		elementWeights(w[:], xb, qw[qk*ib:], sigma2)
		var mn float32
		d := makeQKX3Quants(31, xb, w[:], L[:], &mn, laux[:], -0.9, 0.05, 36, false)
		putHalf(o, d)
		putHalf(o[2:], -mn)
		binary.LittleEndian.PutUint32(o[4:], pack5(o[8:24], L[:]))
	}
}

// makeQKX3Quants is ggml's make_qkx3_quants: as makeQKX2Quants (levels
// 0..nmax, a min ≤ 0, nstep+1 trial scales), with weights x² when weights
// is nil and a max ≤ min check.
func makeQKX3Quants(nmax int32, x, weights []float32, L []uint8, theMin *float32, laux []uint8,
	rmin, rdelta float32, nstep int, useMAD bool) float32 {
	n := len(x)
	wt := func(i int) float32 {
		if weights != nil {
			return weights[i]
		}
		return float32(x[i] * x[i])
	}
	mn, mx := x[0], x[0]
	sumW := wt(0)
	sumX := float32(sumW * x[0])
	for i := 1; i < n; i++ {
		if x[i] < mn {
			mn = x[i]
		}
		if x[i] > mx {
			mx = x[i]
		}
		w := wt(i)
		sumW += w
		sumX += float32(w * x[i])
	}
	if mn > 0 {
		mn = 0
	}
	if mx <= mn {
		clear(L[:n])
		*theMin = -mn
		return 0
	}
	iscale := float32(nmax) / (mx - mn)
	scale := 1 / iscale
	var bestMAD float32
	for i := range n {
		l := nearestInt(float32(iscale * (x[i] - mn)))
		L[i] = uint8(clamp32(l, 0, nmax))
		diff := float32(float32(scale*float32(L[i]))+mn) - x[i]
		if useMAD {
			diff = abs32(diff)
		} else {
			diff = float32(diff * diff)
		}
		bestMAD += float32(wt(i) * diff)
	}
	if nstep < 1 {
		*theMin = -mn
		return scale
	}
	for is := 0; is <= nstep; is++ {
		iscale = (float32(rmin+float32(rdelta*float32(is))) + float32(nmax)) / (mx - mn)
		var sumL, sumL2, sumXL float32
		for i := range n {
			l := clamp32(nearestInt(float32(iscale*(x[i]-mn))), 0, nmax)
			laux[i] = uint8(l)
			w := wt(i)
			fl := float32(l)
			sumL += float32(w * fl)
			sumL2 += float32(float32(w*fl) * fl)
			sumXL += float32(float32(w*fl) * x[i])
		}
		D := float32(sumW*sumL2) - float32(sumL*sumL)
		if D > 0 {
			thisScale := (float32(sumW*sumXL) - float32(sumX*sumL)) / D
			thisMin := (float32(sumL2*sumX) - float32(sumL*sumXL)) / D
			if thisMin > 0 {
				thisMin = 0
				thisScale = sumXL / sumL2
			}
			var mad float32
			for i := range n {
				diff := float32(float32(thisScale*float32(laux[i]))+thisMin) - x[i]
				if useMAD {
					diff = abs32(diff)
				} else {
					diff = float32(diff * diff)
				}
				mad += float32(wt(i) * diff)
			}
			if mad < bestMAD {
				copy(L[:n], laux[:n])
				bestMAD = mad
				scale = thisScale
				mn = thisMin
			}
		}
	}
	*theMin = -mn
	return scale
}

// makeQPQuants is ggml's make_qp_quants: non-negative x on levels 0..nmax
// with a scale searched over 9 trial inverse scales and then refined by up
// to five passes moving single levels, weighted by qw.
func makeQPQuants(nmax int32, x []float32, L []uint8, qw []float32) float32 {
	n := len(x)
	var mx float32
	for i := range n {
		if x[i] > mx {
			mx = x[i]
		}
	}
	if mx == 0 {
		clear(L[:n])
		return 0
	}
	iscale := float32(nmax) / mx
	for i := range n {
		L[i] = uint8(nearestInt(float32(iscale * x[i])))
	}
	scale := 1 / iscale
	var bestMSE float32
	for i := range n {
		diff := x[i] - float32(scale*float32(L[i]))
		bestMSE += float32(float32(qw[i]*diff) * diff)
	}
	for is := int32(-4); is <= 4; is++ {
		if is == 0 {
			continue
		}
		iscaleIs := (float32(float32(0.1)*float32(is)) + float32(nmax)) / mx
		scaleIs := 1 / iscaleIs
		var mse float32
		for i := range n {
			l := min(nmax, nearestInt(float32(iscaleIs*x[i])))
			diff := x[i] - float32(scaleIs*float32(l))
			mse += float32(float32(qw[i]*diff) * diff)
		}
		if mse < bestMSE {
			bestMSE = mse
			iscale = iscaleIs
		}
	}
	var sumlx, suml2 float32
	for i := range n {
		l := min(nmax, nearestInt(float32(iscale*x[i])))
		L[i] = uint8(l)
		w, fl := qw[i], float32(l)
		sumlx += float32(float32(w*x[i]) * fl)
		suml2 += float32(float32(w*fl) * fl)
	}
	for range 5 {
		changed := 0
		for i := range n {
			w, li := qw[i], float32(L[i])
			slx := sumlx - float32(float32(w*x[i])*li)
			sl2 := suml2 - float32(float32(w*li)*li)
			if slx > 0 && sl2 > 0 {
				newL := min(nmax, nearestInt(float32(x[i]*sl2)/slx))
				if newL != int32(L[i]) {
					fn := float32(newL)
					slx += float32(float32(w*x[i]) * fn)
					sl2 += float32(float32(w*fn) * fn)
					if float32(float32(slx*slx)*suml2) > float32(float32(sumlx*sumlx)*sl2) {
						L[i] = uint8(newL)
						sumlx, suml2 = slx, sl2
						changed++
					}
				}
			}
		}
		if changed == 0 {
			break
		}
	}
	return sumlx / suml2
}

// quantQ2_KW is quantize_row_q2_K_impl for one super-block.
func quantQ2_KW(b []byte, x, qw []float32) {
	var L [qkK]uint8
	var laux [16]uint8
	var mins, scales, sw, w [16]float32
	var Ls, Lm [16]uint8
	var sumX2 float32
	for _, v := range x[:qkK] {
		sumX2 += float32(v * v)
	}
	sigma2 := sumX2 / qkK
	for j := range 16 {
		elementWeights(w[:], x[16*j:16*j+16], qw[16*j:], sigma2)
		for l := range 16 {
			sw[j] += w[l]
		}
		scales[j] = makeQKX3Quants(3, x[16*j:16*j+16], w[:], L[16*j:16*j+16], &mins[j], laux[:], -0.9, 0.05, 36, false)
	}
	dm := makeQPQuants(15, scales[:], Ls[:], sw[:])
	mm := makeQPQuants(15, mins[:], Lm[:], sw[:])
	putHalf(b[80:], dm)
	putHalf(b[82:], mm)
	dm, mm = half(b[80:]), half(b[82:])
	sc := b[0:16]
	for j := range 16 {
		sc[j] = Ls[j] | Lm[j]<<4
	}
	for j := range 16 {
		d := dm * float32(sc[j]&0xf)
		if d == 0 {
			continue
		}
		m := mm * float32(sc[j]>>4)
		for ii := range 16 {
			l := nearestInt((x[16*j+ii] + m) / d)
			L[16*j+ii] = uint8(clamp32(l, 0, 3))
		}
	}
	qs := b[16:80]
	for j := 0; j < qkK; j += 128 {
		for l := range 32 {
			qs[j/4+l] = L[j+l] | L[j+l+32]<<2 | L[j+l+64]<<4 | L[j+l+96]<<6
		}
	}
}

// quantQ3_KW is quantize_row_q3_K_impl for one super-block: the
// sub-block scales come from make_qx_quants (the reference uses
// make_q3_quants) and are themselves fitted weighted by the sub-blocks'
// total weight.
func quantQ3_KW(b []byte, x, qw []float32) {
	var L [qkK]int8
	var scales, sw, w [16]float32
	var Ls [16]int8
	var sumX2 float32
	for _, v := range x[:qkK] {
		sumX2 += float32(v * v)
	}
	sigma2 := float32(2*sumX2) / qkK
	for j := range 16 {
		elementWeights(w[:], x[16*j:16*j+16], qw[16*j:], sigma2)
		var sumw float32
		for _, v := range w {
			sumw += v
		}
		sw[j] = sumw
		scales[j] = makeQXQuants(4, x[16*j:16*j+16], L[16*j:16*j+16], w[:])
	}
	hmask, qs, sc := b[0:32], b[32:96], b[96:108]
	clear(sc)
	dBlock := makeQXQuants(32, scales[:], Ls[:], sw[:])
	for j := range 16 {
		l := uint8(Ls[j])
		if j < 8 {
			sc[j] = l & 0xf
		} else {
			sc[j-8] |= (l & 0xf) << 4
		}
		l >>= 4
		sc[j%4+8] |= l << (2 * (j / 4))
	}
	putHalf(b[108:], dBlock)
	dAll := half(b[108:])
	for j := range 16 {
		var s int8
		if j < 8 {
			s = int8(sc[j] & 0xf)
		} else {
			s = int8(sc[j-8] >> 4)
		}
		s = (s | int8((sc[8+j%4]>>(2*(j/4)))&3)<<4) - 32
		d := dAll * float32(s)
		if d == 0 {
			continue
		}
		for ii := range 16 {
			l := clamp32(nearestInt(x[16*j+ii]/d), -4, 3)
			L[16*j+ii] = int8(l + 4)
		}
	}
	clear(hmask)
	m, hm := 0, uint8(1)
	for j := range qkK {
		if L[j] > 3 {
			hmask[m] |= hm
			L[j] -= 4
		}
		if m++; m == qkK/8 {
			m, hm = 0, hm<<1
		}
	}
	for j := 0; j < qkK; j += 128 {
		for l := range 32 {
			qs[j/4+l] = uint8(L[j+l]) | uint8(L[j+l+32])<<2 | uint8(L[j+l+64])<<4 | uint8(L[j+l+96])<<6
		}
	}
}

// quantQ45KW is what quantize_row_q4_K_impl and _q5_K_impl share: eight
// 32-element groups fitted by make_qkx3_quants with importance weights,
// their scales and mins by make_qp_quants weighted by the groups' total
// weight; it fills L and the 12 scale bytes, d and dmin.
func quantQ45KW(b []byte, x, qw []float32, L *[qkK]uint8, p *qkx2Search, k *kernelSet) {
	var w [qkK]float32
	var mins, scales, sw [8]float32
	q45KWWeights(&w, &sw, x, qw)
	// The lane kernels leave L alone; the levels of a sub-block whose
	// stored scale is 0 are the search's, worked out in finishQ45KW.
	lanes := k.kq.searchQ45K((*[qkK]float32)(x), &w, p, &scales, &mins)
	if !lanes {
		var laux [32]uint8
		for j := range 8 {
			scales[j] = makeQKX3Quants(p.nmax, x[32*j:32*j+32], w[32*j:32*j+32], L[32*j:32*j+32], &mins[j], laux[:], p.rmin, p.rdelta, p.nstep, false)
		}
	}
	finishQ45KW(b, x, &w, &sw, L, p, k, &scales, &mins, lanes)
}

// q45KWWeights sets the weights quantize_row_q4_K_impl and _q5_K_impl give
// make_qkx3_quants for super-block x with importance qw, and their sums per
// sub-block.
func q45KWWeights(w *[qkK]float32, sw *[8]float32, x, qw []float32) {
	var sumX2 float32
	for _, v := range x[:qkK] {
		sumX2 += float32(v * v)
	}
	sigma2 := float32(2*sumX2) / qkK
	for j := range 8 {
		ws := w[32*j : 32*j+32]
		elementWeights(ws, x[32*j:32*j+32], qw[32*j:], sigma2)
		var sumw float32
		for _, v := range ws {
			sumw += v
		}
		sw[j] = sumw
	}
}

// finishQ45KW is quantQ45KW after the search: the scales and mins fitted
// and stored, then the levels. lanes says the search left L alone.
func finishQ45KW(b []byte, x []float32, w *[qkK]float32, sw *[8]float32, L *[qkK]uint8, p *qkx2Search, k *kernelSet,
	scales, mins *[8]float32, lanes bool) {
	var Ls, Lm [8]uint8
	dBlock := makeQPQuants(63, scales[:], Ls[:], sw[:])
	mBlock := makeQPQuants(63, mins[:], Lm[:], sw[:])
	sc := b[4:16]
	clear(sc)
	for j := range 8 {
		ls, lm := min(63, Ls[j]), min(63, Lm[j])
		if j < 4 {
			sc[j] = ls
			sc[j+4] = lm
		} else {
			sc[j+4] = ls&0xf | (lm&0xf)<<4
			sc[j-4] |= (ls >> 4) << 6
			sc[j] |= (lm >> 4) << 6
		}
	}
	putHalf(b[0:], dBlock)
	putHalf(b[2:], mBlock)
	if lanes {
		var laux [32]uint8
		dd := half(b[0:])
		for j := range 8 {
			if s, _ := getScaleMinK4(j, sc); dd*float32(s) == 0 {
				var m float32
				makeQKX3Quants(p.nmax, x[32*j:32*j+32], w[32*j:32*j+32], L[32*j:32*j+32], &m, laux[:], p.rmin, p.rdelta, p.nstep, false)
			}
		}
	}
	requantKWith(b, x, L, p.nmax, k)
}

// quantRowQ45KW encodes a row of Q4_K (p is q4KWSearch) or Q5_K
// (q5KWSearch) super-blocks with importance qw[:len(x)], two at a time
// where k searches sixteen lanes.
func quantRowQ45KW(dst []byte, x, qw []float32, p *qkx2Search, k *kernelSet) {
	q5 := p == q5KWSearch
	bb := 144
	if q5 {
		bb = 176
	}
	one := func(i int) {
		var L [qkK]uint8
		b := dst[i*bb : (i+1)*bb]
		quantQ45KW(b, x[i*qkK:(i+1)*qkK], qw[i*qkK:], &L, p, k)
		if q5 {
			packQ5_K(b, &L)
		} else {
			packQ4_K(b, &L)
		}
	}
	nb := len(x) / qkK
	i := 0
	for ; k.kq == kqAVX512 && i+2 <= nb; i += 2 {
		var w [2 * qkK]float32
		var sw [2][8]float32
		var scales, mins [16]float32
		xs := x[i*qkK : (i+2)*qkK]
		for h := range 2 {
			q45KWWeights((*[qkK]float32)(w[h*qkK:]), &sw[h], xs[h*qkK:], qw[(i+h)*qkK:])
		}
		if !k.kq.searchQ45K16((*[2 * qkK]float32)(xs), &w, p, &scales, &mins) {
			one(i) // a NaN in one of them
			one(i + 1)
			continue
		}
		for h := range 2 {
			var L [qkK]uint8
			b := dst[(i+h)*bb : (i+h+1)*bb]
			finishQ45KW(b, xs[h*qkK:(h+1)*qkK], (*[qkK]float32)(w[h*qkK:]), &sw[h], &L, p, k,
				(*[8]float32)(scales[8*h:]), (*[8]float32)(mins[8*h:]), true)
			if q5 {
				packQ5_K(b, &L)
			} else {
				packQ4_K(b, &L)
			}
		}
	}
	for ; i < nb; i++ {
		one(i)
	}
}

// quantQ4_KW is quantize_row_q4_K_impl for one super-block.
func quantQ4_KW(b []byte, x, qw []float32) { quantQ4_KWWith(&active, b, x, qw) }

func quantQ4_KWWith(k *kernelSet, b []byte, x, qw []float32) {
	var L [qkK]uint8
	quantQ45KW(b, x, qw, &L, q4KWSearch, k)
	packQ4_K(b, &L)
}

// quantQ5_KW is quantize_row_q5_K_impl for one super-block.
func quantQ5_KW(b []byte, x, qw []float32) { quantQ5_KWWith(&active, b, x, qw) }

func quantQ5_KWWith(k *kernelSet, b []byte, x, qw []float32) {
	var L [qkK]uint8
	quantQ45KW(b, x, qw, &L, q5KWSearch, k)
	packQ5_K(b, &L)
}
