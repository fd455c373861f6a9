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

// TestOpenFolderNotCheckpoint: a folder whose model.safetensors, or a shard
// its index names, is an HTML page (each file downloaded from its blob/
// URL) says which file is the page, not a safetensors header length.
func TestOpenFolderNotCheckpoint(t *testing.T) {
	t.Parallel()
	page := []byte("<!DOCTYPE html>\n<html><body>model.safetensors · ORG/REPO at main</body></html>\n")
	single := t.TempDir()
	sharded := t.TempDir()
	files := map[string][]byte{
		filepath.Join(single, "config.json"):                       []byte(`{"model_type": "llama"}`),
		filepath.Join(single, "model.safetensors"):                 page,
		filepath.Join(sharded, "model.safetensors.index.json"):     []byte(`{"metadata": {}, "weight_map": {"a": "model-00001-of-00001.safetensors"}}`),
		filepath.Join(sharded, "model-00001-of-00001.safetensors"): page,
	}
	for p, b := range files {
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ open, bad string }{
		{single, "model.safetensors"},
		{sharded, "model-00001-of-00001.safetensors"},
		{filepath.Join(sharded, "model.safetensors.index.json"), "model-00001-of-00001.safetensors"},
	} {
		_, err := Open(c.open)
		if err == nil || !strings.Contains(err.Error(), c.bad+": not a safetensors file: it starts with '<!DO', an HTML page") {
			t.Errorf("Open(%s): %v; want %s named as an HTML page", c.open, err, c.bad)
		}
	}
}
