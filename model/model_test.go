package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

const testdata = "../testdata/model"

var tinyArchs = []string{"gpt2", "llama", "bert", "marian", "bart", "t5"}

// checkLogits runs the reference input through m and compares with the
// reference rows; T5's logits are compared relative to the largest one.
func checkLogits(t *testing.T, name string, m *Model, ref *reference, tol float64) {
	t.Helper()
	out, err := m.Forward(Input{Tokens: ref.InputIDs, DecoderTokens: ref.DecoderInputIDs}, nil)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	want, got := ref.Logits, out.Logits
	if ref.LogitsFromSavedWeights != nil {
		want = ref.LogitsFromSavedWeights
	}
	if ref.OutputName == "last_hidden_state" {
		want, got = ref.LastHiddenState, out.Hidden
		if ref.HiddenFromSavedWeights != nil {
			want = ref.HiddenFromSavedWeights
		}
		if out.Logits != nil {
			t.Errorf("%s: encoder-only model returned logits", name)
		}
	}
	if want == nil {
		t.Fatalf("%s: reference has no rows", name)
	}
	wantRows := len(ref.InputIDs)
	if ref.DecoderInputIDs != nil {
		wantRows = len(ref.DecoderInputIDs)
	}
	if len(got) != wantRows {
		t.Fatalf("%s: %d output rows, want %d", name, len(got), wantRows)
	}
	d, scale := maxDiff(t, got, want, ref.Positions)
	switch {
	case m.Config().Arch == "t5":
		d /= scale
		tol = maxRelDiffT5
	case strings.Contains(name, "fortunes"):
		d /= scale
		tol = maxRelDiffTrained
	}
	t.Logf("%s: max diff %.3g (tolerance %g, largest reference value %.3g)", name, d, tol, scale)
	if d > tol {
		t.Errorf("%s: max diff %g > %g", name, d, tol)
	}
}

func TestTinyLogits(t *testing.T) {
	for _, a := range tinyArchs {
		dir := filepath.Join(testdata, "hf-tiny", a)
		m, err := Load(dir, LoadOptions{})
		if err != nil {
			t.Fatalf("%s: %v", a, err)
		}
		if m.Config().Arch != a {
			t.Errorf("%s: Config().Arch = %q", a, m.Config().Arch)
		}
		var ref reference
		readJSON(t, filepath.Join(dir, "reference.json"), &ref)
		checkLogits(t, a, m, &ref, maxLogitDiffF32)
	}
}

func TestQuantizedGGUF(t *testing.T) {
	p := filepath.Join(testdata, "gguf", "llama-Q4_K_M.gguf")
	m, err := Load(p, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := m.Config()
	if c.Naming != "gguf" || c.RopeNeox || c.KVHeads != 2 || c.Heads != 4 {
		t.Errorf("config %+v: want GGUF naming, interleaved RoPE, 4/2 heads", c)
	}
	if m.Tokenizer() == nil {
		t.Error("GGUF tokenizer not loaded")
	}
	var ref reference
	readJSON(t, filepath.Join(testdata, "gguf", "llama-Q4_K_M.dequant-hf.json"), &ref)
	checkLogits(t, "llama-Q4_K_M", m, &ref, maxLogitDiffQuant)

	// llama.cpp's own logits also round activations to 8 bits: report only.
	var cpp reference
	readJSON(t, filepath.Join(testdata, "gguf", "llama-Q4_K_M.logits.json"), &cpp)
	out, err := m.Forward(Input{Tokens: ref.InputIDs}, nil)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := maxDiff(t, out.Logits, cpp.Logits, cpp.Positions)
	t.Logf("llama-Q4_K_M vs llama.cpp's own logits: max diff %.3g", d)
	if d > 1 {
		t.Errorf("llama-Q4_K_M differs from llama.cpp by %g: more than activation rounding explains", d)
	}
}

// TestCacheMatchesFullPass runs each decoder one token at a time through
// the KV cache and compares every position with the full pass.
func TestCacheMatchesFullPass(t *testing.T) {
	for _, a := range []string{"gpt2", "llama", "marian", "bart", "t5"} {
		dir := filepath.Join(testdata, "hf-tiny", a)
		m, err := Load(dir, LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var ref reference
		readJSON(t, filepath.Join(dir, "reference.json"), &ref)
		in := Input{Tokens: ref.InputIDs, DecoderTokens: ref.DecoderInputIDs}
		full, err := m.Forward(in, nil)
		if err != nil {
			t.Fatal(err)
		}
		s := m.NewSession()
		toks := in.Tokens
		if in.DecoderTokens != nil {
			if err := s.Encode(in.Tokens); err != nil {
				t.Fatal(err)
			}
			toks = in.DecoderTokens
		}
		// First half in one step, then one token at a time; a clone taken
		// midway must not be disturbed by the original.
		h := len(toks) / 2
		if _, err := s.StepAll(toks[:h], nil); err != nil {
			t.Fatal(err)
		}
		fork := s.Clone()
		var got [][]float32
		for i := h; i < len(toks); i++ {
			l, err := s.Step(toks[i : i+1])
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, l)
		}
		d, _ := maxDiff(t, got, full.Logits[h:], nil)
		if d > maxCacheDiff {
			t.Errorf("%s: incremental logits differ from the full pass by %g", a, d)
		}
		if fork.Len() != h {
			t.Errorf("%s: clone advanced with the original: len %d", a, fork.Len())
		}
		l, err := fork.Step(toks[h : h+1])
		if err != nil {
			t.Fatal(err)
		}
		if d, _ := maxDiff(t, [][]float32{l}, full.Logits[h:h+1], nil); d > maxCacheDiff {
			t.Errorf("%s: clone's logits differ by %g", a, d)
		}
	}
}

type genResult struct {
	IDs   []int   `json:"ids"`
	Score float64 `json:"score"`
}

type genFixture struct {
	PromptIDs []int     `json:"prompt_ids"`
	MaxNew    int       `json:"max_new_tokens"`
	Greedy    []int     `json:"greedy"`
	Beam1     genResult `json:"beam4_lp1.0"`
	Beam06    genResult `json:"beam4_lp0.6"`
	Settings  struct {
		MinNew int `json:"min_new_tokens"`
	} `json:"settings"`
}

func checkGenerate(t *testing.T, name string, m *Model, g *genFixture) {
	t.Helper()
	// Decoder-only fixtures were made with eos_token_id=None.
	o := GenerateOptions{MaxNewTokens: g.MaxNew, MinNewTokens: g.Settings.MinNew, NoEOS: !m.Config().EncoderDecoder}
	gr, err := m.Generate(g.PromptIDs, o)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if !slices.Equal(gr.Tokens, g.Greedy) {
		t.Errorf("%s greedy: %v, want %v", name, gr.Tokens, g.Greedy)
	}
	for _, c := range []struct {
		lp   float64
		want genResult
	}{{1, g.Beam1}, {0.6, g.Beam06}} {
		o.NumBeams, o.LengthPenalty, o.EarlyStopping = 4, c.lp, true
		b, err := m.Generate(g.PromptIDs, o)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !slices.Equal(b.Tokens, c.want.IDs) {
			t.Errorf("%s beam4 lp %v: %v, want %v", name, c.lp, b.Tokens, c.want.IDs)
		}
		if math.Abs(b.Score-c.want.Score) > maxScoreDiff {
			t.Errorf("%s beam4 lp %v: score %v, want %v", name, c.lp, b.Score, c.want.Score)
		}
	}
}

func TestGenerate(t *testing.T) {
	for _, a := range []string{"gpt2", "llama", "marian", "bart", "t5"} {
		dir := filepath.Join(testdata, "hf-tiny", a)
		m, err := Load(dir, LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var g genFixture
		readJSON(t, filepath.Join(dir, "generate.json"), &g)
		checkGenerate(t, a, m, &g)
	}
}

func TestSampling(t *testing.T) {
	m, err := Load(filepath.Join(testdata, "hf-tiny", "llama"), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	prompt := []int{1, 15, 250, 999, 3, 87}
	base := GenerateOptions{MaxNewTokens: 8, NoEOS: true}
	greedy, err := m.Generate(prompt, base)
	if err != nil {
		t.Fatal(err)
	}
	// top-k 1 leaves one candidate: sampling must equal greedy.
	o := base
	o.Temperature, o.TopK, o.Seed = 0.8, 1, 7
	k1, err := m.Generate(prompt, o)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(k1.Tokens, greedy.Tokens) {
		t.Errorf("top-k 1 sampling %v != greedy %v", k1.Tokens, greedy.Tokens)
	}
	// Same seed, same tokens; a high temperature over the whole vocabulary
	// with another seed gives another sequence.
	o.TopK, o.Temperature, o.TopP = 0, 5, 1
	a, _ := m.Generate(prompt, o)
	b, _ := m.Generate(prompt, o)
	o.Seed = 8
	c, _ := m.Generate(prompt, o)
	if !slices.Equal(a.Tokens, b.Tokens) {
		t.Errorf("same seed gave %v and %v", a.Tokens, b.Tokens)
	}
	if slices.Equal(a.Tokens, c.Tokens) {
		t.Errorf("seeds 7 and 8 gave the same sequence %v at temperature 5", a.Tokens)
	}
	// A tiny top-p keeps only the most likely token.
	o.Temperature, o.TopP = 1, 1e-6
	p, _ := m.Generate(prompt, o)
	if !slices.Equal(p.Tokens, greedy.Tokens) {
		t.Errorf("top-p 1e-6 sampling %v != greedy %v", p.Tokens, greedy.Tokens)
	}
}

func TestTrace(t *testing.T) {
	for _, a := range []string{"gpt2", "bert", "t5"} {
		m, err := Load(filepath.Join(testdata, "hf-tiny", a), LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		toks := []int{5, 17, 300, 42, 9}
		in := Input{Tokens: toks}
		if m.Config().EncoderDecoder {
			in.DecoderTokens = toks[:4]
		}
		tr := &Trace{AttnLayer: 1, AttnHead: 2}
		out, err := m.Forward(in, tr)
		if err != nil {
			t.Fatal(err)
		}
		c := m.Config()
		if len(tr.Layers) != c.Layers || len(tr.Layers[0]) != len(out.Hidden) || len(tr.Layers[0][0]) != c.DModel {
			t.Fatalf("%s: trace layers %d×%d, want %d×%d", a, len(tr.Layers), len(tr.Layers[0]), c.Layers, len(out.Hidden))
		}
		if a == "bert" {
			// BERT's last block ends in its LayerNorm: the trace is the output.
			if d, _ := maxDiff(t, tr.Layers[c.Layers-1], out.Hidden, nil); d != 0 {
				t.Errorf("bert: last traced layer differs from the hidden state by %g", d)
			}
		}
		T := len(out.Hidden)
		if len(tr.Attention) != T {
			t.Fatalf("%s: attention map has %d rows, want %d", a, len(tr.Attention), T)
		}
		for i, row := range tr.Attention {
			var sum float64
			for j, p := range row {
				sum += float64(p)
				if !c.EncoderOnly && j > i && p != 0 {
					t.Errorf("%s: causal map has P[%d][%d] = %g", a, i, j, p)
				}
			}
			if math.Abs(sum-1) > 1e-5 {
				t.Errorf("%s: attention row %d sums to %g", a, i, sum)
			}
		}
	}
}

func TestT5RelativeBucket(t *testing.T) {
	// Values of transformers' _relative_position_bucket (32 buckets, max
	// distance 128), worked out from its formula: bidirectional splits 16/16,
	// exact below 8, then 8 + ⌊log(n/8)/log(16)·8⌋ capped at 15;
	// unidirectional: 32 buckets for the past, exact below 16, 16 + ⌊log(n/16)/log(8)·16⌋.
	cases := []struct {
		rel  int
		bidi bool
		want int
	}{
		{0, true, 0}, {-1, true, 1}, {1, true, 17}, {-7, true, 7}, {-8, true, 8}, {-16, true, 10},
		{-127, true, 15}, {-1000, true, 15}, {20, true, 16 + 10}, {0, false, 0}, {3, false, 0}, {-3, false, 3},
		{-15, false, 15}, {-16, false, 16}, {-32, false, 21}, {-1000, false, 31},
	}
	for _, c := range cases {
		if got := relativeBucket(c.rel, c.bidi, 32, 128); got != c.want {
			t.Errorf("relativeBucket(%d, %v) = %d, want %d", c.rel, c.bidi, got, c.want)
		}
	}
}

func TestBadInput(t *testing.T) {
	m, err := Load(filepath.Join(testdata, "hf-tiny", "gpt2"), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []Input{{}, {Tokens: []int{-1}}, {Tokens: []int{1000}}, {Tokens: []int{1}, DecoderTokens: []int{1}}} {
		if _, err := m.Forward(in, nil); err == nil {
			t.Errorf("Forward(%v) succeeded", in)
		}
	}
	if _, err := m.Forward(Input{Tokens: make([]int, 129)}, nil); err == nil {
		t.Error("129 positions in a 128-position model succeeded")
	}
	s := m.NewSession()
	if err := s.Encode([]int{1}); err == nil {
		t.Error("Encode on a decoder-only model succeeded")
	}
	t5, err := Load(filepath.Join(testdata, "hf-tiny", "t5"), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := t5.NewSession().Step([]int{0}); !errors.Is(err, errNoEncoder) {
		t.Errorf("decoder step before Encode: %v", err)
	}

	// A checkpoint without config.json, and one whose config names an
	// unknown architecture.
	dir := t.TempDir()
	st, err := os.ReadFile(filepath.Join(testdata, "hf-tiny", "gpt2", "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "model.safetensors"), st, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir, LoadOptions{}); err == nil || !strings.Contains(err.Error(), "config.json") {
		t.Errorf("no config.json: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"model_type":"xlstm"}`), 0o644)
	if _, err := Load(dir, LoadOptions{}); !errors.Is(err, tensor.ErrUnsupported) {
		t.Errorf("unknown model_type: %v", err)
	}
	// The right architecture with the wrong dimensions names the tensor.
	cfg, _ := os.ReadFile(filepath.Join(testdata, "hf-tiny", "gpt2", "config.json"))
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(strings.Replace(string(cfg), `"n_embd": 64`, `"n_embd": 32`, 1)), 0o644)
	if _, err := Load(dir, LoadOptions{}); err == nil || !strings.Contains(err.Error(), "wte") {
		t.Errorf("wrong n_embd: %v", err)
	}
}

// TestGenerateOnToken: OnToken sees each new token in order, for greedy
// decoding as it goes (an error from it stops generation there) and for
// beam search the winner's tokens at the end.
func TestGenerateOnToken(t *testing.T) {
	t.Parallel()
	m, err := Load(filepath.Join(testdata, "hf-tiny", "llama"), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	prompt := []int{1, 15, 250, 999, 3, 87}
	for _, beams := range []int{1, 3} {
		var seen []int
		o := GenerateOptions{MaxNewTokens: 6, NoEOS: true, NumBeams: beams, OnToken: func(id int) error {
			seen = append(seen, id)
			return nil
		}}
		g, err := m.Generate(prompt, o)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(seen, g.Tokens[len(prompt):]) {
			t.Errorf("beams %d: OnToken saw %v, generated %v", beams, seen, g.Tokens[len(prompt):])
		}
	}
	stop := errors.New("stop")
	calls := 0
	_, err = m.Generate(prompt, GenerateOptions{MaxNewTokens: 6, NoEOS: true, OnToken: func(int) error {
		calls++
		if calls == 2 {
			return stop
		}
		return nil
	}})
	if !errors.Is(err, stop) || calls != 2 {
		t.Errorf("an OnToken error after 2 tokens: %v after %d calls", err, calls)
	}
}

// TestGenerateStopsAtEveryEOS: an eos_token_id list (Llama 3.1's form) ends
// a generation at any of its ids, as transformers' generate() does, and
// generation_config.json's eos_token_id wins over config.json's.
func TestGenerateStopsAtEveryEOS(t *testing.T) {
	t.Parallel()
	src := filepath.Join(testdata, "hf-tiny", "llama")
	m, err := Load(src, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	prompt := []int{1, 15, 250, 999, 3, 87}
	free, err := m.Generate(prompt, GenerateOptions{MaxNewTokens: 8, NoEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	gen := free.Tokens[len(prompt):]
	// The first generated token that does not occur before it: the run must
	// stop exactly there.
	at := -1
	for i := 1; i < len(gen); i++ {
		if !slices.Contains(gen[:i], gen[i]) {
			at = i
			break
		}
	}
	if at < 0 {
		t.Fatalf("generated %v: no token to stop at", gen)
	}
	stopAt := func(t *testing.T, config, generation string) []int {
		t.Helper()
		dir := t.TempDir()
		for _, f := range []string{"config.json", "model.safetensors"} {
			b, err := os.ReadFile(filepath.Join(src, f))
			if err != nil {
				t.Fatal(err)
			}
			if f == "config.json" {
				var cfg map[string]any
				if err := json.Unmarshal(b, &cfg); err != nil {
					t.Fatal(err)
				}
				var v any
				if err := json.Unmarshal([]byte(config), &v); err != nil {
					t.Fatal(err)
				}
				cfg["eos_token_id"] = v
				if b, err = json.Marshal(cfg); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if generation != "" {
			if err := os.WriteFile(filepath.Join(dir, "generation_config.json"), []byte(generation), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		m, err := Load(dir, LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		g, err := m.Generate(prompt, GenerateOptions{MaxNewTokens: 8})
		if err != nil {
			t.Fatal(err)
		}
		return g.Tokens[len(prompt):]
	}
	want := gen[:at+1]
	if got := stopAt(t, fmt.Sprintf("[998, %d]", gen[at]), ""); !slices.Equal(got, want) {
		t.Errorf("config.json eos_token_id [998, %d]: generated %v, want %v", gen[at], got, want)
	}
	if got := stopAt(t, "998", fmt.Sprintf(`{"eos_token_id": [997, %d]}`, gen[at])); !slices.Equal(got, want) {
		t.Errorf("generation_config.json eos_token_id [997, %d] over config.json's 998: generated %v, want %v", gen[at], got, want)
	}
	if got := stopAt(t, "null", ""); !slices.Equal(got, gen) {
		t.Errorf("no eos_token_id: generated %v, want all 8 of %v", got, gen)
	}
}
