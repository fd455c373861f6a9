package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// Stream turns token ids into text as they are generated. A character
// whose bytes are spread over several tokens (SentencePiece's <0xXX>
// byte-fallback pieces, byte-level BPE pieces of a multi-byte character)
// is returned once its last byte has arrived, so every piece of text Add
// returns is whole characters. A byte that belongs to no character (a
// continuation byte alone, a sequence the generation cut short) becomes
// U+FFFD, as in transformers' decoding (from_utf8_lossy) and in
// encoding/json's output of the text, byte by byte as the latter does;
// otherwise the pieces add up to Decode of all the ids.
type Stream struct {
	t    *Tokenizer
	ids  []int
	done int // bytes of Decode(ids) already returned
}

// NewStream starts a Stream over this tokenizer's vocabulary.
func (t *Tokenizer) NewStream() *Stream { return &Stream{t: t} }

// Add takes the next token and returns the text it completes, "" when it
// is a control token or the first bytes of a character.
func (s *Stream) Add(id int) (string, error) {
	s.ids = append(s.ids, id)
	// Decode again from the first id: a token's text can depend on its
	// place (SentencePiece drops the first token's leading space).
	text, err := s.t.Decode(s.ids)
	if err != nil {
		s.ids = s.ids[:len(s.ids)-1]
		return "", err
	}
	if s.t.model == WordPiece {
		// Its clean-up removes a space before punctuation that arrives
		// later, so earlier text is not final (WordPiece models are
		// encoder-only: nothing streams through here in practice).
		return "", nil
	}
	return s.take(text[:completeUTF8(text)]), nil
}

// Flush returns what Add held back: the bytes of a character that the
// generation ended in the middle of, each as U+FFFD.
func (s *Stream) Flush() (string, error) {
	text, err := s.t.Decode(s.ids)
	if err != nil {
		return "", err
	}
	return s.take(text), nil
}

// take returns the part of text after what was already returned. The text
// of the first n ids is a prefix of the text of more (each token appends its
// piece; only the first token's place matters).
func (s *Stream) take(text string) string {
	if len(text) <= s.done {
		return ""
	}
	out := text[s.done:]
	s.done = len(text)
	return validUTF8(out)
}

// validUTF8 replaces each byte of s that is not part of a UTF-8 character
// with U+FFFD.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		if r == utf8.RuneError && n == 1 {
			b.WriteString("\uFFFD")
		} else {
			b.WriteString(s[:n])
		}
		s = s[n:]
	}
	return b.String()
}

// completeUTF8 returns the length of s without a trailing partial UTF-8
// sequence: a lead byte followed by fewer continuation bytes than it
// announces. A byte that cannot begin a character is not held back, as no
// later byte would complete it.
func completeUTF8(s string) int {
	for i := len(s) - 1; i >= 0 && i >= len(s)-utf8.UTFMax+1; i-- {
		if utf8.RuneStart(s[i]) {
			if !utf8.FullRuneInString(s[i:]) {
				return i
			}
			break
		}
	}
	return len(s)
}
