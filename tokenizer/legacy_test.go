package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestLegacySpacePrefix: where a SentencePiece tokenizer read from a
// Hugging Face folder puts its space prefix around special tokens, against
// transformers v4.57.6's slow LlamaTokenizer (testdata/tokenizer/legacy,
// gen_legacy.py): with tokenizer_config.json's legacy false at the text's
// start only, with legacy true (or unset) also after every special token,
// as llama.cpp does.
func TestLegacySpacePrefix(t *testing.T) {
	t.Parallel()
	var ref struct {
		Texts []string           `json:"texts"`
		IDs   map[string][][]int `json:"ids"`
	}
	b, err := os.ReadFile("../testdata/tokenizer/legacy/legacy.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	dir := "../testdata/vision/gemma3/hf"
	files := map[string][]byte{}
	for _, name := range []string{"tokenizer.model", "tokenizer_config.json", "special_tokens_map.json", "config.json"} {
		if files[name], err = os.ReadFile(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, legacy := range []string{"false", "true", "unset"} {
		var cfg map[string]any
		if err := json.Unmarshal(files["tokenizer_config.json"], &cfg); err != nil {
			t.Fatal(err)
		}
		want := ref.IDs[legacy]
		switch legacy {
		case "unset":
			delete(cfg, "legacy") // transformers' default: true
			want = ref.IDs["true"]
		default:
			cfg["legacy"] = legacy == "true"
		}
		fs := map[string][]byte{}
		for k, v := range files {
			fs[k] = v
		}
		fs["tokenizer_config.json"], _ = json.Marshal(cfg)
		tok, err := FromSource(memSource{files: fs})
		if err != nil {
			t.Fatal(err)
		}
		for i, text := range ref.Texts {
			got, err := tok.Encode(text, EncodeOptions{ParseSpecial: true})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want[i]) {
				t.Errorf("legacy %s: %q: %v, transformers %v", legacy, text, got, want[i])
			}
		}
	}
}
