// Package verify proves that a converted or quantized model still computes
// what the original computes, and when it does not, says where it departs.
//
// It compares two runs of the reference transformer (package model) on the
// same inputs with the statistics llama-perplexity --kl-divergence prints
// (llama.cpp tools/perplexity/perplexity.cpp): per position the KL
// divergence of the candidate from the reference with log-softmax in
// float64, same-top-token rate with its binomial error, top-k overlap, Δp of
// the reference's top token, logit max abs / RMS / cosine, and perplexities
// and their ratio where the inputs give next-token targets (Comparer,
// Summary). It compares the hidden state after every block (CompareLayers)
// and names the first block whose error jumps (MarkDivergent). Thresholds
// are named per precision pair (Thresholds, PairFor).
//
// Perplexity follows llama-perplexity -c N exactly (Chunks, Perplexity).
// Baselines (Baseline) keep a model's answer on fixed inputs for CI. Diff
// compares weights tensor by tensor across formats with a hash of the
// decoded values that does not depend on the container. WriteHTML renders a
// Report as a self-contained page with SVG plots.
//
// A baseline file is JSON:
//
//	{"format":"tfconv-verify-baseline","version":1,
//	 "model":…, "weight_types":["F32"], "tokens":[…], "topk":10,
//	 "positions":[{"top":[ids…],"logits":[…],"logprobs":[…],
//	               "target":id,"target_logprob":x}, …],
//	 "layer_positions":[…], "layers":L, "d_model":D,
//	 "hidden":"base64 of float32 LE [L][len(layer_positions)][D]"}
package verify
