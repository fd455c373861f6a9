package gguf

import (
	"bytes"
	"fmt"
	"io"
	"strconv"

	"github.com/tfconv/tfconv/internal/openfile"
	"github.com/tfconv/tfconv/tensor"
)

// Magic is the four bytes every GGUF file starts with.
const Magic = "GGUF"

// Sniff reports whether head, a file's first bytes, starts a GGUF file:
// the magic, or the magic byte-swapped ("FUGG"), which a big-endian writer
// may have produced and which the reader then reports as such.
func Sniff(head []byte) bool {
	return bytes.HasPrefix(head, []byte(Magic)) || bytes.HasPrefix(head, []byte("FUGG"))
}

// Version is the GGUF version the Writer produces.
const Version = 3

// DefaultAlignment is the data alignment used when general.alignment is
// absent (GGUF_DEFAULT_ALIGNMENT in ggml).
const DefaultAlignment = 32

// KeyAlignment is the metadata key that overrides DefaultAlignment. It must be
// a uint32 holding a non-zero power of two.
const KeyAlignment = "general.alignment"

// KeyArchitecture names the model architecture ("llama", "gpt2", ...).
const KeyArchitecture = "general.architecture"

// File is an open GGUF file: its header, metadata and tensor directory. The
// tensor data is read lazily through Tensor.Open.
type File struct {
	Name       string          // path given to Open, "" for NewFile
	Size       int64           // size of the whole file in bytes
	Version    uint32          // 2 or 3
	Alignment  int64           // general.alignment or DefaultAlignment
	DataOffset int64           // absolute offset of the data section
	Metadata   tensor.Metadata // every key-value pair in file order; tensor.Kind numbering is gguf_type
	Tensors    []Tensor        // in file (tensor-info) order
	// Lints are what the reader accepts but ggml refuses or never writes
	// (a tensor with a 0 dimension, an array of arrays), in file order:
	// Walk's lint problems, which check reports under its own rule ids.
	Lints []*Problem

	closer io.Closer
}

// Tensor is one entry of the tensor directory. Shape is row-major, the
// reverse of ggml's ne; Offset is absolute in the file and Size is the exact
// byte length of the data (without the padding that follows it).
type Tensor struct {
	tensor.Info
	r io.ReaderAt
}

// Open returns a reader for the tensor's bytes.
func (t *Tensor) Open() *io.SectionReader {
	return io.NewSectionReader(t.r, t.Offset, t.Size)
}

// NE returns the dimensions in ggml's order: ne[0] is the row length.
func (t *Tensor) NE() []int64 {
	return []int64(t.Shape.Reversed())
}

// Open opens the named file and parses its header. The file stays open until
// Close; it is closed at once if parsing fails.
func Open(path string) (*File, error) {
	f, c, err := openfile.Open(path, "gguf", func(r io.ReaderAt, size int64) (*File, error) { return parse(r, size, path) })
	if err != nil {
		return nil, err
	}
	f.Name = path
	f.closer = c
	return f, nil
}

// NewFile parses a GGUF file held by r, which has size bytes. r must stay
// readable while the tensors are used.
func NewFile(r io.ReaderAt, size int64) (*File, error) {
	return parse(r, size, "")
}

// Close closes the file opened by Open; it does nothing for NewFile.
func (f *File) Close() error { return openfile.Close(&f.closer) }

// Tensor returns the tensor with the given name.
func (f *File) Tensor(name string) (*Tensor, bool) {
	for i := range f.Tensors {
		if f.Tensors[i].Name == name {
			return &f.Tensors[i], true
		}
	}
	return nil, false
}

// Architecture returns general.architecture, or "" when it is absent or not a
// string.
func (f *File) Architecture() string {
	s, _ := f.Metadata.Str(KeyArchitecture)
	return s
}

// parse is the strict walk followed by the layout rules: each tensor's
// data where ggml expects it, inside the file, and nothing after the last.
func parse(r io.ReaderAt, size int64, name string) (*File, error) {
	h, err := Walk(r, size, WalkOptions{Name: name})
	if err != nil {
		return nil, err
	}
	f := &File{Size: size, Version: h.Version, Alignment: h.Alignment, DataOffset: h.DataOffset, Metadata: h.Metadata, Lints: h.Lints}
	errAt := func(off int64, item, format string, args ...any) error {
		return &tensor.FormatError{Format: "gguf", File: name, Offset: off, Item: item, Msg: fmt.Sprintf(format, args...)}
	}

	// ggml requires each tensor to start exactly where the previous one's
	// padded data ends, which also rules out gaps and overlaps.
	f.Tensors = make([]Tensor, len(h.Tensors))
	var next int64
	for i, e := range h.Tensors {
		item := "tensor " + strconv.Quote(e.Name)
		if e.Rel%uint64(f.Alignment) != 0 {
			return nil, errAt(e.OffsetPos, item, "data offset %d is not a multiple of the alignment %d", e.Rel, f.Alignment)
		}
		if e.Rel != uint64(next) {
			return nil, errAt(e.OffsetPos, item, "data offset %d, want %d (the end of the previous tensor's padded data)", e.Rel, next)
		}
		abs, err := tensor.AddInt64(f.DataOffset, next)
		if err != nil {
			return nil, errAt(e.OffsetPos, item, "data offset %d overflows", e.Rel)
		}
		end, err := tensor.AddInt64(abs, e.Size)
		if err != nil || end > size {
			return nil, errAt(e.OffsetPos, item, "data [%d, %d+%d) extends past the end of the file (%d bytes)", abs, abs, e.Size, size)
		}
		padded, err := tensor.AlignUp(e.Size, f.Alignment)
		if err == nil {
			next, err = tensor.AddInt64(next, padded)
		}
		if err != nil {
			return nil, errAt(e.OffsetPos, item, "data section size overflows")
		}
		e.Info.Offset = abs
		f.Tensors[i] = Tensor{Info: e.Info, r: r}
	}
	// The file ends with the last tensor's data and at most its padding (or
	// right after the metadata when there are no tensors). Anything beyond
	// is not described by the header: a second file appended (a polyglot),
	// or a botched concatenation; ggml ignores it, we refuse it.
	end, err := tensor.AddInt64(f.DataOffset, next)
	if len(h.Tensors) == 0 {
		end, err = f.DataOffset, nil
	}
	if err == nil {
		end, err = tensor.AlignUp(end, f.Alignment)
	}
	if err == nil && size > end {
		return nil, errAt(end, "", "%d trailing bytes after the data section (which ends at %d)", size-end, end)
	}
	return f, nil
}
