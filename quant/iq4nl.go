package quant

// IQ4_NL encoder: ggml's quantize_iq4_nl without an importance matrix, the
// way llama-quantize calls it for the Q2_K/Q3_K fallback (llama.cpp c392e509,
// llama-quant.cpp: a row length not divisible by 256 goes to IQ4_NL). ggml
// compiles this code without -march flags, so each float32 operation below
// is one IEEE operation, as there.
//
// Block (32 values, 18 bytes):
//
//	+------+---------------------------------------------+
//	| d    | qs[16]: q[j] | q[j+16]<<4                   |
//	| f16  | x[j] = d·kvalues_iq4nl[q[j]], 16 levels      |
//	+------+---------------------------------------------+
//	0      2                                             18

// iq4nlTries is ggml's ntry for IQ4_NL: the scale search tries the inverse
// scales (t−127)/max for t in −7..7.
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

// quantIQ4_NL encodes one 32-value block: the scale is the weighted
// least-squares fit over the initial guess max/−127·(−1) and 15 trial
// inverse scales, then every value takes its nearest level at that scale.
func quantIQ4_NL(b []byte, x []float32) { quantIQ4_NLW(b, x, nil) }

// quantIQ4_NLW is quantIQ4_NL with importance qw: the fit's weights are
// qw·√(σ² + x²), σ² = 2·Σx²/32, instead of x² (ggml's
// quantize_row_iq4_nl_impl given quant_weights).
func quantIQ4_NLW(b []byte, x, qw []float32) {
	var weight [32]float32
	if qw != nil {
		var sigma2 float32
		for _, v := range x[:32] {
			sigma2 += float32(v * v)
		}
		sigma2 *= 2.0 / 32
		elementWeights(weight[:], x, qw, sigma2)
	} else {
		for j, v := range x[:32] {
			weight[j] = float32(v * v)
		}
	}
	var amax, mx float32
	for _, v := range x {
		if ax := abs32(v); ax > amax {
			amax, mx = ax, v
		}
	}
	var d float32
	if amax >= groupMaxEps {
		v0 := float32(kvaluesIQ4NL[0])
		d = -mx / v0
		sumqx, sumq2 := iq4nlSums(x, weight[:], 1/d)
		d = sumqx / sumq2
		best := float32(d * sumqx)
		for itry := -iq4nlTries; itry <= iq4nlTries; itry++ {
			id := float32(itry+int(kvaluesIQ4NL[0])) / mx
			sumqx, sumq2 := iq4nlSums(x, weight[:], id)
			if sumq2 > 0 && float32(sumqx*sumqx) > float32(best*sumq2) {
				d = sumqx / sumq2
				best = float32(d * sumqx)
			}
		}
	}
	putHalf(b, d)
	var id float32
	if d != 0 {
		id = 1 / d
	}
	qs := b[2:18]
	for j := range 16 {
		qs[j] = bestIndexIQ4NL(float32(id*x[j])) | bestIndexIQ4NL(float32(id*x[j+16]))<<4
	}
}
