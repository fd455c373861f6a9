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

// iq4nlSums returns Σw·q·x and Σw·q² for the levels nearest id·x, with
// weights w = x² (ggml's weighting without an importance matrix).
func iq4nlSums(x []float32, id float32) (sumqx, sumq2 float32) {
	for _, xv := range x {
		q := float32(kvaluesIQ4NL[bestIndexIQ4NL(float32(id*xv))])
		w := float32(xv * xv)
		sumqx += float32(float32(w*q) * xv)
		sumq2 += float32(float32(w*q) * q)
	}
	return sumqx, sumq2
}

// quantIQ4_NL encodes one 32-value block: the scale is the weighted
// least-squares fit over the initial guess max/−127·(−1) and 15 trial
// inverse scales, then every value takes its nearest level at that scale.
func quantIQ4_NL(b []byte, x []float32) {
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
		sumqx, sumq2 := iq4nlSums(x, 1/d)
		d = sumqx / sumq2
		best := float32(d * sumqx)
		for itry := -iq4nlTries; itry <= iq4nlTries; itry++ {
			id := float32(itry+int(kvaluesIQ4NL[0])) / mx
			sumqx, sumq2 := iq4nlSums(x, id)
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
