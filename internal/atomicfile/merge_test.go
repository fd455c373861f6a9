package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/tfconv/tfconv/internal/fixtures"
)

// shardLike is the stale matcher of the tests: an earlier save's shards.
func shardLike(name string) bool {
	return name == "model.safetensors" || strings.HasPrefix(name, "model-") || name == "model.safetensors.index.json"
}

// userFolder is an existing destination: an earlier 3-shard save beside
// files and a subfolder the user keeps there.
var userFolder = map[string]string{
	"notes.md":                          "my notes",
	"sub/x.txt":                         "x",
	"config.json":                       "old config",
	"model-00001-of-00003.safetensors":  "old 1",
	"model-00002-of-00003.safetensors":  "old 2",
	"model-00003-of-00003.safetensors":  "old 3",
	"model.safetensors.index.json":      "old index",
	"modelcard-of-mine.safetensors.txt": "kept: not a shard name the matcher takes",
}

// newSave is what the new output holds: a single file, no index.
var newSave = map[string]string{"config.json": "new config", "model.safetensors": "new weights"}

// A forced Commit into an existing folder replaces the files the output
// has, removes the stale ones, and leaves every other file and subfolder.
func TestDirMergeKeepsOtherFiles(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	dst := filepath.Join(parent, "hf")
	fixtures.WriteTree(t, dst, userFolder)
	d, err := CreateDir(dst, true)
	if err != nil {
		t.Fatal(err)
	}
	d.SetStale(shardLike)
	fixtures.WriteTree(t, d.Name(), newSave)
	if err := d.Commit(); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{".": "/", "sub": "/",
		"notes.md": "my notes", "sub/x.txt": "x", "modelcard-of-mine.safetensors.txt": userFolder["modelcard-of-mine.safetensors.txt"],
		"config.json": "new config", "model.safetensors": "new weights"}
	if got := fixtures.Tree(t, dst); !reflect.DeepEqual(got, want) {
		t.Errorf("after the forced Commit the folder holds\n%v\nwant\n%v", got, want)
	}
	r := d.Result()
	if want := []string{"config.json"}; !reflect.DeepEqual(r.Replaced, want) {
		t.Errorf("Replaced %v, want %v", r.Replaced, want)
	}
	if want := []string{"model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors",
		"model-00003-of-00003.safetensors", "model.safetensors.index.json"}; !reflect.DeepEqual(r.Removed, want) {
		t.Errorf("Removed %v, want %v", r.Removed, want)
	}
	if ents, _ := os.ReadDir(parent); len(ents) != 1 {
		t.Errorf("temporaries left beside the output: %v", ents)
	}
}

// Without force an existing folder with anything in it is refused and left
// as it was; an empty one is filled, as a folder made for the output.
func TestDirExistingWithoutForce(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	dst := filepath.Join(parent, "hf")
	fixtures.WriteTree(t, dst, map[string]string{"notes.md": "my notes"})
	d, _ := CreateDir(dst, false)
	fixtures.WriteTree(t, d.Name(), newSave)
	if err := d.Commit(); !errors.Is(err, ErrExists) {
		t.Errorf("Commit into a non-empty folder without force: %v, want ErrExists", err)
	}
	if got, want := fixtures.Tree(t, dst), map[string]string{".": "/", "notes.md": "my notes"}; !reflect.DeepEqual(got, want) {
		t.Errorf("refused folder holds %v, want %v", got, want)
	}
	empty := filepath.Join(parent, "empty")
	os.Mkdir(empty, 0o755)
	d, _ = CreateDir(empty, false)
	fixtures.WriteTree(t, d.Name(), newSave)
	if err := d.Commit(); err != nil {
		t.Fatalf("Commit into an empty folder: %v", err)
	}
	if got := fixtures.Tree(t, empty); got["model.safetensors"] != "new weights" || len(got) != 3 {
		t.Errorf("empty folder after Commit holds %v", got)
	}
	if ents, _ := os.ReadDir(parent); len(ents) != 2 {
		t.Errorf("temporaries left beside the outputs: %v", ents)
	}
}

// A folder where the output has a file of that name is never removed: the
// Commit is refused and nothing moves.
func TestDirMergeRefusesFolderInTheWay(t *testing.T) {
	t.Parallel()
	dst := filepath.Join(t.TempDir(), "hf")
	fixtures.WriteTree(t, dst, map[string]string{"config.json/mine.txt": "mine", "model-00001-of-00002.safetensors": "old"})
	before := fixtures.Tree(t, dst)
	d, _ := CreateDir(dst, true)
	d.SetStale(shardLike)
	fixtures.WriteTree(t, d.Name(), newSave)
	if err := d.Commit(); err == nil || !strings.Contains(err.Error(), "config.json") {
		t.Errorf("Commit over a folder named config.json: %v, want an error naming it", err)
	}
	if r := d.Result(); r.Replaced != nil || r.Removed != nil {
		t.Errorf("Result %+v after a refused Commit", r)
	}
	if got := fixtures.Tree(t, dst); !reflect.DeepEqual(got, before) {
		t.Errorf("folder changed by a refused Commit:\n%v\nwant\n%v", got, before)
	}
}

// A move that fails at any step of the Commit puts every file back: the
// destination is exactly as it was and no temporary is left.
func TestDirMergeFailureRestores(t *testing.T) {
	defer func() { rename = os.Rename }()
	// 4 stale/replaced files go aside and 2 new ones come in: 7 renames
	// in all, failing each in turn (the last count fails none).
	for failAt := 1; failAt <= 7; failAt++ {
		parent := t.TempDir()
		dst := filepath.Join(parent, "hf")
		fixtures.WriteTree(t, dst, map[string]string{"notes.md": "my notes", "sub/x.txt": "x", "config.json": "old config",
			"model-00001-of-00003.safetensors": "1", "model-00002-of-00003.safetensors": "2", "model-00003-of-00003.safetensors": "3"})
		before := fixtures.Tree(t, dst)
		d, err := CreateDir(dst, true)
		if err != nil {
			t.Fatal(err)
		}
		d.SetStale(shardLike)
		fixtures.WriteTree(t, d.Name(), newSave)
		n := 0
		rename = func(from, to string) error {
			if n++; n == failAt {
				return errors.New("injected")
			}
			return os.Rename(from, to)
		}
		err = d.Commit()
		rename = os.Rename
		if failAt == 7 {
			if err != nil {
				t.Fatalf("Commit with no failure: %v", err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "injected") {
			t.Errorf("rename %d failing: Commit gave %v", failAt, err)
		}
		if got := fixtures.Tree(t, dst); !reflect.DeepEqual(got, before) {
			t.Errorf("rename %d failing: the folder holds\n%v\nwant it as it was\n%v", failAt, got, before)
		}
		var left []string
		ents, _ := os.ReadDir(parent)
		for _, e := range ents {
			left = append(left, e.Name())
		}
		sort.Strings(left)
		if !reflect.DeepEqual(left, []string{"hf"}) {
			t.Errorf("rename %d failing: beside the output: %v", failAt, left)
		}
		if d.Result().Replaced != nil || d.Result().Removed != nil {
			t.Errorf("rename %d failing: Result %+v after a failed Commit", failAt, d.Result())
		}
	}
}

// A file output's destination that is a folder is refused, never removed.
func TestCreateOverFolderRefused(t *testing.T) {
	t.Parallel()
	dst := filepath.Join(t.TempDir(), "m.gguf")
	fixtures.WriteTree(t, dst, map[string]string{"notes.md": "my notes"})
	if _, err := Create(dst, true); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("Create over a folder with force: %v", err)
	}
	if _, err := NewGroup([]string{dst}, true); err == nil {
		t.Errorf("NewGroup over a folder with force: no error")
	}
	if got := fixtures.Tree(t, dst); got["notes.md"] != "my notes" {
		t.Errorf("folder changed: %v", got)
	}
}

// A forced Create replaces the one file and nothing beside it.
func TestCreateForceReplacesOnlyTheFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	dst := filepath.Join(dir, "m.gguf")
	fixtures.WriteTree(t, dir, map[string]string{"m.gguf": "old", "notes.md": "my notes", "sub/x.txt": "x"})
	f, err := Create(dst, true)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("new")
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{".": "/", "sub": "/", "m.gguf": "new", "notes.md": "my notes", "sub/x.txt": "x"}
	if got := fixtures.Tree(t, dir); !reflect.DeepEqual(got, want) {
		t.Errorf("folder holds %v, want %v", got, want)
	}
}

// Files a killed replacement moved aside are kept by the next run, whatever
// force says, and named.
func TestSweepKeepsAside(t *testing.T) {
	var msgs []string
	dir := t.TempDir()
	dst := filepath.Join(dir, "hf")
	aside := filepath.Join(dir, ".hf.aside-2147483000-1")
	fixtures.WriteTree(t, dir, map[string]string{"hf/config.json": "new", ".hf.aside-2147483000-1/config.json": "old"})
	old := fixtures.Tree(t, aside)
	// SetWarn is global: not parallel.
	restore := SetWarn(func(m string) { msgs = append(msgs, m) })
	sweepStale(dst, true)
	restore()
	if got := fixtures.Tree(t, aside); !reflect.DeepEqual(got, old) {
		t.Errorf("moved-aside folder changed by the sweep: %v", got)
	}
	if !strings.Contains(strings.Join(msgs, "\n"), "kept "+aside) {
		t.Errorf("warnings do not name %s: %v", aside, msgs)
	}
}

// A destination that is a symbolic link to a folder is written through and
// stays a link; one to nothing is refused and kept.
func TestDirThroughSymlink(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	target := filepath.Join(parent, "real")
	fixtures.WriteTree(t, target, map[string]string{"notes.md": "my notes", "config.json": "old"})
	link := filepath.Join(parent, "hf")
	if err := os.Symlink(target, link); err != nil {
		t.Skip(err)
	}
	d, _ := CreateDir(link, true)
	fixtures.WriteTree(t, d.Name(), newSave)
	if err := d.Commit(); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v %v", st, err)
	}
	want := map[string]string{".": "/", "notes.md": "my notes", "config.json": "new config", "model.safetensors": "new weights"}
	if got := fixtures.Tree(t, target); !reflect.DeepEqual(got, want) {
		t.Errorf("link target holds %v, want %v", got, want)
	}
	dangling := filepath.Join(parent, "gone")
	os.Symlink(filepath.Join(parent, "nothing"), dangling)
	d, _ = CreateDir(dangling, true)
	fixtures.WriteTree(t, d.Name(), newSave)
	if err := d.Commit(); err == nil {
		t.Error("Commit through a dangling link: no error")
	}
	if _, err := os.Lstat(dangling); err != nil {
		t.Errorf("dangling link removed: %v", err)
	}
}
