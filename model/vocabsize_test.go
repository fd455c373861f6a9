package model

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/tfconv/tfconv/formats/gguf"
)

// TestGGUFWithoutVocabSize: llama.cpp reads "<arch>.vocab_size" as optional
// (the vocabulary's length stands in), so a GGUF written before the key
// existed, or by another writer, loads and computes exactly what the same
// file with the key does.
func TestGGUFWithoutVocabSize(t *testing.T) {
	t.Parallel()
	src := "../testdata/gguf/llama-Q4_0.gguf"
	dir := t.TempDir()
	noKey := filepath.Join(dir, "no-vocab-size.gguf")
	if _, err := gguf.Edit(src, gguf.EditOptions{Delete: []string{"llama.vocab_size"}, Out: noKey}); err != nil {
		t.Fatal(err)
	}
	logits := func(path string) (int, []float32) {
		t.Helper()
		m, err := Load(path, LoadOptions{})
		if err != nil {
			t.Fatalf("Load(%s): %v", filepath.Base(path), err)
		}
		defer m.Close()
		out, err := m.Forward(Input{Tokens: []int{1, 15, 250, 999}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return m.Config().Vocab, out.Logits[len(out.Logits)-1]
	}
	wantVocab, want := logits(src)
	gotVocab, got := logits(noKey)
	if wantVocab != 1000 || gotVocab != wantVocab {
		t.Errorf("vocab without the key = %d, with it %d; want 1000 both", gotVocab, wantVocab)
	}
	if !slices.Equal(got, want) {
		t.Errorf("logits without llama.vocab_size differ from those with it")
	}

}
