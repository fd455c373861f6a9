package safetensors

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/tfconv/tfconv/internal/openfile"
	"github.com/tfconv/tfconv/tensor"
)

// MaxHeaderLen is the largest header the reference implementation accepts
// (MAX_HEADER_SIZE in safetensors/src/tensor.rs). It also bounds the one
// allocation a reader makes from a number in the file.
const MaxHeaderLen = 100_000_000

// lenBytes is the size of the header-length prefix.
const lenBytes = 8

// metadataKey is the header key that holds the free-form metadata.
const metadataKey = "__metadata__"

// File is an open safetensors file: its parsed header and a handle to read
// tensor data from.
type File struct {
	Name       string          // path given to Open, "" for NewFile
	Size       int64           // file size
	HeaderLen  int64           // N: length of the JSON header, padding included
	DataOffset int64           // 8+N: where the data section starts
	Metadata   tensor.Metadata // __metadata__ entries (all tensor.KindString), in header order; nil when absent
	Tensors    []Tensor        // in data-offset order (the file's order)

	byName map[string]int
	closer io.Closer
}

// Tensor is one tensor of a File. Info.Offset is absolute in the file.
type Tensor struct {
	tensor.Info
	r io.ReaderAt
}

// Open returns a reader of the tensor's bytes. Each call gives an
// independent reader.
func (t *Tensor) Open() *io.SectionReader {
	return io.NewSectionReader(t.r, t.Offset, t.Size)
}

// Open opens the named file and parses its header. On failure the file is
// closed. The *os.File is the File's io.ReaderAt until Close.
func Open(path string) (*File, error) {
	f, c, err := openfile.Open(path, "safetensors", func(r io.ReaderAt, size int64) (*File, error) { return newFile(r, size, path) })
	if err != nil {
		return nil, err
	}
	f.closer = c
	return f, nil
}

// NewFile parses the header of a safetensors file of the given size read
// through r. It reads the 8+N header bytes and nothing else.
func NewFile(r io.ReaderAt, size int64) (*File, error) {
	return newFile(r, size, "")
}

// Tensor returns the tensor with the given name.
func (f *File) Tensor(name string) (*Tensor, bool) {
	i, ok := f.byName[name]
	if !ok {
		return nil, false
	}
	return &f.Tensors[i], true
}

// Close closes the file opened by Open; it does nothing for a File made by
// NewFile.
func (f *File) Close() error { return openfile.Close(&f.closer) }

// parsed is one tensor entry as read from the header, before the checks that
// need all entries.
type parsed struct {
	info       tensor.Info
	begin, end int64 // data_offsets
	keyPos     int   // position of the name in the header, for errors
	order      int   // index in header order
}

// ParseDType returns the dtype a header names. An unknown name is an error
// that, when the name is a safetensors dtype in the wrong case, says so.
func ParseDType(name string) (tensor.DType, error) {
	if d, ok := tensor.DTypeFromSafetensors(name); ok {
		return d, nil
	}
	msg := "unknown dtype " + strconv.Quote(name)
	if d, ok := tensor.Parse(name); ok {
		if _, st := d.SafetensorsName(); st {
			msg += " (dtype names are case-sensitive: " + d.String() + ")"
		}
	}
	return 0, errors.New(msg)
}

func tensorItem(name string) string { return "tensor " + strconv.Quote(name) }
func keyItem(name string) string    { return "key " + strconv.Quote(name) }

func newFile(r io.ReaderAt, size int64, name string) (*File, error) {
	ferr := func(off int64, item, msg string) error {
		return &tensor.FormatError{Format: "safetensors", File: name, Offset: off, Item: item, Msg: msg}
	}
	if size < lenBytes {
		return nil, ferr(0, "", fmt.Sprintf("file is %d bytes, too short for the 8-byte header length", size))
	}
	var nb [lenBytes]byte
	if err := readFull(r, nb[:], 0); err != nil {
		return nil, readErr(name, 0, "header length", err)
	}
	n64 := binary.LittleEndian.Uint64(nb[:])
	if err := CheckHeaderLen(n64, size); err != nil {
		return nil, ferr(0, "", err.Error())
	}
	n := int64(n64)
	hdr := make([]byte, n)
	if err := readFull(r, hdr, lenBytes); err != nil {
		return nil, readErr(name, lenBytes, "header", err)
	}
	f := &File{
		Name:       name,
		Size:       size,
		HeaderLen:  n,
		DataOffset: lenBytes + n,
		byName:     map[string]int{},
	}
	ps, err := f.parseHeader(hdr)
	if err != nil {
		return nil, err
	}
	if err := f.layout(ps); err != nil {
		return nil, err
	}
	for i := range f.Tensors {
		f.Tensors[i].r = r
		f.byName[f.Tensors[i].Name] = i
	}
	return f, nil
}

// CheckHeaderLen applies the rules for the header length n that a file of
// size bytes (at least 8) starts with: at most MaxHeaderLen, and inside the
// file.
func CheckHeaderLen(n uint64, size int64) error {
	if n > MaxHeaderLen {
		return fmt.Errorf("header length %d exceeds the limit of %d bytes", n, MaxHeaderLen)
	}
	if n > uint64(size-lenBytes) {
		return fmt.Errorf("header length %d runs past the end of the %d-byte file", n, size)
	}
	return nil
}

// readFull reads len(b) bytes at off; a short read is io.ErrUnexpectedEOF.
func readFull(r io.ReaderAt, b []byte, off int64) error {
	n, err := r.ReadAt(b, off)
	if n == len(b) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// readErr reports a failed read: a reader shorter than the size it was
// given is a malformed (truncated) input, anything else an I/O error.
func readErr(name string, off int64, what string, err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return &tensor.FormatError{Format: "safetensors", File: name, Offset: off, Msg: "truncated " + what, Err: err}
	}
	if name != "" {
		return fmt.Errorf("safetensors: %s: reading %s: %w", name, what, err)
	}
	return fmt.Errorf("safetensors: reading %s: %w", what, err)
}

// parseHeader checks the header's encoding and reads its entries in header
// order. Metadata lands in f.Metadata.
func (f *File) parseHeader(hdr []byte) ([]parsed, error) {
	s := &scanner{buf: hdr, base: lenBytes, file: f.Name}
	if i := InvalidUTF8(hdr); i >= 0 {
		return nil, s.errAt(i, "", "header is not valid UTF-8")
	}
	if len(hdr) == 0 || hdr[0] != '{' {
		s.pos = 0
		return nil, s.errAt(0, "", "header does not start with '{' (found "+s.describe()+")")
	}
	var ps []parsed
	dupItem := func(key string) string {
		if key == metadataKey {
			return keyItem(key)
		}
		return tensorItem(key)
	}
	err := s.object("", "an object", dupItem, func(key string, keyPos int) error {
		if key == metadataKey {
			// Non-nil even when empty, so that `"__metadata__":{}` is
			// written back as it was read.
			f.Metadata = tensor.Metadata{}
			return s.stringMap(keyItem(metadataKey), "an object of strings", keyItem, func(k, v string) {
				f.Metadata = append(f.Metadata, tensor.KV{Key: k, Value: tensor.String(v)})
			})
		}
		p, err := s.tensorEntry(key)
		if err != nil {
			return err
		}
		p.keyPos, p.order = keyPos, len(ps)
		ps = append(ps, p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := s.end(); err != nil {
		return nil, err
	}
	return ps, nil
}

// tensorEntry reads {"dtype":..., "shape":[...], "data_offsets":[b,e]}.
func (s *scanner) tensorEntry(name string) (parsed, error) {
	item := tensorItem(name)
	p := parsed{info: tensor.Info{Name: name}}
	var have [3]bool
	start := s.pos
	err := s.object(item, "an object", nil, func(key string, keyPos int) error {
		switch key {
		case "dtype":
			have[0] = true
			if s.peek() != '"' {
				return s.errAt(s.pos, item, "dtype must be a string, found "+s.describe())
			}
			pos := s.pos
			v, err := s.str(item)
			if err != nil {
				return err
			}
			d, err := ParseDType(v)
			if err != nil {
				return s.errAt(pos, item, err.Error())
			}
			p.info.DType = d
		case "shape":
			have[1] = true
			if err := s.expect('[', item, "a shape array"); err != nil {
				return err
			}
			shape := tensor.Shape{}
			if s.peek() == ']' {
				s.pos++
			} else {
				for {
					if len(shape) == tensor.MaxDims {
						return s.errAt(s.pos, item, fmt.Sprintf("shape has more than %d dimensions", tensor.MaxDims))
					}
					d, err := s.uint(item, "shape dimension")
					if err != nil {
						return err
					}
					shape = append(shape, d)
					c := s.peek()
					if c == ']' {
						s.pos++
						break
					}
					if c != ',' {
						return s.errAt(s.pos, item, "invalid JSON: want ',' or ']' in shape, found "+s.describe())
					}
					s.pos++
				}
			}
			p.info.Shape = shape
		case "data_offsets":
			have[2] = true
			if err := s.expect('[', item, "a data_offsets pair"); err != nil {
				return err
			}
			b, err := s.uint(item, "data_offsets begin")
			if err != nil {
				return err
			}
			if err := s.expect(',', item, "',' (data_offsets holds exactly two numbers)"); err != nil {
				return err
			}
			e, err := s.uint(item, "data_offsets end")
			if err != nil {
				return err
			}
			if err := s.expect(']', item, "']' (data_offsets holds exactly two numbers)"); err != nil {
				return err
			}
			p.begin, p.end = b, e
		default:
			return s.errAt(keyPos, item, "unknown key "+strconv.Quote(key)+" (a tensor has exactly dtype, shape and data_offsets)")
		}
		return nil
	})
	if err != nil {
		return p, err
	}
	for i, k := range [3]string{"dtype", "shape", "data_offsets"} {
		if !have[i] {
			return p, s.errAt(start, item, "missing key "+strconv.Quote(k))
		}
	}
	return p, nil
}

// layout checks sizes and the tiling of the data section, then fills
// f.Tensors in data order.
func (f *File) layout(ps []parsed) error {
	dataLen := f.Size - f.DataOffset
	// where returns the absolute offset of a tensor's data, or of its entry
	// in the header when that offset is not representable.
	where := func(p *parsed) int64 {
		if off, err := tensor.AddInt64(f.DataOffset, p.begin); err == nil {
			return off
		}
		return lenBytes + int64(p.keyPos)
	}
	ferr := func(p *parsed, msg string) error {
		return &tensor.FormatError{Format: "safetensors", File: f.Name, Offset: where(p), Item: tensorItem(p.info.Name), Msg: msg}
	}
	for i := range ps {
		p := &ps[i]
		size, err := p.info.DType.ShapeBytes(p.info.Shape)
		if err != nil {
			return &tensor.FormatError{Format: "safetensors", File: f.Name, Offset: where(p), Item: tensorItem(p.info.Name),
				Msg: fmt.Sprintf("%s %v has no valid byte size", p.info.DType, p.info.Shape), Err: err}
		}
		if p.begin > p.end {
			return ferr(p, fmt.Sprintf("data_offsets [%d,%d] end before they begin", p.begin, p.end))
		}
		if p.end-p.begin != size {
			return ferr(p, fmt.Sprintf("data_offsets [%d,%d] hold %d bytes, but %s %v needs %d", p.begin, p.end, p.end-p.begin, p.info.DType, p.info.Shape, size))
		}
		p.info.Size = size
		p.info.Offset = where(p)
	}
	// Sorted by offsets as the reference does, the tensors must tile the
	// data section; the first gap is the error.
	spans := make([]Span, len(ps))
	for i := range ps {
		spans[i] = Span{ps[i].begin, ps[i].end}
	}
	var first error
	order, cursor, _ := Tile(spans, dataLen, func(g Gap) bool {
		p := &ps[g.Index]
		switch g.Kind {
		case Hole:
			if g.Prev < 0 {
				first = ferr(p, fmt.Sprintf("hole: data section bytes [0,%d) belong to no tensor", g.To))
			} else {
				first = ferr(p, fmt.Sprintf("hole: data section bytes [%d,%d) between tensor %q and this one belong to no tensor", g.From, g.To, ps[g.Prev].info.Name))
			}
		case Overlap:
			first = ferr(p, fmt.Sprintf("data_offsets [%d,%d] overlap tensor %q, which ends at %d", p.begin, p.end, ps[g.Prev].info.Name, g.To))
		case PastEnd:
			first = ferr(p, fmt.Sprintf("data_offsets [%d,%d] run past the end of the file (data section is %d bytes)", p.begin, p.end, dataLen))
		}
		return false
	})
	if first != nil {
		return first
	}
	if cursor != dataLen {
		return &tensor.FormatError{Format: "safetensors", File: f.Name, Offset: f.DataOffset + cursor,
			Msg: fmt.Sprintf("%d trailing bytes after the last tensor (data must end at the end of the file)", dataLen-cursor)}
	}
	f.Tensors = make([]Tensor, len(order))
	for i, k := range order {
		f.Tensors[i].Info = ps[k].info
	}
	return nil
}
