package kernels

// CausalConv1D is the depthwise causal convolution over time of the
// recurrent mixers (Mamba's, Mamba-2's, the gated delta rule's, LFM2's
// short convolution): for each of C channels,
//
//	dst[t][c] = b[c] + Σ_{j<K} w[c][j] · x'[t+j][c]
//
// where x' is the K−1 earlier inputs held in state ([K−1][C], oldest
// first; zero before a sequence's first step) followed by x[T][C]. b may
// be nil. On return state holds the last K−1 inputs of x', so feeding a
// sequence at once or in pieces gives the same output. dst must not
// overlap x.
func CausalConv1D(dst, x, state, w, b []float32, T, C, K int) {
	if K < 1 {
		return
	}
	// row returns x'[i][*].
	row := func(i int) []float32 {
		if i < K-1 {
			return state[i*C : (i+1)*C]
		}
		i -= K - 1
		return x[i*C : (i+1)*C]
	}
	for t := 0; t < T; t++ {
		out := dst[t*C : (t+1)*C]
		if b != nil {
			copy(out, b[:C])
		} else {
			clear(out)
		}
		for j := 0; j < K; j++ {
			in := row(t + j)
			for c, v := range in {
				out[c] += w[c*K+j] * v
			}
		}
	}
	// Shift the state: keep the last K−1 rows of x'.
	n := K - 1
	if n == 0 {
		return
	}
	if T >= n {
		copy(state, x[(T-n)*C:T*C])
		return
	}
	copy(state, state[T*C:n*C])
	copy(state[(n-T)*C:], x[:T*C])
}
