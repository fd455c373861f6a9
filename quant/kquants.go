package quant

import (
	"encoding/binary"
	"math"
	"unsafe"
)

// The k-quant reference quantizers, transcribed from ggml-quants.c as of
// llama.cpp c392e509 (the build that wrote the test fixtures). ggml compiles
// this file without -march flags, so every float operation is a separate
// IEEE float32 operation: the float32(...) conversions below stop Go from
// fusing a*b+c into one FMA (which it may do on arm64, ppc64 and s390x), so
// the results are bit-exact on every architecture.

// groupMaxEps is ggml's GROUP_MAX_EPS: a group whose largest magnitude is
// below it is treated as all zero.
const groupMaxEps = 1e-15

// nearestInt is ggml's nearest_int: adding 1.5·2^23 pushes the fraction out
// of the mantissa, rounding half to even. Exact for |f| ≤ 2^22-1; outside that
// range it returns the same wrapped value ggml's release build does.
func nearestInt(f float32) int32 {
	v := float32(f) + 12582912
	return int32(math.Float32bits(v))&0x007fffff - 0x00400000
}

func clamp32(v, lo, hi int32) int32 { return max(lo, min(hi, v)) }

// makeQXQuants is ggml's make_qx_quants with rmse_type 1: symmetric levels
// -nmax..nmax-1 stored offset by nmax, scale refined over 18 trial inverse
// scales by least squares weighted with qw, or x² when qw is nil (as
// quantize_row_q6_K_ref calls it).
func makeQXQuants(nmax int32, x []float32, L []int8, qw []float32) float32 {
	n := len(x)
	var mx, amax float32
	for i := range n {
		if ax := abs32(x[i]); ax > amax {
			amax, mx = ax, x[i]
		}
	}
	if amax < groupMaxEps {
		clear(L[:n])
		return 0
	}
	iscale := float32(-nmax) / mx
	var sumlx, suml2 float32
	for i := range n {
		l := clamp32(nearestInt(iscale*x[i]), -nmax, nmax-1)
		L[i] = int8(l + nmax)
		w := qxWeight(qw, x, i)
		fl := float32(l)
		sumlx += float32(float32(w*x[i]) * fl)
		suml2 += float32(float32(w*fl) * fl)
	}
	var scale float32
	if suml2 != 0 {
		scale = sumlx / suml2
	}
	best := scale * sumlx
	for is := int32(-9); is <= 9; is++ {
		if is == 0 {
			continue
		}
		iscale = -(float32(nmax) + float32(float32(0.1)*float32(is))) / mx
		sumlx, suml2 = 0, 0
		for i := range n {
			l := clamp32(nearestInt(iscale*x[i]), -nmax, nmax-1)
			w := qxWeight(qw, x, i)
			fl := float32(l)
			sumlx += float32(float32(w*x[i]) * fl)
			suml2 += float32(float32(w*fl) * fl)
		}
		if suml2 > 0 && float32(sumlx*sumlx) > float32(best*suml2) {
			for i := range n {
				L[i] = int8(nmax + clamp32(nearestInt(iscale*x[i]), -nmax, nmax-1))
			}
			scale = sumlx / suml2
			best = scale * sumlx
		}
	}
	return scale
}

// makeQ3Quants is ggml's make_q3_quants with do_rmse: levels -nmax..nmax-1,
// then up to five passes that move single elements to the level that most
// improves the x²-weighted fit.
func makeQ3Quants(nmax int32, x []float32, L []int8) float32 {
	n := len(x)
	var mx, amax float32
	for i := range n {
		if ax := abs32(x[i]); ax > amax {
			amax, mx = ax, x[i]
		}
	}
	if amax < groupMaxEps {
		clear(L[:n])
		return 0
	}
	iscale := float32(-nmax) / mx
	var sumlx, suml2 float32
	for i := range n {
		l := clamp32(nearestInt(iscale*x[i]), -nmax, nmax-1)
		L[i] = int8(l)
		w := float32(x[i] * x[i])
		fl := float32(l)
		sumlx += float32(float32(w*x[i]) * fl)
		suml2 += float32(float32(w*fl) * fl)
	}
	for range 5 {
		changed := 0
		for i := range n {
			w := float32(x[i] * x[i])
			li := float32(L[i])
			slx := sumlx - float32(float32(w*x[i])*li)
			if slx > 0 {
				sl2 := suml2 - float32(float32(w*li)*li)
				newL := clamp32(nearestInt(float32(x[i]*sl2)/slx), -nmax, nmax-1)
				if newL != int32(L[i]) {
					fn := float32(newL)
					slx += float32(float32(w*x[i]) * fn)
					sl2 += float32(float32(w*fn) * fn)
					if sl2 > 0 && float32(float32(slx*slx)*suml2) > float32(float32(sumlx*sumlx)*sl2) {
						L[i] = int8(newL)
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
	for i := range n {
		L[i] += int8(nmax)
	}
	return sumlx / suml2
}

// makeQKX2Quants is ggml's make_qkx2_quants: asymmetric levels 0..nmax with
// a min ≤ 0, searched over nstep+1 trial scales by weighted least squares;
// it returns the scale and stores -min in *theMin.
func makeQKX2Quants(nmax int32, x, weights []float32, L []uint8, theMin *float32, laux []uint8,
	rmin, rdelta float32, nstep int, useMAD bool) float32 {
	n := len(x)
	mn, mx := x[0], x[0]
	sumW := weights[0]
	sumX := sumW * x[0]
	for i := 1; i < n; i++ {
		if x[i] < mn {
			mn = x[i]
		}
		if x[i] > mx {
			mx = x[i]
		}
		w := weights[i]
		sumW += w
		sumX += float32(w * x[i])
	}
	if mn > 0 {
		mn = 0
	}
	if mx == mn {
		clear(L[:n])
		*theMin = -mn
		return 0
	}
	iscale := float32(nmax) / (mx - mn)
	scale := 1 / iscale
	var bestErr float32
	for i := range n {
		l := nearestInt(iscale * (x[i] - mn))
		L[i] = uint8(clamp32(l, 0, nmax))
		diff := float32(float32(scale*float32(L[i]))+mn) - x[i]
		if useMAD {
			diff = abs32(diff)
		} else {
			diff = diff * diff
		}
		bestErr += float32(weights[i] * diff)
	}
	if nstep < 1 {
		*theMin = -mn
		return scale
	}
	for is := 0; is <= nstep; is++ {
		iscale = (float32(rmin+float32(rdelta*float32(is))) + float32(nmax)) / (mx - mn)
		var sumL, sumL2, sumXL float32
		for i := range n {
			l := clamp32(nearestInt(iscale*(x[i]-mn)), 0, nmax)
			laux[i] = uint8(l)
			w := weights[i]
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
			var cur float32
			for i := range n {
				diff := float32(float32(thisScale*float32(laux[i]))+thisMin) - x[i]
				if useMAD {
					diff = abs32(diff)
				} else {
					diff = diff * diff
				}
				cur += float32(weights[i] * diff)
			}
			if cur < bestErr {
				copy(L[:n], laux[:n])
				bestErr = cur
				scale = thisScale
				mn = thisMin
			}
		}
	}
	*theMin = -mn
	return scale
}

// getScaleMinK4 unpacks the j-th 6-bit scale and min of a Q4_K/Q5_K block.
func getScaleMinK4(j int, q []byte) (d, m uint8) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return q[j+4]&0xf | (q[j-4]>>6)<<4, q[j+4]>>4 | (q[j]>>6)<<4
}

// quantQ2_K is quantize_row_q2_K_ref, with the active kernels.
func quantQ2_K(b []byte, x []float32) { quantQ2_KWith(&active, b, x) }

// q2KSearch is quantize_row_q2_K_ref's makeQKX2Quants search (weights
// |x|, absolute errors).
var q2KSearch = newQKX2Search(3, -0.5, 0.1, 15)

// quantQ2_KWith is quantQ2_K with the kernels of k (the generic set: plain
// Go). As in quantQ45K, a lane search's levels are worked out only for the
// sub-blocks whose stored scale is zero, the only ones that keep them.
func quantQ2_KWith(k *kernelSet, b []byte, x []float32) {
	var L [qkK]uint8
	var laux [16]uint8
	var weights [16]float32
	var mins, scales [16]float32
	const q4scale = float32(15)
	search := func(j int) float32 {
		for l := range 16 {
			weights[l] = abs32(x[16*j+l])
		}
		return makeQKX2Quants(3, x[16*j:16*j+16], weights[:], L[16*j:16*j+16], &mins[j], laux[:], -0.5, 0.1, 15, true)
	}
	lanes := k.kq.searchQ2K((*[qkK]float32)(x), &scales, &mins)
	var maxScale, maxMin float32
	for j := range 16 {
		if !lanes {
			scales[j] = search(j)
		}
		if scales[j] > maxScale {
			maxScale = scales[j]
		}
		if mins[j] > maxMin {
			maxMin = mins[j]
		}
	}
	sc := b[0:16]
	if maxScale > 0 {
		iscale := q4scale / maxScale
		for j := range 16 {
			sc[j] = uint8(nearestInt(iscale * scales[j]))
		}
		putHalf(b[80:], maxScale/q4scale)
	} else {
		clear(sc)
		putHalf(b[80:], 0)
	}
	if maxMin > 0 {
		iscale := q4scale / maxMin
		for j := range 16 {
			sc[j] |= uint8(nearestInt(iscale*mins[j]) << 4)
		}
		putHalf(b[82:], maxMin/q4scale)
	} else {
		putHalf(b[82:], 0)
	}
	done := false
	if k.kq != kqGo {
		// the loop below, the divisions in the kernel
		var d, dm [16]float32
		for j := range 16 {
			d[j] = half(b[80:]) * float32(sc[j]&0xf)
			dm[j] = half(b[82:]) * float32(sc[j]>>4)
			if d[j] == 0 && lanes {
				search(j)
			}
		}
		done = k.kq.levels(L[:], x[:qkK], d[:], dm[:], 0, 3, 0)
	}
	for j := 0; j < 16 && !done; j++ {
		d := half(b[80:]) * float32(sc[j]&0xf)
		if d == 0 {
			if lanes {
				search(j)
			}
			continue
		}
		dm := half(b[82:]) * float32(sc[j]>>4)
		for ii := range 16 {
			l := nearestInt((x[16*j+ii] + dm) / d)
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

// dequantQ2_K is dequantize_row_q2_K: y = d·sc·q - dmin·m, in two halves
// of eight 16-element groups; group g of a half takes bits 2·(g/2) of the
// half's 32 quant bytes, the first or second 16 of them by g's parity.
func dequantQ2_K(y []float32, b []byte) {
	y, b = y[:qkK], b[:84] // fixed lengths: no bounds checks in the loops
	d, mn := half(b[80:]), half(b[82:])
	for n := range 2 {
		q := b[16+32*n : 48+32*n]
		for g := range 8 {
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

// quantQ3_K is quantize_row_q3_K_ref, with the active kernels.
func quantQ3_K(b []byte, x []float32) { quantQ3_KWith(&active, b, x) }

// quantQ3_KWith is quantQ3_K with the kernels of k (the generic set: plain
// Go). As in quantQ45K, a lane search's levels are worked out only for the
// sub-blocks whose stored scale is zero, the only ones that keep them.
func quantQ3_KWith(k *kernelSet, b []byte, x []float32) {
	var L [qkK]int8
	var scales [16]float32
	var maxScale, amax float32
	lanes := k.kq.searchQ3K((*[qkK]float32)(x), &scales)
	for j := range 16 {
		if !lanes {
			scales[j] = makeQ3Quants(4, x[16*j:16*j+16], L[16*j:16*j+16])
		}
		if s := abs32(scales[j]); s > amax {
			amax, maxScale = s, scales[j]
		}
	}
	hmask, qs, sc := b[0:32], b[32:96], b[96:108]
	clear(sc)
	if maxScale != 0 {
		iscale := -32 / maxScale
		for j := range 16 {
			l := int8(nearestInt(iscale * scales[j]))
			l = max(-32, min(31, l)) + 32
			if j < 8 {
				sc[j] = uint8(l) & 0xf
			} else {
				sc[j-8] |= (uint8(l) & 0xf) << 4
			}
			l >>= 4
			sc[j%4+8] |= uint8(l) << (2 * (j / 4))
		}
		putHalf(b[108:], 1/iscale)
	} else {
		putHalf(b[108:], 0)
	}
	dAll := half(b[108:])
	var d [16]float32
	for j := range 16 {
		var s int8
		if j < 8 {
			s = int8(sc[j] & 0xf)
		} else {
			s = int8(sc[j-8] >> 4)
		}
		s = (s | int8((sc[8+j%4]>>(2*(j/4)))&3)<<4) - 32
		if d[j] = dAll * float32(s); d[j] == 0 && lanes {
			makeQ3Quants(4, x[16*j:16*j+16], L[16*j:16*j+16])
		}
	}
	// the divisions in the kernel, or here
	if !k.kq.levels((*[qkK]uint8)(unsafe.Pointer(&L))[:], x[:qkK], d[:], nil, -4, 3, 4) {
		for j := range 16 {
			if d[j] == 0 {
				continue
			}
			for ii := range 16 {
				l := clamp32(nearestInt(x[16*j+ii]/d[j]), -4, 3)
				L[16*j+ii] = int8(l + 4)
			}
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

// Q3KScales unpacks the sixteen 6-bit sub-block scales of a Q3_K block
// from its 12 scale bytes (block bytes 96..107), each minus 32 (so
// -32..31): the low four bits of scale i are in byte i mod 8 (low nibble
// for i < 8), the high two in byte 8 + i mod 4 at bit 2·(i/4).
func Q3KScales(sc []byte) (s [16]int8) {
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
			s[4*i+k] = int8(uint8(a>>(8*k))) - 32
		}
	}
	return s
}

// dequantQ3_K is dequantize_row_q3_K: y = d·(sc-32)·(q - 4·!h), grouped
// as Q2_K; the high bit h of element 16·g+l of half n is bit 4n + g/2 of
// hmask byte 16·(g mod 2) + l.
func dequantQ3_K(y []float32, b []byte) {
	y, b = y[:qkK], b[:110]
	dAll := half(b[108:])
	hm := b[0:32]
	scales := Q3KScales(b[96:108])
	for n := range 2 {
		q := b[32+32*n : 64+32*n]
		for g := range 8 {
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

// qkx2Search is one k-quant's parameters for makeQKX2Quants or
// makeQKX3Quants: levels 0..nmax, trial inverse scales (rmin + rdelta·is +
// nmax)/(max - min) for is = 0..nstep. num holds those numerators as ggml
// computes them, in float32, for the lane kernels.
type qkx2Search struct {
	nmax         int32
	rmin, rdelta float32
	nstep        int
	num          []float32
}

func newQKX2Search(nmax int32, rmin, rdelta float32, nstep int) *qkx2Search {
	p := &qkx2Search{nmax: nmax, rmin: rmin, rdelta: rdelta, nstep: nstep, num: make([]float32, nstep+1)}
	for is := range p.num {
		p.num[is] = float32(rmin+float32(rdelta*float32(is))) + float32(nmax)
	}
	return p
}

// The searches of quantize_row_q4_K_ref and quantize_row_q5_K_ref
// (make_qkx2_quants), and of quantize_row_q4_K_impl and _q5_K_impl with
// importance weights (make_qkx3_quants).
var (
	q4KSearch  = newQKX2Search(15, -1, 0.1, 20)
	q5KSearch  = newQKX2Search(31, -0.5, 0.1, 15)
	q4KWSearch = newQKX2Search(15, -0.9, 0.05, 36)
	q5KWSearch = newQKX2Search(31, -0.9, 0.05, 36)
)

// kquantKernels names a set of k-quant kernels; kqGo has none, and the
// block quantizers then run their plain Go (the reference).
type kquantKernels uint8

const (
	kqGo     kquantKernels = iota
	kqAVX2                 // kquants_amd64.s
	kqAVX512               // kqAVX2, with sixteen lanes for searchQ45K16 and searchQ6K
)

// searchQ45K runs quantQ45K's eight makeQKX2Quants calls on a super-block
// one sub-block per lane (w nil), or quantQ45KW's eight makeQKX3Quants
// calls with weights w: it sets scales and mins as they would and leaves
// the levels alone. It returns false, having set nothing, when it has no
// kernel or x or w holds a NaN. (The kernels run every trial of p.num;
// the scalar searches skip them all when nstep < 1, so that is left to
// them.)
func (k kquantKernels) searchQ45K(x, w *[qkK]float32, p *qkx2Search, scales, mins *[8]float32) bool {
	return k != kqGo && p.nstep >= 1 && searchQ45KSIMD(x, w, p, scales, mins)
}

// searchQ45K16 is searchQ45K for two super-blocks at once, sixteen lanes:
// scales[8h+j] and mins[8h+j] are sub-block j of super-block h.
func (k kquantKernels) searchQ45K16(x, w *[2 * qkK]float32, p *qkx2Search, scales, mins *[16]float32) bool {
	return k == kqAVX512 && p.nstep >= 1 && searchQ45K16SIMD(x, w, p, scales, mins)
}

// searchQ2K runs quantQ2_K's sixteen makeQKX2Quants calls one sub-block
// per lane: it sets scales and mins as they would and leaves the levels
// alone. It returns false, having set nothing, when it has no kernel or x
// holds a NaN.
func (k kquantKernels) searchQ2K(x *[qkK]float32, scales, mins *[16]float32) bool {
	switch k {
	case kqAVX512:
		return searchQ2K16SIMD(x, q2KSearch, scales, mins)
	case kqAVX2:
		return searchQ2KSIMD(x, q2KSearch, scales, mins)
	}
	return false
}

// searchQ3K runs quantQ3_K's sixteen makeQ3Quants calls one sub-block per
// lane: it sets the scales they return and leaves the levels alone. It
// returns false, having set nothing, when it has no kernel (only AVX-512
// has one) or x holds a NaN.
func (k kquantKernels) searchQ3K(x *[qkK]float32, scales *[16]float32) bool {
	return k == kqAVX512 && searchQ3K16SIMD(x, scales)
}

// searchQ6K runs quantQ6_KW's sixteen makeQXQuants calls (weights qw, or
// x² when qw is nil) one sub-block per lane: it sets the scales they
// return and leaves the levels alone. It returns false, having set
// nothing, when it has no kernel or x or qw holds a NaN.
func (k kquantKernels) searchQ6K(x, qw *[qkK]float32, scales *[16]float32) bool {
	switch k {
	case kqAVX512:
		return searchQ6K16SIMD(x, qw, scales)
	case kqAVX2:
		return searchQ6KSIMD(x, qw, scales)
	}
	return false
}

// levels is the k-quants' last step: for sub-block j of the len(d) equal
// sub-blocks of x, L[i] = off + clamp(nearestInt((x[i] + m[j]) / d[j]),
// lo, hi), or nearestInt(x[i] / d[j]) when m is nil; a sub-block whose
// d[j] is 0 is left alone. It returns false, having set nothing, when it
// has no kernel for these sizes.
func (k kquantKernels) levels(L []uint8, x, d, m []float32, lo, hi, off int32) bool {
	return k != kqGo && levelsSIMD(L, x, d, m, lo, hi, off)
}

// searchQ45KSub is quantQ45K's search of one sub-block x[0:32]: weights
// av_x + |x| with av_x its root mean square, then makeQKX2Quants.
func searchQ45KSub(x []float32, L []uint8, p *qkx2Search, min *float32) float32 {
	var laux [32]uint8
	var weights [32]float32
	x, L = x[:32], L[:32]
	var sumX2 float32
	for _, v := range x {
		sumX2 += float32(v * v)
	}
	avX := float32(math.Sqrt(float64(sumX2 / 32)))
	for l, v := range x {
		weights[l] = avX + abs32(v)
	}
	return makeQKX2Quants(p.nmax, x, weights[:], L, min, laux[:], p.rmin, p.rdelta, p.nstep, false)
}

// quantQ45K holds what quantize_row_q4_K_ref and quantize_row_q5_K_ref
// share: eight 32-element groups with av_x + |x| weights, 6-bit scales and
// mins. It fills L (levels 0..p.nmax) and the 12 scale bytes, d and dmin.
// Where k has lane kernels they find the scales and mins; the search's
// levels, which the quantizer keeps only for a sub-block whose stored
// scale is zero, are then worked out for those sub-blocks alone.
func quantQ45K(b []byte, x []float32, L *[qkK]uint8, p *qkx2Search, k *kernelSet) {
	var mins, scales [8]float32
	lanes := k.kq.searchQ45K((*[qkK]float32)(x), nil, p, &scales, &mins)
	if !lanes {
		for j := range 8 {
			scales[j] = searchQ45KSub(x[32*j:], L[32*j:], p, &mins[j])
		}
	}
	finishQ45K(b, x, L, p, k, &scales, &mins, lanes)
}

// finishQ45K is quantQ45K after the search: the scales and mins stored,
// then the levels. lanes says the search left L alone.
func finishQ45K(b []byte, x []float32, L *[qkK]uint8, p *qkx2Search, k *kernelSet, scales, mins *[8]float32, lanes bool) {
	var maxScale, maxMin float32
	for j := range 8 {
		if scales[j] > maxScale {
			maxScale = scales[j]
		}
		if mins[j] > maxMin {
			maxMin = mins[j]
		}
	}
	var invScale, invMin float32
	if maxScale > 0 {
		invScale = 63 / maxScale
	}
	if maxMin > 0 {
		invMin = 63 / maxMin
	}
	sc := b[4:16]
	for j := range 8 {
		ls := min(63, uint8(nearestInt(invScale*scales[j])))
		lm := min(63, uint8(nearestInt(invMin*mins[j])))
		if j < 4 {
			sc[j] = ls
			sc[j+4] = lm
		} else {
			sc[j+4] = ls&0xf | (lm&0xf)<<4
			sc[j-4] |= (ls >> 4) << 6
			sc[j] |= (lm >> 4) << 6
		}
	}
	putHalf(b[0:], maxScale/63)
	putHalf(b[2:], maxMin/63)
	if lanes {
		dd := half(b[0:])
		for j := range 8 {
			if s, _ := getScaleMinK4(j, sc); dd*float32(s) == 0 {
				var m float32
				searchQ45KSub(x[32*j:], L[32*j:], p, &m)
			}
		}
	}
	requantKWith(b, x, L, p.nmax, k)
}

// requantKWith is requantK with the divisions in k's levels kernel, when
// it has one.
func requantKWith(b []byte, x []float32, L *[qkK]uint8, nmax int32, k *kernelSet) {
	if k.kq != kqGo {
		var d, dm [8]float32
		dd, dmin := half(b[0:]), half(b[2:])
		for j := range 8 {
			s, m := getScaleMinK4(j, b[4:16])
			d[j] = dd * float32(s)
			dm[j] = dmin * float32(m)
		}
		if k.kq.levels(L[:], x[:qkK], d[:], dm[:], 0, nmax, 0) {
			return
		}
	}
	requantK(b, x, L, nmax)
}

// quantRowsQ45K encodes the len(src)/256 super-blocks of src as Q4_K (p is
// q4KSearch) or Q5_K (q5KSearch), two at a time where k searches sixteen
// lanes.
func quantRowsQ45K(dst []byte, src []float32, p *qkx2Search, k *kernelSet) {
	q5 := p == q5KSearch
	bb := 144
	if q5 {
		bb = 176
	}
	one := func(b []byte, x []float32) {
		var L [qkK]uint8
		quantQ45K(b, x, &L, p, k)
		if q5 {
			packQ5_K(b, &L)
		} else {
			packQ4_K(b, &L)
		}
	}
	nb := len(src) / qkK
	i := 0
	for ; k.kq == kqAVX512 && i+2 <= nb; i += 2 {
		x := src[i*qkK : (i+2)*qkK]
		var scales, mins [16]float32
		if !k.kq.searchQ45K16((*[2 * qkK]float32)(x), nil, p, &scales, &mins) {
			one(dst[i*bb:(i+1)*bb], x[:qkK])
			one(dst[(i+1)*bb:(i+2)*bb], x[qkK:])
			continue
		}
		for h := range 2 {
			var L [qkK]uint8
			b := dst[(i+h)*bb : (i+h+1)*bb]
			finishQ45K(b, x[h*qkK:(h+1)*qkK], &L, p, k, (*[8]float32)(scales[8*h:]), (*[8]float32)(mins[8*h:]), true)
			if q5 {
				packQ5_K(b, &L)
			} else {
				packQ4_K(b, &L)
			}
		}
	}
	for ; i < nb; i++ {
		one(dst[i*bb:(i+1)*bb], src[i*qkK:(i+1)*qkK])
	}
}

// requantK sets the levels L of a Q4_K/Q5_K block from its stored f16 d,
// dmin and 6-bit scales and mins (the end of both quantizers).
func requantK(b []byte, x []float32, L *[qkK]uint8, nmax int32) {
	sc := b[4:16]
	dd, dmin := half(b[0:]), half(b[2:])
	for j := range 8 {
		s, m := getScaleMinK4(j, sc)
		d := dd * float32(s)
		if d == 0 {
			continue
		}
		dm := dmin * float32(m)
		for ii := range 32 {
			l := nearestInt((x[32*j+ii] + dm) / d)
			L[32*j+ii] = uint8(clamp32(l, 0, nmax))
		}
	}
}

// quantQ4_K is quantize_row_q4_K_ref, with the active kernels.
func quantQ4_K(b []byte, x []float32) { quantQ4_KWith(&active, b, x) }

func quantQ4_KWith(k *kernelSet, b []byte, x []float32) {
	var L [qkK]uint8
	quantQ45K(b, x, &L, q4KSearch, k)
	packQ4_K(b, &L)
}

// packQ4_K stores a Q4_K block's 4-bit levels.
func packQ4_K(b []byte, L *[qkK]uint8) {
	q := b[16:144]
	for j := 0; j < qkK; j += 64 {
		for l := range 32 {
			q[l] = L[j+l] | L[j+l+32]<<4
		}
		q = q[32:]
	}
}

// quantQ5_K is quantize_row_q5_K_ref, with the active kernels.
func quantQ5_K(b []byte, x []float32) { quantQ5_KWith(&active, b, x) }

func quantQ5_KWith(k *kernelSet, b []byte, x []float32) {
	var L [qkK]uint8
	quantQ45K(b, x, &L, q5KSearch, k)
	packQ5_K(b, &L)
}

// packQ5_K stores a Q5_K block's 5-bit levels.
func packQ5_K(b []byte, L *[qkK]uint8) {
	qh, ql := b[16:48], b[48:176]
	clear(qh)
	m1, m2 := uint8(1), uint8(2)
	for n := 0; n < qkK; n += 64 {
		for j := range 32 {
			l1 := L[n+j]
			if l1 > 15 {
				l1 -= 16
				qh[j] |= m1
			}
			l2 := L[n+j+32]
			if l2 > 15 {
				l2 -= 16
				qh[j] |= m2
			}
			ql[j] = l1 | l2<<4
		}
		m1 <<= 2
		m2 <<= 2
		ql = ql[32:]
	}
}

// K4ScalesMins unpacks the eight 6-bit sub-block scales and mins of a
// Q4_K or Q5_K block from its 12 scale bytes (block bytes 4..15), ggml's
// get_scale_min_k4 for j = 0..7.
func K4ScalesMins(sc []byte) (scales, mins [8]uint8) {
	sc = sc[:12]
	for j := range scales {
		scales[j], mins[j] = getScaleMinK4(j, sc)
	}
	return scales, mins
}

// dequantQ4_K is dequantize_row_q4_K: y = d·sc·q - dmin·m, four 64-element
// halves whose 32 quant bytes hold sub-block 2j in the low nibbles and
// 2j+1 in the high ones.
func dequantQ4_K(y []float32, b []byte) {
	y, b = y[:qkK], b[:144]
	d, dmin := half(b), half(b[2:])
	sc, mn := K4ScalesMins(b[4:16])
	for j := range 4 {
		d1, m1 := d*float32(sc[2*j]), dmin*float32(mn[2*j])
		d2, m2 := d*float32(sc[2*j+1]), dmin*float32(mn[2*j+1])
		q := b[16+32*j : 48+32*j]
		yy := y[64*j : 64*j+64]
		for l := range 32 {
			yy[l] = float32(d1*float32(q[l]&0xf)) - m1
			yy[l+32] = float32(d2*float32(q[l]>>4)) - m2
		}
	}
}

// dequantQ5_K is dequantize_row_q5_K: Q4_K with a fifth bit, for
// sub-block s bit s of qh[l].
func dequantQ5_K(y []float32, b []byte) {
	y, b = y[:qkK], b[:176]
	d, dmin := half(b), half(b[2:])
	sc, mn := K4ScalesMins(b[4:16])
	qh := b[16:48]
	for j := range 4 {
		d1, m1 := d*float32(sc[2*j]), dmin*float32(mn[2*j])
		d2, m2 := d*float32(sc[2*j+1]), dmin*float32(mn[2*j+1])
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

// quantQ6_K is quantize_row_q6_K_ref.
func quantQ6_K(b []byte, x []float32) { quantQ6_KW(b, x, nil) }

// quantQ6_KW is quantize_row_q6_K_impl: the reference with each
// sub-block's scale fitted with the importance qw (x² when nil), searching
// with the active kernels.
func quantQ6_KW(b []byte, x, qw []float32) { quantQ6_KWith(&active, b, x, qw) }

// q6KNum are the numerators of makeQXQuants' 18 trial inverse scales
// -(nmax + 0.1·is)/max for nmax 32 (Q6_K), is = -9..9 but 0, in float32 as
// ggml computes them, for the lane kernels.
var q6KNum = func() []float32 {
	const nmax = 32
	var num []float32
	for is := int32(-9); is <= 9; is++ {
		if is != 0 {
			num = append(num, -(float32(nmax) + float32(float32(0.1)*float32(is))))
		}
	}
	return num
}()

// q6KSub is quantQ6_KW's search of sub-block ib.
func q6KSub(x, qw []float32, L []int8, ib int) float32 {
	var w []float32
	if qw != nil {
		w = qw[16*ib : 16*ib+16]
	}
	return makeQXQuants(32, x[16*ib:16*ib+16], L[16*ib:16*ib+16], w)
}

// quantQ6_KWith is quantQ6_KW with the kernels of k (the generic set: plain
// Go). As in quantQ45K, a lane search's levels are worked out only for the
// sub-blocks whose stored scale is zero, the only ones that keep them.
func quantQ6_KWith(k *kernelSet, b []byte, x, qw []float32) {
	var L [qkK]int8
	var scales [16]float32
	var maxScale, maxAbsScale float32
	var qwb *[qkK]float32
	if qw != nil {
		qwb = (*[qkK]float32)(qw)
	}
	lanes := k.kq.searchQ6K((*[qkK]float32)(x), qwb, &scales)
	if !lanes {
		for ib := range 16 {
			scales[ib] = q6KSub(x, qw, L[:], ib)
		}
	}
	for _, s := range scales {
		if a := abs32(s); a > maxAbsScale {
			maxAbsScale, maxScale = a, s
		}
	}
	if maxAbsScale < groupMaxEps {
		clear(b[:210])
		return
	}
	ql, qh, sc := b[0:128], b[128:192], b[192:208]
	iscale := -128 / maxScale
	putHalf(b[208:], 1/iscale)
	for ib := range 16 {
		sc[ib] = uint8(int8(min(127, nearestInt(iscale*scales[ib]))))
	}
	dd := half(b[208:])
	done := false
	if k.kq != kqGo {
		// the loop below, the divisions in the kernel
		var d [16]float32
		for j := range 16 {
			if d[j] = dd * float32(int8(sc[j])); d[j] == 0 && lanes {
				q6KSub(x, qw, L[:], j)
			}
		}
		done = k.kq.levels((*[qkK]uint8)(unsafe.Pointer(&L))[:], x[:qkK], d[:], nil, -32, 31, 32)
	}
	if !done {
		for j := range 16 {
			d := dd * float32(int8(sc[j]))
			if d == 0 {
				if lanes {
					q6KSub(x, qw, L[:], j)
				}
				continue
			}
			for ii := range 16 {
				l := clamp32(nearestInt(x[16*j+ii]/d), -32, 31)
				L[16*j+ii] = int8(l + 32)
			}
		}
	}
	for j := 0; j < qkK; j += 128 {
		for l := range 32 {
			q1 := uint8(L[j+l]) & 0xf
			q2 := uint8(L[j+l+32]) & 0xf
			q3 := uint8(L[j+l+64]) & 0xf
			q4 := uint8(L[j+l+96]) & 0xf
			ql[l] = q1 | q3<<4
			ql[l+32] = q2 | q4<<4
			qh[l] = uint8(L[j+l])>>4 | (uint8(L[j+l+32])>>4)<<2 | (uint8(L[j+l+64])>>4)<<4 | (uint8(L[j+l+96])>>4)<<6
		}
		ql = ql[64:]
		qh = qh[32:]
	}
}

// dequantQ6_K is dequantize_row_q6_K: y = (d·sc)·(q-32), the sixteen
// products d·sc formed once per block as ggml forms each.
func dequantQ6_K(y []float32, b []byte) {
	y, b = y[:qkK], b[:210]
	d := half(b[208:])
	var s [16]float32
	for i := range s {
		s[i] = d * float32(int8(b[192+i]))
	}
	for n := range 2 {
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

// quantQ8_K is quantize_row_q8_K_ref: d = max/-127 as float32, q =
// min(127, nearest(x/d)), bsums = sums of each 16 quants. ggml leaves bsums
// unset for an all-zero block; they are zero here.
func quantQ8_K(b []byte, x []float32) {
	var mx, amax float32
	for _, v := range x[:qkK] {
		if ax := abs32(v); ax > amax {
			amax, mx = ax, v
		}
	}
	qs := b[4:260]
	if amax == 0 {
		clear(b[:292])
		return
	}
	iscale := -127 / mx
	for j, v := range x[:qkK] {
		qs[j] = uint8(int8(min(127, nearestInt(iscale*v))))
	}
	for j := range 16 {
		sum := 0
		for ii := range 16 {
			sum += int(int8(qs[16*j+ii]))
		}
		binary.LittleEndian.PutUint16(b[260+2*j:], uint16(int16(sum)))
	}
	binary.LittleEndian.PutUint32(b[0:], math.Float32bits(1/iscale))
}

// dequantQ8_K is dequantize_row_q8_K: y = d·q with a float32 d.
func dequantQ8_K(y []float32, b []byte) {
	d := math.Float32frombits(binary.LittleEndian.Uint32(b))
	for j, q := range b[4:260] {
		y[j] = d * float32(int8(q))
	}
}

// lroundf is C's lroundf for the small values ternary quantization sees.
func lroundf(f float32) int { return int(math.Round(float64(f))) }

// quantTQ1_0 is quantize_row_tq1_0_ref: ternary digits {-1,0,1}, five per
// byte as a base-3 fixed-point fraction (ceil(q·256/243)).
func quantTQ1_0(b []byte, x []float32) {
	var amax float32
	for _, v := range x[:qkK] {
		amax = max(amax, abs32(v))
	}
	d := amax
	var id float32
	if d != 0 {
		id = 1 / d
	}
	putHalf(b[52:], d)
	qs, qh := b[0:48], b[48:52]
	pack := func(get func(n int) float32, count int, shift bool) uint8 {
		var q uint8
		for n := range count {
			q = q*3 + uint8(lroundf(get(n)*id)+1)
		}
		if shift {
			q *= 3
		}
		return uint8((uint16(q)*256 + 242) / 243)
	}
	for m := range 32 {
		qs[m] = pack(func(n int) float32 { return x[m+n*32] }, 5, false)
	}
	x = x[160:]
	for m := range 16 {
		qs[32+m] = pack(func(n int) float32 { return x[m+n*16] }, 5, false)
	}
	x = x[80:]
	for j := range 4 {
		qh[j] = pack(func(n int) float32 { return x[j+n*4] }, 4, true)
	}
}

// dequantTQ1_0 is dequantize_row_tq1_0: digit n of byte q is
// ((q·3^n mod 256)·3) >> 8.
func dequantTQ1_0(y []float32, b []byte) {
	d := half(b[52:])
	pow3 := [6]uint8{1, 3, 9, 27, 81, 243}
	trit := func(q uint8, n int) float32 {
		v := q * pow3[n]
		return float32(int16((uint16(v)*3)>>8) - 1)
	}
	for n := range 5 {
		for m := range 32 {
			y[0] = trit(b[m], n) * d
			y = y[1:]
		}
	}
	for n := range 5 {
		for m := range 16 {
			y[0] = trit(b[32+m], n) * d
			y = y[1:]
		}
	}
	for n := range 4 {
		for j := range 4 {
			y[0] = trit(b[48+j], n) * d
			y = y[1:]
		}
	}
}

// quantTQ2_0 is quantize_row_tq2_0_ref: ternary digits stored as 2-bit
// fields {0,1,2}, four per byte.
func quantTQ2_0(b []byte, x []float32) {
	var amax float32
	for _, v := range x[:qkK] {
		amax = max(amax, abs32(v))
	}
	d := amax
	var id float32
	if d != 0 {
		id = 1 / d
	}
	putHalf(b[64:], d)
	for j := 0; j < 64; j += 32 {
		for m := range 32 {
			var q uint8
			for n := range 4 {
				xi := lroundf(x[m+n*32]*id) + 1
				q += uint8(xi&3) << (2 * n)
			}
			b[j+m] = q
		}
		x = x[128:]
	}
}

// dequantTQ2_0 is dequantize_row_tq2_0: y = (q-1)·d.
func dequantTQ2_0(y []float32, b []byte) {
	d := half(b[64:])
	for j := 0; j < 64; j += 32 {
		for l := range 4 {
			for m := range 32 {
				q := int8((b[j+m] >> (2 * l)) & 3)
				y[0] = float32(q-1) * d
				y = y[1:]
			}
		}
	}
}

// qxWeight is make_qx_quants' weight of x[i]: qw[i], or x[i]² without qw.
func qxWeight(qw, x []float32, i int) float32 {
	if qw != nil {
		return qw[i]
	}
	return float32(x[i] * x[i])
}
