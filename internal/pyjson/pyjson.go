// Package pyjson reads the JSON that Python's json module writes: it
// allows the bare constants Infinity, -Infinity and NaN, which
// encoding/json refuses (transformers' Mamba-2 and Nemotron-H configs:
// time_step_limit [0.0, Infinity]).
package pyjson

import "bytes"

// constants are Python's non-finite literals, the longer first where one
// is a prefix of another.
var constants = [][]byte{[]byte("-Infinity"), []byte("Infinity"), []byte("NaN")}

// Quote returns b with each bare Infinity, -Infinity and NaN outside a
// string made the JSON string of its name ("Infinity"), so encoding/json
// reads it; the rest, strings included, is unchanged. b itself is returned
// when it has none.
func Quote(b []byte) []byte {
	var out []byte // nil until the first change
	inString, escaped := false, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if !inString && c != '"' {
			if tok := constantAt(b[i:]); tok != nil {
				if out == nil {
					out = append(make([]byte, 0, len(b)+8), b[:i]...)
				}
				out = append(append(append(out, '"'), tok...), '"')
				i += len(tok) - 1
				continue
			}
		}
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		}
		if out != nil {
			out = append(out, c)
		}
	}
	if out == nil {
		return b
	}
	return out
}

// constantAt is the constant b starts with, or nil.
func constantAt(b []byte) []byte {
	for _, c := range constants {
		if bytes.HasPrefix(b, c) {
			return c
		}
	}
	return nil
}
