package check

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/corpus-findings.golden from check's findings on the malformed corpus")

// goldenPath holds every finding on the malformed corpus, in order, as
// Finding.String prints it. The findings are part of check's interface
// (scripts match on rule ids, offsets and messages), so a change to any of
// them is a change of interface: regenerate with -update only on purpose.
const goldenPath = "testdata/corpus-findings.golden"

func TestCorpusFindingsGolden(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(corpusDir, "verdicts.json"))
	if err != nil {
		t.Fatal(err)
	}
	var vs map[string]json.RawMessage
	if err := json.Unmarshal(raw, &vs); err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(vs))
	for n := range vs {
		names = append(names, n)
	}
	sort.Strings(names)
	var b bytes.Buffer
	for _, name := range names {
		path := filepath.Join(corpusDir, filepath.FromSlash(name))
		r, err := Check(path)
		fmt.Fprintf(&b, "== %s\n", name)
		if err != nil {
			fmt.Fprintf(&b, "error: %v\n", strings.ReplaceAll(err.Error(), corpusDir, "$CORPUS"))
			continue
		}
		for _, f := range r.Findings {
			fmt.Fprintln(&b, strings.ReplaceAll(f.String(), corpusDir, "$CORPUS"))
		}
	}
	if *update {
		if err := os.WriteFile(goldenPath, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		got, wantLines := strings.Split(b.String(), "\n"), strings.Split(string(want), "\n")
		for i := 0; i < min(len(got), len(wantLines)); i++ {
			if got[i] != wantLines[i] {
				t.Fatalf("findings differ from %s at line %d:\n got  %s\n want %s", goldenPath, i+1, got[i], wantLines[i])
			}
		}
		t.Fatalf("findings differ from %s: %d lines, want %d", goldenPath, len(got), len(wantLines))
	}
}
