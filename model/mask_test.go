package model

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/internal/fixtures"
)

// minMaskEffect is how far, at least, a masked reference must be from the
// unmasked output somewhere: proof that the case exercises the mask and
// that a model ignoring it would fail (the hf-tiny logits are O(1)).
const minMaskEffect = 1e-3

// boolMask turns transformers' 0/1 attention_mask into Input.Mask.
func boolMask(m []int) []bool {
	if m == nil {
		return nil
	}
	out := make([]bool, len(m))
	for i, v := range m {
		out[i] = v != 0
	}
	return out
}

// TestMaskedLogits runs every hf-tiny checkpoint with the padding masks (and
// BERT token types) of testdata/model/masked and compares the rows
// transformers computed, padded rows included where they are well defined.
func TestMaskedLogits(t *testing.T) {
	for _, a := range tinyArchs {
		var f fixtures.MaskedFile
		readJSON(t, filepath.Join(testdata, "masked", a+".json"), &f)
		if f.Arch != a || len(f.Cases) == 0 || f.Transformers != "4.43.4" {
			t.Fatalf("%s: masked reference for %q, %d cases, transformers %q", a, f.Arch, len(f.Cases), f.Transformers)
		}
		m, err := Load(filepath.Join(testdata, "hf-tiny", a), LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		plain, err := m.Forward(Input{Tokens: f.InputIDs, DecoderTokens: f.DecoderInputIDs}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range f.Cases {
			name := a + "/" + c.Name
			in := Input{Tokens: f.InputIDs, DecoderTokens: f.DecoderInputIDs, Mask: boolMask(c.AttentionMask),
				DecoderMask: boolMask(c.DecoderAttentionMask), TokenTypes: c.TokenTypeIDs}
			out, err := m.Forward(in, nil)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			got, want, plainRows := out.Logits, c.Logits, plain.Logits
			if a == "bert" {
				got, want, plainRows = out.Hidden, c.LastHiddenState, plain.Hidden
			}
			if want == nil || len(c.Positions) != len(want) {
				t.Fatalf("%s: %d reference rows for %d positions", name, len(want), len(c.Positions))
			}
			d, scale := maxDiff(t, got, want, c.Positions)
			effect, _ := maxDiff(t, plainRows, want, c.Positions)
			tol := maxLogitDiffF32
			if a == "t5" {
				d, effect, tol = d/scale, effect/scale, maxRelDiffT5
			}
			t.Logf("%s: max diff %.3g over %d rows (tolerance %g; unmasked output differs by %.3g)", name, d, len(want), tol, effect)
			if d > tol {
				t.Errorf("%s: max diff %g > %g", name, d, tol)
			}
			if effect < minMaskEffect {
				t.Errorf("%s: the unmasked output is within %g of the masked reference: the case tests nothing", name, effect)
			}
			if c.DecoderAttentionMask != nil {
				// The decoder mask must matter on its own, beside the encoder's.
				in.DecoderMask = nil
				enc, err := m.Forward(in, nil)
				if err != nil {
					t.Fatal(err)
				}
				e, scale := maxDiff(t, enc.Logits, want, c.Positions)
				if a == "t5" {
					e /= scale
				}
				if e < minMaskEffect {
					t.Errorf("%s: without the decoder mask the output is within %g of the reference", name, e)
				}
			}
			if c.PoolerOutput != nil {
				if d, _ := maxDiff(t, [][]float32{out.Pooled}, [][]float32{c.PoolerOutput}, nil); d > maxLogitDiffF32 {
					t.Errorf("%s: pooler output differs by %g", name, d)
				}
			}
		}
	}
}

// TestMaskedCacheMatchesFullPass checks that a padded position stays
// hidden from the keys of later incremental steps: a right-padded prompt
// run in one step and continued one token at a time gives the logits of the
// full masked pass.
func TestMaskedCacheMatchesFullPass(t *testing.T) {
	for _, a := range []string{"gpt2", "llama", "bart"} {
		m, err := Load(filepath.Join(testdata, "hf-tiny", a), LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		toks := []int{5, 17, 300, 42, 9, 77, 8, 12}
		mask := []bool{true, false, true, true, false, true, true, true}
		in := Input{Tokens: toks, Mask: mask}
		s := m.NewSession()
		if m.Config().EncoderDecoder {
			in = Input{Tokens: toks, Mask: mask, DecoderTokens: toks[:6], DecoderMask: mask[:6]}
			if err := s.encode(in.Tokens, in.Mask); err != nil {
				t.Fatal(err)
			}
			toks, mask = toks[:6], mask[:6]
		}
		full, err := m.Forward(in, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.forward(toks[:3], mask[:3], nil, false); err != nil {
			t.Fatal(err)
		}
		fork := s.Clone()
		for i := 3; i < len(toks); i++ {
			out, err := s.forward(toks[i:i+1], mask[i:i+1], nil, true)
			if err != nil {
				t.Fatal(err)
			}
			if d, _ := maxDiff(t, out.Logits, full.Logits[i:i+1], nil); d > maxCacheDiff {
				t.Errorf("%s: position %d: incremental masked logits differ from the full pass by %g", a, i, d)
			}
		}
		if len(fork.mask) != 3 {
			t.Errorf("%s: clone's mask grew with the original: %v", a, fork.mask)
		}
	}
}

// TestMaskAndTokenTypeErrors checks that masks and token types that do not fit the
// input are errors, never panics.
func TestMaskAndTokenTypeErrors(t *testing.T) {
	gpt2, err := Load(filepath.Join(testdata, "hf-tiny", "gpt2"), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bert, err := Load(filepath.Join(testdata, "hf-tiny", "bert"), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if bert.Config().TypeVocab != 2 {
		t.Errorf("bert TypeVocab = %d, want type_vocab_size 2", bert.Config().TypeVocab)
	}
	t5, err := Load(filepath.Join(testdata, "hf-tiny", "t5"), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	toks := []int{5, 17, 300}
	for _, c := range []struct {
		m    *Model
		in   Input
		want string
	}{
		{gpt2, Input{Tokens: toks, Mask: []bool{true, true}}, "2 entries for 3 tokens"},
		{gpt2, Input{Tokens: toks, Mask: []bool{true, true, true, false}}, "4 entries for 3 tokens"},
		{gpt2, Input{Tokens: toks, Mask: []bool{false, false, false}}, "hides every one"},
		{gpt2, Input{Tokens: toks, TokenTypes: []int{0, 0, 0}}, "no token types"},
		{gpt2, Input{Tokens: toks, DecoderMask: []bool{true}}, "not an encoder-decoder"},
		{bert, Input{Tokens: toks, TokenTypes: []int{0, 2, 0}}, "token type 2 (index 1) outside the model's 2"},
		{bert, Input{Tokens: toks, TokenTypes: []int{-1, 0, 0}}, "token type -1"},
		{bert, Input{Tokens: toks, TokenTypes: []int{0, 1}}, "2 token types for 3 tokens"},
		{bert, Input{Tokens: toks, Mask: []bool{true}}, "1 entries for 3 tokens"},
		{t5, Input{Tokens: toks, DecoderTokens: []int{0, 1}, DecoderMask: []bool{true}}, "decoder mask has 1 entries for 2"},
		{t5, Input{Tokens: toks, DecoderTokens: []int{0, 1}, Mask: []bool{true, true}}, "mask has 2 entries for 3"},
		{t5, Input{Tokens: toks, DecoderTokens: []int{0}, Mask: []bool{false, false, false}}, "hides every one"},
	} {
		_, err := c.m.Forward(c.in, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "model: ") {
			t.Errorf("%s %+v: error %v, want one containing %q", c.m.Config().Arch, c.in, err, c.want)
		}
	}
}
