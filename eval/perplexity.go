package eval

import (
	"fmt"
	"math"
)

// Chunking follows llama-perplexity (tools/perplexity/perplexity.cpp,
// perplexity(), llama.cpp c392e509) with -c ctx and no stride:
//
//   - the text is tokenized once, with BOS first when the tokenizer adds it;
//   - it is cut into ⌊len/ctx⌋ chunks of ctx tokens, the tail dropped, and at
//     least 2·ctx tokens are required;
//   - the first token of every chunk is replaced by BOS (when the tokenizer
//     adds BOS), each chunk is evaluated from an empty cache;
//   - only the second half is scored: the logits at positions
//     first = ctx/2 … ctx−2 predict tokens first+1 … ctx−1, so each chunk
//     contributes ctx − 1 − ctx/2 tokens (63 at ctx 128);
//   - PPL = exp(mean NLL) over all scored tokens, with standard error
//     PPL · sqrt((⟨nll²⟩ − ⟨nll⟩²)/(n−1)).

// DefaultPerplexityCtx is llama-perplexity's context in the project's
// reference figures (-c 128).
const DefaultPerplexityCtx = 128

// Chunk is one evaluation window.
type Chunk struct {
	Tokens []int // ctx tokens, the first replaced by BOS when the model adds one
	// First is the first scored logit position; positions First … len−2 are
	// scored against Tokens[First+1 …].
	First int
}

// Chunks cuts tokens into llama-perplexity's windows. bos < 0 leaves each
// chunk's first token as it is (a tokenizer that does not add BOS).
func Chunks(tokens []int, ctx, bos int) ([]Chunk, error) {
	if ctx < 4 {
		return nil, fmt.Errorf("eval: perplexity context %d is too small (at least 4)", ctx)
	}
	if len(tokens) < 2*ctx {
		return nil, fmt.Errorf("eval: the text has %d tokens; perplexity at context %d needs at least %d", len(tokens), ctx, 2*ctx)
	}
	n := len(tokens) / ctx
	out := make([]Chunk, n)
	for i := range out {
		c := append([]int(nil), tokens[i*ctx:(i+1)*ctx]...)
		if bos >= 0 {
			c[0] = bos
		}
		out[i] = Chunk{Tokens: c, First: ctx / 2}
	}
	return out, nil
}

// Logits runs a model on one sequence and returns its logits [T][vocab].
type Logits func(tokens []int) ([][]float32, error)

// PerplexityResult is a perplexity in llama-perplexity's terms.
type PerplexityResult struct {
	Ctx    int     `json:"ctx"`
	Chunks int     `json:"chunks"`
	Tokens int     `json:"tokens"` // tokens scored
	PPL    float64 `json:"ppl"`
	PPLErr float64 `json:"ppl_err"` // standard error, as llama-perplexity's "+/-"
	// Running is the perplexity after each chunk, as llama-perplexity
	// prints it ("[1]16.3875,[2]18.6470,…").
	Running []float64 `json:"running"`
}

// Perplexity computes the perplexity of a model over tokens (already
// tokenized with BOS first if the model adds it), chunk by chunk. maxChunks
// > 0 stops after that many chunks. progress, when not nil, is called after
// each chunk.
func Perplexity(tokens []int, ctx, bos, maxChunks int, run Logits, progress func(done, total int)) (*PerplexityResult, error) {
	chunks, err := Chunks(tokens, ctx, bos)
	if err != nil {
		return nil, err
	}
	if maxChunks > 0 && maxChunks < len(chunks) {
		chunks = chunks[:maxChunks]
	}
	res := &PerplexityResult{Ctx: ctx, Chunks: len(chunks)}
	var nll, nll2 float64
	var lp []float64
	for ci, ch := range chunks {
		logits, err := run(ch.Tokens)
		if err != nil {
			return nil, fmt.Errorf("eval: chunk %d: %w", ci, err)
		}
		if len(logits) != len(ch.Tokens) {
			return nil, fmt.Errorf("eval: chunk %d: model returned %d positions for %d tokens", ci, len(logits), len(ch.Tokens))
		}
		for j := ch.First; j < len(ch.Tokens)-1; j++ {
			t := ch.Tokens[j+1]
			if t < 0 || t >= len(logits[j]) {
				return nil, fmt.Errorf("eval: chunk %d: token %d outside the vocabulary of %d", ci, t, len(logits[j]))
			}
			if cap(lp) < len(logits[j]) {
				lp = make([]float64, len(logits[j]))
			}
			v := -LogSoftmax(lp[:len(logits[j])], logits[j])[t]
			nll += v
			nll2 += v * v
			res.Tokens++
		}
		res.Running = append(res.Running, math.Exp(nll/float64(res.Tokens)))
		if progress != nil {
			progress(ci+1, len(chunks))
		}
	}
	mean := nll / float64(res.Tokens)
	res.PPL = math.Exp(mean)
	// llama-perplexity's final estimate has no small-count cut-off.
	if v := nll2/float64(res.Tokens) - mean*mean; v > 0 && res.Tokens > 1 {
		res.PPLErr = res.PPL * math.Sqrt(v/float64(res.Tokens-1))
	}
	return res, nil
}
