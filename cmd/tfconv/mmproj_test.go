package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConvertMmprojFlags: the three multimodal flags reach the library:
// none refuses (exit 2, naming them), --mmproj writes both files and
// --json reports both, --text-only prints what it left out, and two of
// them together are a usage error.
func TestConvertMmprojFlags(t *testing.T) {
	t.Parallel()
	src := filepath.Join("..", "..", "testdata", "vision", "gemma3", "hf")
	dir := t.TempDir()
	dst := filepath.Join(dir, "m.gguf")
	code, _, errOut := run(t, "convert", src, dst)
	if code != 2 || !strings.Contains(errOut, "--mmproj-only") || !strings.Contains(errOut, "--text-only") {
		t.Errorf("no flag: exit %d, %q; want 2 naming the flags", code, errOut)
	}
	code, out, errOut := run(t, "convert", src, dst, "--mmproj", "--outtype", "f32", "--json")
	if code != 0 {
		t.Fatalf("--mmproj: exit %d: %s", code, errOut)
	}
	var rep struct {
		Output  string `json:"output"`
		Tensors []any  `json:"tensors"`
		Mmproj  struct {
			Output  string `json:"output"`
			Arch    string `json:"arch"`
			Tensors []any  `json:"tensors"`
		} `json:"mmproj"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Output != dst || len(rep.Tensors) != 80 || rep.Mmproj.Output != filepath.Join(dir, "mmproj-m.gguf") ||
		rep.Mmproj.Arch != "clip" || len(rep.Mmproj.Tensors) != 39 {
		t.Errorf("--mmproj --json: %s (%d tensors), mmproj %s %s (%d)", rep.Output, len(rep.Tensors), rep.Mmproj.Output, rep.Mmproj.Arch, len(rep.Mmproj.Tensors))
	}
	for _, f := range []string{dst, filepath.Join(dir, "mmproj-m.gguf")} {
		if _, err := os.Stat(f); err != nil {
			t.Error(err)
		}
	}
	code, out, _ = run(t, "convert", src, filepath.Join(dir, "t.gguf"), "--text-only")
	if code != 0 || !strings.Contains(out, "left out: 39 tensors") {
		t.Errorf("--text-only: exit %d, %q", code, out)
	}
	code, _, errOut = run(t, "convert", src, filepath.Join(dir, "p.gguf"), "--mmproj-only", "--text-only")
	if code != 2 {
		t.Errorf("--mmproj-only --text-only: exit %d, %q; want a usage error", code, errOut)
	}
}
