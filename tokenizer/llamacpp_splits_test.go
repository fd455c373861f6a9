package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
)

// llamaSplits is testdata/tokenizer/llamacpp_splits.json, written by
// gen_llamacpp_splits.py with llama.cpp's own splitting (split_dump).
type llamaSplits struct {
	Texts []string `json:"texts"`
	Names map[string]struct {
		Type         string `json:"type"`
		IgnoreMerges bool   `json:"ignore_merges"`
	} `json:"names"`
	Types map[string]struct {
		Regexes []string   `json:"regexes"`
		Splits  [][]string `json:"splits"`
	} `json:"types"`
}

// TestPreSplitsMatchLlamaCpp: for every tokenizer.ggml.pre name llama.cpp
// d32676d7 knows, tfconv's rules (when it has them) split the converter's
// check text, the equivalence test texts and llama.cpp's GPT-2 test texts
// as llama.cpp's unicode_regex_split does with that name's regex list, and
// take a word that is a token whole exactly when llama.cpp does
// (ignore_merges). A name tfconv lacks whose type splits and merges as one
// tfconv has on every text must be an alias of it.
func TestPreSplitsMatchLlamaCpp(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "testdata", "tokenizer", "llamacpp_splits.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ls llamaSplits
	if err := json.Unmarshal(b, &ls); err != nil {
		t.Fatal(err)
	}
	same := func(p *preTokenizer, splits [][]string) int {
		for i, s := range ls.Texts {
			got := p.split(s)
			if len(got) == 0 && len(splits[i]) == 0 {
				continue
			}
			if !slices.Equal(got, splits[i]) {
				return i
			}
		}
		return -1
	}
	var names []string
	for n := range ls.Names {
		names = append(names, n)
	}
	sort.Strings(names)
	checked := 0
	for _, name := range names {
		ln := ls.Names[name]
		ty, ok := ls.Types[ln.Type]
		if !ok {
			continue // llama.cpp's own split fails or is not regex-driven (AFMOE, KIMI_K2)
		}
		if p := preTokenizerFor(name); p != nil {
			checked++
			if i := same(p, ty.Splits); i >= 0 {
				t.Errorf("%s (%s): text %d %q: tfconv %q, llama.cpp %q", name, ln.Type, i, ls.Texts[i], p.split(ls.Texts[i]), ty.Splits[i])
			}
			if mergesIgnored(name) != ln.IgnoreMerges {
				t.Errorf("%s: ignore_merges %v, llama.cpp %v", name, mergesIgnored(name), ln.IgnoreMerges)
			}
			continue
		}
		for _, k := range preKinds {
			if mergesIgnored(k) == ln.IgnoreMerges && same(preTokenizerFor(k), ty.Splits) < 0 {
				t.Errorf("%s (%s) splits and merges as %q on every text but is not its alias", name, ln.Type, k)
			}
		}
	}
	t.Logf("%d of llama.cpp's %d names checked against its splitting of %d texts", checked, len(names), len(ls.Texts))
}
