package convert

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/internal/fixtures"
	"github.com/tfconv/tfconv/tensor"
)

// tinyGGUF converts the shipped tiny LLaMA to an f32 GGUF in dir.
func tinyGGUF(t *testing.T, dir string) string {
	t.Helper()
	g := filepath.Join(dir, "m.gguf")
	if _, err := Run(shippedTinyLlama, g, Options{OutType: OutF32}); err != nil {
		t.Fatal(err)
	}
	return g
}

// The case: GGUF → HF with --force into a folder holding the user's
// notes.md and sub/x.txt beside an earlier 3-shard save. The notes and the
// subfolder survive, config and weights are replaced, the earlier save's
// shards and index go, and the report says so. Then the reverse: a sharded
// save over the single file removes that file.
func TestForceIntoFolderKeepsOtherFiles(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	g := tinyGGUF(t, tmp)
	dst := filepath.Join(tmp, "hf")
	mine := map[string]string{"notes.md": "my notes", "sub/x.txt": "x", "adapter_model.safetensors": "not ours"}
	fixtures.WriteTree(t, dst, mine)
	fixtures.WriteTree(t, dst, map[string]string{"config.json": "old config",
		"model-00001-of-00003.safetensors": "1", "model-00002-of-00003.safetensors": "2",
		"model-00003-of-00003.safetensors": "3", "model.safetensors.index.json": "{}"})

	if _, err := Run(g, dst, Options{}); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("without --force into a non-empty folder: %v", err)
	}
	rep, err := Run(g, dst, Options{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	got := fixtures.Tree(t, dst)
	for name, content := range mine {
		if got[name] != content {
			t.Errorf("%s: %q after --force, want it kept as %q", name, got[name], content)
		}
	}
	var cfg map[string]any
	if err := json.Unmarshal([]byte(got["config.json"]), &cfg); err != nil || cfg["model_type"] != "llama" {
		t.Errorf("config.json not replaced: %q (%v)", got["config.json"], err)
	}
	for _, stale := range []string{"model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors",
		"model-00003-of-00003.safetensors", "model.safetensors.index.json"} {
		if _, ok := got[stale]; ok {
			t.Errorf("stale %s kept beside the new model.safetensors", stale)
		}
	}
	compareTensors(t, dst, shippedTinyLlama, nil)
	if want := []string{"config.json"}; !reflect.DeepEqual(rep.Replaced, want) {
		t.Errorf("report: replaced %v, want %v", rep.Replaced, want)
	}
	if want := []string{"model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors",
		"model-00003-of-00003.safetensors", "model.safetensors.index.json"}; !reflect.DeepEqual(rep.RemovedStale, want) {
		t.Errorf("report: removed %v, want %v", rep.RemovedStale, want)
	}

	// The reverse: shards over the single file.
	rep, err = Run(g, dst, Options{Force: true, MaxShardBytes: 200_000})
	if err != nil {
		t.Fatal(err)
	}
	got = fixtures.Tree(t, dst)
	for name, content := range mine {
		if got[name] != content {
			t.Errorf("sharded save: %s: %q, want it kept as %q", name, got[name], content)
		}
	}
	if _, ok := got["model.safetensors"]; ok {
		t.Error("stale model.safetensors kept beside the new shards (a loader reads it first)")
	}
	if want := []string{"model.safetensors"}; !reflect.DeepEqual(rep.RemovedStale, want) {
		t.Errorf("sharded save: removed %v, want %v", rep.RemovedStale, want)
	}
	if !slices.Contains(rep.Replaced, "config.json") || slices.Contains(rep.Replaced, "notes.md") {
		t.Errorf("sharded save: replaced %v", rep.Replaced)
	}
	compareTensors(t, dst, shippedTinyLlama, nil)
	ents, _ := os.ReadDir(tmp)
	if len(ents) != 2 {
		t.Errorf("beside the outputs: %v, want only m.gguf and hf", ents)
	}
}

// A write that fails before the files are moved in leaves an existing
// folder exactly as it was, and no temporary beside it.
func TestForceFailedWriteKeepsFolder(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	dst := filepath.Join(tmp, "hf")
	fixtures.WriteTree(t, dst, map[string]string{"notes.md": "my notes", "sub/x.txt": "x", "config.json": "old config",
		"model.safetensors": "old weights"})
	before := fixtures.Tree(t, dst)
	infos := []tensor.Info{{Name: "w", DType: tensor.F32, Shape: tensor.Shape{4}}}
	injected := errors.New("injected write failure")
	_, err := WriteHFDir(dst, true, map[string][]byte{"config.json": []byte("{}")}, infos, 0,
		func(next func(string) (io.Writer, error)) error {
			w, err := next("w")
			if err != nil {
				return err
			}
			w.Write(make([]byte, 8)) // half the tensor, then the failure
			return injected
		})
	if !errors.Is(err, injected) {
		t.Fatalf("WriteHFDir: %v, want the injected error", err)
	}
	if got := fixtures.Tree(t, dst); !reflect.DeepEqual(got, before) {
		t.Errorf("folder after a failed write:\n%v\nwant it as it was:\n%v", got, before)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 1 {
		t.Errorf("left beside the output: %v", ents)
	}
}

// An empty folder made for the output is filled without --force; a file
// output's DST that is a folder is refused, with --force too, and kept.
func TestEmptyFolderAndFolderForFile(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	g := tinyGGUF(t, tmp)
	empty := filepath.Join(tmp, "empty")
	os.Mkdir(empty, 0o755)
	rep, err := Run(g, empty, Options{})
	if err != nil {
		t.Fatalf("into an empty folder without --force: %v", err)
	}
	if len(rep.Replaced) != 0 || len(rep.RemovedStale) != 0 {
		t.Errorf("empty folder: replaced %v, removed %v", rep.Replaced, rep.RemovedStale)
	}
	compareTensors(t, empty, shippedTinyLlama, nil)

	// A folder where a GGUF file is asked for is never replaced: the file
	// goes into it under convert_hf_to_gguf.py's default name (DefaultName),
	// as that converter's --outfile DIR does, and the folder's files stay.
	folder := filepath.Join(tmp, "x.gguf")
	fixtures.WriteTree(t, folder, map[string]string{"notes.md": "my notes"})
	rep, err = Run(shippedTinyLlama, folder, Options{Force: true})
	if err != nil {
		t.Fatalf("GGUF output into a folder with --force: %v", err)
	}
	if filepath.Dir(rep.Output) != folder {
		t.Errorf("GGUF output into folder %s written to %s", folder, rep.Output)
	}
	got := fixtures.Tree(t, folder)
	if got["notes.md"] != "my notes" || got[filepath.Base(rep.Output)] == "" || len(got) != 3 { // ".", notes.md, the GGUF
		t.Errorf("folder in the way holds %d entries, want notes.md and %s", len(got), filepath.Base(rep.Output))
	}

	// A forced file output replaces that file only, and says so.
	rep, err = Run(shippedTinyLlama, g, Options{Force: true, OutType: OutF16})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"m.gguf"}; !reflect.DeepEqual(rep.Replaced, want) || len(rep.RemovedStale) != 0 {
		t.Errorf("forced file output: replaced %v removed %v, want %v", rep.Replaced, rep.RemovedStale, want)
	}
}
