package check

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNotCheckpointFindings: a file that is no checkpoint, given itself or
// as a shard an index names, is one not-a-checkpoint finding saying what it
// is (here an HTML page), not a safetensors header length.
func TestNotCheckpointFindings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	page := []byte("<!DOCTYPE html>\n<html><body>model.safetensors · ORG/REPO at main</body></html>\n")
	shard := filepath.Join(dir, "model-00001-of-00001.safetensors")
	if err := os.WriteFile(shard, page, 0o644); err != nil {
		t.Fatal(err)
	}
	index := filepath.Join(dir, "model.safetensors.index.json")
	if err := os.WriteFile(index, []byte(`{"metadata": {}, "weight_map": {"a": "model-00001-of-00001.safetensors"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{shard, index} {
		r, err := Check(path)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, f := range r.Findings {
			if strings.HasPrefix(f.Rule, "st-") {
				t.Errorf("Check(%s): %v reads the page as safetensors", filepath.Base(path), f)
			}
			if f.Rule == "not-a-checkpoint" && f.File == shard && strings.Contains(f.Message, "it starts with '<!DO', an HTML page") {
				found = true
			}
		}
		if !found {
			t.Errorf("Check(%s): no not-a-checkpoint finding on the shard in %v", filepath.Base(path), r.Findings)
		}
	}
}
