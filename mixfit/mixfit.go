package mixfit

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/eval"
	"github.com/tfconv/tfconv/model"
	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/quantize"
	"github.com/tfconv/tfconv/tensor"
)

// Ladder are the types a tensor may take (those its rows divide into
// blocks), smallest first.
var Ladder = []tensor.DType{tensor.IQ2_XXS, tensor.IQ2_XS, tensor.IQ2_S, tensor.Q2_K, tensor.IQ3_XXS, tensor.IQ3_S,
	tensor.Q3_K, tensor.IQ4_XS, tensor.Q4_0, tensor.Q4_K, tensor.Q4_1, tensor.Q5_0, tensor.Q5_K, tensor.Q5_1, tensor.Q6_K,
	tensor.Q8_0}

// needsWeights are the types ggml encodes only with an importance matrix
// (quant's record has no encoder without: IQ2_XXS, IQ2_XS, IQ1_S).
func needsWeights(t tensor.DType) bool { r, ok := quant.Lookup(t); return ok && r.Encode == nil }

// Options for Fit.
type Options struct {
	Text   string // calibration text, tokenized with the checkpoint's tokenizer
	Tokens []int  // or the calibration tokens themselves (when Text is "")
	Ctx    int    // tokens per chunk
	Budget int64  // bytes all tensor data may take
	// BitsPerWeight, when Budget is 0, sets it: this many bits for each
	// weight of the plan (tfconv quantize --target-bpw).
	BitsPerWeight float64
	// Progress, when set, is called as the measurements go: before the
	// first with done 0, then after each (one run of the model over the
	// calibration text: the unquantized model's, then one per tensor and
	// type tried), with the number there are in all.
	Progress func(done, total int64)
}

type option struct {
	t     tensor.DType
	bytes int64
	kld   float64
}

// Fit re-chooses the types of plan's quantized tensors (c is the checkpoint
// the plan reads): each takes each type of Ladder its rows allow, alone,
// and the mean KL divergence of the model from c's own on opts.Tokens is
// measured; then from the smallest type everywhere, the upgrade removing
// the most divergence per byte that still fits the budget is taken until
// none fits (each tensor's options reduced to the lower convex hull of
// divergence against bytes). Divergences are taken to add across tensors.
// Tensors the plan copies or leaves unquantized keep their choice.
func Fit(c *checkpoint.Checkpoint, plan []quantize.Choice, opts Options) ([]quantize.Choice, error) {
	if opts.Budget == 0 && opts.BitsPerWeight > 0 {
		var elems int64
		for _, ch := range plan {
			elems += ch.Tensor.NumElements()
		}
		opts.Budget = int64(opts.BitsPerWeight * float64(elems) / 8)
	}
	m, err := model.LoadCheckpoint(c, model.LoadOptions{})
	if err != nil {
		return nil, err
	}
	if opts.Text != "" {
		if opts.Tokens, _, err = eval.TextTokens(m.Tokenizer(), m.Path, opts.Text); err != nil {
			return nil, err
		}
	}
	if opts.Ctx <= 0 || len(opts.Tokens) < 2 {
		return nil, fmt.Errorf("mixfit: need a calibration text of 2 tokens or more and a chunk size")
	}
	var done, trials int64
	for _, ch := range plan {
		if !ch.Copy && ch.Type.Quantized() {
			trials += int64(len(ladderFor(ch)))
		}
	}
	step := func() {
		if opts.Progress != nil {
			opts.Progress(done, 1+trials)
		}
		done++
	}
	step()
	base, err := run(m, opts)
	if err != nil {
		return nil, err
	}
	step()
	out := append([]quantize.Choice(nil), plan...)
	var fixed int64
	type cand struct {
		i    int
		opts []option
		k    int
	}
	var cands []*cand
	for i, ch := range out {
		if ch.Copy || !ch.Type.Quantized() {
			b := ch.Tensor.Size
			if !ch.Copy {
				if b, err = ch.Type.ShapeBytes(ch.Tensor.Shape); err != nil {
					return nil, err
				}
			}
			fixed += b
			continue
		}
		var os []option
		for _, t := range ladderFor(ch) {
			b, err := t.ShapeBytes(ch.Tensor.Shape)
			if err != nil {
				return nil, err
			}
			k, err := divergence(c, ch, t, base, opts)
			if err != nil {
				return nil, err
			}
			step()
			os = append(os, option{t: t, bytes: b, kld: k})
		}
		if len(os) == 0 {
			b, _ := ch.Type.ShapeBytes(ch.Tensor.Shape)
			fixed += b
			continue
		}
		cands = append(cands, &cand{i: i, opts: hull(os)})
	}
	total := fixed
	for _, cd := range cands {
		total += cd.opts[0].bytes
	}
	if total > opts.Budget {
		return nil, fmt.Errorf("mixfit: %d bytes of tensor data fit no mixture: the smallest takes %d", opts.Budget, total)
	}
	for {
		var best *cand
		bestGain := math.Inf(-1)
		for _, cd := range cands {
			if cd.k+1 >= len(cd.opts) {
				continue
			}
			cur, next := cd.opts[cd.k], cd.opts[cd.k+1]
			if total+next.bytes-cur.bytes > opts.Budget {
				continue
			}
			if g := (cur.kld - next.kld) / float64(next.bytes-cur.bytes); g > bestGain {
				best, bestGain = cd, g
			}
		}
		if best == nil {
			break
		}
		total += best.opts[best.k+1].bytes - best.opts[best.k].bytes
		best.k++
	}
	for _, cd := range cands {
		o := cd.opts[cd.k]
		ch := &out[cd.i]
		ch.Type = o.t
		ch.Reason = fmt.Sprintf("target size: alone, KLD %.3g", o.kld)
		if !quant.CanQuantizeWeighted(o.t) {
			ch.Importance = nil
		}
	}
	return out, nil
}

// ladderFor are the types of Ladder ch's tensor may take: those its rows
// divide into blocks, and those needing an importance matrix only when ch
// has one for every column.
func ladderFor(ch quantize.Choice) []tensor.DType {
	rowLen := ch.Tensor.Shape.RowLen()
	var ts []tensor.DType
	for _, t := range Ladder {
		if rowLen%t.BlockSize() != 0 || slices.Contains(ts, t) || (needsWeights(t) && int64(len(ch.Importance)) != rowLen) {
			continue
		}
		ts = append(ts, t)
	}
	return ts
}

// logProbs loads the model in c and runs it (run).
func logProbs(c *checkpoint.Checkpoint, opts Options) ([][]float64, error) {
	m, err := model.LoadCheckpoint(c, model.LoadOptions{})
	if err != nil {
		return nil, err
	}
	return run(m, opts)
}

// run runs m over the calibration chunks and returns every position's
// next-token log-probabilities.
func run(m *model.Model, opts Options) ([][]float64, error) {
	var out [][]float64
	for s := 0; s+1 < len(opts.Tokens); s += opts.Ctx {
		chunk := opts.Tokens[s:min(s+opts.Ctx, len(opts.Tokens))]
		o, err := m.Forward(model.Input{Tokens: chunk}, nil)
		if err != nil {
			return nil, err
		}
		for _, row := range o.Logits {
			out = append(out, eval.LogSoftmax(make([]float64, len(row)), row))
		}
	}
	return out, nil
}

// divergence is the mean KL divergence from base of the model with ch's
// tensor alone quantized to t (weighted by ch's importance entry where t's
// encoder takes one) and decoded again.
func divergence(c *checkpoint.Checkpoint, ch quantize.Choice, t tensor.DType, base [][]float64, opts Options) (float64, error) {
	src := ch.Tensor
	info := src.Info
	info.DType = tensor.F32
	info.Size = 4 * src.NumElements()
	lazy := checkpoint.LazyTensor(info, src.File, func() ([]byte, error) {
		raw, err := io.ReadAll(src.Open())
		if err != nil {
			return nil, err
		}
		x := make([]float32, src.NumElements())
		if err := quant.Dequantize(x, raw, src.DType); err != nil {
			return nil, err
		}
		rowLen := int(src.Shape.RowLen())
		n, err := t.ByteSize(int64(len(x)))
		if err != nil {
			return nil, err
		}
		q := make([]byte, n)
		var imp []float32
		if quant.CanQuantizeWeighted(t) && ch.Importance != nil && len(ch.Importance) == rowLen {
			imp = ch.Importance
		}
		if err := quant.QuantizeRows(q, x, t, rowLen, imp); err != nil {
			return nil, err
		}
		if err := quant.Dequantize(x, q, t); err != nil {
			return nil, err
		}
		out := make([]byte, 4*len(x))
		return out, quant.Quantize(out, x, tensor.F32)
	})
	v, err := c.WithTensors(map[string]*checkpoint.Tensor{src.Name: lazy})
	if err != nil {
		return 0, err
	}
	lq, err := logProbs(v, opts)
	if err != nil {
		return 0, err
	}
	var s float64
	for i := range base {
		s += eval.KLD(base[i], lq[i])
	}
	return s / float64(len(base)), nil
}

// hull keeps the options on the lower convex hull of divergence against
// bytes, smallest first.
func hull(os []option) []option {
	sort.Slice(os, func(a, b int) bool { return os[a].bytes < os[b].bytes })
	var h []option
	for _, o := range os {
		if len(h) > 0 && o.kld >= h[len(h)-1].kld {
			continue
		}
		for len(h) >= 2 {
			a, b := h[len(h)-2], h[len(h)-1]
			if (a.kld-b.kld)/float64(b.bytes-a.bytes) <= (b.kld-o.kld)/float64(o.bytes-b.bytes) {
				h = h[:len(h)-1]
				continue
			}
			break
		}
		h = append(h, o)
	}
	return h
}
