package openfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("12345"), 0o644); err != nil {
		t.Fatal(err)
	}
	var seen *os.File
	parse := func(fail bool) func(io.ReaderAt, int64) (int64, error) {
		return func(r io.ReaderAt, size int64) (int64, error) {
			seen = r.(*os.File)
			if fail {
				return 0, errors.New("bad")
			}
			return size, nil
		}
	}

	// A parse error comes back as it is, and the file is closed.
	if _, _, err := Open(path, "x", parse(true)); err == nil || err.Error() != "bad" {
		t.Fatalf("failed parse: %v", err)
	}
	if _, err := seen.Stat(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("file left open after a failed parse: %v", err)
	}

	// Success: the parser saw the size, the file stays open until Close,
	// and a second Close does nothing.
	n, c, err := Open(path, "x", parse(false))
	if err != nil || n != 5 {
		t.Fatalf("Open: %d, %v", n, err)
	}
	if _, err := seen.Stat(); err != nil {
		t.Errorf("file closed before Close: %v", err)
	}
	if err := Close(&c); err != nil || c != nil {
		t.Fatalf("Close: %v, closer %v", err, c)
	}
	if _, err := seen.Stat(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("file open after Close: %v", err)
	}
	if err := Close(&c); err != nil {
		t.Errorf("second Close: %v", err)
	}

	// Read closes the file after a successful parse too.
	if n, err := Read(path, "x", parse(false)); err != nil || n != 5 {
		t.Fatalf("Read: %d, %v", n, err)
	}
	if _, err := seen.Stat(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("file open after Read: %v", err)
	}

	// A missing file: the package prefix, the path and fs.ErrNotExist.
	missing := filepath.Join(t.TempDir(), "missing")
	_, _, err = Open(missing, "gguf", parse(false))
	if !errors.Is(err, os.ErrNotExist) || !strings.HasPrefix(err.Error(), "gguf: open "+missing+":") {
		t.Errorf("missing file: %v", err)
	}
	if _, _, err = Open(missing, "", parse(false)); !strings.HasPrefix(err.Error(), "open "+missing) {
		t.Errorf("missing file, no prefix: %v", err)
	}
}
