package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// RemoveTemps (what the signal handler calls) removes every pending
// temporary file, leaves committed outputs alone, and stops later Creates.
func TestRemoveTemps(t *testing.T) {
	defer func() {
		live.Lock()
		live.closed = false
		live.Unlock()
	}()
	dir := t.TempDir()
	done, err := Create(filepath.Join(dir, "done.bin"), false)
	if err != nil {
		t.Fatal(err)
	}
	done.Write([]byte("x"))
	if err := done.Commit(); err != nil {
		t.Fatal(err)
	}
	var pending []*File
	for _, n := range []string{"a.bin", "b.bin"} {
		f, err := Create(filepath.Join(dir, n), false)
		if err != nil {
			t.Fatal(err)
		}
		pending = append(pending, f)
	}
	aborted, err := Create(filepath.Join(dir, "c.bin"), false)
	if err != nil {
		t.Fatal(err)
	}
	aborted.Abort()
	if n := RemoveTemps(); n != 2 {
		t.Errorf("RemoveTemps removed %d files, want 2", n)
	}
	for _, f := range pending {
		if _, err := os.Stat(f.Name()); !os.IsNotExist(err) {
			t.Errorf("%s still exists", f.Name())
		}
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || ents[0].Name() != "done.bin" {
		t.Errorf("folder holds %v, want only done.bin", ents)
	}
	if st, err := os.Stat(filepath.Join(dir, "done.bin")); err != nil || st.Mode().Perm() != outputMode {
		t.Errorf("committed output: %v, mode %v", err, st.Mode())
	}
	if _, err := Create(filepath.Join(dir, "late.bin"), false); !errors.Is(err, errExiting) {
		t.Errorf("Create after RemoveTemps: %v", err)
	}
}
