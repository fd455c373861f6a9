package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tfconv imatrix writes both formats, refuses to replace without --force,
// and --json lists the entries with their counts.
func TestImatrixCommand(t *testing.T) {
	dir := t.TempDir()
	mdl := "../../testdata/arch/mixtral/gguf/mixtral-f32.gguf"
	text := "../../testdata/imatrix/calib.txt"
	out := filepath.Join(dir, "m.gguf")
	code, stdout, errs := run(t, "imatrix", mdl, "-f", text, "-o", out, "-c", "128", "--chunks", "3", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var j imatrixJSON
	if err := json.Unmarshal([]byte(stdout), &j); err != nil {
		t.Fatal(err)
	}
	if j.Format != "gguf" || j.Chunks != 3 || len(j.Entries) != 16 {
		t.Errorf("json: format %s, %d chunks, %d entries", j.Format, j.Chunks, len(j.Entries))
	}
	for _, e := range j.Entries {
		var n int64
		for _, c := range e.Counts {
			n += c
		}
		// Each token goes to 2 of the 4 experts; a plain matrix sees
		// every token once.
		want := int64(3 * 128)
		if strings.Contains(e.Name, "_exps") {
			want *= 2
		}
		if n != want {
			t.Errorf("%s: counts %v sum to %d, want %d", e.Name, e.Counts, n, want)
		}
	}
	if b, err := os.ReadFile(out); err != nil || string(b[:4]) != "GGUF" {
		t.Errorf("output: %v", err)
	}
	if code, _, errs := run(t, "imatrix", mdl, "-f", text, "-o", out, "-c", "128"); code != 2 || !strings.Contains(errs, "force") {
		t.Errorf("existing output: exit %d, %s", code, errs)
	}
	dat := filepath.Join(dir, "m.dat")
	if code, _, errs := run(t, "imatrix", mdl, "-f", text, "-o", dat, "-c", "128", "--chunks", "2"); code != 0 {
		t.Fatalf("dat: exit %d: %s", code, errs)
	}
	if b, err := os.ReadFile(dat); err != nil || string(b[:4]) == "GGUF" || b[0] != 16 {
		t.Errorf("dat output: %v, first bytes %x", err, b[:4])
	}
	if code, _, errs := run(t, "imatrix", mdl, "-f", text, "-o", filepath.Join(dir, "x"), "-c", "4096"); code != 2 {
		t.Errorf("too short a text: exit %d, %s", code, errs)
	}
}
