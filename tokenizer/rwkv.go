package tokenizer

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// RWKV is the RWKV World tokenizer: greedy longest match of the text's
// bytes against the vocabulary (llama.cpp's trie). Its GGUF tokens are the
// vocabulary's byte strings written as Python writes a bytes literal
// between the quotes ("\n" as a backslash and n, 0xff as \xff).
const RWKV Model = "rwkv"

// rwkvVocabFile is RWKV World's vocabulary, which llama.cpp's converter
// reads beside config.json (_set_vocab_rwkv_world).
const rwkvVocabFile = "rwkv_vocab_v20230424.txt"

// rwkvEOT is the id the converter sets as the end-of-turn token: "\n\n"
// in RWKV World's vocabulary.
const rwkvEOT = 261

// rwkvDefaultVocab is the converter's vocab_size when config.json states
// none: RWKV World's 65536.
const rwkvDefaultVocab = 65536

// parseRWKVVocab reads RWKV World's vocabulary file: one token a line,
// "<id> <Python str or bytes literal> <length in bytes>". The converter
// ignores the id and appends the tokens in file order; the literal is
// parsed here (never evaluated) and must be as long as the line says.
func parseRWKVVocab(b []byte, file string) ([][]byte, error) {
	var out [][]byte
	for n, off := 1, 0; off < len(b); n++ {
		end := bytes.IndexByte(b[off:], '\n')
		var line []byte
		if end < 0 {
			line, off = b[off:], len(b)
		} else {
			line, off = b[off:off+end], off+end+1
		}
		where := fmt.Sprintf("line %d", n)
		first := bytes.IndexByte(line, ' ')
		last := bytes.LastIndexByte(line, ' ')
		if first < 0 || last <= first {
			return nil, fmtErr(file, where, "want \"<id> <literal> <length>\"")
		}
		size, err := strconv.Atoi(strings.TrimSpace(string(line[last+1:])))
		if err != nil || size < 0 || size > maxTokenLen {
			return nil, fmtErr(file, where, fmt.Sprintf("length %q is not a number up to %d", line[last+1:], maxTokenLen))
		}
		tok, err := pyLiteral(string(line[first+1 : last]))
		if err != nil {
			return nil, fmtErr(file, where, err.Error())
		}
		if len(tok) != size {
			return nil, fmtErr(file, where, fmt.Sprintf("the literal is %d bytes, the line says %d", len(tok), size))
		}
		if len(out) >= maxVocab {
			return nil, fmtErr(file, where, fmt.Sprintf("more than %d tokens", maxVocab))
		}
		out = append(out, tok)
	}
	return out, nil
}

// pyLiteral parses one Python string literal, 'x' or "x", or bytes
// literal, b'x' or b"x" (no raw, triple-quoted or implicitly joined ones),
// into its bytes: a str's code points in UTF-8. The escapes are Python's:
// \\ \' \" \a \b \f \n \r \t \v, \ooo, \xhh, and in a str \uhhhh and
// \Uhhhhhhhh; any other backslash stays as it is.
func pyLiteral(s string) ([]byte, error) {
	isBytes := false
	if strings.HasPrefix(s, "b") || strings.HasPrefix(s, "B") {
		isBytes, s = true, s[1:]
	}
	if len(s) < 2 || (s[0] != '\'' && s[0] != '"') || s[len(s)-1] != s[0] {
		return nil, fmt.Errorf("%q is not a quoted Python literal", s)
	}
	q, body := s[0], s[1:len(s)-1]
	var out []byte
	for i := 0; i < len(body); {
		c := body[i]
		switch {
		case c == q:
			return nil, fmt.Errorf("unescaped quote at byte %d", i+1)
		case c == '\n' || c == '\r':
			return nil, fmt.Errorf("line break inside the literal")
		case c != '\\':
			if isBytes && c >= 0x80 {
				return nil, fmt.Errorf("a bytes literal holds only ASCII (byte %d is 0x%02x)", i+1, c)
			}
			out = append(out, c)
			i++
			continue
		}
		if i+1 >= len(body) {
			return nil, fmt.Errorf("the literal ends in a backslash")
		}
		e := body[i+1]
		i += 2
		switch e {
		case '\\', '\'', '"':
			out = append(out, e)
		case 'a':
			out = append(out, 7)
		case 'b':
			out = append(out, 8)
		case 'f':
			out = append(out, 12)
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'v':
			out = append(out, 11)
		case '0', '1', '2', '3', '4', '5', '6', '7':
			v := int(e - '0')
			for k := 0; k < 2 && i < len(body) && body[i] >= '0' && body[i] <= '7'; k++ {
				v, i = v*8+int(body[i]-'0'), i+1
			}
			if isBytes {
				out = append(out, byte(v)) // Python keeps the low byte of \400 and above
			} else {
				out = utf8.AppendRune(out, rune(v))
			}
		case 'x', 'u', 'U':
			digits := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			if isBytes && e != 'x' {
				out = append(out, '\\', e) // not an escape in a bytes literal
				break
			}
			if i+digits > len(body) {
				return nil, fmt.Errorf("\\%c needs %d hex digits", e, digits)
			}
			v, err := strconv.ParseUint(body[i:i+digits], 16, 32)
			if err != nil || strings.ContainsAny(body[i:i+digits], "+-_") {
				return nil, fmt.Errorf("\\%c%s: not hex digits", e, body[i:i+digits])
			}
			i += digits
			switch {
			case isBytes:
				out = append(out, byte(v))
			case v > utf8.MaxRune || v >= 0xd800 && v < 0xe000:
				return nil, fmt.Errorf("\\%c%x: not a code point UTF-8 can hold", e, v)
			default:
				out = utf8.AppendRune(out, rune(v))
			}
		case '\n':
			// a backslash-newline continues the line: nothing
		default:
			if e == 'N' && !isBytes {
				return nil, fmt.Errorf("\\N{...} named escapes are not read")
			}
			out = append(out, '\\', e)
		}
	}
	if !isBytes && !utf8.Valid(out) {
		return nil, fmt.Errorf("not valid UTF-8")
	}
	return out, nil
}

// pyBytesRepr is Python's repr of a bytes object without its b and quotes
// (what the converter writes as each token's text): ' quotes unless the
// bytes hold ' and no ", backslashes and that quote escaped, \t \n \r, the
// other bytes below 0x20 and from 0x7f as \xhh.
func pyBytesRepr(b []byte) string {
	q := byte('\'')
	if bytes.IndexByte(b, '\'') >= 0 && bytes.IndexByte(b, '"') < 0 {
		q = '"'
	}
	var s strings.Builder
	for _, c := range b {
		switch {
		case c == '\\' || c == q:
			s.WriteByte('\\')
			s.WriteByte(c)
		case c == '\t':
			s.WriteString(`\t`)
		case c == '\n':
			s.WriteString(`\n`)
		case c == '\r':
			s.WriteString(`\r`)
		case c < 0x20 || c >= 0x7f:
			fmt.Fprintf(&s, `\x%02x`, c)
		default:
			s.WriteByte(c)
		}
	}
	return s.String()
}

// rwkvVocab writes the vocabulary back as RWKV World's file: the tokens
// after the converter's <s> and before its [PADn] padding, one a line with
// its id, as a Python bytes literal (which the converter reads as it reads
// RWKV World's own str literals), and its length.
func (t *Tokenizer) rwkvVocab() []byte {
	n := len(t.tokens)
	for n > 1 && t.types[n-1] == TypeUnused && t.tokens[n-1] == padToken(n-1) {
		n--
	}
	var b bytes.Buffer
	for i := 1; i < n; i++ {
		tok := rwkvUnescape(t.tokens[i])
		q := byte('\'')
		if bytes.IndexByte(tok, '\'') >= 0 && bytes.IndexByte(tok, '"') < 0 {
			q = '"'
		}
		fmt.Fprintf(&b, "%d b%c%s%c %d\n", i, q, pyBytesRepr(tok), q, len(tok))
	}
	return b.Bytes()
}

// rwkvUnescape is the bytes of a GGUF RWKV token text, as llama.cpp reads
// it: \t, \n, \r and \xhh escapes, any other backslashed byte as itself.
func rwkvUnescape(s string) []byte {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			out = append(out, c)
			continue
		}
		i++
		switch e := s[i]; e {
		case 't':
			out = append(out, '\t')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 'x':
			if i+2 < len(s) {
				if v, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
					out = append(out, byte(v))
					i += 2
					break
				}
			}
			out = append(out, e)
		default:
			out = append(out, e)
		}
	}
	return out
}

// parseRWKV builds the RWKV World tokenizer as llama.cpp's converter does:
// <s> (a control token) first, the file's tokens in order (their texts
// pyBytesRepr), padded with [PADn] to config.json's vocab_size (65536 when
// it states none).
func parseRWKV(b []byte, cfg *hfConfig) (*Tokenizer, error) {
	toks, err := parseRWKVVocab(b, rwkvVocabFile)
	if err != nil {
		return nil, err
	}
	n := cfg.vocabSize
	if n == 0 {
		n = rwkvDefaultVocab
	}
	if len(toks)+1 > n {
		return nil, fmtErr(rwkvVocabFile, "", fmt.Sprintf("%d tokens and <s> are more than vocab_size %d", len(toks), n))
	}
	tokens := make([]string, 0, n)
	types := make([]TokenType, 0, n)
	tokens, types = append(tokens, "<s>"), append(types, TypeControl)
	for _, t := range toks {
		tokens, types = append(tokens, pyBytesRepr(t)), append(types, TypeNormal)
	}
	t, err := build(vocab{model: RWKV, tokens: tokens, types: types}, rwkvVocabFile)
	if err != nil {
		return nil, err
	}
	t.padTo(n)
	t.rwkvTrie()
	return t, nil
}

// rwkvSpecial sets the ids the converter fixes for RWKV World after
// config.json's: BOS and EOS 0, EOT 261 ("\n\n"), written in the order
// gguf-py's SpecialVocab keeps them (config.json's kinds first, then eot,
// then bos and eos if config.json had none).
func (t *Tokenizer) rwkvSpecial() {
	t.ggufIDs = append(t.ggufIDs, "eot")
	t.eot = rwkvEOT
	for _, k := range []string{"bos", "eos"} {
		if !slices.Contains(t.ggufIDs, k) {
			t.ggufIDs = append(t.ggufIDs, k)
		}
	}
	t.BOS, t.EOS = 0, 0
}

// rwkvTrie indexes every token's bytes (a later id over an earlier one of
// the same bytes, as llama.cpp's trie keeps the last inserted).
func (t *Tokenizer) rwkvTrie() {
	t.rwkvIndex = make(map[string]int, len(t.tokens))
	t.rwkvMax = 0
	for i, s := range t.tokens {
		b := string(rwkvUnescape(s))
		t.rwkvIndex[b] = i
		t.rwkvMax = max(t.rwkvMax, len(b))
	}
}

// encodeRWKV appends the tokens of s: at each byte the longest token that
// begins there. A byte no token begins with is an error (llama.cpp emits
// its unknown id, which RWKV World has not).
func (t *Tokenizer) encodeRWKV(s string, out []int) ([]int, error) {
	for pos := 0; pos < len(s); {
		n := min(t.rwkvMax, len(s)-pos)
		for ; n > 0; n-- {
			if id, ok := t.rwkvIndex[s[pos:pos+n]]; ok {
				out = append(out, id)
				break
			}
		}
		if n == 0 {
			return nil, fmt.Errorf("tokenizer: no RWKV token begins with byte 0x%02x at %d", s[pos], pos)
		}
		pos += n
	}
	return out, nil
}
