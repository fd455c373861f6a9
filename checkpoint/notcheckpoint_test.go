package checkpoint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenNotCheckpoint: an HTML page saved as model.gguf is refused, read
// locally or over HTTP, by the one decision (internal/sniff) with an error
// that names the file and says it is an HTML page.
func TestOpenNotCheckpoint(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "model.gguf")
	if err := os.WriteFile(path, []byte("<!DOCTYPE html>\n<html><body>model.gguf · ORG/REPO at main</body></html>\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := serveFile(t, path)
	for _, p := range []string{path, srv.URL + "/model.gguf"} {
		_, err := Open(p)
		if err == nil {
			t.Fatalf("Open(%s) succeeded", p)
		}
		for _, w := range []string{"model.gguf", "not a GGUF file: it starts with '<!DO', an HTML page", "resolve/"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Open(%s): %v; want %q", p, err, w)
			}
		}
	}
}
