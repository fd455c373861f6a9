package tokenizer

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/formats/gguf"
	"github.com/tfconv/tfconv/internal/fixtures"
	"github.com/tfconv/tfconv/tensor"
)

// vocabNames are llama.cpp's tokenizer test vocabularies that have test
// vectors (llama.cpp's test-tokenizer-0 passes on all of them).
var vocabNames = []string{"bert-bge", "deepseek-coder", "deepseek-llm", "falcon", "gpt-2", "llama-spm", "mpt", "phi-3", "refact", "starcoder"}

// readVectors reads NAME.gguf.inp and NAME.gguf.out: texts separated by
// "\n__ggml_vocab_test__\n" lines, and one line of ids per text.
func readVectors(t *testing.T, base string) ([]string, [][]int) {
	t.Helper()
	inp, err := os.ReadFile(base + ".inp")
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(base + ".out")
	if err != nil {
		t.Fatal(err)
	}
	texts := strings.Split(string(inp), "\n__ggml_vocab_test__\n")
	if texts[len(texts)-1] == "" {
		texts = texts[:len(texts)-1]
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(texts) {
		t.Fatalf("%s: %d texts but %d lines of ids", base, len(texts), len(lines))
	}
	ids := make([][]int, len(lines))
	for i, l := range lines {
		for _, f := range strings.Fields(l) {
			n, err := strconv.Atoi(f)
			if err != nil {
				t.Fatalf("%s.out line %d: %v", base, i+1, err)
			}
			ids[i] = append(ids[i], n)
		}
	}
	return texts, ids
}

// vocabPath finds ggml-vocab-NAME.gguf: in testdata, else in the shared
// fixtures when they are present.
func vocabPath(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join("..", "testdata", "tokenizer", "ggml-vocab-"+name+".gguf")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	if dir := sharedFixtures(); dir != "" {
		p = filepath.Join(dir, "tokenizers", "ggml-vocab-"+name+".gguf")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Skipf("ggml-vocab-%s.gguf is in neither testdata nor the shared fixtures", name)
	return ""
}

// sharedFixtures returns shared/fixtures beside the clone, or "".
func sharedFixtures() string { return fixtures.Dir() }

func loadGGUFTokenizer(t *testing.T, path string) *Tokenizer {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tok, err := FromMetadata(f.Metadata, path)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestVocabVectors is llama.cpp's test-tokenizer-0: every text of the .inp
// file encodes (no special tokens added, none parsed) to the ids of .out.
func TestVocabVectors(t *testing.T) {
	for _, name := range vocabNames {
		t.Run(name, func(t *testing.T) {
			tok := loadGGUFTokenizer(t, vocabPath(t, name))
			texts, want := readVectors(t, filepath.Join("..", "testdata", "tokenizer", "ggml-vocab-"+name+".gguf"))
			bad := 0
			for i, text := range texts {
				got, err := tok.Encode(text, EncodeOptions{})
				if err != nil {
					t.Fatalf("text %d %q: %v", i, text, err)
				}
				if !slices.Equal(got, want[i]) {
					bad++
					t.Errorf("text %d %q:\n got %v\nwant %v", i, text, got, want[i])
				}
			}
			if bad > 0 {
				t.Logf("%d of %d texts differ", bad, len(texts))
			}
		})
	}
}

// TestVocabVectorsD32676d7 is test-tokenizer-0 with the texts and ids of
// llama.cpp d32676d7 (testdata/tokenizer/d32676d7; its vocabularies are
// c392e509's, byte for byte, its texts one newer).
func TestVocabVectorsD32676d7(t *testing.T) {
	for _, name := range vocabNames {
		t.Run(name, func(t *testing.T) {
			tok := loadGGUFTokenizer(t, vocabPath(t, name))
			texts, want := readVectors(t, filepath.Join("..", "testdata", "tokenizer", "d32676d7", "ggml-vocab-"+name+".gguf"))
			for i, text := range texts {
				got, err := tok.Encode(text, EncodeOptions{})
				if err != nil {
					t.Fatalf("text %d %q: %v", i, text, err)
				}
				if !slices.Equal(got, want[i]) {
					t.Errorf("text %d %q:\n got %v\nwant %v", i, text, got, want[i])
				}
			}
		})
	}
}

func openGGUF(t *testing.T, path string) tensor.Metadata {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return f.Metadata
}

// TestVocabDecodeRoundTrip: decoding llama.cpp's ids for each test text gives
// the text back, for the tokenizers that are lossless. Byte-level BPE keeps
// every byte; SentencePiece keeps the text up to its added leading space
// (which decoding drops again) and byte fallback. WordPiece lower-cases and
// strips accents, so it is left out, as it does not round-trip in HF either.
func TestVocabDecodeRoundTrip(t *testing.T) {
	for _, name := range vocabNames {
		if name == "bert-bge" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			tok := loadGGUFTokenizer(t, vocabPath(t, name))
			texts, ids := readVectors(t, filepath.Join("..", "testdata", "tokenizer", "ggml-vocab-"+name+".gguf"))
			for i, text := range texts {
				got, err := tok.Decode(ids[i])
				if err != nil {
					t.Fatalf("text %d: %v", i, err)
				}
				if got != text {
					t.Errorf("text %d: decode gives %q, want %q", i, got, text)
				}
			}
		})
	}
}
