package tokenizer

import (
	"strings"
	"unicode"
)

// phantomSpace marks the start of a word in llama.cpp's form of a WordPiece
// vocabulary ("▁word"); continuation pieces have no mark. HF's vocab.txt has
// it the other way round ("word", "##piece").
const phantomSpace = "▁"

// encodeWPM is BERT's tokenizer: the basic tokenizer's split, then greedy
// longest-match-first within each word.
func (t *Tokenizer) encodeWPM(s string, out []int) []int {
	for _, word := range wpmWords(s) {
		w := phantomSpace + word
		n := len(w)
		start := len(out)
		for i := 0; i < n; {
			found := false
			for j := min(n, i+t.maxLen+1); j > i; j-- {
				if id, ok := t.index[w[i:j]]; ok {
					out = append(out, id)
					i = j
					found = true
					break
				}
			}
			if !found {
				out = out[:start]
				break
			}
		}
		if len(out) == start {
			out = append(out, t.UNK)
		}
	}
	return out
}

// wpmWords is BERT's basic tokenizer: accents stripped (each code point
// replaced by the first of its canonical decomposition, combining marks
// dropped), lower-cased, control characters dropped, split at white space,
// and every punctuation mark and CJK ideograph made a word of its own.
func wpmWords(s string) []string {
	var words []string
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			words = append(words, cur.String())
			cur.Reset()
		}
	}
	for _, r := range s {
		r = nfdFirst(r)
		cl := classOf(r)
		switch {
		case cl == clsSpace:
			flush()
			continue
		case r == 0 || r == 0xFFFD || cl == clsControl:
			continue
		case cl == clsMark && unicode.Is(unicode.Mn, r):
			continue
		}
		r = unicode.ToLower(r)
		if cl == clsPunct || (r < 0x7F && cl == clsSymbol) || isCJK(r) {
			flush()
			words = append(words, string(r))
			continue
		}
		cur.WriteRune(r)
	}
	flush()
	return words
}
