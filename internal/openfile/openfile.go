package openfile

import (
	"fmt"
	"io"
	"os"
)

// Open opens path and parses it with parse, which reads the file through r
// (size bytes). When parse fails the file is closed and its error returned
// as it is; otherwise the file is returned open, for the caller's Close.
// An error opening or stat'ing the file is prefixed with pkg and a colon
// ("gguf: open x.gguf: no such file or directory"), or left as it is when
// pkg is "".
func Open[F any](path, pkg string, parse func(r io.ReaderAt, size int64) (F, error)) (F, io.Closer, error) {
	var zero F
	f, err := os.Open(path)
	if err != nil {
		return zero, nil, prefixed(pkg, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return zero, nil, prefixed(pkg, err)
	}
	v, err := parse(f, st.Size())
	if err != nil {
		f.Close()
		return zero, nil, err
	}
	return v, f, nil
}

// Read is Open for a parser that has read all it needs when it returns:
// the file is closed either way.
func Read[F any](path, pkg string, parse func(r io.ReaderAt, size int64) (F, error)) (F, error) {
	v, c, err := Open(path, pkg, parse)
	if err != nil {
		return v, err
	}
	c.Close()
	return v, nil
}

// Close closes *c and sets it to nil, so that a second Close does
// nothing; a nil *c (a reader made by NewFile) has nothing to close.
func Close(c *io.Closer) error {
	if *c == nil {
		return nil
	}
	err := (*c).Close()
	*c = nil
	return err
}

func prefixed(pkg string, err error) error {
	if pkg == "" {
		return err
	}
	return fmt.Errorf("%s: %w", pkg, err)
}
