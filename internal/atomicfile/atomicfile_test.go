package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestCommitAndAbort(t *testing.T) {
	dir := t.TempDir()
	dst := filepath.Join(dir, "out.bin")

	f, err := Create(dst, false)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("half")
	if _, err := os.Stat(dst); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("destination visible before Commit: %v", err)
	}
	f.Abort()
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("Abort left %d files", len(ents))
	}

	f, err = Create(dst, false)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("whole")
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	f.Abort() // no-op after Commit
	if b, _ := os.ReadFile(dst); string(b) != "whole" {
		t.Fatalf("got %q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("want only the output, got %d entries", len(ents))
	}
}

func TestRefusals(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.bin")
	os.WriteFile(in, []byte("x"), 0o644)

	if _, err := Create(in, false); !errors.Is(err, ErrExists) {
		t.Fatalf("existing file without force: %v", err)
	}
	if _, err := Create(in, true, in); err == nil {
		t.Fatal("overwriting the input was allowed")
	}
	link := filepath.Join(dir, "link.bin")
	if err := os.Symlink(in, link); err != nil {
		t.Skip(err)
	}
	if _, err := Create(link, true, in); err == nil {
		t.Fatal("overwriting the input through a symlink was allowed")
	}
	hard := filepath.Join(dir, "hard.bin")
	if err := os.Link(in, hard); err == nil {
		if _, err := Create(hard, true, in); err == nil {
			t.Fatal("overwriting the input through a hard link was allowed")
		}
	}
	f, err := Create(in, true)
	if err != nil {
		t.Fatalf("force: %v", err)
	}
	f.WriteString("y")
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
}
