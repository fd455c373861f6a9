package verify

import (
	_ "embed"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/tfconv/tfconv/eval"
	"github.com/tfconv/tfconv/internal/progress"
	"github.com/tfconv/tfconv/model"
	"github.com/tfconv/tfconv/tensor"
	"github.com/tfconv/tfconv/tokenizer"
)

// Options are the inputs of a comparison.
type Options struct {
	// Exactly one of Tokens, Prompt and Text is used, in that order;
	// DefaultText when none is given.
	Tokens        []int
	DecoderTokens []int  // encoder-decoder models; default: the decoder start token
	Prompt        string // tokenized with the reference's tokenizer (special tokens added)
	// Text is a longer text scored like llama-perplexity: tokenized with BOS,
	// cut into Ctx-token chunks, the second half of each chunk compared and
	// scored against the next tokens. MaxChunks > 0 limits the chunks.
	Text      string
	Ctx       int
	MaxChunks int

	TopK int // top-k overlap and baseline k; DefaultTopK when 0
	// AttnLayer and AttnHead choose the attention map recorded for the
	// report (AttnLayer < 0: none).
	AttnLayer, AttnHead int
	// Thresholds overrides the default thresholds of the precision pair.
	Thresholds *Thresholds
	// Adjust, when set, changes the thresholds once chosen (Thresholds, or
	// the pair of the weight types): single limits set on top of a pair.
	Adjust func(*Thresholds)
	// Progress receives progress lines (chunks done); may be nil.
	Progress io.Writer
}

// Attention holds one attention map of both models ([Tq][Tk]).
type Attention struct {
	Layer int         `json:"layer"`
	Head  int         `json:"head"`
	Ref   [][]float32 `json:"ref"`
	Cand  [][]float32 `json:"cand"`
}

// Report is the outcome of tfconv verify. Its JSON form is the --json
// schema; fields are only ever added.
type Report struct {
	Ref       string   `json:"ref"`
	Cand      string   `json:"cand"`
	RefTypes  []string `json:"ref_types"`
	CandTypes []string `json:"cand_types"`
	Tokens    []int    `json:"tokens,omitempty"`
	// Prompt is the input as text: --prompt, or the tokens (the first
	// chunk of a text) decoded by the tokenizer; "" without one.
	Prompt string `json:"prompt,omitempty"`
	// DefaultPrompt is set when no input was given and the built-in text
	// (DefaultText) was compared.
	DefaultPrompt bool `json:"default_prompt,omitempty"`
	Chunks        int  `json:"chunks,omitempty"` // chunks of Text compared
	Ctx           int  `json:"ctx,omitempty"`
	Summary
	// PPLRatio is PPL(cand)/PPL(ref) where the inputs gave next-token
	// targets, else null.
	PPLRatio *float64 `json:"ppl_ratio"`
	Layers   []Layer  `json:"layers"`
	// FirstDivergentLayer is the first block flagged by the divergence rule
	// (see MarkDivergent), null when none.
	FirstDivergentLayer *int       `json:"first_divergent_layer"`
	Thresholds          Thresholds `json:"thresholds"`
	Pass                bool       `json:"pass"`
	Failures            []string   `json:"failures"`
	Positions           []Position `json:"positions"`
	Attention           *Attention `json:"attention,omitempty"`
	// Image compares the image side when the models ran on an image
	// (CompareImage).
	Image *ImageReport `json:"image,omitempty"`
	// Baseline is set when the reference was a baseline file.
	Baseline bool `json:"baseline,omitempty"`
}

// WeightTypes lists the dtypes of the weight matrices (tensors of two or
// more dimensions) among ts, sorted by name; for a loaded model,
// WeightTypes(m.Tensors).
func WeightTypes(ts []tensor.Info) []tensor.DType {
	seen := map[tensor.DType]bool{}
	for _, t := range ts {
		if len(t.Shape) >= 2 {
			seen[t.DType] = true
		}
	}
	var out []tensor.DType
	for d := range seen {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

func typeNames(ds []tensor.DType) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.String()
	}
	return out
}

// ParseTypes turns dtype names (as Baseline.WeightTypes holds them) back
// into dtypes, skipping names it does not know.
func ParseTypes(names []string) []tensor.DType {
	var out []tensor.DType
	for _, n := range names {
		if d, ok := tensor.Parse(n); ok {
			out = append(out, d)
		}
	}
	return out
}

// thresholds returns o.Thresholds, or the pair of the reference and
// candidate weight types, with o.Adjust applied.
func (o *Options) thresholds(ref, cand []tensor.DType) Thresholds {
	th := PairFor(ref, cand)
	if o.Thresholds != nil {
		th = *o.Thresholds
	}
	if o.Adjust != nil {
		o.Adjust(&th)
	}
	return th
}

// DefaultText is the input verify compares on when given none: a short
// paragraph of prose with a little French, German and Spanish, numbers and
// code, so that several kinds of token are exercised (embedded from
// default_text.txt).
//
//go:embed default_text.txt
var DefaultText string

// useDefaultText makes o compare on DefaultText when it has no input, and
// reports whether it did.
func (o *Options) useDefaultText() bool {
	if len(o.Tokens) > 0 || o.Prompt != "" || o.Text != "" {
		return false
	}
	o.Prompt = strings.TrimSpace(DefaultText)
	return true
}

// inputs resolves the token inputs of o for model m.
func inputs(m *model.Model, o *Options) (tokens, dec []int, err error) {
	cfg := m.Config()
	switch {
	case len(o.Tokens) > 0:
		tokens = o.Tokens
	case o.Prompt != "":
		tok := m.Tokenizer()
		if tok == nil {
			return nil, nil, fmt.Errorf("verify: %s carries no tokenizer: give --tokens", m.Path)
		}
		tokens, err = tok.Encode(o.Prompt, tokenizer.EncodeOptions{AddSpecial: true})
		if err != nil {
			return nil, nil, err
		}
	default:
		return nil, nil, fmt.Errorf("verify: no input: give tokens, a prompt or a text")
	}
	if len(tokens) == 0 {
		return nil, nil, fmt.Errorf("verify: the input has no tokens")
	}
	dec = o.DecoderTokens
	if cfg.EncoderDecoder && len(dec) == 0 {
		dec = []int{cfg.DecoderStart}
	}
	if !cfg.EncoderDecoder {
		dec = nil
	}
	return tokens, dec, nil
}

// Compare runs ref and cand on the inputs of o and compares them.
func Compare(ref, cand *model.Model, o Options) (*Report, error) {
	rc, cc := ref.Config(), cand.Config()
	if rc.Vocab != cand.Config().Vocab && !rc.EncoderOnly {
		return nil, fmt.Errorf("verify: %s has a vocabulary of %d, %s of %d", ref.Path, rc.Vocab, cand.Path, cc.Vocab)
	}
	if rc.Layers != cc.Layers {
		return nil, fmt.Errorf("verify: %s has %d blocks, %s has %d", ref.Path, rc.Layers, cand.Path, cc.Layers)
	}
	rep := &Report{Ref: ref.Path, Cand: cand.Path, DefaultPrompt: o.useDefaultText()}
	rt, ct := WeightTypes(ref.Tensors), WeightTypes(cand.Tensors)
	rep.RefTypes, rep.CandTypes = typeNames(rt), typeNames(ct)
	th := o.thresholds(rt, ct)
	cmp := NewComparer(o.TopK)
	if o.Text != "" && len(o.Tokens) == 0 && o.Prompt == "" {
		if rc.EncoderOnly || rc.EncoderDecoder {
			return nil, fmt.Errorf("verify: a perplexity text needs a decoder-only model, %s is %s", ref.Path, rc.Arch)
		}
		if err := compareText(rep, ref, cand, cmp, &o); err != nil {
			return nil, err
		}
	} else {
		tokens, dec, err := inputs(ref, &o)
		if err != nil {
			return nil, err
		}
		rep.Tokens = tokens
		rtr := &model.Trace{AttnLayer: o.AttnLayer, AttnHead: o.AttnHead}
		ctr := &model.Trace{AttnLayer: o.AttnLayer, AttnHead: o.AttnHead}
		in := model.Input{Tokens: tokens, DecoderTokens: dec}
		meter := progress.New(o.Progress, "verify", 2, progress.Items, "models run")
		ro, err := ref.Forward(in, rtr)
		if err != nil {
			return nil, fmt.Errorf("verify: %s: %w", ref.Path, err)
		}
		meter.Add(1)
		co, err := cand.Forward(in, ctr)
		if err != nil {
			return nil, fmt.Errorf("verify: %s: %w", cand.Path, err)
		}
		meter.Add(1)
		meter.Finish()
		seq := tokens
		if dec != nil {
			seq = dec
		}
		if err := addAll(cmp, ro.Logits, co.Logits, seq); err != nil {
			return nil, err
		}
		if rep.Layers, err = compareTraces(rtr, ctr); err != nil {
			return nil, err
		}
		if rtr.Attention != nil && ctr.Attention != nil {
			rep.Attention = &Attention{Layer: o.AttnLayer, Head: o.AttnHead, Ref: rtr.Attention, Cand: ctr.Attention}
		}
	}
	rep.Summary = cmp.Summary()
	rep.Positions = cmp.Positions()
	var seq []int
	if rep.Chunks == 0 && !rc.EncoderDecoder {
		seq = rep.Tokens
	}
	rep.label(ref.Tokenizer(), o.Prompt, seq)
	rep.finish(th)
	return rep, nil
}

// label gives the positions their tokens' text, and the report its prompt
// (prompt, or the tokens decoded); seq, when given, are the inputs at the
// positions. Nothing without a tokenizer.
func (r *Report) label(tok *tokenizer.Tokenizer, prompt string, seq []int) {
	r.Prompt = prompt
	if tok == nil {
		return
	}
	if r.Prompt == "" && len(r.Tokens) > 0 {
		r.Prompt, _ = tok.Decode(r.Tokens)
	}
	for i := range r.Positions {
		p := &r.Positions[i]
		p.RefTopText, p.CandTopText = tok.Piece(p.RefTop), tok.Piece(p.CandTop)
		if p.Target >= 0 {
			p.TargetText = tok.Piece(p.Target)
		}
		if p.Pos < len(seq) {
			p.TokenText = tok.Piece(seq[p.Pos])
		}
	}
}

// addAll adds every position; seq[t+1] is the target of position t.
func addAll(cmp *Comparer, ref, cand [][]float32, seq []int) error {
	if len(ref) != len(cand) {
		return fmt.Errorf("verify: reference gave %d positions, candidate %d", len(ref), len(cand))
	}
	for t := range ref {
		target := -1
		if t+1 < len(seq) {
			target = seq[t+1]
		}
		if err := cmp.Add(ref[t], cand[t], target); err != nil {
			return err
		}
	}
	return nil
}

// compareText runs both models over llama-perplexity's chunks of o.Text.
// The per-layer comparison and the attention map are those of the first
// chunk (a whole text's hidden states would not fit in memory).
func compareText(rep *Report, ref, cand *model.Model, cmp *Comparer, o *Options) error {
	tokens, bos, err := eval.TextTokens(ref.Tokenizer(), ref.Path, o.Text)
	if err != nil {
		return err
	}
	ctx := o.Ctx
	if ctx <= 0 {
		ctx = eval.DefaultPerplexityCtx
	}
	chunks, err := eval.Chunks(tokens, ctx, bos)
	if err != nil {
		return err
	}
	if o.MaxChunks > 0 && o.MaxChunks < len(chunks) {
		chunks = chunks[:o.MaxChunks]
	}
	rep.Chunks, rep.Ctx = len(chunks), ctx
	meter := progress.New(o.Progress, "verify", int64(len(chunks)), progress.Items, "chunks")
	defer meter.Finish()
	for i, ch := range chunks {
		var rtr, ctr *model.Trace
		if i == 0 {
			rtr = &model.Trace{AttnLayer: o.AttnLayer, AttnHead: o.AttnHead}
			ctr = &model.Trace{AttnLayer: o.AttnLayer, AttnHead: o.AttnHead}
		}
		ro, err := ref.Forward(model.Input{Tokens: ch.Tokens}, rtr)
		if err != nil {
			return fmt.Errorf("verify: %s: chunk %d: %w", ref.Path, i, err)
		}
		co, err := cand.Forward(model.Input{Tokens: ch.Tokens}, ctr)
		if err != nil {
			return fmt.Errorf("verify: %s: chunk %d: %w", cand.Path, i, err)
		}
		for j := ch.First; j < len(ch.Tokens)-1; j++ {
			if err := cmp.Add(ro.Logits[j], co.Logits[j], ch.Tokens[j+1]); err != nil {
				return err
			}
		}
		if i == 0 {
			rep.Tokens = ch.Tokens
			if rep.Layers, err = compareTraces(rtr, ctr); err != nil {
				return err
			}
			if rtr.Attention != nil && ctr.Attention != nil {
				rep.Attention = &Attention{Layer: o.AttnLayer, Head: o.AttnHead, Ref: rtr.Attention, Cand: ctr.Attention}
			}
		}
		meter.Set(int64(i+1), int64(len(chunks)))
	}
	return nil
}

// ModelPerplexity computes llama-perplexity's figure for a model over text
// (see eval.Chunks).
func ModelPerplexity(m *model.Model, text string, ctx, maxChunks int, progress func(done, total int)) (*eval.PerplexityResult, error) {
	if c := m.Config(); c.EncoderOnly || c.EncoderDecoder {
		return nil, fmt.Errorf("verify: perplexity needs a decoder-only model, %s is %s", m.Path, c.Arch)
	}
	tokens, bos, err := eval.TextTokens(m.Tokenizer(), m.Path, text)
	if err != nil {
		return nil, err
	}
	if ctx <= 0 {
		ctx = eval.DefaultPerplexityCtx
	}
	run := func(tokens []int) ([][]float32, error) {
		out, err := m.Forward(model.Input{Tokens: tokens}, nil)
		if err != nil {
			return nil, err
		}
		return out.Logits, nil
	}
	return eval.Perplexity(tokens, ctx, bos, maxChunks, run, progress)
}

// finish applies the thresholds: the divergence rule on the layers, the
// pass/fail decision and its reasons.
func (r *Report) finish(th Thresholds) {
	r.Thresholds = th
	r.FirstDivergentLayer = MarkDivergent(r.Layers, th.LayerNMSE)
	if r.PPL != nil {
		v := r.PPL.Ratio
		r.PPLRatio = &v
	}
	r.Failures = []string{}
	if r.Summary.Positions > 0 {
		if !(r.KLD.Mean <= th.MaxKLD) {
			r.Failures = append(r.Failures, fmt.Sprintf("mean KLD %.6g is above %.6g (%s)", r.KLD.Mean, th.MaxKLD, th.Pair))
		}
		if !(r.Top1 >= th.MinTop1) {
			r.Failures = append(r.Failures, fmt.Sprintf("top-1 agreement %.4f is below %.4f (%s)", r.Top1, th.MinTop1, th.Pair))
		}
	}
	for _, l := range r.Layers {
		if l.NMSE > th.LayerNMSE || math.IsNaN(l.NMSE) {
			r.Failures = append(r.Failures, fmt.Sprintf("layer %d hidden-state NMSE %.3g is above %.3g (%s)", l.Layer, l.NMSE, th.LayerNMSE, th.Pair))
			break // the first one names the cause; later layers inherit it
		}
	}
	r.Pass = len(r.Failures) == 0
}

// MakeBaseline runs m on the inputs of o and records a baseline.
func MakeBaseline(m *model.Model, o Options) (*Baseline, error) {
	if m.Config().EncoderOnly {
		return nil, fmt.Errorf("verify: baselines need a model with logits; %s is encoder-only", m.Path)
	}
	o.useDefaultText()
	tokens, dec, err := inputs(m, &o)
	if err != nil {
		return nil, err
	}
	tr := &model.Trace{AttnLayer: -1}
	out, err := m.Forward(model.Input{Tokens: tokens, DecoderTokens: dec}, tr)
	if err != nil {
		return nil, fmt.Errorf("verify: %s: %w", m.Path, err)
	}
	b, err := NewBaseline(tokens, dec, out.Logits, tr.Layers, o.TopK)
	if err != nil {
		return nil, err
	}
	b.Model = m.Path
	b.WeightTypes = typeNames(WeightTypes(m.Tensors))
	return b, nil
}

// CompareToBaseline runs cand on the baseline's inputs and compares it with
// the stored reference.
func CompareToBaseline(b *Baseline, cand *model.Model, o Options) (*Report, error) {
	ct := WeightTypes(cand.Tensors)
	rep := &Report{Ref: b.Model, Cand: cand.Path, RefTypes: b.WeightTypes, CandTypes: typeNames(ct), Tokens: b.Tokens, Baseline: true}
	th := o.thresholds(ParseTypes(b.WeightTypes), ct)
	tr := &model.Trace{AttnLayer: -1}
	out, err := cand.Forward(model.Input{Tokens: b.Tokens, DecoderTokens: b.DecoderTokens}, tr)
	if err != nil {
		return nil, fmt.Errorf("verify: %s: %w", cand.Path, err)
	}
	sum, pos, layers, err := CompareBaseline(b, out.Logits, tr.Layers)
	if err != nil {
		return nil, err
	}
	rep.Summary, rep.Positions, rep.Layers = sum, pos, layers
	var seq []int
	if len(b.DecoderTokens) == 0 {
		seq = b.Tokens
	}
	rep.label(cand.Tokenizer(), "", seq)
	rep.finish(th)
	return rep, nil
}
