package tokenizer

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/tensor"
)

// preCase is one entry of testdata/tokenizer/pre_tokenizers.json: a
// tokenizer.json pre_tokenizer of a model of the converter's table, the
// name the table gives that model, and (where llama.cpp ships one) the
// test vocabulary of that tokenizer.
type preCase struct {
	TableName    string          `json:"table_name"`
	Vocab        string          `json:"vocab"`
	IgnoreMerges bool            `json:"ignore_merges"`
	PreTokenizer json.RawMessage `json:"pre_tokenizer"`
	RegexFrom    string          `json:"regex_from"`
	// SplitDiffers says why llama.cpp's rules for the name split some
	// test text otherwise than the tokenizer.json: no name is equivalent.
	SplitDiffers string `json:"split_differs"`
	// RegexUnsupported says why tfconv cannot run the regex: refused.
	RegexUnsupported string `json:"regex_unsupported"`
}

func readPreCases(t *testing.T) []preCase {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "tokenizer", "pre_tokenizers.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cs []preCase
	if err := json.Unmarshal(b, &cs); err != nil {
		t.Fatal(err)
	}
	return cs
}

// tokenizerJSONAround writes a byte-level BPE tokenizer.json with ref's
// vocabulary, merges and control tokens and the given pre_tokenizer.
func tokenizerJSONAround(t *testing.T, ref *Tokenizer, pre json.RawMessage, ignoreMerges bool) []byte {
	t.Helper()
	vocab := map[string]int{}
	for i, s := range ref.tokens {
		vocab[s] = i
	}
	var added []map[string]any
	for i, ty := range ref.types {
		if ty == TypeControl || ty == TypeUserDefined {
			added = append(added, map[string]any{"id": i, "content": ref.tokens[i], "special": ty == TypeControl})
		}
	}
	tj := map[string]any{"added_tokens": added, "pre_tokenizer": pre,
		"model": map[string]any{"type": "BPE", "vocab": vocab, "merges": ref.merges, "ignore_merges": ignoreMerges}}
	if ref.AddBOS && ref.BOS >= 0 {
		tj["post_processor"] = map[string]any{"type": "TemplateProcessing",
			"single": []any{map[string]any{"SpecialToken": map[string]any{"id": ref.tokens[ref.BOS]}}, map[string]any{"Sequence": map[string]any{"id": "A"}}}}
	}
	b, err := json.Marshal(tj)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestEquivalentPreMatchesTable is the unknown-hash rule on the converter's
// table: for each model whose tokenizer.json pre-tokenizer is known here,
// the name found by splitting texts both ways (the built-in test texts and
// llama.cpp's own test texts of that vocabulary) is the table's name, or
// the name llama.cpp treats as the same (preAliases); where tfconv has no
// rules for the table's name, none is found. Where llama.cpp ships the
// vocabulary, the table's name is checked to be what the hash gives.
func TestEquivalentPreMatchesTable(t *testing.T) {
	for _, c := range readPreCases(t) {
		t.Run(c.TableName, func(t *testing.T) {
			texts := preTestTexts
			if c.Vocab != "" {
				name := strings.TrimSuffix(strings.TrimPrefix(c.Vocab, "ggml-vocab-"), ".gguf")
				path := vocabPath(t, name)
				ref := loadGGUFTokenizer(t, path)
				tok, err := FromSource(memSource{files: map[string][]byte{"tokenizer.json": tokenizerJSONAround(t, ref, c.PreTokenizer, c.IgnoreMerges)}})
				if err != nil {
					t.Fatal(err)
				}
				h, err := tok.ChkHash()
				if err != nil {
					t.Fatal(err)
				}
				if got := preForHash(h); got != c.TableName {
					t.Errorf("the hash of %s with this pre_tokenizer names %q, the case says %q", c.Vocab, got, c.TableName)
				}
				inp, _ := readVectors(t, path)
				texts = append(append([]string{}, preTestTexts...), inp...)
			}
			h, err := parseHFPre(nil, c.PreTokenizer)
			if err != nil {
				t.Fatal(err)
			}
			if c.RegexUnsupported != "" && !strings.Contains(h.refusal, "does not compile") {
				t.Errorf("refusal %q, want one for the regex that does not compile", h.refusal)
			}
			got := equivalentPre(h, c.IgnoreMerges, texts)
			want := preKind(c.TableName)
			if c.SplitDiffers != "" || c.RegexUnsupported != "" {
				want = ""
			}
			if got != want {
				t.Errorf("%s: equivalent %q, want %q", c.RegexFrom, got, want)
			}
			t.Logf("table %q → %q on %d texts (%s)", c.TableName, got, len(texts), c.RegexFrom)
		})
	}
}

// TestUnknownHashPre converts a trimmed tokenizer.json (no hash of the
// table names it) with each pre_tokenizer: the name written is the
// equivalent one and PreNote says so; a Split regex edited by one
// quantifier, or one tfconv has no rules for, is refused naming the regex.
func TestUnknownHashPre(t *testing.T) {
	base, err := os.ReadFile(filepath.Join("..", "testdata", "arch", "qwen2", "hf", "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	with := func(pre string, ignoreMerges bool) (*Tokenizer, error) {
		var tj map[string]any
		if err := json.Unmarshal(base, &tj); err != nil {
			t.Fatal(err)
		}
		tj["pre_tokenizer"] = json.RawMessage(pre)
		tj["model"].(map[string]any)["ignore_merges"] = ignoreMerges
		b, err := json.Marshal(tj)
		if err != nil {
			t.Fatal(err)
		}
		return FromSource(memSource{files: map[string][]byte{"tokenizer.json": b}})
	}
	cs := map[string]preCase{}
	for _, c := range readPreCases(t) {
		cs[c.TableName] = c
	}
	for _, name := range []string{"llama-bpe", "qwen2", "qwen35", "seed-coder", "starcoder"} {
		c := cs[name]
		tok, err := with(string(c.PreTokenizer), c.IgnoreMerges)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if tok.Pre() != name || !strings.Contains(tok.PreNote(), "test texts") {
			t.Errorf("%s: pre %q, note %q", name, tok.Pre(), tok.PreNote())
		}
		if h, _ := tok.ChkHash(); preForHash(h) != "" {
			t.Errorf("%s: the trimmed vocabulary's hash is in the table", name)
		}
	}
	// LLaMA 3's tokenizer.json without ignore_merges splits as it does
	// but merges as DBRX's: the name is dbrx's kind.
	if tok, err := with(string(cs["llama-bpe"].PreTokenizer), false); err != nil || tok.Pre() != "dbrx" {
		t.Errorf("llama-bpe regex, ignore_merges false: %v, %v", tok, err)
	}
	var llama3 struct {
		Pretokenizers []struct {
			Pattern struct{ Regex string } `json:"pattern"`
		} `json:"pretokenizers"`
	}
	if err := json.Unmarshal(cs["llama-bpe"].PreTokenizer, &llama3); err != nil {
		t.Fatal(err)
	}
	orig := llama3.Pretokenizers[0].Pattern.Regex
	for _, edited := range []string{
		strings.Replace(orig, `\p{N}{1,3}`, `\p{N}{1,4}`, 1),
		strings.Replace(orig, `(?i:'s|'t|'re|'ve|'m|'ll|'d)|`, `(?i:'s|'t|'re|'ve|'m|'ll)|`, 1),
		strings.Replace(orig, `\s*[\r\n]+|`, ``, 1),
	} {
		if edited == orig {
			t.Fatalf("the edit left %q unchanged", orig)
		}
		var pre map[string]any
		if err := json.Unmarshal(cs["llama-bpe"].PreTokenizer, &pre); err != nil {
			t.Fatal(err)
		}
		pre["pretokenizers"].([]any)[0].(map[string]any)["pattern"] = map[string]any{"Regex": edited}
		b, err := json.Marshal(pre)
		if err != nil {
			t.Fatal(err)
		}
		_, err = with(string(b), true)
		var fe *tensor.FormatError
		if !errors.As(err, &fe) || !fe.Unsupported || !strings.Contains(err.Error(), strconv.Quote(edited)) {
			t.Errorf("edited regex %q: %v, want a refusal naming it", edited, err)
		}
	}
	for _, name := range []string{"gpt-4o", "tekken"} {
		c := cs[name]
		if _, err := with(string(c.PreTokenizer), c.IgnoreMerges); err == nil || !strings.Contains(err.Error(), "no llama.cpp pre-tokenizer splits as this one") {
			t.Errorf("%s: %v, want a refusal", name, err)
		}
	}
	// A prefix space no llama.cpp BPE pre-tokenizer adds.
	if _, err := with(`{"type":"ByteLevel","add_prefix_space":true,"trim_offsets":true,"use_regex":true}`, false); err == nil || !strings.Contains(err.Error(), "add_prefix_space") {
		t.Errorf("add_prefix_space: %v, want a refusal", err)
	}
}
