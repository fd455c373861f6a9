package tokenizer

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

func interopFiles(t testing.TB, arch string) map[string][]byte {
	t.Helper()
	dir := filepath.Join("..", "testdata", "tokenizer", "interop", arch)
	files := map[string][]byte{}
	for _, name := range []string{"config.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.json", "merges.txt", "tokenizer.model", "vocab.txt"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err == nil {
			files[name] = b
		}
	}
	return files
}

func with(files map[string][]byte, name string, b []byte) map[string][]byte {
	out := map[string][]byte{}
	for k, v := range files {
		out[k] = v
	}
	if b == nil {
		delete(out, name)
	} else {
		out[name] = b
	}
	return out
}

// wantFormatError checks err is a *tensor.FormatError matching ErrFormat (or
// ErrUnsupported) whose text contains every fragment.
func wantFormatError(t *testing.T, err error, unsupported bool, fragments ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one containing %q", fragments)
	}
	var fe *tensor.FormatError
	if !errors.As(err, &fe) {
		t.Fatalf("%v: not a *tensor.FormatError", err)
	}
	sentinel := tensor.ErrFormat
	if unsupported {
		sentinel = tensor.ErrUnsupported
	}
	if !errors.Is(err, sentinel) {
		t.Errorf("%v: does not match %v", err, sentinel)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("error %q does not mention %q", err, f)
		}
	}
}

func TestMalformed(t *testing.T) {
	gpt2 := interopFiles(t, "gpt2")
	llama := interopFiles(t, "llama")
	bert := interopFiles(t, "bert")
	load := func(files map[string][]byte) error {
		_, err := FromSource(memSource{files: files})
		return err
	}

	t.Run("bad JSON", func(t *testing.T) {
		err := load(with(gpt2, "vocab.json", []byte(`{"a": 0, "b": }`)))
		wantFormatError(t, err, false, "vocab.json", "offset 14", "bad JSON")
		err = load(with(gpt2, "tokenizer_config.json", []byte(`{"add_bos_token": tru`)))
		wantFormatError(t, err, false, "tokenizer_config.json", "bad JSON")
		err = load(map[string][]byte{"tokenizer.json": []byte(`{"model": {"type": "BPE", "vocab": [1,2]}}`)})
		wantFormatError(t, err, false, "tokenizer.json")
	})
	t.Run("merge names unknown token", func(t *testing.T) {
		m := append(append([]byte(nil), gpt2["merges.txt"]...), "Ġzz qq\n"...)
		err := load(with(gpt2, "merges.txt", m))
		wantFormatError(t, err, false, "merges.txt", `unknown token "Ġzz"`)
		err = load(with(gpt2, "merges.txt", []byte("#version: 0.2\nnospace\n")))
		wantFormatError(t, err, false, "merges.txt", "line 2", "offset 14")
	})
	t.Run("vocab ids", func(t *testing.T) {
		err := load(with(gpt2, "vocab.json", []byte(`{"a": 0, "b": 5}`)))
		wantFormatError(t, err, false, "vocab.json", `"b"`, "id 5")
		err = load(with(gpt2, "vocab.json", []byte(`{"a": 0, "b": 0}`)))
		wantFormatError(t, err, false, "vocab.json", "id 0")
	})
	t.Run("truncated protobuf", func(t *testing.T) {
		m := llama["tokenizer.model"]
		for _, n := range []int{1, 2, 100, len(m) / 2, len(m) - 1} {
			err := load(with(llama, "tokenizer.model", m[:n]))
			wantFormatError(t, err, false, "tokenizer.model", "offset")
		}
		err := load(with(llama, "tokenizer.model", []byte{0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f}))
		wantFormatError(t, err, false, "tokenizer.model", "offset 1", "runs past the end")
	})
	t.Run("GGUF ids out of range", func(t *testing.T) {
		tok, err := FromSource(memSource{files: bert})
		if err != nil {
			t.Fatal(err)
		}
		md := tok.GGUFMetadata()
		md.Set("tokenizer.ggml.seperator_token_id", tensor.Uint32(1000))
		_, err = FromMetadata(md, "x.gguf")
		wantFormatError(t, err, false, "x.gguf", "seperator_token_id", "1000")
		md = tok.GGUFMetadata()
		md.Set(keyTokenType, tensor.ArrayOf([]int32{1, 2}))
		_, err = FromMetadata(md, "x.gguf")
		wantFormatError(t, err, false, "token_type", "2 entries for 1000 tokens")
		md = tok.GGUFMetadata()
		md.Set(keyTokens, tensor.ArrayOf([]float32{1}))
		_, err = FromMetadata(md, "x.gguf")
		wantFormatError(t, err, false, keyTokens, "want string")
	})
	t.Run("unsupported pre-tokenizer", func(t *testing.T) {
		tok, err := FromSource(memSource{files: gpt2})
		if err != nil {
			t.Fatal(err)
		}
		md := tok.GGUFMetadata()
		md.Set(keyPre, tensor.String("afmoe"))
		_, err = FromMetadata(md, "x.gguf")
		wantFormatError(t, err, true, `"afmoe"`, "tokenizer.ggml.pre")
	})
	t.Run("no tokenizer", func(t *testing.T) {
		_, err := FromSource(memSource{files: map[string][]byte{"config.json": []byte("{}")}})
		if err == nil || !strings.Contains(err.Error(), "no tokenizer found") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("decode bad id", func(t *testing.T) {
		tok, err := FromSource(memSource{files: gpt2})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tok.Decode([]int{1, 1000}); err == nil {
			t.Error("no error for id 1000 of 1000")
		}
	})
}

// TestTokenizerJSON builds tokenizer.json files holding the interop
// vocabularies (GPT-2 byte-level BPE, BERT WordPiece) in the HF tokenizers
// layout and checks they give the reference ids of the fixtures.
func TestTokenizerJSON(t *testing.T) {
	gpt2 := interopFiles(t, "gpt2")
	var vocab map[string]int
	if err := json.Unmarshal(gpt2["vocab.json"], &vocab); err != nil {
		t.Fatal(err)
	}
	merges, err := parseMergesTxt(gpt2["merges.txt"])
	if err != nil {
		t.Fatal(err)
	}
	tj := map[string]any{
		"added_tokens":   []any{map[string]any{"id": 999, "content": "<|endoftext|>", "special": true}},
		"normalizer":     nil,
		"pre_tokenizer":  map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
		"post_processor": map[string]any{"type": "ByteLevel"},
		"model":          map[string]any{"type": "BPE", "vocab": vocab, "merges": merges},
	}
	b, _ := json.Marshal(tj)
	tok, err := FromSource(memSource{files: map[string][]byte{"tokenizer.json": b}})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("..", "testdata", "tokenizer", "interop")
	checkInterop(t, tok, "gpt2", readCrossCheck(t, filepath.Join(dir, "gpt2")))

	bert := interopFiles(t, "bert")
	wp := map[string]int{}
	for i, l := range strings.Split(strings.TrimSuffix(string(bert["vocab.txt"]), "\n"), "\n") {
		wp[l] = i
	}
	var added []any
	for i, s := range []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"} {
		added = append(added, map[string]any{"id": i, "content": s, "special": true})
	}
	tj = map[string]any{
		"added_tokens":  added,
		"normalizer":    map[string]any{"type": "BertNormalizer", "lowercase": true},
		"pre_tokenizer": map[string]any{"type": "BertPreTokenizer"},
		"post_processor": map[string]any{"type": "TemplateProcessing", "single": []any{
			map[string]any{"SpecialToken": map[string]any{"id": "[CLS]", "type_id": 0}},
			map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}},
			map[string]any{"SpecialToken": map[string]any{"id": "[SEP]", "type_id": 0}},
		}},
		"model": map[string]any{"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "vocab": wp},
	}
	b, _ = json.Marshal(tj)
	tok, err = FromSource(memSource{files: map[string][]byte{"tokenizer.json": b}})
	if err != nil {
		t.Fatal(err)
	}
	checkInterop(t, tok, "bert", readCrossCheck(t, filepath.Join(dir, "bert")))
}
