package tokenizer

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/dlclark/regexp2"
)

// hfPre is a tokenizer.json pre_tokenizer run as the tokenizers library
// runs it: each step splits every piece the steps before it left. It is
// what a byte-level BPE tokenizer.json says its splitting is, read whole,
// so that equivalentPre can compare it with llama.cpp's by splitting texts.
type hfPre struct {
	steps   []hfStep
	regexes []string // the Split patterns, in order, for messages
	// refusal, when set, is a step no llama.cpp BPE pre-tokenizer has (a
	// prefix space, a normalizer other than NFC); no name is equivalent.
	refusal string
}

// hfStep finds the delimiters of one step in a piece (code point ranges,
// possibly empty) and what becomes of them.
type hfStep struct {
	find     func(rs []rune) [][2]int
	behavior string // tokenizers' SplitDelimiterBehavior
	invert   bool
}

// gpt2Pattern is the split ByteLevel makes when use_regex is on.
const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

// hfPreStep is one pre_tokenizer entry of tokenizer.json.
type hfPreStep struct {
	Type           string      `json:"type"`
	UseRegex       *bool       `json:"use_regex"`
	AddPrefixSpace bool        `json:"add_prefix_space"`
	Individual     bool        `json:"individual_digits"`
	Behavior       string      `json:"behavior"`
	Invert         bool        `json:"invert"`
	Pretokenizers  []hfPreStep `json:"pretokenizers"`
	Pattern        *struct {
		Regex  *string `json:"Regex"`
		String *string `json:"String"`
	} `json:"pattern"`
}

// parseHFPre reads a byte-level BPE tokenizer.json's normalizer and
// pre_tokenizer. A step tfconv cannot run is a refusal (the hash may still
// name the tokenizer); only unreadable JSON is an error.
func parseHFPre(normalizer, pre json.RawMessage) (*hfPre, error) {
	const file = "tokenizer.json"
	h := &hfPre{}
	h.refuse(hfNormalizerRefusal(normalizer))
	if len(pre) == 0 || string(pre) == "null" {
		return h, nil
	}
	var p hfPreStep
	if err := json.Unmarshal(pre, &p); err != nil {
		return nil, jsonErr(file, err)
	}
	list := []hfPreStep{p}
	if p.Type == "Sequence" {
		list = p.Pretokenizers
	}
	for _, q := range list {
		switch q.Type {
		case "ByteLevel":
			if q.AddPrefixSpace {
				h.refuse("ByteLevel with add_prefix_space (llama.cpp adds no space before a BPE text)")
			}
			if q.UseRegex == nil || *q.UseRegex {
				re, err := compileHFRegex(gpt2Pattern)
				if err != nil {
					return nil, err
				}
				h.steps = append(h.steps, hfStep{find: re, behavior: "Isolated"})
			}
		case "Split":
			if q.Pattern == nil || (q.Pattern.Regex == nil && q.Pattern.String == nil) {
				return nil, fmtErr(file, "pre_tokenizer", "a Split has no pattern")
			}
			pat := ""
			if q.Pattern.Regex != nil {
				pat = *q.Pattern.Regex
			} else {
				pat = regexp2.Escape(*q.Pattern.String)
			}
			h.regexes = append(h.regexes, pat)
			re, err := compileHFRegex(pat)
			if err != nil {
				h.refuse(fmt.Sprintf("regex %q does not compile here (%v)", pat, err))
				continue
			}
			h.steps = append(h.steps, hfStep{find: re, behavior: q.Behavior, invert: q.Invert})
		case "Digits":
			find := runsOf(unicode.IsNumber)
			if q.Individual {
				find = eachOf(unicode.IsNumber)
			}
			h.steps = append(h.steps, hfStep{find: find, behavior: "Isolated"})
		case "Punctuation":
			b := q.Behavior
			if b == "" {
				b = "Isolated"
			}
			h.steps = append(h.steps, hfStep{find: eachOf(isHFPunct), behavior: b})
		default:
			h.refuse(fmt.Sprintf("pre-tokenizer step %q is not read with a byte-level BPE", q.Type))
		}
	}
	for _, s := range h.steps {
		switch s.behavior {
		case "Isolated", "Removed", "MergedWithPrevious", "MergedWithNext", "Contiguous":
		default:
			h.refuse(fmt.Sprintf("split behavior %q is not read", s.behavior))
		}
	}
	return h, nil
}

// refuse records the first reason no llama.cpp name can split as h does.
func (h *hfPre) refuse(why string) {
	if h.refusal == "" {
		h.refusal = why
	}
}

// hfNormalizerRefusal is "" for a normalizer that leaves the texts
// llama.cpp is given as they are (none, or NFC: every test text is in NFC),
// else the step that does not.
func hfNormalizerRefusal(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var n struct {
		Type        string            `json:"type"`
		Normalizers []json.RawMessage `json:"normalizers"`
	}
	if json.Unmarshal(raw, &n) != nil {
		return "an unreadable normalizer"
	}
	switch n.Type {
	case "NFC":
		return ""
	case "Sequence":
		for _, m := range n.Normalizers {
			if r := hfNormalizerRefusal(m); r != "" {
				return r
			}
		}
		return ""
	}
	return fmt.Sprintf("normalizer %q (llama.cpp does not normalize a BPE text)", n.Type)
}

// compileHFRegex compiles a tokenizer.json pattern (Oniguruma syntax) with
// regexp2, which has look-ahead and \p{…} classes as Oniguruma does.
func compileHFRegex(pat string) (func([]rune) [][2]int, error) {
	re, err := regexp2.Compile(pat, regexp2.None)
	if err != nil {
		return nil, unsupportedErr("tokenizer.json", "pre_tokenizer", fmt.Sprintf("regex %q: %v", pat, err))
	}
	return func(rs []rune) [][2]int {
		var out [][2]int
		m, err := re.FindRunesMatch(rs)
		for err == nil && m != nil {
			out = append(out, [2]int{m.Index, m.Index + m.Length})
			m, err = re.FindNextMatch(m)
		}
		return out
	}, nil
}

func runsOf(p func(rune) bool) func([]rune) [][2]int {
	return func(rs []rune) [][2]int {
		var out [][2]int
		for i := 0; i < len(rs); {
			if !p(rs[i]) {
				i++
				continue
			}
			j := i
			for j < len(rs) && p(rs[j]) {
				j++
			}
			out = append(out, [2]int{i, j})
			i = j
		}
		return out
	}
}

func eachOf(p func(rune) bool) func([]rune) [][2]int {
	return func(rs []rune) [][2]int {
		var out [][2]int
		for i, r := range rs {
			if p(r) {
				out = append(out, [2]int{i, i + 1})
			}
		}
		return out
	}
}

// isHFPunct is the tokenizers library's punctuation: ASCII punctuation or
// a Unicode P character.
func isHFPunct(r rune) bool {
	return (r < 128 && unicode.IsPrint(r) && !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != ' ') || unicode.IsPunct(r)
}

// split is the pieces text is cut into.
func (h *hfPre) split(text string) []string {
	pieces := [][]rune{[]rune(text)}
	for _, s := range h.steps {
		var next [][]rune
		for _, p := range pieces {
			next = append(next, s.apply(p)...)
		}
		pieces = next
	}
	out := make([]string, 0, len(pieces))
	for _, p := range pieces {
		if len(p) > 0 {
			out = append(out, string(p))
		}
	}
	return out
}

// apply cuts one piece at the step's delimiters, which become pieces of
// their own, join a neighbour or go, as the behavior says.
func (s hfStep) apply(rs []rune) [][]rune {
	type seg struct {
		a, b  int
		match bool
	}
	var segs []seg
	at := 0
	for _, m := range s.find(rs) {
		if m[0] > at {
			segs = append(segs, seg{at, m[0], false})
		}
		if m[1] > m[0] {
			segs = append(segs, seg{m[0], m[1], true})
		}
		at = m[1]
	}
	if at < len(rs) {
		segs = append(segs, seg{at, len(rs), false})
	}
	if s.invert {
		for i := range segs {
			segs[i].match = !segs[i].match
		}
	}
	var out []seg
	switch s.behavior {
	case "Isolated":
		out = segs
	case "Removed":
		for _, g := range segs {
			if !g.match {
				out = append(out, g)
			}
		}
	case "Contiguous":
		for _, g := range segs {
			if n := len(out); n > 0 && g.match && out[n-1].match {
				out[n-1].b = g.b
				continue
			}
			out = append(out, g)
		}
	case "MergedWithPrevious":
		prevMatch := false
		for _, g := range segs {
			if n := len(out); n > 0 && g.match && !prevMatch {
				out[n-1].b = g.b
			} else {
				out = append(out, g)
			}
			prevMatch = g.match
		}
	case "MergedWithNext":
		nextMatch := false
		for i := len(segs) - 1; i >= 0; i-- {
			g := segs[i]
			if n := len(out); n > 0 && g.match && !nextMatch {
				out[n-1].a = g.a
			} else {
				out = append(out, g)
			}
			nextMatch = g.match
		}
		slices.Reverse(out)
	}
	pieces := make([][]rune, len(out))
	for i, g := range out {
		pieces[i] = rs[g.a:g.b]
	}
	return pieces
}

// preTestTexts are the texts equivalentPre splits both ways: the
// converter's check text, then pre_test_texts.txt (texts separated by
// llama.cpp's "\n__ggml_vocab_test__\n" lines): the chat, code and
// multilingual shapes a tokenizer meets, and the white-space, digit and
// contraction cases where the known pre-tokenizers differ. Every text is
// in NFC.
var preTestTexts = append([]string{chkText}, strings.Split(strings.TrimSuffix(preTestFile, "\n__ggml_vocab_test__\n"), "\n__ggml_vocab_test__\n")...)

//go:embed pre_test_texts.txt
var preTestFile string

// equivalentPre is the first name of preKinds whose splitting is the same
// as h's on every test text, with the same merge rule (ignoreMerges, the
// tokenizer.json model's ignore_merges); "" when none is.
func equivalentPre(h *hfPre, ignoreMerges bool, texts []string) string {
	if h.refusal != "" {
		return ""
	}
	want := make([][]string, len(texts))
	for i, s := range texts {
		want[i] = h.split(s)
	}
	for _, name := range preKinds {
		if name == "default" || mergesIgnored(name) != ignoreMerges {
			continue
		}
		p := preTokenizerFor(name)
		same := true
		for i, s := range texts {
			if !slices.Equal(p.split(s), want[i]) {
				same = false
				break
			}
		}
		if same {
			return name
		}
	}
	return ""
}

// describe names h's splitting for a refusal.
func (h *hfPre) describe() string {
	var parts []string
	for _, r := range h.regexes {
		parts = append(parts, fmt.Sprintf("%q", r))
	}
	s := "split regexes " + strings.Join(parts, ", ")
	if len(parts) == 0 {
		s = "no split regex"
	}
	if h.refusal != "" {
		s += "; " + h.refusal
	}
	return s
}
