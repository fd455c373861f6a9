package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// Issue 29 item 1: convert SRC DIR --force deleted the folder DIR with
// everything in it. Into an existing folder it replaces the model files,
// removes an earlier save's stale shards, keeps every other file and
// subfolder, and says what it replaced and removed (human output and
// --json); quantize into a folder does the same.
func TestForceIntoExistingFolder(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	g := filepath.Join(tmp, "m.gguf")
	if code, _, errs := run(t, "convert", "--outtype", "f32", convertSample, g); code != 0 {
		t.Fatalf("convert: %s", errs)
	}
	dst := filepath.Join(tmp, "hf")
	user := map[string]string{"notes.md": "my notes", filepath.Join("sub", "x.txt"): "x"}
	stale := []string{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors", "model.safetensors.index.json"}
	put := func(files map[string]string) {
		for name, content := range files {
			p := filepath.Join(dst, name)
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	keptUser := func(when string) {
		t.Helper()
		for name, content := range user {
			if b, err := os.ReadFile(filepath.Join(dst, name)); err != nil || string(b) != content {
				t.Errorf("%s: %s is %q (%v), want it kept", when, name, b, err)
			}
		}
	}
	put(user)
	put(map[string]string{"config.json": "old", stale[0]: "1", stale[1]: "2", stale[2]: "{}"})

	// Without --force: refused, exit 2, nothing touched.
	code, _, errs := run(t, "convert", g, dst)
	if code != 2 || !strings.Contains(errs, "already exists") {
		t.Errorf("without --force: exit %d: %s", code, errs)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "config.json")); string(b) != "old" {
		t.Errorf("without --force config.json became %q", b)
	}

	code, out, errs := run(t, "convert", "--force", "--json", g, dst)
	if code != 0 {
		t.Fatalf("--force --json: exit %d: %s", code, errs)
	}
	var j struct {
		Replaced     []string `json:"replaced"`
		RemovedStale []string `json:"removed_stale"`
	}
	if err := json.Unmarshal([]byte(out), &j); err != nil {
		t.Fatalf("bad JSON: %v\n%s", err, out)
	}
	if want := []string{"config.json"}; !reflect.DeepEqual(j.Replaced, want) {
		t.Errorf("replaced %v, want %v", j.Replaced, want)
	}
	if !reflect.DeepEqual(j.RemovedStale, stale) {
		t.Errorf("removed_stale %v, want %v", j.RemovedStale, stale)
	}
	keptUser("convert --force")
	for _, f := range stale {
		if _, err := os.Stat(filepath.Join(dst, f)); err == nil {
			t.Errorf("stale %s kept", f)
		}
	}
	var cfg map[string]any
	if b, err := os.ReadFile(filepath.Join(dst, "config.json")); err != nil || json.Unmarshal(b, &cfg) != nil || cfg["model_type"] != "gpt2" {
		t.Errorf("config.json not replaced: %q", b)
	}

	// Again, human output: everything it wrote is replaced, and said so.
	code, out, errs = run(t, "convert", "--force", g, dst)
	if code != 0 || !strings.Contains(out, "replaced in "+dst+": config.json, generation_config.json, merges.txt, model.safetensors,") ||
		strings.Contains(out, "removed from") {
		t.Errorf("--force again: exit %d:\n%s%s", code, out, errs)
	}
	keptUser("convert --force again")

	// quantize into the folder: int8 is written as one model.safetensors.
	put(map[string]string{stale[0]: "1"})
	code, out, errs = run(t, "quantize", "--type", "int8", "--force", convertSample, dst)
	if code != 0 || !strings.Contains(out, "replaced in "+dst+": config.json,") ||
		!strings.Contains(out, "removed from "+dst+" (an earlier save's weight files this one does not have): "+stale[0]+"\n") {
		t.Errorf("quantize --force: exit %d:\n%s%s", code, out, errs)
	}
	keptUser("quantize --force")
	if ents, _ := os.ReadDir(tmp); len(ents) != 2 {
		t.Errorf("beside the outputs: %v, want m.gguf and hf", ents)
	}
}
