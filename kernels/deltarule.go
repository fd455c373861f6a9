package kernels

import "math"

// GatedDeltaRule is the gated delta rule of linear attention (Qwen3-Next's
// gated DeltaNet) in its recurrent form. For each of H heads, with the
// state S a [Dk][Dv] matrix, each step t computes
//
//	S ← exp(g[t]) · S
//	S ← S + k[t] ⊗ (β[t] · (v[t] − Sᵀk[t]))
//	o[t] = scale · Sᵀq[t]
//
// q and k are [T][H][Dk], v and dst [T][H][Dv], g and beta [T][H]; state is
// [H][Dk][Dv] (zero before a sequence's first step), advanced in place, so
// feeding a sequence at once or in pieces gives the same output. The
// chunked form transformers runs over a whole sequence computes the same
// (the test holds the two side by side).
func GatedDeltaRule(dst, q, k, v, g, beta, state []float32, T, H, Dk, Dv int, scale float32) {
	if T <= 0 || H <= 0 || Dk <= 0 || Dv <= 0 {
		return
	}
	// The heads are independent: they run in parallel, each over every
	// position in turn, so a head's state stays in cache.
	grain := max(1, scanGrain/max(1, T*Dk*Dv))
	parallelFor(H, grain, func(lo, hi int) {
		mem := make([]float32, Dv)
		for h := lo; h < hi; h++ {
			S := state[h*Dk*Dv : (h+1)*Dk*Dv]
			for t := 0; t < T; t++ {
				kt := k[(t*H+h)*Dk : (t*H+h+1)*Dk]
				qt := q[(t*H+h)*Dk : (t*H+h+1)*Dk]
				vt := v[(t*H+h)*Dv : (t*H+h+1)*Dv]
				out := dst[(t*H+h)*Dv : (t*H+h+1)*Dv]
				decay := float32(math.Exp(float64(g[t*H+h])))
				b := beta[t*H+h]
				clear(mem)
				for i, ki := range kt {
					row := S[i*Dv : (i+1)*Dv]
					for j := range row {
						row[j] *= decay
						mem[j] += row[j] * ki
					}
				}
				for j := range mem {
					mem[j] = (vt[j] - mem[j]) * b
				}
				clear(out)
				for i, ki := range kt {
					row := S[i*Dv : (i+1)*Dv]
					qi := qt[i] * scale
					for j := range row {
						row[j] += ki * mem[j]
						out[j] += row[j] * qi
					}
				}
			}
		}
	})
}
