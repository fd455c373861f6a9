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
//
// The heads are independent: they run in parallel (Threads), each over
// every position in turn, so a head's state stays in cache.
func SSDScan(y, state, x, B, C []float32, stride int, dt, A, D []float32, T, H, P, N, G int) {
	if T <= 0 || H <= 0 {
		return
	}
	per := H / G
	// Pieces of at least ssdGrain state updates: a decoded token's few
	// heads of one layer are worth splitting, a handful of values is not.
	grain := max(1, ssdGrain/max(1, T*P*N))
	parallelFor(H, grain, func(lo, hi int) {
		for h := lo; h < hi; h++ {
			g := h / per
			skip := float32(0)
			if D != nil {
				skip = D[h]
			}
			sh := state[h*P*N : (h+1)*P*N]
			for t := 0; t < T; t++ {
				xt, bt, ct := x[t*stride+h*P:t*stride+(h+1)*P], B[t*stride+g*N:t*stride+(g+1)*N], C[t*stride+g*N:t*stride+(g+1)*N]
				d := dt[t*H+h]
				a := float32(math.Exp(float64(d * A[h])))
				yt := y[t*H*P+h*P : t*H*P+(h+1)*P]
				if st := active; st != nil && st.ssdRows != nil && N > 0 && N%st.lanes == 0 && P > 0 {
					st.ssdRows(&sh[0], &xt[0], &bt[0], &ct[0], &yt[0], a, d, P, N)
					for p, xv := range xt {
						yt[p] += skip * xv
					}
					continue
				}
				for p, xv := range xt {
					yt[p] = ssdStep(sh[p*N:(p+1)*N], bt, ct, a, d*xv) + skip*xv
				}
			}
		}
	})
}

// ssdGrain is the fewest state updates (multiply-adds of one head, one
// position and one state entry) SSDScan hands a thread at once.
const ssdGrain = 1 << 14

// ssdStep sets s[i] = a·s[i] + dx·b[i] for i < len(s) and returns
// Σ s[i]·c[i] of the new values: one step of one channel of SSDScan.
func ssdStep(s, b, c []float32, a, dx float32) float32 {
	b, c = b[:len(s)], c[:len(s)]
	n := 0
	var acc float32
	if st := active; st != nil && st.ssdStep != nil {
		if n = len(s) &^ (st.lanes - 1); n > 0 {
			acc = st.ssdStep(&s[0], &b[0], &c[0], a, dx, n)
		}
	}
	for i := n; i < len(s); i++ {
		v := a*s[i] + dx*b[i]
		s[i] = v
		acc += v * c[i]
	}
	return acc
}
