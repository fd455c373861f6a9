package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckCommand(t *testing.T) {
	// A real llama.cpp file: clean.
	code, out, errOut := run(t, "check", "../../testdata/gguf/llama-Q2_K.gguf")
	if code != exitOK || !strings.Contains(out, "0 error(s), 0 warning(s)") {
		t.Errorf("clean file: exit %d, %q %q", code, out, errOut)
	}
	// Several defects: all listed, exit 1, stderr names the file.
	p := filepath.Join(malformedDir, "gguf-multi-defect.gguf")
	code, out, errOut = run(t, "check", "--json", p)
	if code != exitFound || !strings.Contains(errOut, p) {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	var rep checkJSON
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	rules := map[string]bool{}
	for _, f := range rep.Findings {
		rules[f.Rule] = true
		if f.Severity != "error" && f.Severity != "warning" {
			t.Errorf("severity %q", f.Severity)
		}
	}
	for _, r := range []string{"gguf-duplicate-key", "dup-tensor-name", "gguf-misaligned", "gguf-overlap", "gguf-type"} {
		if !rules[r] {
			t.Errorf("rule %s missing from %s", r, out)
		}
	}
	if rep.OK || rep.Format != "gguf" || rep.Path != p {
		t.Errorf("report header: %+v", rep)
	}
	// Warnings only: exit 0, shown in the table.
	code, out, _ = run(t, "check", filepath.Join(malformedDir, "ok-st-inf.safetensors"))
	if code != exitOK || !strings.Contains(out, "inf-in-weights") || !strings.Contains(out, "1 warning(s)") {
		t.Errorf("warnings only: exit %d, %q", code, out)
	}
	// Unreadable: exit 2.
	if code, _, _ := run(t, "check", filepath.Join(t.TempDir(), "nope.gguf")); code != exitError {
		t.Errorf("missing file: exit %d", code)
	}
	// Every rule is documented in the help.
	_, out, _ = run(t, "check", "--help")
	for _, id := range []string{"st-hole", "st-overlap", "st-trailing-bytes", "gguf-misaligned", "gguf-duplicate-key", "dup-tensor-name", "nan-in-weights", "inf-in-weights", "native-crc-mismatch"} {
		if !strings.Contains(out, id) {
			t.Errorf("help lacks %s", id)
		}
	}
}
