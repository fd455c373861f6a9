package pyjson

import (
	"encoding/json"
	"testing"
)

func TestStandard(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{`{"a": 1}`, `{"a": 1}`},
		{`{"time_step_limit": [0.0, Infinity]}`, `{"time_step_limit": [0.0, "Infinity"]}`},
		{`[-Infinity,NaN]`, `["-Infinity","NaN"]`},
		{`{"s": "Infinity \" NaN", "x": NaN}`, `{"s": "Infinity \" NaN", "x": "NaN"}`},
		{`{"s": "a\\", "x": Infinity}`, `{"s": "a\\", "x": "Infinity"}`},
	} {
		got := string(Standard([]byte(tc.in)))
		if got != tc.want {
			t.Errorf("Standard(%s) = %s, want %s", tc.in, got, tc.want)
		}
		var v any
		if err := json.Unmarshal([]byte(got), &v); err != nil {
			t.Errorf("Standard(%s) = %s: %v", tc.in, got, err)
		}
	}
}

// FuzzStandard: whatever the input, Standard neither panics nor changes a
// document encoding/json already reads.
func FuzzStandard(f *testing.F) {
	for _, s := range []string{`{"a": [0.0, Infinity]}`, `"NaN"`, `[-Infinity`, `"\\"`, `{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		out := Standard(b)
		if json.Valid(b) && string(out) != string(b) {
			t.Fatalf("Standard changed valid JSON %q to %q", b, out)
		}
	})
}
