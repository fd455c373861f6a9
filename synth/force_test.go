package synth

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/tfconv/tfconv/formats/safetensors"
	"github.com/tfconv/tfconv/internal/atomicfile"
	"github.com/tfconv/tfconv/tensor"
)

// Into an existing folder WriteHFDir needs force, then replaces config.json
// and the weights, removes an earlier save's shards and index, and keeps
// the user's files.
func TestWriteHFDirIntoExistingFolder(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "m")
	files := map[string]string{"notes.md": "my notes", "sub/x.txt": "x", "config.json": "old",
		"model-00001-of-00002.safetensors": "1", "model-00002-of-00002.safetensors": "2", "model.safetensors.index.json": "{}"}
	for name, content := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := small(GPT2)
	if _, err := WriteHFDir(dir, false, s, tensor.F32, 1, nil); !errors.Is(err, atomicfile.ErrExists) {
		t.Errorf("without force: %v, want ErrExists", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "config.json")); string(b) != "old" {
		t.Errorf("refused write changed config.json to %q", b)
	}
	res, err := WriteHFDir(dir, true, s, tensor.F32, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := atomicfile.DirResult{Replaced: []string{"config.json"},
		Removed: []string{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors", "model.safetensors.index.json"}}
	if !reflect.DeepEqual(res, want) {
		t.Errorf("result %+v, want %+v", res, want)
	}
	for _, name := range []string{"notes.md", "sub/x.txt"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != files[name] {
			t.Errorf("%s: %q %v, want it kept", name, b, err)
		}
	}
	for _, name := range want.Removed {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			t.Errorf("stale %s kept", name)
		}
	}
	f, err := safetensors.Open(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if ts, _ := HFTensors(s, tensor.F32); len(f.Tensors) != len(ts) {
		t.Errorf("model.safetensors holds %d tensors, want %d", len(f.Tensors), len(ts))
	}
}
