// Package pyjson reads the JSON Python's json module writes: it allows the
// non-finite numbers NaN, Infinity and -Infinity (json.dump's default
// allow_nan), which encoding/json refuses. transformers saves them in
// config.json (Mamba-2's time_step_limit [0.0, Infinity]).
package pyjson

// Standard returns b with every bare NaN, Infinity and -Infinity outside
// a string replaced by the JSON string of the same text ("Infinity"), so
// encoding/json reads it and a reader can tell the value; b itself is
// returned when it has none. Anything else is left for the JSON decoder
// to judge.
func Standard(b []byte) []byte {
	var out []byte
	inString, escaped := false, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			if out != nil {
				out = append(out, c)
			}
			continue
		}
		if c == '"' {
			inString = true
		}
		if w := nonFinite(b[i:]); w != "" {
			if out == nil {
				out = append(make([]byte, 0, len(b)+8), b[:i]...)
			}
			out = append(append(append(out, '"'), w...), '"')
			i += len(w) - 1
			continue
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

// nonFinite is the non-finite number b starts with, or "".
func nonFinite(b []byte) string {
	for _, w := range [...]string{"NaN", "Infinity", "-Infinity"} {
		if len(b) >= len(w) && string(b[:len(w)]) == w {
			return w
		}
	}
	return ""
}
