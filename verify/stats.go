package verify

import (
	"fmt"
	"math"
	"sort"

	"github.com/tfconv/tfconv/eval"
	"github.com/tfconv/tfconv/kernels"
)

// Position is the comparison of one position's next-token distributions.
type Position struct {
	Pos     int     `json:"pos"`      // index in the compared sequence (or, for chunked text, among the scored positions)
	MaxAbs  float64 `json:"max_abs"`  // max |cand − ref| over the logits
	RMS     float64 `json:"rms"`      // sqrt(mean (cand − ref)²) over the logits
	Cosine  float64 `json:"cosine"`   // cosine similarity of the two logit vectors
	KLD     float64 `json:"kld"`      // KLD(ref ‖ cand), see eval.KLD
	RefTop  int     `json:"ref_top"`  // argmax of the reference
	CandTop int     `json:"cand_top"` // argmax of the candidate
	// TopKOverlap is |topk(ref) ∩ topk(cand)| / k.
	TopKOverlap float64 `json:"topk_overlap"`
	// DeltaP is p_cand(t) − p_ref(t) for t the reference's top token.
	DeltaP float64 `json:"delta_p"`
	// Target is the token that follows this position in the input, or -1.
	Target int `json:"target"`
	// RefNLL and CandNLL are −log p(Target) under each model (0 without a
	// target).
	RefNLL  float64 `json:"ref_nll,omitempty"`
	CandNLL float64 `json:"cand_nll,omitempty"`
	// The tokens' vocabulary pieces as the tokenizer stores them ("▁the"),
	// where the reference (or, against a baseline, the candidate) has a
	// tokenizer: the input token at this position (not for chunked text),
	// both models' top tokens and the target.
	TokenText   string `json:"token_text,omitempty"`
	RefTopText  string `json:"ref_top_text,omitempty"`
	CandTopText string `json:"cand_top_text,omitempty"`
	TargetText  string `json:"target_text,omitempty"`
}

// Comparer accumulates per-position comparisons of two models' logits and
// summarizes them. The zero value is not usable; call NewComparer.
type Comparer struct {
	k         int
	positions []Position
	sumSq     float64 // Σ (cand − ref)² over every logit
	n         int64   // logits compared
	maxAbs    float64
	lp, lq    []float64
}

// DefaultTopK is the k of the top-k overlap and of baselines: enough to see
// whether the plausible continuations are the same, few enough to stay compact.
const DefaultTopK = 10

// NewComparer returns a Comparer computing top-k overlaps with k (DefaultTopK
// when k ≤ 0).
func NewComparer(k int) *Comparer {
	if k <= 0 {
		k = DefaultTopK
	}
	return &Comparer{k: k}
}

// Add compares one position: ref and cand are the two models' logits over the
// same vocabulary, target the token that follows (or -1 when none is known).
func (c *Comparer) Add(ref, cand []float32, target int) error {
	if len(ref) != len(cand) {
		return fmt.Errorf("verify: position %d: reference has %d logits, candidate %d", len(c.positions), len(ref), len(cand))
	}
	if len(ref) == 0 {
		return fmt.Errorf("verify: position %d: no logits", len(c.positions))
	}
	if target >= len(ref) {
		return fmt.Errorf("verify: position %d: target token %d outside the vocabulary of %d", len(c.positions), target, len(ref))
	}
	if cap(c.lp) < len(ref) {
		c.lp = make([]float64, len(ref))
		c.lq = make([]float64, len(ref))
	}
	lp := eval.LogSoftmax(c.lp[:len(ref)], ref)
	lq := eval.LogSoftmax(c.lq[:len(ref)], cand)
	p := Position{Pos: len(c.positions), Target: -1}
	var dot, nr, nc, sq float64
	for i := range ref {
		r, q := float64(ref[i]), float64(cand[i])
		d := q - r
		if a := math.Abs(d); a > p.MaxAbs || math.IsNaN(a) {
			p.MaxAbs = a
		}
		sq += d * d
		dot += r * q
		nr += r * r
		nc += q * q
	}
	p.RMS = math.Sqrt(sq / float64(len(ref)))
	p.Cosine = cosine(dot, nr, nc)
	p.KLD = eval.KLD(lp, lq)
	p.RefTop = kernels.Argmax(ref)
	p.CandTop = kernels.Argmax(cand)
	p.TopKOverlap = overlap(kernels.TopK(ref, c.k), kernels.TopK(cand, c.k))
	p.DeltaP = math.Exp(lq[p.RefTop]) - math.Exp(lp[p.RefTop])
	if target >= 0 {
		p.Target = target
		p.RefNLL = -lp[target]
		p.CandNLL = -lq[target]
	}
	c.positions = append(c.positions, p)
	c.sumSq += sq
	c.n += int64(len(ref))
	if p.MaxAbs > c.maxAbs || math.IsNaN(p.MaxAbs) {
		c.maxAbs = p.MaxAbs
	}
	return nil
}

// cosine is dot/(|a||b|), defined as 1 for two zero vectors and 0 when only
// one is zero.
func cosine(dot, na, nb float64) float64 {
	switch {
	case na == 0 && nb == 0:
		return 1
	case na == 0 || nb == 0:
		return 0
	}
	return dot / math.Sqrt(na*nb)
}

func overlap(a, b []int) float64 {
	if len(a) == 0 {
		return 1
	}
	in := make(map[int]bool, len(b))
	for _, x := range b {
		in[x] = true
	}
	n := 0
	for _, x := range a {
		if in[x] {
			n++
		}
	}
	return float64(n) / float64(len(a))
}

// Positions returns the per-position comparisons added so far.
func (c *Comparer) Positions() []Position { return c.positions }

// Distribution summarizes a per-position quantity the way llama-perplexity
// prints it: mean with its standard error, median, percentiles by linear
// interpolation between sorted values, extremes.
type Distribution struct {
	Mean    float64 `json:"mean"`
	MeanErr float64 `json:"mean_err"` // standard error of the mean (0 for 10 values or fewer, as llama.cpp)
	Min     float64 `json:"min"`
	Median  float64 `json:"median"`
	P90     float64 `json:"p90"`
	P95     float64 `json:"p95"`
	P99     float64 `json:"p99"`
	P999    float64 `json:"p99_9"`
	Max     float64 `json:"max"`
}

// minCountForError is llama.cpp's mean_and_uncertainty cut-off: with 10
// values or fewer the standard error is reported as 0.
const minCountForError = 10

// Describe computes the Distribution of values (which it sorts in place).
func Describe(values []float64) Distribution {
	n := len(values)
	if n == 0 {
		return Distribution{}
	}
	var sum, sum2 float64
	for _, v := range values {
		sum += v
		sum2 += v * v
	}
	sort.Float64s(values)
	d := Distribution{
		Mean:   sum / float64(n),
		Min:    values[0],
		Max:    values[n-1],
		Median: Percentile(values, 0.5),
		P90:    Percentile(values, 0.90),
		P95:    Percentile(values, 0.95),
		P99:    Percentile(values, 0.99),
		P999:   Percentile(values, 0.999),
	}
	d.MeanErr = meanErr(sum, sum2, n)
	return d
}

// meanErr is sqrt((⟨x²⟩ − ⟨x⟩²)/(n−1)), llama.cpp's uncertainty of a mean.
func meanErr(sum, sum2 float64, n int) float64 {
	if n <= minCountForError {
		return 0
	}
	f := sum / float64(n)
	v := sum2/float64(n) - f*f
	if v <= 0 {
		return 0
	}
	return math.Sqrt(v / float64(n-1))
}

// Percentile returns the fraction-quantile of sorted values by linear
// interpolation at position fraction·(n−1), llama-perplexity's definition
// (its median of an even count, the mean of the two middle values, is the
// same number).
func Percentile(sorted []float64, fraction float64) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	if fraction <= 0 {
		return sorted[0]
	}
	if fraction >= 1 {
		return sorted[n-1]
	}
	p := fraction * float64(n-1)
	i := int(p)
	p -= float64(i)
	j := i + 1
	if j >= n {
		j = n - 1
	}
	return (1-p)*sorted[i] + p*sorted[j]
}

// Summary is the comparison over every position.
type Summary struct {
	Positions int     `json:"positions"`
	MaxAbs    float64 `json:"max_abs"` // max |cand − ref| over every logit
	RMS       float64 `json:"rms"`     // RMS logit difference over every logit
	// CosineMean and CosineMin are over the per-position cosines.
	CosineMean float64      `json:"cosine_mean"`
	CosineMin  float64      `json:"cosine_min"`
	KLD        Distribution `json:"kld"`
	// Top1 is the fraction of positions whose top tokens agree; Top1Err its
	// binomial standard error sqrt(p(1−p)/(n−1)), as llama-perplexity prints.
	Top1    float64 `json:"top1"`
	Top1Err float64 `json:"top1_err"`
	TopK    int     `json:"topk"`
	// TopKOverlap is the mean of the per-position overlaps.
	TopKOverlap float64 `json:"topk_overlap"`
	// DeltaP summarizes p_cand − p_ref of the reference's top token;
	// DeltaPRMS is its root mean square.
	DeltaP    Distribution `json:"delta_p"`
	DeltaPRMS float64      `json:"delta_p_rms"`
	// PPL is set when some positions had next-token targets.
	PPL *PPLStats `json:"ppl,omitempty"`
}

// PPLStats are the perplexities of both models over the positions that had a
// target, with llama-perplexity's uncertainties.
type PPLStats struct {
	Count   int     `json:"count"`
	Ref     float64 `json:"ref"`      // exp(mean NLL) of the reference
	RefErr  float64 `json:"ref_err"`  // PPL · stderr(NLL)
	Cand    float64 `json:"cand"`     // exp(mean NLL) of the candidate
	CandErr float64 `json:"cand_err"` // PPL · stderr(NLL)
	// Ratio is PPL(cand)/PPL(ref) = exp(mean(NLL_cand) − mean(NLL_ref));
	// LnRatioErr the uncertainty of its logarithm, which accounts for the
	// correlation of the two models' NLLs (llama.cpp's covariance term).
	Ratio      float64 `json:"ratio"`
	LnRatio    float64 `json:"ln_ratio"`
	LnRatioErr float64 `json:"ln_ratio_err"`
}

// Summary summarizes every position added so far.
func (c *Comparer) Summary() Summary {
	rms := 0.0
	if c.n > 0 {
		rms = math.Sqrt(c.sumSq / float64(c.n))
	}
	return summarize(c.positions, c.k, c.maxAbs, rms)
}

// summarize computes the Summary of positions; maxAbs and rms are over every
// logit compared.
func summarize(positions []Position, k int, maxAbs, rms float64) Summary {
	n := len(positions)
	s := Summary{Positions: n, MaxAbs: maxAbs, RMS: rms, TopK: k}
	if n == 0 {
		return s
	}
	klds := make([]float64, n)
	dps := make([]float64, n)
	same := 0
	s.CosineMin = math.Inf(1)
	var dp2 float64
	var nllR, nllR2, nllC, nllC2, nllRC float64
	targets := 0
	for i, p := range positions {
		klds[i] = p.KLD
		dps[i] = p.DeltaP
		dp2 += p.DeltaP * p.DeltaP
		if p.RefTop == p.CandTop {
			same++
		}
		s.CosineMean += p.Cosine
		s.CosineMin = math.Min(s.CosineMin, p.Cosine)
		s.TopKOverlap += p.TopKOverlap
		if p.Target >= 0 {
			targets++
			nllR += p.RefNLL
			nllR2 += p.RefNLL * p.RefNLL
			nllC += p.CandNLL
			nllC2 += p.CandNLL * p.CandNLL
			nllRC += p.RefNLL * p.CandNLL
		}
	}
	s.CosineMean /= float64(n)
	s.TopKOverlap /= float64(n)
	s.KLD = Describe(klds)
	s.DeltaP = Describe(dps)
	s.DeltaPRMS = math.Sqrt(dp2 / float64(n))
	s.Top1 = float64(same) / float64(n)
	if n > 1 {
		s.Top1Err = math.Sqrt(s.Top1 * (1 - s.Top1) / float64(n-1))
	}
	if targets > 0 {
		s.PPL = pplStats(targets, nllR, nllR2, nllC, nllC2, nllRC)
	}
	return s
}

// pplStats follows llama-perplexity's kl_divergence summary: mean NLLs with
// their standard errors, and the log-ratio's uncertainty
// sqrt(σ_c² + σ_r² − 2 cov), cov = (⟨ab⟩ − ⟨a⟩⟨b⟩)/(n−1) (0 below 10 values).
func pplStats(n int, r, r2, c, c2, rc float64) *PPLStats {
	mr, mc := r/float64(n), c/float64(n)
	er, ec := meanErr(r, r2, n), meanErr(c, c2, n)
	cov := 0.0
	if n >= minCountForError {
		cov = (rc/float64(n) - mr*mc) / float64(n-1)
	}
	st := &PPLStats{Count: n, Ref: math.Exp(mr), Cand: math.Exp(mc), LnRatio: mc - mr}
	st.RefErr = st.Ref * er
	st.CandErr = st.Cand * ec
	st.Ratio = math.Exp(st.LnRatio)
	if v := ec*ec + er*er - 2*cov; v > 0 {
		st.LnRatioErr = math.Sqrt(v)
	}
	return st
}

// PlusMinus writes v ± e, each with its own format ("%.6g", "%.3g"), as the
// reports print a mean and its standard error over n values; with
// minCountForError values or fewer no spread is computed (llama.cpp reports
// none either), and it says "± n/a" rather than a misleading "± 0".
func PlusMinus(v, e float64, n int, vf, ef string) string {
	if n <= minCountForError {
		return fmt.Sprintf(vf, v) + " ± n/a"
	}
	return fmt.Sprintf(vf, v) + " ± " + fmt.Sprintf(ef, e)
}
