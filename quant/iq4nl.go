package quant

import "encoding/binary"

// The 4-bit non-linear encoders: ggml's quantize_row_iq4_nl_impl, which
// quantize_iq4_nl calls on 32-value super-blocks (IQ4_NL) and
// quantize_iq4_xs on 256-value ones (IQ4_XS), both with ntry 7 and with or
// without importance weights (llama.cpp c392e509, ggml-quants.c). One scale
// search (iq4Scale) serves both: IQ4_NL stores the block's scale as its f16
// d; IQ4_XS fits a scale per 32-value block, then stores them as 6-bit
// multiples of a super-block d. ggml compiles this code without -march
// flags, so each float32 operation below is one IEEE operation, as there.
//
// IQ4_NL block (32 values, 18 bytes):
//
//	+------+---------------------------------------------+
//	| d    | qs[16]: q[j] | q[j+16]<<4                   |
//	| f16  | x[j] = d·kvalues_iq4nl[q[j]], 16 levels      |
//	+------+---------------------------------------------+
//	0      2                                             18
//
// IQ4_XS super-block (256 values, 136 bytes): eight 32-value blocks b with a
// 6-bit scale ls[b] = (scales_l nibble b) | (bits 2b..2b+1 of scales_h)<<4,
// x = d·(ls[b]−32)·kvalues_iq4nl[q], qs packed per block as in IQ4_NL:
//
//	+------+-------------+-------------+----------------------------+
//	| d    | scales_h    | scales_l[4] | qs[128]: 8 × 16 bytes      |
//	| f16  | u16, 2 bits | low nibbles | q[j] | q[j+16]<<4 per block |
//	+------+-------------+-------------+----------------------------+
//	0      2             4             8                            136

// iq4nlTries is ggml's ntry for IQ4_NL and IQ4_XS: the scale search tries
// the inverse scales (t−127)/max for t in −7..7.
const iq4nlTries = 7

// bestIndexIQ4NL is ggml's best_index_int8 over the 16 IQ4_NL levels: the
// nearest level, ties to the lower one, by bisection (which also fixes what
// NaN maps to: the last level).
func bestIndexIQ4NL(x float32) uint8 {
	v := &kvaluesIQ4NL
	if x <= float32(v[0]) {
		return 0
	}
	if x >= float32(v[15]) {
		return 15
	}
	ml, mu := 0, 15
	for mu-ml > 1 {
		mav := (ml + mu) / 2
		if x < float32(v[mav]) {
			mu = mav
		} else {
			ml = mav
		}
	}
	if x-float32(v[mu-1]) < float32(v[mu])-x {
		return uint8(mu - 1)
	}
	return uint8(mu)
}

// IQ4NLLevels returns the 16 levels of IQ4_NL and IQ4_XS (ggml's
// kvalues_iq4nl), for the kernels that multiply them as integers.
func IQ4NLLevels() [16]int8 { return kvaluesIQ4NL }

// iq4nlSums returns Σw·q·x and Σw·q² for the levels nearest id·x.
func iq4nlSums(x, weight []float32, id float32) (sumqx, sumq2 float32) {
	for j, xv := range x {
		q := float32(kvaluesIQ4NL[bestIndexIQ4NL(float32(id*xv))])
		w := weight[j]
		sumqx += float32(float32(w*q) * xv)
		sumq2 += float32(float32(w*q) * q)
	}
	return sumqx, sumq2
}

// iq4Sigma2 is 2·Σx²/n over a super-block, the variance term of the
// importance-weighted fit.
func iq4Sigma2(x []float32) float32 {
	var s float32
	for _, v := range x {
		s += float32(v * v)
	}
	return s * (2 / float32(len(x)))
}

// iq4Weights sets the fit weights of a 32-value block xb: x² without
// importance (qw nil), else qw·√(σ² + x²) with σ² of its super-block.
func iq4Weights(w, xb, qw []float32, sigma2 float32) {
	if qw != nil {
		elementWeights(w, xb, qw, sigma2)
		return
	}
	for j, v := range xb[:len(w)] {
		w[j] = float32(v * v)
	}
}

// iq4Scale is the scale search of one 32-value block: the weighted
// least-squares fit over the initial guess max/−127·(−1) and the 15 trial
// inverse scales, keeping the one with the largest (Σw·q·x)²/Σw·q²; 0 when
// the block's largest magnitude is below groupMaxEps.
func iq4Scale(x, weight []float32) float32 {
	var amax, mx float32
	for _, v := range x {
		if ax := abs32(v); ax > amax {
			amax, mx = ax, v
		}
	}
	if amax < groupMaxEps {
		return 0
	}
	v0 := float32(kvaluesIQ4NL[0])
	d := -mx / v0
	sumqx, sumq2 := iq4nlSums(x, weight, 1/d)
	d = sumqx / sumq2
	best := float32(d * sumqx)
	for itry := -iq4nlTries; itry <= iq4nlTries; itry++ {
		id := float32(itry+int(kvaluesIQ4NL[0])) / mx
		sumqx, sumq2 := iq4nlSums(x, weight, id)
		if sumq2 > 0 && float32(sumqx*sumqx) > float32(best*sumq2) {
			d = sumqx / sumq2
			best = float32(d * sumqx)
		}
	}
	return d
}

// packIQ4 stores the levels nearest id·x of one 32-value block in qs[16].
func packIQ4(qs []byte, x []float32, id float32) {
	for j := range 16 {
		qs[j] = bestIndexIQ4NL(float32(id*x[j])) | bestIndexIQ4NL(float32(id*x[j+16]))<<4
	}
}

// quantIQ4_NL encodes one 32-value block: the scale of iq4Scale with
// weights x², then every value takes its nearest level at that scale.
func quantIQ4_NL(b []byte, x []float32) { quantIQ4_NLW(b, x, nil) }

// quantIQ4_NLW is quantIQ4_NL with importance qw: the fit's weights are
// qw·√(σ² + x²), σ² = 2·Σx²/32 (ggml's quantize_row_iq4_nl_impl given
// quant_weights).
func quantIQ4_NLW(b []byte, x, qw []float32) {
	var weight [32]float32
	x = x[:32]
	var sigma2 float32
	if qw != nil {
		sigma2 = iq4Sigma2(x)
	}
	iq4Weights(weight[:], x, qw, sigma2)
	d := iq4Scale(x, weight[:])
	putHalf(b, d)
	var id float32
	if d != 0 {
		id = 1 / d
	}
	packIQ4(b[2:18], x, id)
}

// quantIQ4_XS encodes one 256-value super-block without importance.
func quantIQ4_XS(b []byte, x []float32) { quantIQ4_XSW(b, x, nil) }

// quantIQ4_XSW encodes one 256-value super-block with importance qw (nil:
// weights x²): each 32-value block gets the scale of iq4Scale (σ² taken over
// the super-block), the super-block's d is −(the scale of largest
// magnitude)/32, each block's scale is rounded to an integer multiple
// l ∈ −32..31 of that d (the float32 d, not its f16 rounding, as ggml
// does), and its values take their nearest level at d·l.
func quantIQ4_XSW(b []byte, x, qw []float32) {
	var weight [32]float32
	var scales [qkK / 32]float32
	x = x[:qkK]
	var sigma2 float32
	if qw != nil {
		sigma2 = iq4Sigma2(x)
	}
	var maxScale, amaxScale float32
	for ib := range scales {
		xb := x[32*ib : 32*ib+32]
		var qwb []float32
		if qw != nil {
			qwb = qw[32*ib : 32*ib+32]
		}
		iq4Weights(weight[:], xb, qwb, sigma2)
		scales[ib] = iq4Scale(xb, weight[:])
		if a := abs32(scales[ib]); a > amaxScale {
			amaxScale, maxScale = a, scales[ib]
		}
	}
	d := -maxScale / 32
	putHalf(b, d)
	var id float32
	if d != 0 {
		id = 1 / d
	}
	var scalesH uint16
	scalesL := b[4:8]
	clear(scalesL)
	for ib, s := range scales {
		l := clamp32(nearestInt(float32(id*s)), -32, 31)
		dl := float32(d * float32(l))
		var idl float32
		if dl != 0 {
			idl = 1 / dl
		}
		packIQ4(b[8+16*ib:8+16*ib+16], x[32*ib:32*ib+32], idl)
		l += 32
		scalesL[ib/2] |= uint8(l&0xf) << (4 * (ib % 2))
		scalesH |= uint16(l>>4) << (2 * ib)
	}
	binary.LittleEndian.PutUint16(b[2:], scalesH)
}
