package pyjson

import (
	"encoding/json"
	"testing"
)

func TestQuote(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{`{"a": [0.0, Infinity]}`, `{"a": [0.0, "Infinity"]}`},
		{`[-Infinity,NaN]`, `["-Infinity","NaN"]`},
		{`{"s": "Infinity \"NaN\" \\", "n": NaN}`, `{"s": "Infinity \"NaN\" \\", "n": "NaN"}`},
		{`{"plain": 1e-5}`, `{"plain": 1e-5}`},
		{``, ``},
	} {
		got := string(Quote([]byte(c.in)))
		if got != c.want {
			t.Errorf("Quote(%s) = %s, want %s", c.in, got, c.want)
		}
		if c.in != "" {
			var v any
			if err := json.Unmarshal([]byte(got), &v); err != nil {
				t.Errorf("Quote(%s) = %s: %v", c.in, got, err)
			}
		}
	}
}

func FuzzQuote(f *testing.F) {
	for _, s := range []string{`{"a": [0.0, Infinity]}`, `"\"`, `NaN"x`, `-Inf`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		out := Quote(b)
		var v any
		if json.Unmarshal(b, &v) == nil && string(out) != string(b) {
			t.Fatalf("valid JSON %q changed to %q", b, out)
		}
	})
}
