package convert

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/formats/gguf"
)

// TestPreTokenizerWithoutHash converts the qwen2 fixture (a trimmed
// vocabulary: no hash of llama.cpp's table names it) with the tokenizer.json
// pre_tokenizer of LLaMA 3 (llama-vocab.cpp's "original regex from
// tokenizer.json"), as shipped and with its digit run edited: the first is
// written as llama-bpe, the name whose splitting is the same, and the
// report says how; the second is refused, naming the regex.
func TestPreTokenizerWithoutHash(t *testing.T) {
	t.Parallel()
	src := "../testdata/arch/qwen2/hf"
	b, err := os.ReadFile(filepath.Join("..", "testdata", "tokenizer", "pre_tokenizers.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		TableName    string          `json:"table_name"`
		PreTokenizer json.RawMessage `json:"pre_tokenizer"`
	}
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	var llama3 string
	for _, c := range cases {
		if c.TableName == "llama-bpe" {
			llama3 = string(c.PreTokenizer)
		}
	}
	const digits = `\\p{N}{1,3}` // as it stands in the JSON
	if !strings.Contains(llama3, digits) {
		t.Fatalf("no LLaMA 3 pre_tokenizer with %s in pre_tokenizers.json", digits)
	}
	for _, tc := range []struct {
		name, pre string
		want      string // tokenizer.ggml.pre; "" for a refusal naming the regex (%q in the message)
	}{
		{"as-shipped", "", "gpt-2"},
		{"llama3", llama3, "llama-bpe"},
		{"llama3-edited", strings.Replace(llama3, digits, `\\p{N}{1,5}`, 1), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := hubSnapshot(t, src, "x/pretok")
			if tc.pre != "" {
				b, err := os.ReadFile(filepath.Join(src, "tokenizer.json"))
				if err != nil {
					t.Fatal(err)
				}
				var tj map[string]any
				if err := json.Unmarshal(b, &tj); err != nil {
					t.Fatal(err)
				}
				tj["pre_tokenizer"] = json.RawMessage(tc.pre)
				tj["model"].(map[string]any)["ignore_merges"] = true
				b, _ = json.Marshal(tj)
				p := filepath.Join(dir, "tokenizer.json")
				if err := os.Remove(p); err != nil { // a link to the fixture's
					t.Fatal(err)
				}
				if err := os.WriteFile(p, b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			out := filepath.Join(t.TempDir(), "out.gguf")
			rep, err := Run(dir, out, Options{OutType: OutF32})
			if tc.want == "" {
				if err == nil || !strings.Contains(err.Error(), `|\\p{N}{1,5}|`) || !strings.Contains(err.Error(), "no llama.cpp pre-tokenizer") {
					t.Fatalf("err = %v, want a refusal naming the regex", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			f, err := gguf.Open(out)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			pre, _ := f.Metadata.Str("tokenizer.ggml.pre")
			if pre != tc.want || !strings.Contains(rep.PreTokenizer, strconv.Quote(tc.want)) || !strings.Contains(rep.PreTokenizer, "splits") {
				t.Errorf("tokenizer.ggml.pre %q, report %q; want %q", pre, rep.PreTokenizer, tc.want)
			}
		})
	}
}
