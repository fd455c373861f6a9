package safetensors

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/tfconv/tfconv/tensor"
)

// MaxJSONDepth bounds the nesting of JSON values that are skipped without
// being interpreted (unknown keys of an index file, or of a header that
// check walks leniently). The safetensors header itself is parsed against
// its schema, whose deepest value is a shape array at depth 3; anything much
// deeper is an attack on the parser's stack, not a checkpoint.
const MaxJSONDepth = 64

// scanner is a small schema-driven JSON reader over a byte slice. It exists
// instead of encoding/json because encoding/json keeps the last of two
// duplicate keys silently, replaces lone surrogates with U+FFFD, and cannot
// say at which byte a semantic problem sits. Every error it makes is a
// *tensor.FormatError whose Offset is base plus the position in buf.
type scanner struct {
	buf  []byte
	pos  int
	base int64  // absolute file offset of buf[0]
	file string // for errors
}

// errAt builds a format error at position pos of buf.
func (s *scanner) errAt(pos int, item, msg string) *tensor.FormatError {
	return &tensor.FormatError{Format: "safetensors", File: s.file, Offset: s.base + int64(pos), Item: item, Msg: msg}
}

// ws skips JSON whitespace.
func (s *scanner) ws() {
	for s.pos < len(s.buf) {
		switch s.buf[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// describe names the byte at the cursor for an error message.
func (s *scanner) describe() string {
	if s.pos >= len(s.buf) {
		return "end of input"
	}
	c := s.buf[s.pos]
	switch {
	case c == '"':
		return "a string"
	case c == '{':
		return "an object"
	case c == '[':
		return "an array"
	case c == '-' || ('0' <= c && c <= '9'):
		return "a number"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == 'n':
		return "null"
	case c >= 0x20 && c < 0x7f:
		return strconv.QuoteRune(rune(c))
	}
	return "byte " + strconv.Quote(string(c))
}

// expect consumes byte c (after whitespace) or fails naming what was wanted.
func (s *scanner) expect(c byte, item, want string) error {
	s.ws()
	if s.pos >= len(s.buf) || s.buf[s.pos] != c {
		return s.errAt(s.pos, item, "invalid JSON: want "+want+", found "+s.describe())
	}
	s.pos++
	return nil
}

// peek returns the next non-whitespace byte, or 0 at the end.
func (s *scanner) peek() byte {
	s.ws()
	if s.pos >= len(s.buf) {
		return 0
	}
	return s.buf[s.pos]
}

// str reads a JSON string at the cursor (after whitespace). The input was
// already checked to be UTF-8; escapes are decoded as serde_json does,
// rejecting lone surrogates.
func (s *scanner) str(item string) (string, error) {
	if err := s.expect('"', item, "a string"); err != nil {
		return "", err
	}
	start := s.pos
	// Fast path: no escapes.
	for s.pos < len(s.buf) {
		c := s.buf[s.pos]
		if c == '"' {
			out := string(s.buf[start:s.pos])
			s.pos++
			return out, nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
		s.pos++
	}
	b := append([]byte(nil), s.buf[start:s.pos]...)
	for {
		if s.pos >= len(s.buf) {
			return "", s.errAt(start-1, item, "invalid JSON: unterminated string")
		}
		c := s.buf[s.pos]
		switch {
		case c == '"':
			s.pos++
			return string(b), nil
		case c < 0x20:
			return "", s.errAt(s.pos, item, "invalid JSON: control character "+strconv.QuoteRune(rune(c))+" in string")
		case c != '\\':
			b = append(b, c)
			s.pos++
			continue
		}
		// An escape.
		esc := s.pos
		if s.pos+1 >= len(s.buf) {
			return "", s.errAt(esc, item, "invalid JSON: unterminated escape")
		}
		e := s.buf[s.pos+1]
		s.pos += 2
		switch e {
		case '"', '\\', '/':
			b = append(b, e)
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			r, ok := s.hex4()
			if !ok {
				return "", s.errAt(esc, item, "invalid JSON: bad \\u escape")
			}
			switch {
			case utf16.IsSurrogate(r) && r < 0xDC00:
				// A leading surrogate must be followed by a trailing one.
				if s.pos+1 >= len(s.buf) || s.buf[s.pos] != '\\' || s.buf[s.pos+1] != 'u' {
					return "", s.errAt(esc, item, "invalid JSON: lone leading surrogate in \\u escape")
				}
				s.pos += 2
				r2, ok := s.hex4()
				if !ok || r2 < 0xDC00 || r2 > 0xDFFF {
					return "", s.errAt(esc, item, "invalid JSON: lone leading surrogate in \\u escape")
				}
				r = utf16.DecodeRune(r, r2)
			case utf16.IsSurrogate(r):
				return "", s.errAt(esc, item, "invalid JSON: lone trailing surrogate in \\u escape")
			}
			b = utf8.AppendRune(b, r)
		default:
			return "", s.errAt(esc, item, "invalid JSON: bad escape \\"+string(rune(e)))
		}
	}
}

// hex4 reads four hex digits.
func (s *scanner) hex4() (rune, bool) {
	if s.pos+4 > len(s.buf) {
		return 0, false
	}
	var r rune
	for _, c := range s.buf[s.pos : s.pos+4] {
		r <<= 4
		switch {
		case '0' <= c && c <= '9':
			r |= rune(c - '0')
		case 'a' <= c && c <= 'f':
			r |= rune(c - 'a' + 10)
		case 'A' <= c && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	s.pos += 4
	return r, true
}

// uint reads a non-negative JSON integer that fits in int64. Negative
// numbers, fractions and exponents are rejected: the reference decodes these
// fields as usize, which accepts none of them.
func (s *scanner) uint(item, what string) (int64, error) {
	s.ws()
	start := s.pos
	if s.pos < len(s.buf) && s.buf[s.pos] == '-' {
		return 0, s.errAt(start, item, what+" is negative")
	}
	if s.pos >= len(s.buf) || s.buf[s.pos] < '0' || s.buf[s.pos] > '9' {
		return 0, s.errAt(start, item, what+": want a non-negative integer, found "+s.describe())
	}
	if s.buf[s.pos] == '0' && s.pos+1 < len(s.buf) && '0' <= s.buf[s.pos+1] && s.buf[s.pos+1] <= '9' {
		return 0, s.errAt(start, item, "invalid JSON: number with a leading zero")
	}
	var n int64
	overflow := false
	for s.pos < len(s.buf) && '0' <= s.buf[s.pos] && s.buf[s.pos] <= '9' {
		d := int64(s.buf[s.pos] - '0')
		if n > (1<<63-1-d)/10 {
			overflow = true
		} else {
			n = n*10 + d
		}
		s.pos++
	}
	if s.pos < len(s.buf) {
		switch s.buf[s.pos] {
		case '.', 'e', 'E':
			return 0, s.errAt(start, item, what+" is not an integer")
		}
	}
	if overflow {
		return 0, s.errAt(start, item, what+" "+string(s.buf[start:s.pos])+" overflows int64")
	}
	return n, nil
}

// object walks the members of a JSON object at the cursor, calling member
// with each key (and the key's position) with the cursor on the value, which
// member must consume. Duplicate keys are rejected here, for every object;
// dupItem, when not nil, names a duplicate key's item in the error.
func (s *scanner) object(item, want string, dupItem func(key string) string, member func(key string, keyPos int) error) error {
	if err := s.expect('{', item, want); err != nil {
		return err
	}
	seen := map[string]struct{}{}
	if s.peek() == '}' {
		s.pos++
		return nil
	}
	for {
		s.ws()
		keyPos := s.pos
		key, err := s.str(item)
		if err != nil {
			return err
		}
		if _, dup := seen[key]; dup {
			if dupItem != nil {
				return s.errAt(keyPos, dupItem(key), "appears twice in one object")
			}
			return s.errAt(keyPos, item, "duplicate key "+strconv.Quote(key))
		}
		seen[key] = struct{}{}
		if err := s.expect(':', item, "':'"); err != nil {
			return err
		}
		s.ws()
		if err := member(key, keyPos); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.pos++
		case '}':
			s.pos++
			return nil
		default:
			return s.errAt(s.pos, item, "invalid JSON: want ',' or '}', found "+s.describe())
		}
	}
}

// stringMap reads an object whose values are all strings, keeping order.
// Errors name the offending key with keyItem(key).
func (s *scanner) stringMap(item, want string, keyItem func(string) string, add func(k, v string)) error {
	return s.object(item, want, keyItem, func(key string, _ int) error {
		if c := s.peek(); c != '"' {
			return s.errAt(s.pos, keyItem(key), "value must be a string, found "+s.describe())
		}
		v, err := s.str(keyItem(key))
		if err != nil {
			return err
		}
		add(key, v)
		return nil
	})
}

// skip consumes any JSON value, bounding its nesting depth.
func (s *scanner) skip(item string, depth int) error {
	if depth > MaxJSONDepth {
		return s.errAt(s.pos, item, "JSON nested deeper than "+strconv.Itoa(MaxJSONDepth))
	}
	switch c := s.peek(); {
	case c == '"':
		_, err := s.str(item)
		return err
	case c == '{':
		return s.object(item, "an object", nil, func(string, int) error { return s.skip(item, depth+1) })
	case c == '[':
		s.pos++
		if s.peek() == ']' {
			s.pos++
			return nil
		}
		for {
			if err := s.skip(item, depth+1); err != nil {
				return err
			}
			switch s.peek() {
			case ',':
				s.pos++
			case ']':
				s.pos++
				return nil
			default:
				return s.errAt(s.pos, item, "invalid JSON: want ',' or ']', found "+s.describe())
			}
		}
	case c == '-' || ('0' <= c && c <= '9'):
		return s.number(item)
	case c == 't':
		return s.literal(item, "true")
	case c == 'f':
		return s.literal(item, "false")
	case c == 'n':
		return s.literal(item, "null")
	}
	return s.errAt(s.pos, item, "invalid JSON: want a value, found "+s.describe())
}

// number consumes a JSON number following the JSON grammar.
func (s *scanner) number(item string) error {
	start := s.pos
	bad := func() error { return s.errAt(start, item, "invalid JSON: malformed number") }
	digits := func() int {
		n := 0
		for s.pos < len(s.buf) && '0' <= s.buf[s.pos] && s.buf[s.pos] <= '9' {
			s.pos++
			n++
		}
		return n
	}
	if s.buf[s.pos] == '-' {
		s.pos++
	}
	if s.pos < len(s.buf) && s.buf[s.pos] == '0' {
		s.pos++
	} else if digits() == 0 {
		return bad()
	}
	if s.pos < len(s.buf) && s.buf[s.pos] == '.' {
		s.pos++
		if digits() == 0 {
			return bad()
		}
	}
	if s.pos < len(s.buf) && (s.buf[s.pos] == 'e' || s.buf[s.pos] == 'E') {
		s.pos++
		if s.pos < len(s.buf) && (s.buf[s.pos] == '+' || s.buf[s.pos] == '-') {
			s.pos++
		}
		if digits() == 0 {
			return bad()
		}
	}
	return nil
}

func (s *scanner) literal(item, lit string) error {
	if len(s.buf)-s.pos < len(lit) || string(s.buf[s.pos:s.pos+len(lit)]) != lit {
		return s.errAt(s.pos, item, "invalid JSON: want a value, found "+s.describe())
	}
	s.pos += len(lit)
	return nil
}

// end checks that only whitespace follows the top-level value.
func (s *scanner) end() error {
	s.ws()
	if s.pos != len(s.buf) {
		return s.errAt(s.pos, "", "invalid JSON: "+s.describe()+" after the header object")
	}
	return nil
}

// InvalidUTF8 returns the index of the first byte of b that is not part of
// a valid UTF-8 sequence, or -1. A header must be UTF-8 throughout.
func InvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return -1
}

// appendJSONString appends s as a JSON string escaped exactly as serde_json
// escapes it: '"' and '\\' with a backslash, the control characters \b \t \n
// \f \r by name and the other ones below 0x20 as \u00xx (lower-case hex);
// everything else, including non-ASCII, '/' and 0x7f, as it is.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\b':
			b = append(b, '\\', 'b')
		case c == '\t':
			b = append(b, '\\', 't')
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\f':
			b = append(b, '\\', 'f')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
