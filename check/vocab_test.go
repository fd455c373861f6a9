package check

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/tfconv/tfconv/formats/gguf"
	"github.com/tfconv/tfconv/tensor"
)

// writeVocabGGUF writes a GGUF with tokens tokens, scores and types of the
// given lengths, a token_embd of rows rows and a bos id.
func writeVocabGGUF(t *testing.T, tokens, scores, types, rows int, bos uint32) (string, []byte) {
	t.Helper()
	toks := make([]string, tokens)
	for i := range toks {
		toks[i] = string(rune('a' + i))
	}
	md := tensor.Metadata{
		{Key: "general.architecture", Value: tensor.String("llama")},
		{Key: "tokenizer.ggml.model", Value: tensor.String("llama")},
		{Key: "tokenizer.ggml.tokens", Value: tensor.ArrayOf(toks)},
		{Key: "tokenizer.ggml.scores", Value: tensor.ArrayOf(make([]float32, scores))},
		{Key: "tokenizer.ggml.token_type", Value: tensor.ArrayOf(make([]int32, types))},
		{Key: "tokenizer.ggml.bos_token_id", Value: tensor.Uint32(bos)},
	}
	ts := []tensor.Info{{Name: "token_embd.weight", DType: tensor.F32, Shape: tensor.Shape{int64(rows), 4}}}
	var b bytes.Buffer
	w, err := gguf.NewWriter(&b, md, ts)
	if err != nil {
		t.Fatal(err)
	}
	body, err := w.Next("token_embd.weight")
	if err != nil {
		t.Fatal(err)
	}
	body.Write(make([]byte, rows*16))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "v.gguf")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, b.Bytes()
}

// TestVocabRules checks what llama.cpp's loader derives from the
// vocabulary: a consistent file has no finding; an embedding with more rows
// than tokens (an unpadded vocab_size), short score and type arrays and a
// special id past the vocabulary are each reported at their key or tensor
// info.
func TestVocabRules(t *testing.T) {
	path, _ := writeVocabGGUF(t, 5, 5, 5, 5, 1)
	r, err := Check(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Findings) != 0 {
		t.Fatalf("consistent vocabulary: %v", r.Findings)
	}
	path, raw := writeVocabGGUF(t, 5, 4, 3, 8, 9)
	r, err = Check(path)
	if err != nil {
		t.Fatal(err)
	}
	at := func(s string) int64 { return int64(bytes.Index(raw, []byte(s))) - 8 } // a key's offset is its length prefix
	want := map[string]int64{
		`gguf-vocab-arrays key "tokenizer.ggml.scores"`:     at("tokenizer.ggml.scores"),
		`gguf-vocab-arrays key "tokenizer.ggml.token_type"`: at("tokenizer.ggml.token_type"),
		`gguf-vocab-rows tensor "token_embd.weight"`:        at("token_embd.weight"),
		`gguf-special-id key "tokenizer.ggml.bos_token_id"`: at("tokenizer.ggml.bos_token_id"),
	}
	got := map[string]int64{}
	for _, f := range r.Findings {
		got[f.Rule+" "+f.Item] = f.Offset
	}
	for k, off := range want {
		if g, ok := got[k]; !ok || g != off {
			t.Errorf("%s: offset %d (present %v), want %d; all: %v", k, g, ok, off, r.Findings)
		}
	}
	if r.OK() {
		t.Error("OK() with an embedding that llama.cpp refuses")
	}
}
