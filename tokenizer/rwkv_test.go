package tokenizer

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/tfconv/tfconv/formats/gguf"
)

// TestRWKVVocabSample parses 419 lines of RWKV World's real vocabulary
// (testdata/tokenizer/rwkv: the lines with escaped quotes and backslashes,
// double-quoted ones, \u and \x escapes, and a spread of others) and holds
// each token's bytes and GGUF text to what Python makes of the line as
// llama.cpp's converter reads it (ast.literal_eval, repr(bytes)[2:-1]).
func TestRWKVVocabSample(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../testdata/tokenizer/rwkv/rwkv_vocab_sample.txt")
	if err != nil {
		t.Fatal(err)
	}
	var want []struct{ Bytes, Text string }
	j, err := os.ReadFile("../testdata/tokenizer/rwkv/rwkv_vocab_sample.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(j, &want); err != nil {
		t.Fatal(err)
	}
	toks, err := parseRWKVVocab(b, "rwkv_vocab_sample.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(toks) != len(want) || len(toks) < 400 {
		t.Fatalf("%d tokens, want %d", len(toks), len(want))
	}
	for i, tok := range toks {
		if got := hex.EncodeToString(tok); got != want[i].Bytes {
			t.Errorf("token %d: bytes %s, Python's %s", i, got, want[i].Bytes)
		}
		if got := pyBytesRepr(tok); got != want[i].Text {
			t.Errorf("token %d: text %q, Python's %q", i, got, want[i].Text)
		}
		if got := rwkvUnescape(pyBytesRepr(tok)); !bytes.Equal(got, tok) {
			t.Errorf("token %d: %q reads back as %q", i, tok, got)
		}
	}
}

// TestRWKVTokenizer reads the rwkv7 fixture's vocabulary (RWKV World's
// first 999 lines) from its Hugging Face folder and from llama.cpp's GGUF
// of it: the same tokens, and both encode by greedy longest match.
func TestRWKVTokenizer(t *testing.T) {
	t.Parallel()
	hf, err := LoadFile("../testdata/arch/rwkv7/hf/rwkv_vocab_v20230424.txt")
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open("../testdata/arch/rwkv7/gguf/rwkv7-f32.gguf")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gg, err := FromMetadata(f.Metadata, "rwkv7-f32.gguf")
	if err != nil {
		t.Fatal(err)
	}
	if hf.Len() != 1000 || gg.Len() != 1000 || hf.Model() != RWKV || gg.Model() != RWKV {
		t.Fatalf("%d (%s) and %d (%s) tokens", hf.Len(), hf.Model(), gg.Len(), gg.Model())
	}
	for i := 0; i < hf.Len(); i++ {
		if hf.Piece(i) != gg.Piece(i) || hf.Type(i) != gg.Type(i) {
			t.Fatalf("token %d: %q (%d), GGUF %q (%d)", i, hf.Piece(i), hf.Type(i), gg.Piece(i), gg.Type(i))
		}
	}
	// ids are line numbers: 257 '\t\t', 261 '\n\n', 995 'Em', 'E' 70,
	// 's' 116; "Es" is line 1000, past the cut.
	for _, c := range []struct {
		text string
		want []int
	}{
		{"\n\n\t\tEm", []int{261, 257, 995}},
		{"Es", []int{70, 116}},
		{"\n\n\n", []int{261, 11}},
		{"\xff\x00", []int{256, 1}},
	} {
		for name, tok := range map[string]*Tokenizer{"hf": hf, "gguf": gg} {
			got, err := tok.Encode(c.text, EncodeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("%s: %q → %v, want %v", name, c.text, got, c.want)
			}
			back, err := tok.Decode(got)
			if err != nil || back != c.text {
				t.Errorf("%s: %v decodes to %q (%v), want %q", name, got, back, err, c.text)
			}
		}
	}
}

// TestRWKVVocabErrors: a malformed line is an error naming its line.
func TestRWKVVocabErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"1 'a' 1\n2 'b' 2\n", "line 2"},
		{"1 'a'\n", "line 1"},
		{"1 'a 1\n", "line 1"},
		{"1 b'\xc3\xa9' 2\n", "ASCII"},
		{"1 '\\x4' 1\n", "hex"},
		{"1 '\\N{DASH}' 3\n", "named"},
		{"1 'a' x\n", "length"},
		{"1 '\\ud800' 3\n", "code point"},
	} {
		_, err := parseRWKVVocab([]byte(c.in), "v.txt")
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte(c.want)) {
			t.Errorf("%q: err %v, want %q", c.in, err, c.want)
		}
	}
}

func FuzzRWKVVocab(f *testing.F) {
	f.Add([]byte("1 '\\x00' 1\n2 b'\\xff' 1\n3 '\\n\\n' 2\n"))
	f.Add([]byte("4 \"\\\\'\" 2\n5 '\\u3000' 3\n6 ' ' 1\n"))
	f.Add([]byte("7 '\\101\\x97' 3\r\n8 b'\\u00' 6\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		toks, err := parseRWKVVocab(b, "v.txt")
		if err != nil {
			return
		}
		for _, tok := range toks {
			if got := rwkvUnescape(pyBytesRepr(tok)); !bytes.Equal(got, tok) {
				t.Fatalf("%q reads back as %q", tok, got)
			}
		}
		cfg := &hfConfig{added: map[int]addedToken{}, vocabSize: len(toks) + 3}
		if tok, err := parseRWKV(b, cfg); err == nil {
			_, _ = tok.Encode("ab c!\n", EncodeOptions{})
		}
	})
}

// TestRWKVHFFiles: GGUF → HF writes the vocabulary back as
// rwkv_vocab_v20230424.txt (bytes literals), which reads back to the same
// tokens, types and ids.
func TestRWKVHFFiles(t *testing.T) {
	t.Parallel()
	f, err := gguf.Open("../testdata/arch/rwkv7/gguf/rwkv7-f32.gguf")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gg, err := FromMetadata(f.Metadata, "rwkv7-f32.gguf")
	if err != nil {
		t.Fatal(err)
	}
	files, err := gg.HFFiles()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files["config.json"] = []byte(`{"vocab_size": 1000, "bos_token_id": 0, "eos_token_id": 0}`)
	for name, b := range files {
		if err := os.WriteFile(dir+"/"+name, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	back, err := LoadFile(dir + "/" + rwkvVocabFile)
	if err != nil {
		t.Fatal(err)
	}
	if back.Len() != gg.Len() {
		t.Fatalf("%d tokens back, %d", back.Len(), gg.Len())
	}
	for i := 0; i < gg.Len(); i++ {
		if back.Piece(i) != gg.Piece(i) || back.Type(i) != gg.Type(i) {
			t.Fatalf("token %d: %q (%d) back, %q (%d)", i, back.Piece(i), back.Type(i), gg.Piece(i), gg.Type(i))
		}
	}
}
