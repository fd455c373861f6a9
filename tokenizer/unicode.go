package tokenizer

import (
	"sort"
	"unicode"
	"unicode/utf8"
)

// Character classes used by the pre-tokenizers. They follow the Unicode
// general categories the way llama.cpp's unicode tables do (\p{L}, \p{N},
// \p{P}, ...), with \s being Unicode White_Space (which is what llama.cpp's
// "is_whitespace" flag and Python's str.isspace agree on).
const (
	clsLetter = 1 << iota
	clsNumber
	clsPunct
	clsSymbol
	clsMark
	clsControl
	clsSpace
	clsOther // unassigned, private use, separators that are not space
)

// asciiClass caches the class of the 128 ASCII code points: they are most of
// every text, and the unicode package's range tables are slow for them.
var asciiClass [128]uint8

func init() {
	for r := rune(0); r < 128; r++ {
		asciiClass[r] = classOfSlow(r)
	}
}

func classOf(r rune) uint8 {
	if r >= 0 && r < 128 {
		return asciiClass[r]
	}
	return classOfSlow(r)
}

func classOfSlow(r rune) uint8 {
	switch {
	case isSpace(r):
		return clsSpace
	case unicode.IsLetter(r):
		return clsLetter
	case unicode.IsNumber(r):
		return clsNumber
	case unicode.IsPunct(r):
		return clsPunct
	case unicode.IsSymbol(r):
		return clsSymbol
	case unicode.IsMark(r):
		return clsMark
	case unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs):
		return clsControl
	}
	return clsOther
}

// isSpace is Unicode White_Space: \t \n \v \f \r, space, U+0085, U+00A0,
// U+1680, U+2000–U+200A, U+2028, U+2029, U+202F, U+205F, U+3000.
func isSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0x85, 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000:
		return true
	}
	return r >= 0x2000 && r <= 0x200A
}

// nfdFirst returns the first code point of r's canonical decomposition: the
// base letter of an accented letter (é → e), the leading jamo of a Hangul
// syllable, r itself when it does not decompose. This is the accent stripping
// of BERT's basic tokenizer as llama.cpp does it (the combining marks that
// full NFD would produce are exactly what BERT then drops).
func nfdFirst(r rune) rune {
	const sBase, sCount, nCount = 0xAC00, 11172, 588
	if r >= sBase && r < sBase+sCount {
		return 0x1100 + (r-sBase)/nCount
	}
	u := uint32(r)
	i := sort.Search(len(nfdBase), func(i int) bool { return nfdBase[i].hi >= u })
	if i < len(nfdBase) && nfdBase[i].lo <= u {
		return rune(nfdBase[i].base)
	}
	return r
}

// isCJK reports the CJK ideograph blocks that BERT splits into single
// characters (the same ranges as HF's _is_chinese_char, including its
// 0x2B920 lower bound).
func isCJK(r rune) bool {
	return (r >= 0x4E00 && r <= 0x9FFF) ||
		(r >= 0x3400 && r <= 0x4DBF) ||
		(r >= 0x20000 && r <= 0x2A6DF) ||
		(r >= 0x2A700 && r <= 0x2B73F) ||
		(r >= 0x2B740 && r <= 0x2B81F) ||
		(r >= 0x2B920 && r <= 0x2CEAF) ||
		(r >= 0xF900 && r <= 0xFAFF) ||
		(r >= 0x2F800 && r <= 0x2FA1F)
}

// byteToRune is GPT-2's bytes_to_unicode: the printable Latin-1 bytes map to
// themselves, the other 68 bytes to U+0100.. in order, so that every byte
// string becomes a printable string and back.
var (
	byteToRune [256]rune
	runeToByte = map[rune]byte{}
)

func init() {
	n := rune(0)
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			byteToRune[b] = rune(b)
		} else {
			byteToRune[b] = 256 + n
			n++
		}
		runeToByte[byteToRune[b]] = byte(b)
	}
}

// byteEncode maps raw bytes to GPT-2's printable byte-level alphabet.
func byteEncode(s string) string {
	buf := make([]byte, 0, len(s)*2)
	for i := 0; i < len(s); i++ {
		buf = utf8.AppendRune(buf, byteToRune[s[i]])
	}
	return string(buf)
}

// byteDecode is the inverse of byteEncode; runes outside the alphabet (added
// tokens written in plain text) are kept as their UTF-8 bytes.
func byteDecode(s string) string {
	buf := make([]byte, 0, len(s))
	for _, r := range s {
		if b, ok := runeToByte[r]; ok {
			buf = append(buf, b)
		} else {
			buf = utf8.AppendRune(buf, r)
		}
	}
	return string(buf)
}
