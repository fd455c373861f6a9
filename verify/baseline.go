package verify

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"

	"github.com/tfconv/tfconv/eval"
	"github.com/tfconv/tfconv/kernels"
	"github.com/tfconv/tfconv/tensor"
)

// A baseline is what a model computed on fixed inputs, kept small enough to
// commit next to a CI job: the inputs, per position the reference's top-k
// tokens with their logits and log-probabilities (and the log-probability of
// the next input token), and the hidden states after every block for the
// last few positions. Comparing a model against it gives the same report as
// comparing against the model itself, with two documented differences: the
// KL divergence is over k+1 bins (the top-k tokens and "everything else"),
// which by the data-processing inequality is a lower bound of the full one
// and equals it when both models agree outside the top k; and the logit
// differences (max_abs, rms, cosine) are over the top-k tokens only.

// BaselineFormat identifies a baseline file.
const BaselineFormat = "tfconv-verify-baseline"

// BaselineVersion is the version this package writes; it reads it and
// nothing newer.
const BaselineVersion = 1

// BaselineLayerPositions is how many positions' hidden states a baseline
// keeps (the last ones, which attend to every input): enough to locate a
// departing block, few enough that a 32-layer 4096-wide model stays at 8 MiB.
const BaselineLayerPositions = 16

// maxBaselineSize caps a baseline file read into memory.
const maxBaselineSize = 1 << 30

// Baseline is a saved reference computation.
type Baseline struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
	// Model is the path of the model it was computed from (informational).
	Model string `json:"model"`
	// WeightTypes are the dtypes of the model's weights, used to choose the
	// default thresholds.
	WeightTypes   []string `json:"weight_types"`
	Tokens        []int    `json:"tokens"`
	DecoderTokens []int    `json:"decoder_tokens,omitempty"`
	TopK          int      `json:"topk"`
	// Positions has one entry per logit position.
	Positions []BaselinePosition `json:"positions"`
	// LayerPositions are the positions whose hidden states Hidden holds.
	LayerPositions []int `json:"layer_positions,omitempty"`
	Layers         int   `json:"layers"`
	DModel         int   `json:"d_model"`
	// Hidden is base64 of float32 little-endian values in the order
	// [layer][LayerPositions][d_model].
	Hidden string `json:"hidden,omitempty"`
}

// BaselinePosition is the reference at one position.
type BaselinePosition struct {
	Top      []int     `json:"top"`      // top-k token ids, most likely first
	Logits   []float32 `json:"logits"`   // their logits
	LogProbs []float32 `json:"logprobs"` // their log-probabilities
	// Target is the next input token (-1 at the last position) and
	// TargetLogProb its log-probability.
	Target        int     `json:"target"`
	TargetLogProb float32 `json:"target_logprob,omitempty"`
}

// NewBaseline records a model's output: logits [T][vocab] for the tokens
// (targets are the following tokens: tokens[t+1] for logits[t] when the
// logits are over tokens, or the decoder tokens for an encoder-decoder), and
// layers [layer][T][d_model] (may be nil).
func NewBaseline(tokens, decoderTokens []int, logits [][]float32, layers [][][]float32, k int) (*Baseline, error) {
	if k <= 0 {
		k = DefaultTopK
	}
	b := &Baseline{Format: BaselineFormat, Version: BaselineVersion, Tokens: tokens, DecoderTokens: decoderTokens, TopK: k}
	seq := tokens
	if decoderTokens != nil {
		seq = decoderTokens
	}
	var lp []float64
	for t, row := range logits {
		if len(row) == 0 {
			return nil, fmt.Errorf("verify: position %d has no logits", t)
		}
		if cap(lp) < len(row) {
			lp = make([]float64, len(row))
		}
		l := eval.LogSoftmax(lp[:len(row)], row)
		top := kernels.TopK(row, k)
		p := BaselinePosition{Top: top, Target: -1}
		for _, id := range top {
			p.Logits = append(p.Logits, row[id])
			p.LogProbs = append(p.LogProbs, float32(l[id]))
		}
		if t+1 < len(seq) {
			if tg := seq[t+1]; tg >= 0 && tg < len(row) {
				p.Target = tg
				p.TargetLogProb = float32(l[tg])
			}
		}
		b.Positions = append(b.Positions, p)
	}
	if len(layers) > 0 {
		T := len(layers[0])
		from := T - BaselineLayerPositions
		if from < 0 {
			from = 0
		}
		for t := from; t < T; t++ {
			b.LayerPositions = append(b.LayerPositions, t)
		}
		b.Layers = len(layers)
		if T > 0 {
			b.DModel = len(layers[0][0])
		}
		var buf bytes.Buffer
		var w [4]byte
		for l := range layers {
			if len(layers[l]) != T {
				return nil, fmt.Errorf("verify: layer %d has %d positions, layer 0 has %d", l, len(layers[l]), T)
			}
			for _, t := range b.LayerPositions {
				if len(layers[l][t]) != b.DModel {
					return nil, fmt.Errorf("verify: layer %d position %d has %d features, want %d", l, t, len(layers[l][t]), b.DModel)
				}
				for _, v := range layers[l][t] {
					binary.LittleEndian.PutUint32(w[:], math.Float32bits(v))
					buf.Write(w[:])
				}
			}
		}
		b.Hidden = base64.StdEncoding.EncodeToString(buf.Bytes())
	}
	return b, nil
}

// Write writes the baseline as JSON.
func (b *Baseline) Write(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(b)
}

// ReadBaseline reads and checks a baseline written by Write. name is used in
// errors.
func ReadBaseline(r io.Reader, name string) (*Baseline, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxBaselineSize+1))
	if err != nil {
		return nil, fmt.Errorf("verify: %s: %w", name, err)
	}
	if len(data) > maxBaselineSize {
		return nil, fmt.Errorf("verify: %s: larger than %d bytes", name, maxBaselineSize)
	}
	var b Baseline
	if err := json.Unmarshal(data, &b); err != nil {
		return nil, fmt.Errorf("verify: %s: %w", name, err)
	}
	if b.Format != BaselineFormat {
		return nil, fmt.Errorf("verify: %s: not a baseline (format %q, want %q)", name, b.Format, BaselineFormat)
	}
	if b.Version < 1 || b.Version > BaselineVersion {
		return nil, fmt.Errorf("verify: %s: baseline version %d, this tfconv reads up to %d", name, b.Version, BaselineVersion)
	}
	if len(b.Tokens) == 0 {
		return nil, fmt.Errorf("verify: %s: no input tokens", name)
	}
	for i, p := range b.Positions {
		if len(p.Top) == 0 || len(p.Top) != len(p.Logits) || len(p.Top) != len(p.LogProbs) {
			return nil, fmt.Errorf("verify: %s: position %d: top, logits and logprobs must have the same non-zero length", name, i)
		}
		for _, id := range p.Top {
			if id < 0 {
				return nil, fmt.Errorf("verify: %s: position %d: negative token id %d", name, i, id)
			}
		}
	}
	if b.Hidden != "" {
		want, err := tensor.MulInt64(int64(b.Layers), int64(len(b.LayerPositions)))
		if err == nil {
			want, err = tensor.MulInt64(want, int64(b.DModel))
		}
		if err == nil {
			want, err = tensor.MulInt64(want, 4)
		}
		if err != nil || b.Layers < 0 || b.DModel < 0 || int64(base64.StdEncoding.DecodedLen(len(b.Hidden))) < want || want <= 0 {
			return nil, fmt.Errorf("verify: %s: hidden states do not hold %d layers × %d positions × %d features", name, b.Layers, len(b.LayerPositions), b.DModel)
		}
	}
	return &b, nil
}

// hidden decodes the stored hidden states as [layer][position][d_model].
func (b *Baseline) hidden() ([][][]float32, error) {
	if b.Hidden == "" {
		return nil, nil
	}
	raw, err := base64.StdEncoding.DecodeString(b.Hidden)
	if err != nil {
		return nil, fmt.Errorf("verify: baseline hidden states: %w", err)
	}
	n := b.Layers * len(b.LayerPositions) * b.DModel
	if len(raw) != 4*n {
		return nil, fmt.Errorf("verify: baseline hidden states hold %d bytes, want %d", len(raw), 4*n)
	}
	out := make([][][]float32, b.Layers)
	o := 0
	for l := range out {
		out[l] = make([][]float32, len(b.LayerPositions))
		for t := range out[l] {
			row := make([]float32, b.DModel)
			for i := range row {
				row[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[o:]))
				o += 4
			}
			out[l][t] = row
		}
	}
	return out, nil
}

// CompareBaseline compares a candidate's logits [T][vocab] and per-block
// hidden states [layer][T][d_model] (may be nil) against the baseline. The
// candidate must have been run on b.Tokens (and b.DecoderTokens).
func CompareBaseline(b *Baseline, logits [][]float32, layers [][][]float32) (Summary, []Position, []Layer, error) {
	if len(logits) != len(b.Positions) {
		return Summary{}, nil, nil, fmt.Errorf("verify: the baseline has %d positions, the candidate %d", len(b.Positions), len(logits))
	}
	var positions []Position
	var maxAbs, sumSq float64
	var count int64
	var lq []float64
	for t, bp := range b.Positions {
		row := logits[t]
		for _, id := range bp.Top {
			if id >= len(row) {
				return Summary{}, nil, nil, fmt.Errorf("verify: baseline position %d names token %d, the candidate's vocabulary has %d", t, id, len(row))
			}
		}
		if bp.Target >= len(row) {
			return Summary{}, nil, nil, fmt.Errorf("verify: baseline position %d target %d outside the candidate's vocabulary of %d", t, bp.Target, len(row))
		}
		if cap(lq) < len(row) {
			lq = make([]float64, len(row))
		}
		q := eval.LogSoftmax(lq[:len(row)], row)
		p := Position{Pos: t, Target: -1, RefTop: bp.Top[0], CandTop: kernels.Argmax(row)}
		// KLD over the top-k bins plus one bin for the rest of the vocabulary.
		var kld, restP, restQ, dot, nr, nc, sq float64
		restP, restQ = 1, 1
		for i, id := range bp.Top {
			lp := float64(bp.LogProbs[i])
			pi := math.Exp(lp)
			kld += pi * (lp - q[id])
			restP -= pi
			restQ -= math.Exp(q[id])
			r, c := float64(bp.Logits[i]), float64(row[id])
			d := c - r
			if a := math.Abs(d); a > p.MaxAbs || math.IsNaN(a) {
				p.MaxAbs = a
			}
			sq += d * d
			dot += r * c
			nr += r * r
			nc += c * c
		}
		if restP > 0 && restQ > 0 {
			kld += restP * (math.Log(restP) - math.Log(restQ))
		}
		if kld < 0 {
			kld = 0
		}
		p.KLD = kld
		p.RMS = math.Sqrt(sq / float64(len(bp.Top)))
		p.Cosine = cosine(dot, nr, nc)
		p.TopKOverlap = overlap(bp.Top, kernels.TopK(row, len(bp.Top)))
		p.DeltaP = math.Exp(q[bp.Top[0]]) - math.Exp(float64(bp.LogProbs[0]))
		if bp.Target >= 0 {
			p.Target = bp.Target
			p.RefNLL = -float64(bp.TargetLogProb)
			p.CandNLL = -q[bp.Target]
		}
		positions = append(positions, p)
		if p.MaxAbs > maxAbs || math.IsNaN(p.MaxAbs) {
			maxAbs = p.MaxAbs
		}
		sumSq += sq
		count += int64(len(bp.Top))
	}
	rms := 0.0
	if count > 0 {
		rms = math.Sqrt(sumSq / float64(count))
	}
	sum := summarize(positions, b.TopK, maxAbs, rms)
	if b.Hidden == "" || layers == nil {
		return sum, positions, nil, nil
	}
	ref, err := b.hidden()
	if err != nil {
		return Summary{}, nil, nil, err
	}
	if len(layers) != b.Layers {
		return Summary{}, nil, nil, fmt.Errorf("verify: the baseline has %d layers, the candidate %d", b.Layers, len(layers))
	}
	cand := make([][][]float32, len(layers))
	for l := range layers {
		for _, t := range b.LayerPositions {
			if t < 0 || t >= len(layers[l]) {
				return Summary{}, nil, nil, fmt.Errorf("verify: baseline layer position %d outside the candidate's %d positions", t, len(layers[l]))
			}
			cand[l] = append(cand[l], layers[l][t])
		}
	}
	ls, err := CompareLayers(ref, cand)
	if err != nil {
		return Summary{}, nil, nil, err
	}
	return sum, positions, ls, nil
}
