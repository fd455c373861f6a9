// Package eval holds the maths of scoring a model's next-token
// distributions that several packages share: log-softmax and the KL
// divergence in float64, llama-perplexity's chunking of a text and its
// perplexity. It sits below verify, imatrix and mixfit, which import it,
// and imports only the tokenizer; running a model is its callers' business
// (Perplexity takes the model as a function of tokens).
package eval
