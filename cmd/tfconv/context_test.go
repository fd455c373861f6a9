package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Past the context a model was trained on (issue 14): a warning on stderr
// and in --json for rotary models, exit 2 where positions past a learned
// table have no embedding.
func TestPastContext(t *testing.T) {
	text := filepath.Join(t.TempDir(), "text.txt")
	if err := os.WriteFile(text, []byte(strings.Repeat("She said that they would go back to the old house. ", 120)), 0o644); err != nil {
		t.Fatal(err)
	}
	tiny := "../../testdata/tiny-fortunes/tiny-fortunes-Q8_0.gguf" // context 256
	code, out, errOut := run(t, "perplexity", tiny, "--file", text, "--ctx", "512", "--chunks", "1", "--json")
	if code != 0 {
		t.Fatalf("perplexity --ctx 512: exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, "warning: perplexity: 512 positions exceed the 256-token context") {
		t.Errorf("no warning on stderr: %q", errOut)
	}
	var res struct {
		Warnings []string `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Warnings) != 1 {
		t.Errorf("--json warnings %v (%v)", res.Warnings, err)
	}
	// Within the context: no warning, and "warnings": [].
	code, out, errOut = run(t, "perplexity", tiny, "--file", text, "--ctx", "128", "--chunks", "1", "--json")
	if code != 0 || strings.Contains(errOut, "warning") || !strings.Contains(out, `"warnings": []`) {
		t.Errorf("--ctx 128: exit %d, stderr %q, out %s", code, errOut, out)
	}
	code, _, errOut = run(t, "bench", tiny, "--prompt", "300", "--gen", "1", "--json")
	if code != 0 || !strings.Contains(errOut, "warning: bench: 302 positions exceed the 256-token context") {
		t.Errorf("bench --prompt 300: exit %d, stderr %q", code, errOut)
	}
	// GPT-2 has 128 learned positions: refused.
	code, _, errOut = run(t, "perplexity", convertSample, "--file", text, "--ctx", "256", "--chunks", "1")
	if code != 2 || !strings.Contains(errOut, "learned position table") {
		t.Errorf("gpt2 --ctx 256: exit %d, %q", code, errOut)
	}
}
