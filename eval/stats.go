package eval

import "math"

// LogSoftmax writes log(softmax(logits)) into dst in float64: the maximum is
// subtracted first and the sum of exponentials is accumulated in float64, so
// that a KL divergence of 1e-12 between two f32 models is not rounding noise.
// dst must have len(logits) elements; it is returned.
func LogSoftmax(dst []float64, logits []float32) []float64 {
	if len(logits) == 0 {
		return dst[:0]
	}
	mx := float64(logits[0])
	for _, v := range logits[1:] {
		if float64(v) > mx {
			mx = float64(v)
		}
	}
	var sum float64
	for _, v := range logits {
		sum += math.Exp(float64(v) - mx)
	}
	lse := mx + math.Log(sum)
	for i, v := range logits {
		dst[i] = float64(v) - lse
	}
	return dst[:len(logits)]
}

// KLD returns the Kullback-Leibler divergence of the candidate distribution
// from the reference one, given both as log-probabilities:
//
//	KLD(P‖Q) = Σ_i p_i (log p_i − log q_i),  p_i = exp(logP_i)
//
// This is the per-token quantity llama-perplexity --kl-divergence averages.
// llama.cpp stores the reference log-probabilities as uint16 steps over at
// most 16 nats and skips tokens with log p_i ≤ −16; here every token counts
// and nothing is rounded, so two identical models give exactly 0.
func KLD(logP, logQ []float64) float64 {
	var s float64
	for i, lp := range logP {
		p := math.Exp(lp)
		if p == 0 {
			continue
		}
		s += p * (lp - logQ[i])
	}
	if s < 0 {
		// Rounding can push a divergence of 0 a few ulps below it.
		s = 0
	}
	return s
}
