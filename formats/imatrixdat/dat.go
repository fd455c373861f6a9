package imatrixdat

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"

	"github.com/tfconv/tfconv/internal/openfile"
	"github.com/tfconv/tfconv/tensor"
)

// Limits on what a file may declare; each is far beyond what llama-imatrix
// writes (names are GGUF tensor names, at most 64 bytes in ggml).
const (
	MaxEntries = 1 << 20
	MaxName    = 1 << 12
)

// Entry is one weight's data.
type Entry struct {
	Name   string
	NCall  int32
	Values []float32 // mean of squared activations × NCall
}

// File is a parsed imatrix.dat.
type File struct {
	Entries []Entry
	// HasTrailer reports whether the file ends with the chunk count and
	// dataset name (Chunks, Dataset); files written before mid-2024 do not.
	HasTrailer bool
	Chunks     int32
	Dataset    string
}

// Open reads the named file.
func Open(path string) (*File, error) {
	return openfile.Read(path, "imatrixdat", func(r io.ReaderAt, size int64) (*File, error) { return parse(r, size, path) })
}

// NewFile parses a file of size bytes held by r.
func NewFile(r io.ReaderAt, size int64) (*File, error) { return parse(r, size, "") }

type decoder struct {
	r    io.ReaderAt
	size int64
	off  int64
	file string
	item string
}

func (d *decoder) errAt(off int64, format string, args ...any) error {
	return &tensor.FormatError{Format: "imatrixdat", File: d.file, Offset: off, Item: d.item, Msg: fmt.Sprintf(format, args...)}
}

func (d *decoder) read(p []byte, what string) error {
	if int64(len(p)) > d.size-d.off {
		return d.errAt(d.off, "%s: file ends after %d bytes, %d needed", what, d.size-d.off, len(p))
	}
	if _, err := d.r.ReadAt(p, d.off); err != nil {
		return &tensor.FormatError{Format: "imatrixdat", File: d.file, Offset: d.off, Item: d.item, Msg: what, Err: err}
	}
	d.off += int64(len(p))
	return nil
}

func (d *decoder) i32(what string) (int32, error) {
	var b [4]byte
	if err := d.read(b[:], what); err != nil {
		return 0, err
	}
	return int32(binary.LittleEndian.Uint32(b[:])), nil
}

// count reads an int32 that must lie in [lo, hi].
func (d *decoder) count(what string, lo, hi int64) (int, error) {
	at := d.off
	v, err := d.i32(what)
	if err != nil {
		return 0, err
	}
	if int64(v) < lo || int64(v) > hi {
		return 0, d.errAt(at, "%s %d outside [%d, %d]", what, v, lo, hi)
	}
	return int(v), nil
}

func (d *decoder) str(what string, lo int64) (string, error) {
	n, err := d.count(what+" length", lo, min(MaxName, d.size-d.off-4))
	if err != nil {
		return "", err
	}
	b := make([]byte, n)
	if err := d.read(b, what); err != nil {
		return "", err
	}
	return string(b), nil
}

func parse(r io.ReaderAt, size int64, name string) (*File, error) {
	d := &decoder{r: r, size: size, file: name}
	// The smallest entry: a 1-byte name, ncall, nval = 1, one value.
	const minEntry = 4 + 1 + 4 + 4 + 4
	n, err := d.count("entry count", 1, min(MaxEntries, (size-4)/minEntry))
	if err != nil {
		return nil, err
	}
	f := &File{Entries: make([]Entry, 0, n)}
	seen := make(map[string]bool, n)
	for i := range n {
		d.item = fmt.Sprintf("entry %d", i)
		at := d.off
		var e Entry
		if e.Name, err = d.str("name", 1); err != nil {
			return nil, err
		}
		if seen[e.Name] {
			return nil, d.errAt(at, "name %q appears twice", e.Name)
		}
		seen[e.Name] = true
		d.item = fmt.Sprintf("entry %q", e.Name)
		if e.NCall, err = d.i32("ncall"); err != nil {
			return nil, err
		}
		nval, err := d.count("value count", 1, (d.size-d.off-4)/4)
		if err != nil {
			return nil, err
		}
		raw := make([]byte, 4*nval)
		if err := d.read(raw, "values"); err != nil {
			return nil, err
		}
		e.Values = make([]float32, nval)
		for j := range e.Values {
			e.Values[j] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*j:]))
		}
		f.Entries = append(f.Entries, e)
	}
	d.item = "trailer"
	if d.off == size {
		return f, nil
	}
	f.HasTrailer = true
	if f.Chunks, err = d.i32("chunk count"); err != nil {
		return nil, err
	}
	if f.Dataset, err = d.str("dataset", 0); err != nil {
		return nil, err
	}
	if d.off != size {
		return nil, d.errAt(d.off, "%d bytes after the dataset name", size-d.off)
	}
	return f, nil
}

// Write writes f in the layout above; the trailer is written when
// f.HasTrailer.
func Write(w io.Writer, f *File) error {
	if len(f.Entries) == 0 || len(f.Entries) > MaxEntries {
		return fmt.Errorf("imatrixdat: %d entries (1 to %d can be written)", len(f.Entries), MaxEntries)
	}
	var b bytes.Buffer
	put := func(v int32) { binary.Write(&b, binary.LittleEndian, v) }
	put(int32(len(f.Entries)))
	for _, e := range f.Entries {
		if len(e.Name) == 0 || len(e.Name) > MaxName {
			return fmt.Errorf("imatrixdat: entry %q: name of %d bytes (1 to %d can be written)", e.Name, len(e.Name), MaxName)
		}
		if len(e.Values) == 0 || len(e.Values) > math.MaxInt32/4 {
			return fmt.Errorf("imatrixdat: entry %q: %d values", e.Name, len(e.Values))
		}
		put(int32(len(e.Name)))
		b.WriteString(e.Name)
		put(e.NCall)
		put(int32(len(e.Values)))
		for _, v := range e.Values {
			binary.Write(&b, binary.LittleEndian, math.Float32bits(v))
		}
		if _, err := w.Write(b.Bytes()); err != nil {
			return err
		}
		b.Reset()
	}
	if f.HasTrailer {
		if len(f.Dataset) > MaxName {
			return fmt.Errorf("imatrixdat: dataset name of %d bytes (at most %d can be written)", len(f.Dataset), MaxName)
		}
		put(f.Chunks)
		put(int32(len(f.Dataset)))
		b.WriteString(f.Dataset)
	}
	_, err := w.Write(b.Bytes())
	return err
}
