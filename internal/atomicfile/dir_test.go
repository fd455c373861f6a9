package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A Dir appears whole on Commit, replaces an existing folder only when
// forced, and RemoveTemps removes a pending one (counted once).
func TestDir(t *testing.T) {
	defer func() {
		live.Lock()
		live.closed = false
		live.Unlock()
	}()
	parent := t.TempDir()
	dst := filepath.Join(parent, "hf")
	fill := func(d *Dir, content string) {
		for _, n := range []string{"a", "b"} {
			if err := os.WriteFile(filepath.Join(d.Name(), n), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	d, err := CreateDir(dst, false)
	if err != nil {
		t.Fatal(err)
	}
	if want := "." + "hf.tmp-" + strconv.Itoa(os.Getpid()) + "-"; !strings.HasPrefix(filepath.Base(d.Name()), want) {
		t.Errorf("temporary folder %s, want the prefix %s", d.Name(), want)
	}
	fill(d, "one")
	if _, err := os.Stat(dst); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("destination visible before Commit: %v", err)
	}
	if err := d.Commit(); err != nil {
		t.Fatal(err)
	}
	// Without force an existing folder stays; with it, it is replaced.
	d, _ = CreateDir(dst, false)
	fill(d, "two")
	if err := d.Commit(); !errors.Is(err, ErrExists) {
		t.Errorf("Commit over an existing folder: %v", err)
	}
	d, _ = CreateDir(dst, true)
	fill(d, "three")
	if err := d.Commit(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "b")); string(b) != "three" {
		t.Errorf("after a forced Commit: %q", b)
	}
	d, _ = CreateDir(dst, true)
	fill(d, "four")
	d.Abort()
	if ents, _ := os.ReadDir(parent); len(ents) != 1 || ents[0].Name() != "hf" {
		t.Errorf("folder holds %v, want only hf", ents)
	}

	// Pending: a Dir and a file.
	d, _ = CreateDir(dst, true)
	fill(d, "five")
	f, err := Create(filepath.Join(parent, "x.bin"), false)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("x")
	if n := RemoveTemps(); n != 2 {
		t.Errorf("RemoveTemps removed %d, want 2 (a folder and a file)", n)
	}
	if ents, _ := os.ReadDir(parent); len(ents) != 1 || ents[0].Name() != "hf" {
		t.Errorf("after RemoveTemps the folder holds %v, want only hf", ents)
	}
}

// sweepStale removes what a dead process left and keeps what it cannot
// attribute, naming each.
func TestSweepStale(t *testing.T) {
	var msgs []string
	defer SetWarn(func(m string) { msgs = append(msgs, m) })()
	dir := t.TempDir()
	dst := filepath.Join(dir, "m.gguf")
	// Process ids above the kernel's pid_max (4194304) never run.
	dead := filepath.Join(dir, ".m.gguf.tmp-2147483000-1")
	alive := filepath.Join(dir, ".m.gguf.tmp-"+strconv.Itoa(os.Getppid())+"-1")
	unknown := filepath.Join(dir, ".m.gguf.tmp-123")
	oldCopy := filepath.Join(dir, ".m.gguf.old-2147483000-1")
	other := filepath.Join(dir, ".n.gguf.tmp-2147483000-1")
	past := time.Now().Add(-time.Hour)
	for _, p := range []string{dead, alive, unknown, oldCopy, other} {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, past, past)
	}
	sweepStale(dst, false)
	for p, want := range map[string]bool{dead: false, alive: true, unknown: true, oldCopy: true, other: true} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", p, err == nil, want)
		}
	}
	got := strings.Join(msgs, "\n")
	for _, w := range []string{"removed stale temporary output " + dead, "kept " + alive, "kept " + unknown, "kept " + oldCopy} {
		if !strings.Contains(got, w) {
			t.Errorf("warnings lack %q:\n%s", w, got)
		}
	}
	if strings.Contains(got, other) {
		t.Errorf("another destination's temporary was named:\n%s", got)
	}
	// With force and the destination present, the unattributed one and the
	// moved-aside copy go too; the running process's never does.
	os.WriteFile(dst, nil, 0o644)
	msgs = nil
	sweepStale(dst, true)
	for p, want := range map[string]bool{alive: true, unknown: false, oldCopy: false} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("--force: %s: exists %v, want %v", p, err == nil, want)
		}
	}
}
