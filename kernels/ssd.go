package kernels

import "math"

// SSDScan runs Mamba-2's state-space recurrence (the "state-space dual"
// form with a scalar decay per head) step by step over T positions, for H
// heads of P channels each, a state of N per channel, and B and C shared
// by the H/G heads of each of G groups. At position t, for head h of
// group g = h/(H/G), channel p and state entry n:
//
//	a            = exp(dt[t][h]·A[h])
//	S[h][p][n]   = a·S[h][p][n] + dt[t][h]·x[t][h·P+p]·B[t][g·N+n]
//	y[t][h·P+p]  = Σₙ S[h][p][n]·C[t][g·N+n] + D[h]·x[t][h·P+p]
//
// dt is the step size after its bias and softplus ([T][H]); A is negative
// (−exp(A_log)); D may be nil (no skip). x, B and C are read at row
// stride stride (they may be parts of one row: Mamba-2's convolved x, B,
// C); y is [T][H·P]. state is [H][P][N], zero before a sequence's first
// step, and holds the state after position T−1 on return, so feeding a
// sequence at once or in pieces gives the same output.
func SSDScan(y, state, x, B, C []float32, stride int, dt, A, D []float32, T, H, P, N, G int) {
	per := H / G
	for t := 0; t < T; t++ {
		xt, bt, ct := x[t*stride:], B[t*stride:], C[t*stride:]
		for h := 0; h < H; h++ {
			d := dt[t*H+h]
			a := float32(math.Exp(float64(d * A[h])))
			g := h / per
			bg, cg := bt[g*N:(g+1)*N], ct[g*N:(g+1)*N]
			skip := float32(0)
			if D != nil {
				skip = D[h]
			}
			for p := 0; p < P; p++ {
				xv := xt[h*P+p]
				dx := d * xv
				s := state[(h*P+p)*N : (h*P+p+1)*N]
				var acc float32
				for n, b := range bg {
					v := a*s[n] + dx*b
					s[n] = v
					acc += v * cg[n]
				}
				y[t*H*P+h*P+p] = acc + skip*xv
			}
		}
	}
}
