package tensor

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors, checked with errors.Is.
var (
	// ErrFormat: the input is not a well-formed file of its format.
	ErrFormat = errors.New("malformed file")
	// ErrUnsupported: the input is well-formed but uses something tfconv
	// does not handle (a big-endian GGUF, a future version).
	ErrUnsupported = errors.New("unsupported")
)

// Unsupported returns an error whose text is fmt.Sprintf(format, args...)
// (any %w argument is wrapped) and that matches ErrUnsupported under
// errors.Is. The message says in its own words what tfconv does not do, so
// it does not end in a stray ": unsupported" as wrapping the sentinel would.
func Unsupported(format string, args ...any) error {
	return &unsupportedError{fmt.Errorf(format, args...)}
}

type unsupportedError struct{ err error }

func (e *unsupportedError) Error() string        { return e.err.Error() }
func (e *unsupportedError) Unwrap() error        { return e.err }
func (e *unsupportedError) Is(target error) bool { return target == ErrUnsupported }

// FormatError reports a defect in a file, naming where it is. It matches
// ErrFormat (or ErrUnsupported when Unsupported is set) under errors.Is.
type FormatError struct {
	Format string // package that found it: "gguf", "safetensors", "native", ...
	File   string // path, or "" when reading from an io.ReaderAt
	Offset int64  // byte offset of the defect; -1 when not known
	Item   string // the key or tensor concerned, already quoted (`tensor "x"`), or ""
	Msg    string
	// Unsupported marks a well-formed input that tfconv does not handle.
	Unsupported bool
	// Err is an underlying cause, if any.
	Err error
}

func (e *FormatError) Error() string {
	var b strings.Builder
	b.WriteString(e.Format)
	b.WriteString(": ")
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(": ")
	}
	if e.Offset >= 0 {
		fmt.Fprintf(&b, "offset %d: ", e.Offset)
	}
	if e.Item != "" {
		b.WriteString(e.Item)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *FormatError) Unwrap() error { return e.Err }

// Is matches ErrFormat, or ErrUnsupported for unsupported input.
func (e *FormatError) Is(target error) bool {
	if e.Unsupported {
		return target == ErrUnsupported
	}
	return target == ErrFormat
}
