package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// specialVocabCase is one entry of testdata/tokenizer/specialvocab/cases.json:
// a fixture folder with side files replaced (or, null, removed), and the
// tokenizer.ggml.*_token_id keys (in writing order) and add_bos/add_eos_token
// that gguf-py's SpecialVocab (llama.cpp c392e509) makes of it
// (gen_cases.py).
type specialVocabCase struct {
	Name    string             `json:"name"`
	Dir     string             `json:"dir"`
	Files   map[string]*string `json:"files"`
	WantIDs [][2]any           `json:"want_ids"`
	WantAdd map[string]bool    `json:"want_add"`
}

// TestSpecialVocabDefaults checks the special-token ids and add_bos/add_eos
// flags written from HF files against gguf-py's SpecialVocab, case by case:
// config.json's *_token_id count only as JSON integers in the vocabulary
// ("pad_token_id": null, as Phi-3 and OLMo checkpoints have, sets no
// padding key; a list or a float sets nothing), token texts are looked up
// only from tokenizer_config.json (not special_tokens_map.json) in
// tokenizer.json's added tokens, and add_*_token only as JSON booleans of
// tokenizer_config.json.
func TestSpecialVocabDefaults(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../testdata/tokenizer/specialvocab/cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []specialVocabCase
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	// gguf-py refuses a negative id (ValueError, no GGUF at all); tfconv
	// writes no key for it, as it names no token.
	negative := `{"pad_token_id": -1, "bos_token_id": 1}`
	cases = append(cases, specialVocabCase{Name: "pad negative", Dir: "testdata/tokenizer/interop/llama",
		Files: map[string]*string{"config.json": &negative}, WantIDs: [][2]any{{"bos", 1.0}}, WantAdd: map[string]bool{"bos": true, "eos": false}})
	if len(cases) < 15 {
		t.Fatalf("%d cases", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join("..", filepath.FromSlash(c.Dir))
			ents, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			files := map[string][]byte{}
			for _, e := range ents {
				if b, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil {
					files[e.Name()] = b
				}
			}
			for name, s := range c.Files {
				if s == nil {
					delete(files, name)
				} else {
					files[name] = []byte(*s)
				}
			}
			tok, err := FromSource(memSource{files: files})
			if err != nil {
				t.Fatal(err)
			}
			md := tok.GGUFMetadata()
			var got [][2]any
			for _, kv := range md {
				for _, kind := range []string{"bos", "eos", "unknown", "seperator", "padding", "cls", "mask", "eot", "eom"} {
					if kv.Key == "tokenizer.ggml."+kind+"_token_id" {
						id, _ := kv.Value.Int()
						got = append(got, [2]any{kind, float64(id)})
					}
				}
			}
			if len(got) != len(c.WantIDs) {
				t.Errorf("ids %v, want %v (gguf-py)", got, c.WantIDs)
			} else {
				for i := range got {
					if got[i] != c.WantIDs[i] {
						t.Errorf("ids %v, want %v (gguf-py)", got, c.WantIDs)
						break
					}
				}
			}
			for _, kind := range []string{"bos", "eos"} {
				key := "tokenizer.ggml.add_" + kind + "_token"
				v, ok := md.Get(key)
				var b bool
				if ok {
					b, _ = v.BoolValue()
				}
				want, wantOK := c.WantAdd[kind]
				if ok != wantOK || b != want {
					t.Errorf("%s = %v (present %v), want %v (present %v)", key, b, ok, want, wantOK)
				}
			}
		})
	}
}
