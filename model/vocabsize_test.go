package model

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/formats/gguf"
	"github.com/tfconv/tfconv/tensor"
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

	// The vocabulary's length is the size, as llama.cpp's n_vocab: a file
	// whose tokens are one short of token_embd's rows is refused, naming
	// the tensor, as llama.cpp refuses its shape.
	f, err := gguf.Open(noKey)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	md := slices.Clone(f.Metadata)
	v, _ := md.Get("tokenizer.ggml.tokens")
	a, _ := v.Array()
	toks := make([]string, a.Len()-1)
	for i := range toks {
		toks[i], _ = a.Index(i).Str()
	}
	md.Set("tokenizer.ggml.tokens", tensor.ArrayOf(toks))
	infos := make([]tensor.Info, len(f.Tensors))
	for i, x := range f.Tensors {
		infos[i] = x.Info
	}
	short := filepath.Join(dir, "short-vocab.gguf")
	out, err := os.Create(short)
	if err != nil {
		t.Fatal(err)
	}
	w, err := gguf.NewWriter(out, md, infos)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range f.Tensors {
		body, err := w.Next(x.Name)
		if err == nil {
			_, err = io.Copy(body, x.Open())
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = Load(short, LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), `"token_embd.weight"`) || !strings.Contains(err.Error(), "999") {
		t.Errorf("Load of a 999-token vocabulary over 1000 embedding rows: %v; want token_embd.weight's shape refused", err)
	}
}
