package tokenizer

import (
	"errors"
	"github.com/tfconv/tfconv/internal/fixtures"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

// tekkenDir is the trimmed Tekken tokenizer: Mistral Nemo's 1000 control
// tokens and its first 4000 ranks (testdata/tokenizer/tekken/README.md).
var tekkenDir = filepath.Join("..", "testdata", "tokenizer", "tekken")

// TestTekkenTrimmedMatchesTiktoken: a trimmed Tekken tokenizer.json hashes
// to no name and splits as no llama.cpp pre-tokenizer does (its letter
// classes hold combining marks, llama.cpp's tekken rules do not): refused
// for GGUF output, naming the regex. Read without a name, its own
// splitting and BPE (merges ignored for a word that is a token) give
// tiktoken's ids for Tekken's pattern over the same ranks on every text.
func TestTekkenTrimmedMatchesTiktoken(t *testing.T) {
	t.Parallel()
	src := dirSource{dir: tekkenDir}
	_, err := FromSource(src)
	var fe *tensor.FormatError
	if !errors.As(err, &fe) || !fe.Unsupported || !strings.Contains(err.Error(), `\\p{M}`) {
		t.Fatalf("trimmed Tekken: %v, want a refusal naming the regex", err)
	}
	tok, _, err := readHF(src)
	if err != nil {
		t.Fatal(err)
	}
	tok.pretok, tok.ignoreMerges = &preTokenizer{name: "tokenizer.json", hf: tok.hf}, tok.hfIgnoreMerges
	if tok.Len() != 5000 || tok.BOS != 1 || tok.EOS != 2 || tok.UNK != 0 || !tok.AddBOS || !tok.hfIgnoreMerges {
		t.Fatalf("%d tokens, bos %d, eos %d, unk %d, add bos %v", tok.Len(), tok.BOS, tok.EOS, tok.UNK, tok.AddBOS)
	}
	matchesTiktoken(t, tok, filepath.Join(tekkenDir, "tokens.json"))
}

// TestTekkenMatchesTiktoken reads Mistral Nemo's full Tekken vocabulary as a
// tokenizer.json (shared/fixtures/tokenizers/tekken/nemo): the hash of its
// ids of the converter's check text (BOS first, as the fast tokenizer adds
// it) is the table's Mistral-Nemo-Base-2407 entry, "tekken", as tiktoken's
// ids give it; its ids equal tiktoken's on every text.
func TestTekkenMatchesTiktoken(t *testing.T) {
	t.Parallel()
	dir := filepath.Dir(fixtures.RequireSub(t, "tokenizers/tekken/nemo", "Mistral Nemo's 17 MB tokenizer.json"))
	tok, err := LoadFile(filepath.Join(dir, "nemo"))
	if err != nil {
		t.Fatal(err)
	}
	if tok.Pre() != "tekken" || tok.PreNote() != "" || tok.Len() != 131072 || tok.BOS != 1 || tok.EOS != 2 || !tok.AddBOS {
		t.Fatalf("pre %q (%s), %d tokens, bos %d, eos %d, add bos %v", tok.Pre(), tok.PreNote(), tok.Len(), tok.BOS, tok.EOS, tok.AddBOS)
	}
	_, chk := tiktokenCases(t, filepath.Join(dir, "nemo", "tokens-full.json"))
	if h, err := tok.ChkHash(); err != nil || h != chk || preForHash(h) != "tekken" {
		t.Errorf("hash %s (%v), tiktoken's %s", h, err, chk)
	}
	matchesTiktoken(t, tok, filepath.Join(dir, "nemo", "tokens-full.json"))
}
