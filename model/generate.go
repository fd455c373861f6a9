package model

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/tfconv/tfconv/kernels"
)

// GenerateOptions controls Generate. The zero value plus MaxNewTokens is
// greedy decoding that stops at the model's EOS.
type GenerateOptions struct {
	MaxNewTokens int
	MinNewTokens int // EOS is masked until this many tokens were generated

	// Beam search (NumBeams > 1), with transformers' semantics: scores are
	// sums of log-probabilities divided by generated_length^LengthPenalty;
	// EarlyStopping ends the search as soon as NumBeams hypotheses are done.
	NumBeams      int
	LengthPenalty float64 // transformers' default is 1.0; used only with beams
	EarlyStopping bool

	// Sampling (Temperature > 0): logits/T, then top-k, then top-p
	// (nucleus), then a draw from a PCG generator seeded with Seed.
	Temperature float64
	TopK        int
	TopP        float64
	Seed        uint64

	// EOS overrides the model's end-of-sequence id; NoEOS disables it (as
	// transformers' eos_token_id=None does). ForcedEOS, when ≥ 0, is forced
	// at the last position (transformers' forced_eos_token_id); nil uses the
	// model's.
	EOS       *int
	NoEOS     bool
	ForcedEOS *int

	// OnToken, when set, is called with each new token as soon as it is
	// chosen, before the next one is computed (greedy and sampling; beam
	// search knows its tokens only at the end, so it calls OnToken for
	// each of the winner's tokens then). An error stops generation and is
	// returned.
	OnToken func(id int) error
}

// Generation is what Generate produced.
type Generation struct {
	// Tokens is the whole sequence: the prompt followed by the new tokens
	// for decoder-only models, the decoder start token followed by the new
	// tokens for encoder-decoder models (as transformers returns them).
	Tokens []int
	// Score: for beam search the length-normalized score of the chosen
	// hypothesis (transformers' sequences_scores); otherwise the sum of the
	// log-probabilities of the generated tokens.
	Score float64
}

// beamSearchPad is the score transformers gives every beam but the first at
// the start, so that the first step expands one beam only.
const beamSearchPad = -1e9

// Generate continues prompt (decoder-only) or translates it (encoder-decoder:
// the encoder reads prompt and decoding starts from the decoder start token).
func (m *Model) Generate(prompt []int, opts GenerateOptions) (*Generation, error) {
	c := &m.cfg
	if c.EncoderOnly {
		return nil, fmt.Errorf("model: %s is encoder-only: nothing to generate", c.Arch)
	}
	if opts.MaxNewTokens < 0 || opts.NumBeams < 0 || opts.TopK < 0 || opts.Temperature < 0 || opts.TopP < 0 || opts.TopP > 1 {
		return nil, errors.New("model: generate: negative or out-of-range option")
	}
	s := m.NewSession()
	start := prompt
	if c.EncoderDecoder {
		if err := s.Encode(prompt); err != nil {
			return nil, err
		}
		start = []int{c.DecoderStart}
	}
	eos := c.EOS
	if opts.EOS != nil {
		eos = *opts.EOS
	}
	stops := c.StopIDs
	if opts.EOS != nil {
		stops = nil
	}
	if opts.NoEOS {
		eos, stops = -1, nil
	}
	forced := c.ForcedEOS
	if opts.ForcedEOS != nil {
		forced = *opts.ForcedEOS
	}
	g := &generator{m: m, opts: opts, eos: eos, stops: stops, forced: forced, promptLen: len(start),
		maxLen: len(start) + opts.MaxNewTokens}
	logits, err := s.Step(start)
	if err != nil {
		return nil, err
	}
	if opts.NumBeams > 1 {
		if opts.Temperature > 0 {
			return nil, errors.New("model: generate: beam sampling is not supported")
		}
		gen, err := g.beam(s, start, logits)
		if err == nil && opts.OnToken != nil {
			for _, id := range gen.Tokens[len(start):] {
				if err := opts.OnToken(id); err != nil {
					return nil, err
				}
			}
		}
		return gen, err
	}
	return g.sample(s, start, logits)
}

type generator struct {
	m         *Model
	opts      GenerateOptions
	eos       int
	stops     []int // other ids that end a sequence as eos does (Config.StopIDs)
	forced    int
	promptLen int
	maxLen    int
}

// process applies transformers' logits processors to scores of a sequence
// of curLen tokens: min_new_tokens masks EOS, forced_eos_token_id forces
// EOS at the last position.
func (g *generator) process(scores []float32, curLen int) {
	if curLen-g.promptLen < g.opts.MinNewTokens {
		for _, id := range append([]int{g.eos}, g.stops...) {
			if id >= 0 && id < len(scores) {
				scores[id] = float32(math.Inf(-1))
			}
		}
	}
	if g.forced >= 0 && g.forced < len(scores) && curLen == g.maxLen-1 {
		for i := range scores {
			scores[i] = float32(math.Inf(-1))
		}
		scores[g.forced] = 0
	}
}

// isEOS reports whether id ends a sequence.
func (g *generator) isEOS(id int) bool {
	return id >= 0 && (id == g.eos || slices.Contains(g.stops, id))
}

// logSoftmax returns log(softmax(x)) in float32, computed in float64.
func logSoftmax(x []float32) []float32 {
	mx := math.Inf(-1)
	for _, v := range x {
		mx = math.Max(mx, float64(v))
	}
	var sum float64
	for _, v := range x {
		sum += math.Exp(float64(v) - mx)
	}
	lse := mx + math.Log(sum)
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(float64(v) - lse)
	}
	return out
}

// sample runs greedy decoding, or sampling when Temperature > 0.
func (g *generator) sample(s *Session, tokens []int, logits []float32) (*Generation, error) {
	o := g.opts
	rng := rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15))
	out := &Generation{Tokens: append([]int(nil), tokens...)}
	for len(out.Tokens) < g.maxLen {
		scores := append([]float32(nil), logits...)
		g.process(scores, len(out.Tokens))
		var next int
		if o.Temperature > 0 {
			next = drawToken(scores, o.Temperature, o.TopK, o.TopP, rng)
		} else {
			next = kernels.Argmax(scores)
		}
		out.Score += float64(logSoftmax(logits)[next])
		out.Tokens = append(out.Tokens, next)
		if o.OnToken != nil {
			if err := o.OnToken(next); err != nil {
				return nil, err
			}
		}
		if g.isEOS(next) || len(out.Tokens) >= g.maxLen {
			break
		}
		var err error
		if logits, err = s.Step([]int{next}); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// drawToken applies temperature, top-k and top-p (in transformers' warper
// order) and draws from the resulting distribution.
func drawToken(scores []float32, temp float64, topK int, topP float64, rng *rand.Rand) int {
	type cand struct {
		id int
		v  float64
	}
	cs := make([]cand, 0, len(scores))
	for i, v := range scores {
		if !math.IsInf(float64(v), -1) {
			cs = append(cs, cand{i, float64(v) / temp})
		}
	}
	if len(cs) == 0 {
		return kernels.Argmax(scores)
	}
	sort.SliceStable(cs, func(a, b int) bool { return cs[a].v > cs[b].v })
	if topK > 0 && topK < len(cs) {
		kth := cs[topK-1].v
		n := topK
		for n < len(cs) && cs[n].v == kth { // ties with the k-th survive, as in TopKLogitsWarper
			n++
		}
		cs = cs[:n]
	}
	p := make([]float64, len(cs))
	var sum float64
	for i, c := range cs {
		p[i] = math.Exp(c.v - cs[0].v)
		sum += p[i]
	}
	for i := range p {
		p[i] /= sum
	}
	if topP > 0 && topP < 1 {
		// Keep the smallest prefix whose mass reaches topP (at least one).
		var cum float64
		n := len(p)
		for i, v := range p {
			cum += v
			if cum >= topP {
				n = i + 1
				break
			}
		}
		cs, p = cs[:n], p[:n]
		sum = 0
		for _, v := range p {
			sum += v
		}
		for i := range p {
			p[i] /= sum
		}
	}
	r := rng.Float64()
	for i, v := range p {
		r -= v
		if r < 0 {
			return cs[i].id
		}
	}
	return cs[len(cs)-1].id
}

// hypothesis is a finished beam.
type hypothesis struct {
	tokens []int
	score  float64
}

// beamHyps is transformers' BeamHypotheses: the best NumBeams finished
// sequences and the worst score among them.
type beamHyps struct {
	n     int
	lp    float64
	hyps  []hypothesis
	worst float64
}

func (b *beamHyps) add(tokens []int, sumLogprobs float64, generatedLen int) {
	score := sumLogprobs / math.Pow(float64(generatedLen), b.lp)
	if len(b.hyps) < b.n || score > b.worst {
		b.hyps = append(b.hyps, hypothesis{tokens, score})
		if len(b.hyps) > b.n {
			wi := 0
			for i, h := range b.hyps {
				if h.score < b.hyps[wi].score {
					wi = i
				}
			}
			b.hyps = append(b.hyps[:wi], b.hyps[wi+1:]...)
			b.worst = math.Inf(1)
			for _, h := range b.hyps {
				b.worst = math.Min(b.worst, h.score)
			}
		} else {
			b.worst = math.Min(score, b.worst)
			if len(b.hyps) == 1 {
				b.worst = score
			}
		}
	}
}

func (b *beamHyps) done(bestSum float64, curLen, promptLen int, early bool) bool {
	if len(b.hyps) < b.n {
		return false
	}
	if early {
		return true
	}
	return b.worst >= bestSum/math.Pow(float64(curLen-promptLen), b.lp)
}

type beamState struct {
	s      *Session
	tokens []int
	score  float32 // running sum of log-probabilities, float32 as in torch
	logits []float32
}

// beam is transformers' _beam_search with one batch entry: every step
// scores all (beam, token) pairs, keeps the 2·NumBeams best, moves finished
// (EOS) ones among the first NumBeams into the hypotheses and continues
// with the best NumBeams unfinished ones.
func (g *generator) beam(s *Session, start []int, logits []float32) (*Generation, error) {
	nb := g.opts.NumBeams
	lp := g.opts.LengthPenalty
	hyps := &beamHyps{n: nb, lp: lp}
	beams := make([]*beamState, nb)
	for i := range beams {
		beams[i] = &beamState{s: s, tokens: start, logits: logits}
		if i > 0 {
			beams[i].score = beamSearchPad
		}
	}
	V := g.m.cfg.Vocab
	type cand struct {
		score float32
		beam  int
		tok   int
	}
	done := false
	for len(beams[0].tokens) < g.maxLen && !done {
		curLen := len(beams[0].tokens)
		var cands []cand
		for bi, b := range beams {
			sc := logSoftmax(b.logits)
			g.process(sc, curLen)
			// The 2·nb best tokens of this beam suffice for the global top 2·nb.
			idx := kernels.TopK(sc, 2*nb)
			for _, t := range idx {
				cands = append(cands, cand{sc[t] + b.score, bi, t})
			}
		}
		sort.SliceStable(cands, func(a, b int) bool {
			if cands[a].score != cands[b].score {
				return cands[a].score > cands[b].score
			}
			return cands[a].beam*V+cands[a].tok < cands[b].beam*V+cands[b].tok
		})
		cands = cands[:min(2*nb, len(cands))]
		var next []cand
		for rank, c := range cands {
			if g.isEOS(c.tok) {
				if rank >= nb {
					continue
				}
				toks := append(append([]int(nil), beams[c.beam].tokens...), c.tok)
				hyps.add(toks, float64(c.score), curLen+1-g.promptLen)
			} else {
				next = append(next, c)
			}
			if len(next) == nb {
				break
			}
		}
		best := float64(cands[0].score)
		done = hyps.done(best, curLen+1, g.promptLen, g.opts.EarlyStopping)
		// Reorder: a session that already feeds a beam is cloned.
		taken := map[*Session]bool{}
		nbeams := make([]*beamState, 0, nb)
		for _, c := range next {
			src := beams[c.beam]
			sess := src.s
			if taken[sess] {
				sess = sess.Clone()
			}
			taken[src.s] = true
			nbeams = append(nbeams, &beamState{s: sess, tokens: append(append([]int(nil), src.tokens...), c.tok), score: c.score})
		}
		beams = nbeams
		if len(beams) < nb || len(beams[0].tokens) >= g.maxLen || done {
			break
		}
		for _, b := range beams {
			var err error
			if b.logits, err = b.s.Step([]int{b.tokens[len(b.tokens)-1]}); err != nil {
				return nil, err
			}
		}
	}
	if !done {
		// finalize: the running beams compete with the finished ones.
		for _, b := range beams {
			hyps.add(b.tokens, float64(b.score), len(b.tokens)-g.promptLen)
		}
	}
	if len(hyps.hyps) == 0 {
		return nil, errors.New("model: beam search produced no hypothesis")
	}
	bi := 0
	for i, h := range hyps.hyps {
		if h.score > hyps.hyps[bi].score {
			bi = i
		}
	}
	return &Generation{Tokens: hyps.hyps[bi].tokens, Score: hyps.hyps[bi].score}, nil
}
