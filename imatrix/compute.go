package imatrix

import (
	"fmt"

	"github.com/tfconv/tfconv/eval"
	"github.com/tfconv/tfconv/model"
)

// DefaultCtx is llama-imatrix's default chunk length (-c 512).
const DefaultCtx = 512

// microBatch is llama.cpp's default n_ubatch: a chunk longer than this is
// evaluated in pieces of this many tokens, each a separate set of
// multiplies (which matters for the 16-token threshold).
const microBatch = 512

// Options tunes Compute.
type Options struct {
	Ctx    int // tokens per chunk; 0: DefaultCtx
	Chunks int // at most this many chunks; 0: all
	// ProcessOutput also collects output.weight.
	ProcessOutput bool
	// Dataset is the text's name as recorded in the file (llama-imatrix
	// records its -f argument).
	Dataset string
	// Progress, when not nil, is called after each chunk.
	Progress func(done, total int)
}

// Compute runs m over text and returns its importance matrix.
func Compute(m *model.Model, text string, o Options) (*Matrix, error) {
	if c := m.Config(); c.EncoderOnly || c.EncoderDecoder {
		return nil, fmt.Errorf("imatrix: %s is %s; an importance matrix needs a decoder-only model", m.Path, c.Arch)
	}
	ctx := o.Ctx
	if ctx <= 0 {
		ctx = DefaultCtx
	}
	if tok := m.Tokenizer(); tok != nil && tok.AddEOS {
		// llama-imatrix asserts the same: an EOS after the text would be
		// scored as part of the last chunk.
		return nil, fmt.Errorf("imatrix: %s: its tokenizer adds EOS to a text, which llama-imatrix refuses", m.Path)
	}
	tokens, bos, err := eval.TextTokens(m.Tokenizer(), m.Path, text)
	if err != nil {
		return nil, err
	}
	chunks, err := eval.Chunks(tokens, ctx, bos)
	if err != nil {
		return nil, fmt.Errorf("imatrix: %w", err)
	}
	if o.Chunks > 0 && o.Chunks < len(chunks) {
		chunks = chunks[:o.Chunks]
	}
	col := &Collector{ProcessOutput: o.ProcessOutput}
	var obsErr error
	observe := func(mm model.MatMul) {
		if obsErr == nil {
			obsErr = col.Add(mm.Weight, mm.Expert, mm.Experts, mm.X, mm.Rows, mm.Cols)
		}
	}
	for ci, ch := range chunks {
		s := m.NewSession()
		if err := s.SetObserver(observe); err != nil {
			return nil, fmt.Errorf("imatrix: %s: %w", m.Path, err)
		}
		for i := 0; i < len(ch.Tokens); i += microBatch {
			if _, err := s.StepAll(ch.Tokens[i:min(i+microBatch, len(ch.Tokens))], nil); err != nil {
				return nil, fmt.Errorf("imatrix: chunk %d: %w", ci, err)
			}
			if obsErr != nil {
				return nil, obsErr
			}
		}
		if o.Progress != nil {
			o.Progress(ci+1, len(chunks))
		}
	}
	mat := col.Matrix()
	mat.ChunkCount, mat.ChunkSize = len(chunks), ctx
	if o.Dataset != "" {
		mat.Datasets = []string{o.Dataset}
	}
	return mat, nil
}
