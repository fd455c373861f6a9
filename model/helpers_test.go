package model

import (
	"encoding/json"
	"math"
	"os"
	"testing"

	"github.com/tfconv/tfconv/internal/fixtures"
)

// Tolerances, each with the reason for its size.
const (
	// maxLogitDiffF32: transformers and we both compute in float32 but sum
	// in different orders (BLAS blocking vs index order); over these tiny
	// models that moves logits by a few 1e-7, well inside 1e-5.
	maxLogitDiffF32 = 1e-5
	// maxLogitDiffHalf: f16/bf16 checkpoints run in float32 on the rounded
	// weights (logits_from_saved_weights); the summation-order noise is the
	// same, but the issue allows 1e-4 for these.
	maxLogitDiffHalf = 1e-4
	// maxLogitDiffQuant: GGUF weights decoded exactly as ggml decodes them and
	// run in float32 vs transformers on the same dequantized weights.
	maxLogitDiffQuant = 1e-4
	// maxRelDiffT5: T5's logits are scaled by d_model^-0.5 and are small, so
	// the difference is measured relative to the largest logit.
	maxRelDiffT5 = 1e-5
	// maxRelDiffTrained: the trained tiny-fortunes model has logits up to
	// ~20 (random fixtures ~4), so float32 summation-order noise grows with
	// them; measured relative to the largest logit, as for T5.
	maxRelDiffTrained = 2e-6
	// maxScoreDiff: beam scores are float32 sums of ~8 log-probabilities.
	maxScoreDiff = 1e-4
	// maxCacheDiff: incremental decoding sums attention over the same keys in
	// the same order as the full pass; only the matmul batch shape differs.
	maxCacheDiff = 1e-5
)

// reference is the subset of a fixture's reference.json the tests read.
type reference struct {
	InputIDs               []int       `json:"input_ids"`
	DecoderInputIDs        []int       `json:"decoder_input_ids"`
	OutputName             string      `json:"output_name"`
	Logits                 [][]float32 `json:"logits"`
	LastHiddenState        [][]float32 `json:"last_hidden_state"`
	LogitsFromSavedWeights [][]float32 `json:"logits_from_saved_weights"`
	HiddenFromSavedWeights [][]float32 `json:"last_hidden_state_from_saved_weights"`
	// Cut files (testdata) keep selected rows with their positions.
	Positions []int `json:"positions"`
	// Columns: the logits rows keep these vocabulary ids only (a fixture
	// whose vocabulary is too wide to store whole: hunyuanmoe's 128167).
	Columns []int `json:"columns"`
}

// logitColumns returns the columns cols of every row of logits (all of
// them when cols is nil).
func logitColumns(t testing.TB, logits [][]float32, cols []int) [][]float32 {
	t.Helper()
	if cols == nil {
		return logits
	}
	out := make([][]float32, len(logits))
	for i, row := range logits {
		out[i] = make([]float32, len(cols))
		for j, c := range cols {
			if c < 0 || c >= len(row) {
				t.Fatalf("column %d outside a row of %d logits", c, len(row))
			}
			out[i][j] = row[c]
		}
	}
	return out
}

func readJSON(t testing.TB, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// sharedFixtures returns ../shared/fixtures, or skips.
func sharedFixtures(t testing.TB) string { return fixtures.Require(t) }

// maxDiff returns the largest |a-b| over rows picked by positions (nil: all
// rows of want, matched to got row by row) and the largest |want|.
func maxDiff(t testing.TB, got, want [][]float32, positions []int) (diff, scale float64) {
	t.Helper()
	for i, w := range want {
		p := i
		if positions != nil {
			p = positions[i]
		}
		if p >= len(got) || len(got[p]) != len(w) {
			t.Fatalf("row %d: got %d rows of width %d, want width %d", p, len(got), len(got[min(p, len(got)-1)]), len(w))
		}
		for j := range w {
			diff = math.Max(diff, math.Abs(float64(got[p][j]-w[j])))
			scale = math.Max(scale, math.Abs(float64(w[j])))
		}
	}
	return diff, scale
}
