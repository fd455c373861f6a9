package tokenizer

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// hunyuanDir is the hunyuanmoe fixture's Hugging Face folder: Hunyuan's
// hy.tiktoken (testdata/arch/README.md) with config.json and the
// publisher's tokenizer_config.json.
const hunyuanDir = "../testdata/arch/hunyuanmoe/hf"

// TestHunyuanMatchesTiktoken: Hunyuan's hy.tiktoken, read from the folder
// and from llama.cpp's GGUF of it, tokenizes 8 texts (Chinese, Cyrillic,
// emoji, code, the class's special tokens) as the tiktoken.Encoding of
// Hunyuan's own class does (testdata/tokenizer/hunyuan/tokens.json).
func TestHunyuanMatchesTiktoken(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../testdata/tokenizer/hunyuan/tokens.json")
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
	if len(ref.Cases) < 8 {
		t.Fatalf("%d cases", len(ref.Cases))
	}
	for _, src := range []string{hunyuanDir, "../testdata/arch/hunyuanmoe/gguf/hunyuanmoe-f32.gguf"} {
		t.Run(filepath.Base(src), func(t *testing.T) {
			t.Parallel()
			tok, err := LoadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			if tok.Pre() != "hunyuan" || tok.Len() != 128167 || tok.EOS != 127960 {
				t.Fatalf("pre %q, %d tokens, eos %d", tok.Pre(), tok.Len(), tok.EOS)
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
			}
		})
	}
}

// TestHunyuanTiktokenErrors: a ranks file that does not end where
// Hunyuan's special tokens begin (the class's assertion), or a vocab_size
// other than the class's 128167 (the converter's), is refused naming it.
func TestHunyuanTiktokenErrors(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(hunyuanDir, "hy.tiktoken"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := &hfConfig{added: map[int]addedToken{}, vocabSize: 128167}
	short := b[:bytes.LastIndexByte(b[:len(b)-1], '\n')+1] // the last rank left out
	if _, err := parseHunyuanTiktoken(short, cfg); err == nil || !strings.Contains(err.Error(), "hy.tiktoken") || !strings.Contains(err.Error(), "127957") {
		t.Errorf("a rank short: %v", err)
	}
	if _, err := parseHunyuanTiktoken([]byte("YQ== 0\n"), cfg); err == nil || !strings.Contains(err.Error(), "1 ranks") {
		t.Errorf("one rank: %v", err)
	}
	for _, n := range []int{0, 128166, 128168} {
		cfg.vocabSize = n
		if _, err := parseHunyuanTiktoken(b, cfg); err == nil || !strings.Contains(err.Error(), "vocab_size") {
			t.Errorf("vocab_size %d: %v", n, err)
		}
	}
}

func FuzzHunyuanTiktoken(f *testing.F) {
	f.Add([]byte("YQ== 0\nYg== 1\nYWI= 2\n"), 128167)
	f.Add([]byte("IQ== 0\n\nIg== 3\n"), 5)
	f.Fuzz(func(t *testing.T, b []byte, n int) {
		cfg := &hfConfig{added: map[int]addedToken{}, vocabSize: n}
		if tok, err := parseHunyuanTiktoken(b, cfg); err == nil {
			_, _ = tok.Encode("ab c!", EncodeOptions{})
		}
	})
}

// TestHunyuanHFFiles: GGUF → HF writes Hunyuan's vocabulary back as its
// class reads it: hy.tiktoken byte for byte the original, and a
// tokenizer_config.json naming the class (tokenization_hy.HYTokenizer).
func TestHunyuanHFFiles(t *testing.T) {
	t.Parallel()
	tok, err := LoadFile("../testdata/arch/hunyuanmoe/gguf/hunyuanmoe-f32.gguf")
	if err != nil {
		t.Fatal(err)
	}
	files, err := tok.HFFiles()
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(hunyuanDir, "hy.tiktoken"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(files["hy.tiktoken"], want) {
		t.Errorf("hy.tiktoken: %d bytes, the original's %d, not equal", len(files["hy.tiktoken"]), len(want))
	}
	var cfg struct {
		AutoMap map[string][]any `json:"auto_map"`
	}
	if err := json.Unmarshal(files["tokenizer_config.json"], &cfg); err != nil {
		t.Fatal(err)
	}
	if a := cfg.AutoMap["AutoTokenizer"]; len(a) == 0 || a[0] != "tokenization_hy.HYTokenizer" {
		t.Errorf("auto_map %v", cfg.AutoMap)
	}
	if _, ok := files["vocab.json"]; ok {
		t.Error("vocab.json written beside hy.tiktoken")
	}
}
