package tokenizer

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestStreamWholeCharacters feeds a Stream the tokens of text whose
// characters are split over several tokens — SentencePiece byte-fallback
// pieces (<0xC3><0xA9> for "é") and byte-level BPE pieces ("Ã" "©") — and
// checks that each piece it returns is whole characters, that a character's
// first bytes return nothing, and that the pieces add up to Decode's text.
func TestStreamWholeCharacters(t *testing.T) {
	t.Parallel()
	const text = "café 日本 🙂 ok"
	for _, dir := range []string{"../testdata/arch/mistral/hf", "../testdata/arch/qwen2/hf"} {
		tk, err := LoadFile(dir)
		if err != nil {
			t.Fatal(err)
		}
		ids, err := tk.Encode(text, EncodeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, tk.EOS) // a control token adds no text
		want, _ := tk.Decode(ids)
		s := tk.NewStream()
		var got strings.Builder
		held := 0
		for i, id := range ids {
			piece, err := s.Add(id)
			if err != nil {
				t.Fatal(err)
			}
			if !utf8.ValidString(piece) {
				t.Errorf("%s: token %d (%q) gives %q, not whole characters", dir, i, tk.Piece(id), piece)
			}
			if piece == "" {
				held++
			}
			got.WriteString(piece)
		}
		rest, _ := s.Flush()
		if rest != "" || got.String() != want || want != text {
			t.Errorf("%s: streamed %q + %q, want %q (Decode %q)", dir, got.String(), rest, text, want)
		}
		// é, 日, 本 and 🙂 take 2, 3, 3, 4 byte tokens: 8 of them hold back, and EOS.
		if held != 9 {
			t.Errorf("%s: %d tokens gave no text, want 9", dir, held)
		}
	}
	// Bytes that begin no character: a continuation byte alone, and a lead
	// byte followed by another character.
	bpe, _ := LoadFile("../testdata/arch/qwen2/hf")
	s := bpe.NewStream()
	var got strings.Builder
	for _, p := range []string{"a", "ª", "b", "æ", "c"} { // ª is byte 0xAA, æ 0xE6
		id, ok := bpe.ID(p)
		if !ok {
			t.Fatalf("no token %q", p)
		}
		piece, _ := s.Add(id)
		got.WriteString(piece)
	}
	if got.String() != "a\uFFFDb\uFFFDc" {
		t.Errorf("stray bytes streamed as %q, want %q", got.String(), "a\uFFFDb\uFFFDc")
	}
	// A generation cut inside a character: Flush returns the bytes held back.
	tk, _ := LoadFile("../testdata/arch/mistral/hf")
	ids, _ := tk.Encode("x日", EncodeOptions{}) // 日 is <0xE6> <0x97> <0xA5>; the last is left out
	s = tk.NewStream()
	for _, id := range ids[:len(ids)-1] {
		if p, _ := s.Add(id); strings.Contains(p, "\xe6") {
			t.Errorf("a lead byte was returned before its character was whole: %q", p)
		}
	}
	if rest, _ := s.Flush(); rest != "\uFFFD\uFFFD" {
		t.Errorf("Flush = %q, want the two bytes held back, as U+FFFD each", rest)
	}
}
