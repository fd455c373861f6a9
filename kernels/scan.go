package kernels

import "math"

// SelectiveScan is Mamba-1's selective scan over T steps of C channels,
// each with a state of N values: for t = 0 … T−1 and every channel c,
//
//	h[c][n] ← exp(Δ[t][c]·A[c][n])·h[c][n] + Δ[t][c]·B[t][n]·x[t][c]
//	y[t][c] = Σₙ h[c][n]·Cm[t][n] + D[c]·x[t][c]
//
// x, Δ and y are [T][C], B and Cm are [T][N] (shared by every channel), A
// is [C][N] (negative: the decay rates), D is [C] (the skip; nil: none)
// and h is the state [C][N], read and left as after step T−1, so feeding a
// sequence at once or in pieces gives the same output. Δ is used as given
// (the caller applies the softplus). y must not overlap the inputs.
//
// The channels are independent: they run in parallel (Threads), each over
// every position in turn, so a channel's state stays in cache.
func SelectiveScan(y, h, x, dt, A, B, Cm, D []float32, T, C, N int) {
	if T <= 0 || C <= 0 {
		return
	}
	grain := max(1, scanGrain/max(1, T*N))
	parallelFor(C, grain, func(lo, hi int) {
		for c := lo; c < hi; c++ {
			hc, ac := h[c*N:(c+1)*N], A[c*N:(c+1)*N]
			for t := 0; t < T; t++ {
				bt, ct := B[t*N:(t+1)*N], Cm[t*N:(t+1)*N]
				xv := x[t*C+c]
				d := dt[t*C+c]
				dx := d * xv
				var sum float32
				for n := range hc {
					v := float32(math.Exp(float64(d*ac[n])))*hc[n] + bt[n]*dx
					hc[n] = v
					sum += v * ct[n]
				}
				if D != nil {
					sum += D[c] * xv
				}
				y[t*C+c] = sum
			}
		}
	})
}

// scanGrain is the fewest state updates SelectiveScan and GatedDeltaRule
// hand a thread at once.
const scanGrain = 1 << 14

// Softplus applies log(1 + eˣ) in place, x itself above 20 (where the two
// are equal in float32), as torch's softplus and ggml's do.
func Softplus(x []float32) {
	for i, v := range x {
		if v <= 20 {
			x[i] = float32(math.Log1p(math.Exp(float64(v))))
		}
	}
}
