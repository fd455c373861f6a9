package kernels

// WKV7 is RWKV-7's state update ("wkv7", the generalised delta rule of its
// time mix) in its recurrent form. For each of H heads, with the state S
// an [N][N] matrix (row i: value channel i, column j: key channel j), each
// step t computes, with w, k, a, b, r the head's rows at t,
//
//	sa[i]   = Σ_j a[j] · S[i][j]
//	S[i][j] ← S[i][j] · w[j] + v[i] · k[j] + sa[i] · b[j]
//	o[i]    = Σ_j S[i][j] · r[j]
//
// r, w, k, v, a, b and dst are [T][H][N]; state is [H][N][N] (zero before
// a sequence's first step), advanced in place, so feeding a sequence at
// once or in pieces gives the same output. The sums run in j order, as
// ggml's plain rwkv_wkv7 does.
func WKV7(dst, r, w, k, v, a, b, state []float32, T, H, N int) {
	if T <= 0 || H <= 0 || N <= 0 {
		return
	}
	for t := 0; t < T; t++ {
		for h := 0; h < H; h++ {
			o := (t*H + h) * N
			rt, wt, kt, vt, at, bt := r[o:o+N], w[o:o+N], k[o:o+N], v[o:o+N], a[o:o+N], b[o:o+N]
			out := dst[o : o+N]
			S := state[h*N*N : (h+1)*N*N]
			for i := 0; i < N; i++ {
				row := S[i*N : (i+1)*N]
				var sa float32
				for j, x := range row {
					sa += at[j] * x
				}
				vi := vt[i]
				var y float32
				for j := range row {
					row[j] = row[j]*wt[j] + vi*kt[j] + sa*bt[j]
					y += row[j] * rt[j]
				}
				out[i] = y
			}
		}
	}
}
