package tokenizer

import (
	"testing"
)

// exercise encodes and decodes a fixed text with a tokenizer that loaded
// from fuzzed input: neither may panic.
func exercise(t *testing.T, tok *Tokenizer) {
	ids, err := tok.Encode("Hello, wörld! 123  <s> [CLS] 🙂\n", EncodeOptions{AddSpecial: true, ParseSpecial: true})
	if err != nil {
		return
	}
	if _, err := tok.Decode(ids); err != nil {
		t.Fatalf("decode of encoded ids: %v", err)
	}
	_ = tok.GGUFMetadata()
}

func FuzzLoadSentencePiece(f *testing.F) {
	m := interopFiles(f, "llama")["tokenizer.model"]
	f.Add(m)
	f.Add(m[:len(m)/3])
	f.Add([]byte{0x0a, 0x05, 0x0a, 0x01, 'a', 0x18, 0x07})
	f.Add([]byte{0x12, 0x03, 0x18, 0x03, 0x08})
	f.Fuzz(func(t *testing.T, b []byte) {
		tok, err := parseSentencePiece(b, "tokenizer.model", nil)
		if err != nil {
			return
		}
		exercise(t, tok)
	})
}

func FuzzLoadTokenizerJSON(f *testing.F) {
	f.Add([]byte(`{"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":["a b"]},"pre_tokenizer":{"type":"ByteLevel"}}`))
	f.Add([]byte(`{"model":{"type":"BPE","vocab":{"▁":0,"a":1,"<0x41>":2},"merges":[["▁","a"]],"byte_fallback":true},"normalizer":{"type":"Sequence","normalizers":[{"type":"Prepend","prepend":"▁"}]}}`))
	f.Add([]byte(`{"model":{"type":"WordPiece","vocab":{"[UNK]":0,"a":1,"##b":2},"unk_token":"[UNK]"}}`))
	f.Add([]byte(`{"model":{"type":"Unigram","vocab":[["<unk>",0],["▁a",-1.5]],"unk_id":0}}`))
	f.Add([]byte(`{"added_tokens":[{"id":5,"content":"<s>","special":true}],"model":{"type":"BPE","vocab":{"a":0}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		tok, err := FromSource(memSource{files: map[string][]byte{"tokenizer.json": b}})
		if err != nil {
			return
		}
		exercise(t, tok)
	})
}

func FuzzLoadVocabMerges(f *testing.F) {
	g := interopFiles(f, "gpt2")
	f.Add(g["vocab.json"], g["merges.txt"], []byte("[UNK]\n##a\na\n"))
	f.Add([]byte(`{"a":0,"b":1,"ab":2}`), []byte("#version: 0.2\na b\n"), []byte("a\n"))
	f.Add([]byte(`{"a":0}`), []byte("a zz\n"), []byte(""))
	f.Fuzz(func(t *testing.T, vocabJSON, merges, vocabTxt []byte) {
		if tok, err := FromSource(memSource{files: map[string][]byte{"vocab.json": vocabJSON, "merges.txt": merges}}); err == nil {
			exercise(t, tok)
		}
		if tok, err := FromSource(memSource{files: map[string][]byte{"vocab.txt": vocabTxt}}); err == nil {
			exercise(t, tok)
		}
	})
}
