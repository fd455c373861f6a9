package model

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/internal/fixtures"
)

// bloomReference is testdata/model/bloom/reference.json, written by
// gen_references.py with transformers.
type bloomReference struct {
	InputIDs    []int                 `json:"input_ids"`
	Positions   []int                 `json:"positions"`
	Logits      [][]float32           `json:"logits"`
	Masked      []fixtures.MaskedCase `json:"masked"`
	AlibiSlopes map[string][]float32  `json:"alibi_slopes"`
}

func loadBloom(t *testing.T) (*Model, *bloomReference) {
	t.Helper()
	dir := filepath.Join(testdata, "bloom")
	m, err := Load(dir, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var ref bloomReference
	readJSON(t, filepath.Join(dir, "reference.json"), &ref)
	return m, &ref
}

// maxSlopeULP: torch raises the float32 base to integer powers with its
// vectorized powf, which is not correctly rounded (the slope of head 13 of
// 16 is one ulp below glibc's powf and below the exact power); alibiSlopes
// rounds the exact power, so the two may differ by one ulp where the base is
// not a power of two (16 heads and more). One ulp of a slope moves a score
// by under 1e-7·position.
const maxSlopeULP = 1

// TestAlibiSlopes compares the slopes with those transformers'
// build_alibi_tensor produced for powers of two and for head counts between
// them (where the extra heads take odd powers of a second base).
func TestAlibiSlopes(t *testing.T) {
	_, ref := loadBloom(t)
	if len(ref.AlibiSlopes) < 20 {
		t.Fatalf("reference has slopes for %d head counts", len(ref.AlibiSlopes))
	}
	for k, want := range ref.AlibiSlopes {
		n, err := strconv.Atoi(k)
		if err != nil || n != len(want) {
			t.Fatalf("head count %q with %d slopes", k, len(want))
		}
		got := alibiSlopes(n)
		if len(got) != n {
			t.Fatalf("%d heads: %d slopes", n, len(got))
		}
		for h := range want {
			ulps := int64(math.Float32bits(got[h])) - int64(math.Float32bits(want[h]))
			if got[h] <= 0 || ulps > maxSlopeULP || ulps < -maxSlopeULP {
				t.Errorf("%d heads: slope %d = %g (%#x), transformers %g (%#x)", n, h, got[h], math.Float32bits(got[h]), want[h], math.Float32bits(want[h]))
			}
			if n <= 8 && ulps != 0 {
				// Bases 2^-8/n for n ≤ 8 are powers of two: exact.
				t.Errorf("%d heads: slope %d = %g, transformers %g exactly", n, h, got[h], want[h])
			}
		}
	}
}

func TestBloomLogits(t *testing.T) {
	m, ref := loadBloom(t)
	c := m.Config()
	if c.Arch != "bloom" || !c.Alibi || c.Heads != 6 || c.HeadDim != 8 || !c.TiedEmbeddings || c.MaxPositions != 0 {
		t.Errorf("config %+v: want bloom, ALiBi, 6 heads of 8, tied head, no position limit", c)
	}
	out, err := m.Forward(Input{Tokens: ref.InputIDs}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Logits) != len(ref.InputIDs) {
		t.Fatalf("%d logit rows for %d tokens", len(out.Logits), len(ref.InputIDs))
	}
	d, scale := maxDiff(t, out.Logits, ref.Logits, ref.Positions)
	t.Logf("bloom: max diff %.3g (largest logit %.3g)", d, scale)
	if d > maxLogitDiffF32 {
		t.Errorf("bloom: logits differ from transformers by %g", d)
	}
	if len(ref.Masked) != 2 {
		t.Fatalf("%d masked cases", len(ref.Masked))
	}
	for _, mc := range ref.Masked {
		mo, err := m.Forward(Input{Tokens: ref.InputIDs, Mask: boolMask(mc.AttentionMask)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		d, _ := maxDiff(t, mo.Logits, mc.Logits, mc.Positions)
		effect, _ := maxDiff(t, out.Logits, mc.Logits, mc.Positions)
		t.Logf("bloom/%s: max diff %.3g (unmasked output differs by %.3g)", mc.Name, d, effect)
		if d > maxLogitDiffF32 {
			t.Errorf("bloom/%s: logits differ from transformers by %g", mc.Name, d)
		}
		if effect < minMaskEffect {
			t.Errorf("bloom/%s: the mask changes nothing (%g)", mc.Name, effect)
		}
	}
}

// TestBloomAlibiPositions checks what a left-padded input means to BLOOM:
// its ALiBi positions restart at the first real token, so the real tokens
// see exactly what they see unpadded (transformers' cumsum positions),
// unlike GPT-2, whose positions stay 0..n-1.
func TestBloomAlibiPositions(t *testing.T) {
	m, ref := loadBloom(t)
	toks := ref.InputIDs[:8]
	base, err := m.Forward(Input{Tokens: toks}, nil)
	if err != nil {
		t.Fatal(err)
	}
	padded := append([]int{3, 3, 3}, toks...)
	out, err := m.Forward(Input{Tokens: padded, Mask: []bool{false, false, false, true, true, true, true, true, true, true, true}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := maxDiff(t, out.Logits[3:], base.Logits, nil); d > maxCacheDiff {
		t.Errorf("left-padded logits differ from the unpadded ones by %g", d)
	}
}

func TestBloomGenerate(t *testing.T) {
	m, _ := loadBloom(t)
	var g genFixture
	readJSON(t, filepath.Join(testdata, "bloom", "generate.json"), &g)
	if len(g.Greedy) != len(g.PromptIDs)+g.MaxNew {
		t.Fatalf("generate.json: %d greedy ids for a %d-token prompt and %d new", len(g.Greedy), len(g.PromptIDs), g.MaxNew)
	}
	checkGenerate(t, "bloom", m, &g)
}

// TestBloomCache runs BLOOM through the KV cache one token at a time (and
// a clone taken midway) and compares with the full pass.
func TestBloomCache(t *testing.T) {
	m, ref := loadBloom(t)
	toks := ref.InputIDs
	full, err := m.Forward(Input{Tokens: toks}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := m.NewSession()
	h := len(toks) / 2
	if _, err := s.StepAll(toks[:h], nil); err != nil {
		t.Fatal(err)
	}
	fork := s.Clone()
	for i := h; i < len(toks); i++ {
		l, err := s.Step(toks[i : i+1])
		if err != nil {
			t.Fatal(err)
		}
		if d, _ := maxDiff(t, [][]float32{l}, full.Logits[i:i+1], nil); d > maxCacheDiff {
			t.Errorf("position %d: incremental logits differ from the full pass by %g", i, d)
		}
	}
	l, err := fork.Step(toks[h : h+1])
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := maxDiff(t, [][]float32{l}, full.Logits[h:h+1], nil); d > maxCacheDiff {
		t.Errorf("clone: logits differ from the full pass by %g", d)
	}
}

func TestBloomGELU(t *testing.T) {
	// x·0.5·(1 + tanh(0.79788456·x·(1 + 0.044715·x²))) at points where the
	// value is known in closed form or by symmetry.
	x := []float32{0, 1, -1, 3, -3, 10, -10}
	bloomGELU(x)
	want := []float64{0, 0.8411920, -0.1588080, 2.9963627, -0.0036373, 10, 0}
	for i, w := range want {
		if math.Abs(float64(x[i])-w) > 1e-6 {
			t.Errorf("bloom_gelu #%d = %.7f, want %.7f", i, x[i], w)
		}
	}
}

// TestBloomGGUF runs the GGUF llama.cpp's converter made from the same
// checkpoint (QKV regrouped from per-head interleaving into q, k, v blocks,
// the tied head stored again as output.weight) against the same
// transformers logits.
func TestBloomGGUF(t *testing.T) {
	m, err := Load(filepath.Join(testdata, "bloom", "bloom-f32.gguf"), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := m.Config()
	if c.Arch != "bloom" || c.Naming != "gguf" || !c.Alibi || c.Heads != 6 || c.FFN != 192 || c.EOS != 2 {
		t.Errorf("config %+v", c)
	}
	var ref bloomReference
	readJSON(t, filepath.Join(testdata, "bloom", "reference.json"), &ref)
	out, err := m.Forward(Input{Tokens: ref.InputIDs}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := maxDiff(t, out.Logits, ref.Logits, ref.Positions); d > maxLogitDiffF32 {
		t.Errorf("bloom GGUF: logits differ from transformers by %g", d)
	}
	for _, mc := range ref.Masked {
		mo, err := m.Forward(Input{Tokens: ref.InputIDs, Mask: boolMask(mc.AttentionMask)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if d, _ := maxDiff(t, mo.Logits, mc.Logits, mc.Positions); d > maxLogitDiffF32 {
			t.Errorf("bloom GGUF/%s: logits differ from transformers by %g", mc.Name, d)
		}
	}
}

// TestBloomBadConfig checks that a config the forward pass cannot run, or
// one that does not fit the tensors, is an error naming the problem.
func TestBloomBadConfig(t *testing.T) {
	src := filepath.Join(testdata, "bloom")
	cfg, err := os.ReadFile(filepath.Join(src, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.ReadFile(filepath.Join(src, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ from, to, want string }{
		{`"n_head": 6`, `"n_head": 5`, "not a multiple of 5 heads"},
		{`"n_head": 6`, `"n_head": 0`, "out of range"},
		{`"hidden_size": 48`, `"hidden_size": 96`, "word_embeddings"},
		{`"n_layer": 2`, `"n_layer": 3`, "transformer.h.2."},
	} {
		dir := t.TempDir()
		bad := strings.Replace(string(cfg), c.from, c.to, 1)
		if bad == string(cfg) {
			t.Fatalf("config.json has no %s", c.from)
		}
		os.WriteFile(filepath.Join(dir, "config.json"), []byte(bad), 0o644)
		os.WriteFile(filepath.Join(dir, "model.safetensors"), st, 0o644)
		if _, err := Load(dir, LoadOptions{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.to, err, c.want)
		}
	}
	// An untied head must be in the file.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(strings.Replace(string(cfg), `"vocab_size": 1000`, `"vocab_size": 1000, "tie_word_embeddings": false`, 1)), 0o644)
	os.WriteFile(filepath.Join(dir, "model.safetensors"), st, 0o644)
	if _, err := Load(dir, LoadOptions{}); err == nil || !strings.Contains(err.Error(), "lm_head.weight") {
		t.Errorf("untied head without lm_head.weight: %v", err)
	}
}
