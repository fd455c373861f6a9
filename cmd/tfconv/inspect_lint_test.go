package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestInspectWarnsZeroDim: inspect accepts a GGUF tensor with a 0
// dimension (the spec allows it) but says, as check does and under check's
// rule id, that llama.cpp's loader dies on it: a warning line on stderr and
// "warnings" in --json.
func TestInspectWarnsZeroDim(t *testing.T) {
	t.Parallel()
	path := "../../testdata/malformed/gguf-zero-dim.gguf"
	code, _, stderr := run(t, "inspect", path)
	if code != exitOK {
		t.Fatalf("inspect exit %d: %s", code, stderr)
	}
	for _, w := range []string{"warning: " + path + ": offset 63: tensor \"blk.0.ffn_up.weight\": ne[1] is 0", "gguf-zero-dim"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr %q lacks %q", stderr, w)
		}
	}
	code, out, stderr := run(t, "inspect", "--json", path)
	if code != exitOK {
		t.Fatalf("inspect --json exit %d: %s", code, stderr)
	}
	var j struct {
		Warnings []checkFindingJSON `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(out), &j); err != nil {
		t.Fatal(err)
	}
	if len(j.Warnings) != 1 || j.Warnings[0].Rule != "gguf-zero-dim" || j.Warnings[0].Offset != 63 || j.Warnings[0].Severity != "error" {
		t.Errorf("warnings %+v; want one gguf-zero-dim error at offset 63", j.Warnings)
	}
	// A file llama.cpp wrote has none, and says so with an empty list.
	_, out, _ = run(t, "inspect", "--json", "../../testdata/gguf/llama-Q4_0.gguf")
	if !strings.Contains(out, `"warnings": []`) {
		t.Errorf("inspect --json of a clean file lacks \"warnings\": []")
	}
}
