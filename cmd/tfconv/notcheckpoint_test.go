package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNotCheckpointExit: an HTML page saved as .gguf (the Hub's blob/ URL
// downloaded) is refused by inspect with exit 2 and a message saying what
// it is, not a safetensors header length.
func TestNotCheckpointExit(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "model.gguf")
	if err := os.WriteFile(path, []byte("<!DOCTYPE html>\n<html><head><title>model.gguf</title></head></html>\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := run(t, "inspect", path)
	if code != exitError {
		t.Errorf("inspect exit %d, want %d", code, exitError)
	}
	for _, w := range []string{path + ": not a GGUF file: it starts with '<!DO', an HTML page", "resolve/"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr %q lacks %q", stderr, w)
		}
	}
	if strings.Contains(stderr, "header length") {
		t.Errorf("stderr %q still reads the page as safetensors", stderr)
	}
}
