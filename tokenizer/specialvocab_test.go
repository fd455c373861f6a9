package tokenizer

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSpecialVocabDefaults checks the tokenizer.ggml.*_token_id and
// add_*_token keys written from HF files against gguf-py's SpecialVocab
// (llama.cpp c392e509, gguf-py/gguf/vocab.py): config.json's *_token_id count
// only as JSON integers in the vocabulary (null, a list or a float set
// nothing), add_bos_token/add_eos_token only as JSON booleans of
// tokenizer_config.json, and special_tokens_map.json sets no key.
func TestSpecialVocabDefaults(t *testing.T) {
	t.Parallel()
	// llama: a SentencePiece vocabulary of 1000 as Phi-3 has (<unk> 0,
	// <s> 1, </s> 2); gpt2: a byte-level BPE one as OLMo has
	// (<|endoftext|> 999), read from vocab.json and merges.txt.
	const phi3Config = `{"model_type": "phi3", "vocab_size": 1000, "bos_token_id": 1, "eos_token_id": 2, "pad_token_id": null}`
	const olmoConfig = `{"model_type": "olmo", "vocab_size": 1000, "bos_token_id": null, "eos_token_id": 999, "pad_token_id": null}`
	cases := []struct {
		name, dir string
		files     map[string]string // replaced (or, with "", removed) side files
		want      map[string]int64  // tokenizer.ggml.* key → id; absent keys must be absent
		wantAdd   map[string]bool   // add_bos_token / add_eos_token
	}{
		{name: "phi3 pad null", dir: "llama", files: map[string]string{"config.json": phi3Config},
			want: map[string]int64{"bos": 1, "eos": 2}, wantAdd: map[string]bool{"bos": true, "eos": false}},
		{name: "olmo pad null", dir: "gpt2", files: map[string]string{"config.json": olmoConfig},
			want: map[string]int64{"eos": 999}, wantAdd: map[string]bool{"bos": false}},
		{name: "pad absent", dir: "llama", files: map[string]string{"config.json": `{"bos_token_id": 1, "eos_token_id": 2}`},
			want: map[string]int64{"bos": 1, "eos": 2}, wantAdd: map[string]bool{"bos": true, "eos": false}},
		{name: "pad 0 stated", dir: "llama", files: map[string]string{"config.json": `{"pad_token_id": 0}`},
			want: map[string]int64{"padding": 0}, wantAdd: map[string]bool{"bos": true, "eos": false}},
		{name: "pad past the vocabulary", dir: "llama", files: map[string]string{"config.json": `{"pad_token_id": 1000, "eos_token_id": 2}`},
			want: map[string]int64{"eos": 2}, wantAdd: map[string]bool{"bos": true, "eos": false}},
		{name: "pad negative", dir: "llama", files: map[string]string{"config.json": `{"pad_token_id": -1, "bos_token_id": 1}`},
			want: map[string]int64{"bos": 1}, wantAdd: map[string]bool{"bos": true, "eos": false}},
		{name: "eos list and float ids", dir: "llama", files: map[string]string{"config.json": `{"eos_token_id": [2, 0], "unk_token_id": 0.0, "sep_token_id": "2"}`},
			want: map[string]int64{}, wantAdd: map[string]bool{"bos": true, "eos": false}},
		{name: "every kind", dir: "llama", files: map[string]string{"config.json": `{"bos_token_id": 1, "eos_token_id": 2, "unk_token_id": 0, "sep_token_id": 2, "pad_token_id": 0, "cls_token_id": 1, "mask_token_id": 3}`},
			// gguf-py's writer has no cls key.
			want: map[string]int64{"bos": 1, "eos": 2, "unknown": 0, "seperator": 2, "padding": 0, "mask": 3}, wantAdd: map[string]bool{"bos": true, "eos": false}},
		{name: "add flags null", dir: "llama", files: map[string]string{"config.json": `{"bos_token_id": 1}`,
			"tokenizer_config.json": `{"add_bos_token": null, "add_eos_token": true, "pad_token": null}`},
			want: map[string]int64{"bos": 1}, wantAdd: map[string]bool{"eos": true}},
		{name: "add flags only in special_tokens_map", dir: "llama", files: map[string]string{"config.json": `{}`,
			"tokenizer_config.json": "", "special_tokens_map.json": `{"add_bos_token": false, "add_eos_token": true, "pad_token": "<unk>"}`},
			want: map[string]int64{}, wantAdd: map[string]bool{}},
		{name: "no config.json", dir: "gpt2", files: map[string]string{"config.json": ""},
			want: map[string]int64{}, wantAdd: map[string]bool{"bos": false}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join("..", "testdata", "tokenizer", "interop", c.dir)
			files := map[string][]byte{}
			for _, name := range []string{"config.json", "tokenizer_config.json", "special_tokens_map.json", "tokenizer.model", "vocab.json", "merges.txt"} {
				if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
					files[name] = b
				}
			}
			for name, s := range c.files {
				if s == "" {
					delete(files, name)
				} else {
					files[name] = []byte(s)
				}
			}
			tok, err := FromSource(memSource{files: files})
			if err != nil {
				t.Fatal(err)
			}
			md := tok.GGUFMetadata()
			for _, kind := range []string{"bos", "eos", "unknown", "seperator", "padding", "cls", "mask", "eot", "eom"} {
				key := "tokenizer.ggml." + kind + "_token_id"
				got, ok := md.Int(key)
				want, wantOK := c.want[kind]
				if ok != wantOK || got != want {
					t.Errorf("%s = %d (present %v), want %d (present %v)", key, got, ok, want, wantOK)
				}
			}
			for _, kind := range []string{"bos", "eos"} {
				key := "tokenizer.ggml.add_" + kind + "_token"
				v, ok := md.Get(key)
				var got bool
				if ok {
					got, _ = v.BoolValue()
				}
				want, wantOK := c.wantAdd[kind]
				if ok != wantOK || got != want {
					t.Errorf("%s = %v (present %v), want %v (present %v)", key, got, ok, want, wantOK)
				}
			}
		})
	}
}
