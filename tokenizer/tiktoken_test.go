package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var kimiDir = filepath.Join("..", "testdata", "tokenizer", "kimi-k2")

// TestKimiK2MatchesTiktoken: Kimi K2's tokenizer read from a tiktoken.model
// tokenizes as tiktoken 0.9.0 does with the publisher's tokenization_kimi.py
// (tokens.json: its Encoding's encode with every special token allowed, and
// encode_ordinary).
// The converter's GGUF of it, read back, tokenizes alike (llama.cpp
// d32676d7 gives the same ids for it, measured with llama_tokenize).
func TestKimiK2MatchesTiktoken(t *testing.T) {
	t.Parallel()
	for _, src := range []string{kimiDir, filepath.Join(kimiDir, "kimi-k2-f32.gguf")} {
		t.Run(filepath.Base(src), func(t *testing.T) { kimiMatchesTiktoken(t, src) })
	}
}

func kimiMatchesTiktoken(t *testing.T, src string) {
	tok, err := LoadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if tok.Pre() != "kimi-k2" || tok.Len() != 1000 || tok.BOS != 744 || tok.EOS != 745 {
		t.Fatalf("pre %q, %d tokens, bos %d, eos %d", tok.Pre(), tok.Len(), tok.BOS, tok.EOS)
	}
	b, err := os.ReadFile(filepath.Join(kimiDir, "tokens.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Cases []struct {
			Text     string `json:"text"`
			IDs      []int  `json:"ids"`
			Ordinary []int  `json:"ordinary"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	if len(ref.Cases) < 7 {
		t.Fatalf("%d cases", len(ref.Cases))
	}
	for _, c := range ref.Cases {
		got, err := tok.Encode(c.Text, EncodeOptions{ParseSpecial: true})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, c.IDs) {
			t.Errorf("%q: tfconv %v, tiktoken %v", c.Text, got, c.IDs)
		}
		got, err = tok.Encode(c.Text, EncodeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, c.Ordinary) {
			t.Errorf("%q ordinary: tfconv %v, tiktoken %v", c.Text, got, c.Ordinary)
		}
		dec, err := tok.Decode(c.Ordinary)
		if err != nil || dec != c.Text {
			t.Errorf("decode %v = %q, %v; want %q", c.Ordinary, dec, err, c.Text)
		}
	}
}

func TestTiktokenRanksErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"", "no ranks"},
		{"YQ== 0\nYg== 0\n", "line 2: rank 0 is also on line 1"},
		{"YQ== 0\nYQ== 1\n", `line 2: token "a" is also on line 1`},
		{"YQ== 0\nYg== 2\n", "rank 1: missing"},
		{"YQ== 0\n!!! 1\n", "line 2: token is not base64"},
		{"YQ== 0\nYg==\n", "line 2: 1 fields"},
		{"YQ== -1\n", "line 1: rank \"-1\""},
		{"YQ== 99999999999999999999\n", "line 1: rank"},
		{" 0\n", "line 1: 1 fields"},
	} {
		_, _, err := parseTiktokenRanks([]byte(c.in), tiktokenFile)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), tiktokenFile) {
			t.Errorf("%q: err %v, want %q", c.in, err, c.want)
		}
	}
	toks, ranks, err := parseTiktokenRanks([]byte("Yg== 1\r\n\nYQ== 0"), tiktokenFile)
	if err != nil || len(toks) != 2 || string(toks[0]) != "b" || ranks[0] != 1 || ranks[1] != 0 {
		t.Errorf("%q %v %v", toks, ranks, err)
	}
	cfg := &hfConfig{added: map[int]addedToken{}}
	b, _ := os.ReadFile(filepath.Join(kimiDir, "tiktoken.model"))
	for n, want := range map[int]string{0: "vocab_size", 5: "less than the 744 ranks", 1001: "Kimi's tokenizer reserves"} {
		cfg.vocabSize = n
		if _, err := parseTiktoken(b, cfg); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("vocab_size %d: err %v, want %q", n, err, want)
		}
	}
}

func FuzzTiktokenRanks(f *testing.F) {
	f.Add([]byte("YQ== 0\nYg== 1\nYWI= 2\n"))
	f.Add([]byte("IQ== 0\n\nIg== 3\n"))
	f.Add([]byte("YQ== 1\r\nYQ== 0\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		toks, ranks, err := parseTiktokenRanks(b, tiktokenFile)
		if err != nil {
			return
		}
		seen := make([]bool, len(toks))
		for _, r := range ranks {
			if r < 0 || r >= len(toks) || seen[r] {
				t.Fatalf("rank %d of %d accepted twice or outside", r, len(toks))
			}
			seen[r] = true
		}
		cfg := &hfConfig{added: map[int]addedToken{}, vocabSize: len(toks) + 3}
		if tok, err := parseTiktoken(b, cfg); err == nil {
			_, _ = tok.Encode("ab c!", EncodeOptions{})
		}
	})
}
