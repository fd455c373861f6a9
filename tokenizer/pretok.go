package tokenizer

import (
	"slices"
	"unicode"
	"unicode/utf8"
)

// text is the input of a pre-tokenizer: the code points of a string with
// their byte offsets and classes. Bytes that are not valid UTF-8 become one
// code point each (U+FFFD, class symbol) but keep their original byte, so a
// word is always a byte slice of the input.
type text struct {
	s   string
	rs  []rune
	off []int // byte offset of rs[i]; off[len(rs)] == len(s)
	cls []uint8
}

func newText(s string) *text {
	t := &text{s: s}
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		t.rs = append(t.rs, r)
		t.off = append(t.off, i)
		t.cls = append(t.cls, classOf(r))
		i += n
	}
	t.off = append(t.off, len(s))
	return t
}

// span is a range [a, b) of code point indexes.
type span struct{ a, b int }

// rule splits one span into consecutive spans that cover it. llama.cpp runs
// a list of regular expressions one after the other, each over the pieces the
// previous one left; text between two matches stays a piece of its own.
type rule func(t *text, sp span, out []span) []span

// preTokenizer is the split applied to raw text before BPE: llama.cpp's
// rules for a tokenizer.ggml.pre name, or (hf set) a tokenizer.json's own
// pre_tokenizer, as the tokenizers library runs it.
type preTokenizer struct {
	name  string
	rules []rule
	hf    *hfPre
}

func (p *preTokenizer) split(s string) []string {
	if p.hf != nil {
		return p.hf.split(s)
	}
	t := newText(s)
	spans := []span{{0, len(t.rs)}}
	var next []span
	for _, r := range p.rules {
		next = next[:0]
		for _, sp := range spans {
			if sp.a < sp.b {
				next = r(t, sp, next)
			}
		}
		spans, next = next, spans
	}
	words := make([]string, 0, len(spans))
	for _, sp := range spans {
		if sp.a < sp.b {
			words = append(words, s[t.off[sp.a]:t.off[sp.b]])
		}
	}
	return words
}

// preAliases are tokenizer.ggml.pre names that llama.cpp (d32676d7,
// src/llama-vocab.cpp) gives the same split regexes and the same merge rule
// (ignore_merges) as the name they map to: tfconv tokenizes them alike.
var preAliases = map[string]string{
	"phi-2": "gpt-2", "jina-es": "gpt-2", "jina-de": "gpt-2", "gigachat": "gpt-2", "jina-v1-en": "gpt-2",
	"jina-v2-es": "gpt-2", "jina-v2-de": "gpt-2", "jina-v2-code": "gpt-2", "roberta-bpe": "gpt-2",
	"mpt": "gpt-2", "olmo": "gpt-2", "jais": "gpt-2", "a.x-4.0": "gpt-2", "mellum": "gpt-2", "modern-bert": "gpt-2",
	"exaone4": "gpt-2", "trillion": "gpt-2", "granite-docling": "gpt-2",
	"llama3": "llama-bpe", "llama-v3": "llama-bpe", "falcon3": "llama-bpe", "falcon-h1": "llama-bpe", "pixtral": "llama-bpe",
	"midm-2.0": "llama-bpe", "lfm2": "llama-bpe", "jina-v5-nano": "llama-bpe",
	"smaug-bpe": "dbrx", "chatglm-bpe": "dbrx", "glm4": "dbrx",
	"llama4": "gpt-4o", "kanana2": "gpt-4o", "talkie": "gpt-4o", "minimax-m2": "gpt-4o",
	"bailingmoe": "qwen2", "bailingmoe2": "qwen2", "llada-moe": "qwen2", "minicpm5": "llama-bpe",
	"stablelm2": "qwen2", "megrez": "qwen2", "deepseek-r1-qwen": "qwen2", "kormo": "qwen2", "f2llmv2": "qwen2",
	"hunyuan": "qwen2", "solar-open": "qwen2", "grok-2": "qwen2",
	"refact": "starcoder", "command-r": "starcoder", "smollm": "starcoder", "codeshell": "starcoder", "exaone": "starcoder",
	"minerva-7b": "starcoder", "mellum2": "starcoder",
	"poro-chat": "bloom", "gpt3-finnish": "bloom",
	"": "default",
}

// preKinds are the names preTokenizerFor implements, one per kind of
// splitting (aliases aside), in the order equivalentPre tries them.
var preKinds = []string{"gpt-2", "llama-bpe", "dbrx", "qwen2", "qwen35", "gpt-4o", "tekken", "seed-coder", "exaone-moe", "kimi-k2", "starcoder", "falcon", "deepseek-llm", "deepseek-coder", "bloom", "viking", "default"}

// preKind is the name in preKinds that tokenizes as name does, or "".
func preKind(name string) string {
	if a, ok := preAliases[name]; ok {
		name = a
	}
	if slices.Contains(preKinds, name) {
		return name
	}
	return ""
}

// mergesIgnored reports whether llama.cpp takes a word that is a token as
// it is, before any merge, for pre-tokenizer name (ignore_merges).
func mergesIgnored(name string) bool {
	k := preKind(name)
	return k == "llama-bpe" || k == "tekken"
}

// preTokenizerFor returns the pre-tokenizer llama.cpp uses for a
// tokenizer.ggml.pre name, or nil when it is not supported.
func preTokenizerFor(name string) *preTokenizer {
	kind := preKind(name)
	var rules []rule
	switch kind {
	case "default":
		rules = []rule{
			matchRule(runOf(isPunctOrMathy)),
			gpt2Rule,
			matchRule(runOf(func(c rune, cl uint8) bool { return cl == clsNumber })),
			matchRule(threeASCIIDigits),
		}
	case "gpt-2":
		rules = []rule{gpt2Rule}
	case "starcoder":
		rules = []rule{matchRule(oneOf(func(c rune, cl uint8) bool { return cl == clsNumber })), gpt2Rule}
	case "falcon":
		rules = []rule{
			matchRule(runOf(func(c rune, cl uint8) bool { return isPunctOrMathy(c, cl) || c == '`' })),
			gpt2Rule,
			matchRule(threeASCIIDigits),
		}
	case "llama-bpe", "dbrx":
		rules = []rule{llama3Rule(3, false)}
	case "qwen2":
		rules = []rule{llama3Rule(1, false)}
	case "qwen35":
		rules = []rule{llama3Rule(1, true)}
	case "gpt-4o", "tekken", "seed-coder", "exaone-moe", "kimi-k2":
		rules = []rule{regexRule(llamaRegexes[kind])}
	case "deepseek-coder":
		rules = []rule{
			matchRule(oneOf(isCRLF)),
			matchRule(optSpaceThenRun(func(c rune, cl uint8) bool { return cl == clsLetter })),
			matchRule(optSpaceThenRun(func(c rune, cl uint8) bool { return cl == clsPunct })),
			matchRule(runOf(isDeepseekCJK)),
			matchRule(oneOf(func(c rune, cl uint8) bool { return cl == clsNumber })),
		}
	case "deepseek-llm":
		rules = []rule{
			matchRule(oneOf(isCRLF)),
			matchRule(optSpaceThenRun(func(c rune, cl uint8) bool { return cl != clsSpace && deepseekLetters.has(c) })),
			matchRule(optSpaceThenRun(func(c rune, cl uint8) bool { return cl != clsSpace && deepseekPunct.has(c) })),
			trailingSpaceRule,
			matchRule(runOf(isDeepseekCJK)),
			matchRule(runOf(func(c rune, cl uint8) bool { return cl == clsNumber })),
		}
	case "bloom":
		rules = []rule{matchRule(bloomWord)}
	case "viking":
		rules = []rule{matchRule(bloomWord), matchRule(oneOf(func(c rune, cl uint8) bool { return cl == clsNumber }))}
	default:
		return nil
	}
	return &preTokenizer{name: name, rules: rules}
}

// llamaRegexes are the split regexes llama.cpp (d32676d7,
// src/llama-vocab.cpp) gives these pre-tokenizers, in the form it runs them
// (an upper- or lower-case letter is a letter not a-z or not A-Z): regexp2
// runs them as llama.cpp does on every text of llamacpp_splits.json
// (TestPreSplitsMatchLlamaCpp). GPT-4o's and Tekken's differ from the
// tokenizer.json originals, which use \p{Lu} and \p{Ll}.
var llamaRegexes = map[string]string{
	"gpt-4o": `[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|` +
		`[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|` +
		`\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
	"tekken": `[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*|` +
		`\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
	"seed-coder": `(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+`,
	// Kimi K2's pattern (tokenization_kimi.py, TikTokenTokenizer.pat_str),
	// which llama.cpp runs by hand-written code: its classes "letters but
	// not Han" (Rust's && intersection) written as a look-ahead excluding
	// Han before each letter. Checked against tiktoken's ids
	// (TestKimiK2MatchesTiktoken).
	"kimi-k2": `\p{Han}+|` +
		`[^\r\n\p{L}\p{N}]?(?:(?!\p{Han})[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}])*(?:(?!\p{Han})[\p{Ll}\p{Lm}\p{Lo}\p{M}])+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|` +
		`[^\r\n\p{L}\p{N}]?(?:(?!\p{Han})[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}])+(?:(?!\p{Han})[\p{Ll}\p{Lm}\p{Lo}\p{M}])*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|` +
		`\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
	"exaone-moe": `(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?(?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]?|\s*[\r\n]|\s+(?!\S)|\s+`,
}

// regexRule splits by a regex run by regexp2 (look-ahead, \p{…}), with
// matchRule's semantics; an empty match cuts nothing.
func regexRule(pat string) rule {
	find, err := compileHFRegex(pat)
	if err != nil {
		panic(err) // llamaRegexes are constants, compiled by the tests
	}
	return func(t *text, sp span, out []span) []span {
		gap := sp.a
		for _, m := range find(t.rs[sp.a:sp.b]) {
			a, b := sp.a+m[0], sp.a+m[1]
			if a == b {
				continue
			}
			if gap < a {
				out = append(out, span{gap, a})
			}
			out = append(out, span{a, b})
			gap = b
		}
		if gap < sp.b {
			out = append(out, span{gap, sp.b})
		}
		return out
	}
}

// matcher returns the length in code points of the match of a pattern at
// position i of the span ending at end, or 0 for none.
type matcher func(t *text, i, end int) int

// matchRule turns a pattern into a rule with regex search semantics: the
// leftmost match, then the next one after it, text in between kept as is.
func matchRule(m matcher) rule {
	return func(t *text, sp span, out []span) []span {
		gap := sp.a
		for i := sp.a; i < sp.b; {
			n := m(t, i, sp.b)
			if n <= 0 {
				i++
				continue
			}
			if gap < i {
				out = append(out, span{gap, i})
			}
			out = append(out, span{i, i + n})
			i += n
			gap = i
		}
		if gap < sp.b {
			out = append(out, span{gap, sp.b})
		}
		return out
	}
}

type classPred func(c rune, cl uint8) bool

func runOf(p classPred) matcher {
	return func(t *text, i, end int) int {
		j := i
		for j < end && p(t.rs[j], t.cls[j]) {
			j++
		}
		return j - i
	}
}

func oneOf(p classPred) matcher {
	return func(t *text, i, end int) int {
		if p(t.rs[i], t.cls[i]) {
			return 1
		}
		return 0
	}
}

// optSpaceThenRun is \s?X+ : one optional white space, then a run of X.
func optSpaceThenRun(p classPred) matcher {
	run := runOf(p)
	return func(t *text, i, end int) int {
		if t.cls[i] == clsSpace && i+1 < end {
			if n := run(t, i+1, end); n > 0 {
				return n + 1
			}
		}
		return run(t, i, end)
	}
}

// isPunctOrMathy is [\p{P}\$\+<=>\^~\|].
func isPunctOrMathy(c rune, cl uint8) bool {
	if cl == clsPunct {
		return true
	}
	switch c {
	case '$', '+', '<', '=', '>', '^', '~', '|':
		return true
	}
	return false
}

func isCRLF(c rune, _ uint8) bool { return c == '\r' || c == '\n' }

// isDeepseekCJK is [一-龥ࠀ-一가-퟿], white space aside: llama.cpp runs such
// a regex with every white space past ASCII turned into \v (U+3000 and
// U+2003 are in the range, and are not matched).
func isDeepseekCJK(c rune, cl uint8) bool {
	return cl != clsSpace && ((c >= 0x4E00 && c <= 0x9FA5) || (c >= 0x0800 && c <= 0x4E00) || (c >= 0xAC00 && c <= 0xD7FF))
}

// threeASCIIDigits is [0-9][0-9][0-9].
func threeASCIIDigits(t *text, i, end int) int {
	if i+3 > end {
		return 0
	}
	for j := i; j < i+3; j++ {
		if t.rs[j] < '0' || t.rs[j] > '9' {
			return 0
		}
	}
	return 3
}

// bloomWord is " ?[^(\s|.,!?…。，、।۔،)]+".
func bloomWord(t *text, i, end int) int {
	in := func(j int) bool {
		if t.cls[j] == clsSpace {
			return false
		}
		switch t.rs[j] {
		case '(', '|', '.', ',', '!', '?', '…', '。', '，', '、', '।', '۔', '،', ')':
			return false
		}
		return true
	}
	j := i
	if t.rs[j] == ' ' && j+1 < end && in(j+1) {
		j++
	}
	for j < end && in(j) {
		j++
	}
	return j - i
}

// trailingSpaceRule is \s+$ : the white space that ends the span.
func trailingSpaceRule(t *text, sp span, out []span) []span {
	j := sp.b
	for j > sp.a && t.cls[j-1] == clsSpace {
		j--
	}
	if j > sp.a {
		out = append(out, span{sp.a, j})
	}
	if j < sp.b {
		out = append(out, span{j, sp.b})
	}
	return out
}

// gpt2Rule is GPT-2's pattern
//
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// written out by hand: Go's regexp has no look-ahead, and a scanner over
// classes is faster anyway.
func gpt2Rule(t *text, sp span, out []span) []span {
	end := sp.b
	cls := func(i int) uint8 {
		if i < end {
			return t.cls[i]
		}
		return 0
	}
	prev := sp.a
	emit := func(i int) {
		if i > prev {
			out = append(out, span{prev, i})
		}
		prev = i
	}
	for pos := sp.a; pos < end; {
		c := t.rs[pos]
		if n := contraction(t, pos, end, false); n > 0 {
			pos += n
			emit(pos)
			continue
		}
		c2 := cls(pos)
		if c == ' ' {
			c2 = cls(pos + 1)
		}
		switch {
		case c2 == clsLetter, c2 == clsNumber:
			want := c2
			if c == ' ' {
				pos++
			}
			for cls(pos) == want {
				pos++
			}
			emit(pos)
			continue
		case c2 != 0 && c2 != clsSpace:
			if c == ' ' {
				pos++
			}
			for k := cls(pos); k != 0 && k != clsSpace && k != clsLetter && k != clsNumber; k = cls(pos) {
				pos++
			}
			emit(pos)
			continue
		}
		n := 0
		for cls(pos+n) == clsSpace {
			n++
		}
		switch {
		case n > 1 && pos+n < end: // \s+(?!\S): leave the last space to the next word
			pos += n - 1
		case n > 0:
			pos += n
		default:
			pos++
		}
		emit(pos)
	}
	return out
}

// contraction matches 's 't 're 've 'm 'll 'd at i (any case if fold).
func contraction(t *text, i, end int, fold bool) int {
	if t.rs[i] != '\'' || i+1 >= end {
		return 0
	}
	low := func(r rune) rune {
		if fold {
			return unicode.ToLower(r)
		}
		return r
	}
	switch low(t.rs[i+1]) {
	case 's', 't', 'm', 'd':
		return 2
	}
	if i+2 < end {
		a, b := low(t.rs[i+1]), low(t.rs[i+2])
		if (a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l') {
			return 3
		}
	}
	return 0
}

// llama3Rule is LLaMA 3's pattern (and, with maxDigits 1, Qwen2's)
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// With marks, combining marks count as letters (\p{L} above becomes
// [\p{L}\p{M}]): Qwen3.5's pattern, with maxDigits 1.
func llama3Rule(maxDigits int, marks bool) rule {
	letter := func(k uint8) bool { return k == clsLetter || (marks && k == clsMark) }
	return func(t *text, sp span, out []span) []span {
		end := sp.b
		cls := func(i int) uint8 {
			if i < end {
				return t.cls[i]
			}
			return 0
		}
		at := func(i int) rune {
			if i < end {
				return t.rs[i]
			}
			return -1
		}
		prev := sp.a
		emit := func(i int) {
			if i > prev {
				out = append(out, span{prev, i})
			}
			prev = i
		}
		for pos := sp.a; pos < end; {
			c, k := t.rs[pos], t.cls[pos]
			if n := contraction(t, pos, end, true); n > 0 {
				pos += n
				emit(pos)
				continue
			}
			if !(c == '\r' || c == '\n' || k == clsNumber) && (letter(k) || letter(cls(pos+1))) {
				pos++
				for letter(cls(pos)) {
					pos++
				}
				emit(pos)
				continue
			}
			if k == clsNumber {
				ini := pos
				for cls(pos) == clsNumber {
					pos++
					if pos-ini >= maxDigits {
						emit(pos)
						ini = pos
					}
				}
				emit(pos)
				continue
			}
			k2 := k
			if c == ' ' {
				k2 = cls(pos + 1)
			}
			if k2 != 0 && k2 != clsSpace && !letter(k2) && k2 != clsNumber {
				if c == ' ' {
					pos++
				}
				for q := cls(pos); q != 0 && q != clsSpace && !letter(q) && q != clsNumber; q = cls(pos) {
					pos++
				}
				for r := at(pos); r == '\r' || r == '\n'; r = at(pos) {
					pos++
				}
				emit(pos)
				continue
			}
			n, lastNL := 0, -1
			for cls(pos+n) == clsSpace {
				if r := t.rs[pos+n]; r == '\r' || r == '\n' {
					lastNL = pos + n + 1
				}
				n++
			}
			switch {
			case lastNL >= 0:
				pos = lastNL
			case n > 1 && pos+n < end:
				pos += n - 1
			case n > 0:
				pos += n
			default:
				pos++
			}
			emit(pos)
		}
		return out
	}
}

// runeSet is a set of code point ranges.
type runeSet [][2]rune

func (s runeSet) has(c rune) bool {
	for _, r := range s {
		if c >= r[0] && c <= r[1] {
			return true
		}
	}
	return false
}

// parseClass reads the inside of a regex character class made of single
// characters and "a-b" ranges.
func parseClass(s string) runeSet {
	rs := []rune(s)
	var set runeSet
	for i := 0; i < len(rs); i++ {
		if i+2 < len(rs) && rs[i+1] == '-' {
			set = append(set, [2]rune{rs[i], rs[i+2]})
			i += 2
			continue
		}
		set = append(set, [2]rune{rs[i], rs[i]})
	}
	return set
}

// The classes of DeepSeek LLM's pre-tokenizer, as written in its
// tokenizer.json (and llama.cpp's copy of it).
var (
	deepseekLetters = parseClass("A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-\u1f7dᾀ-ᾴᾶ-ᾼ\u1fbeῂ-ῄῆ-ῌῐ-\u1fd3ῖ-\u1fdbῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤ\u2126ℨ\u212a-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃")
	deepseekPunct   = parseClass("!-/:-~！-／：-～‘-‟　-。")
)
