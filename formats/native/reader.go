package native

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math"
	"strconv"

	"github.com/tfconv/tfconv/internal/openfile"
	"github.com/tfconv/tfconv/tensor"
)

// File is an open native checkpoint. Its header and checksum table are parsed
// once by NewFile; tensor and aux data are read lazily.
type File struct {
	Name    string    // path given to Open, or ""
	Size    int64     // file size in bytes
	Version [2]uint16 // major, minor
	// Alignment is the power of two every body offset is a multiple of.
	Alignment int64
	// Source names the format the checkpoint came from: SourceSafetensors,
	// SourceGGUF, or "" for a checkpoint made by tfconv itself.
	Source string
	// SourceInfo holds facts about the source container that are not part
	// of its metadata (e.g. "gguf.version"); see doc.go.
	SourceInfo tensor.Metadata
	// Metadata is the model's metadata in its original order: every GGUF
	// KV, or the safetensors __metadata__ entries (all strings).
	Metadata tensor.Metadata
	Aux      []AuxFile // embedded files, in stored order
	Tensors  []Tensor  // in stored order

	index  map[string]int
	closer io.Closer
}

// Tensor is one tensor of a File. Info.Offset is absolute in the file.
type Tensor struct {
	tensor.Info
	// Attrs are the tensor's own typed attributes (e.g. quant.scale).
	Attrs tensor.Metadata
	// CRC is the CRC-32C of the tensor's data, from the trailer.
	CRC uint32

	r    io.ReaderAt
	file string
}

// AuxFile is one embedded auxiliary file (config.json, tokenizer.json, ...).
type AuxFile struct {
	Name   string // slash-separated relative path, as fs.ValidPath
	Size   int64
	CRC    uint32 // CRC-32C of the contents, from the trailer
	Offset int64  // absolute offset of the contents in the file

	r    io.ReaderAt
	file string
}

// Open opens the named file and parses its header and checksum table. The
// file is closed again when parsing fails.
func Open(path string) (*File, error) {
	f, c, err := openfile.Open(path, "", func(r io.ReaderAt, size int64) (*File, error) { return newFile(r, size, path) })
	if err != nil {
		return nil, err
	}
	f.closer = c
	return f, nil
}

// NewFile parses a native checkpoint of the given size read through r. It
// reads the leading header and the trailing checksum table, nothing else.
func NewFile(r io.ReaderAt, size int64) (*File, error) {
	return newFile(r, size, "")
}

// Close closes the file opened by Open; it does nothing for NewFile.
func (f *File) Close() error { return openfile.Close(&f.closer) }

// Tensor returns the tensor with the given name.
func (f *File) Tensor(name string) (*Tensor, bool) {
	i, ok := f.index[name]
	if !ok {
		return nil, false
	}
	return &f.Tensors[i], true
}

// AuxFile returns the embedded file with the given name.
func (f *File) AuxFile(name string) (*AuxFile, bool) {
	for i := range f.Aux {
		if f.Aux[i].Name == name {
			return &f.Aux[i], true
		}
	}
	return nil, false
}

// Verify reads every aux file and tensor and checks its checksum, returning
// an error naming the first one that does not match.
func (f *File) Verify() error {
	for i := range f.Aux {
		if _, err := io.Copy(io.Discard, f.Aux[i].Open()); err != nil {
			return err
		}
	}
	for i := range f.Tensors {
		if _, err := io.Copy(io.Discard, f.Tensors[i].Open()); err != nil {
			return err
		}
	}
	return nil
}

// OpenRaw returns the tensor's data without checksum verification: the fast
// path for mmap and for readers that verify elsewhere.
func (t *Tensor) OpenRaw() *io.SectionReader {
	return io.NewSectionReader(t.r, t.Offset, t.Size)
}

// Open returns a reader of the tensor's data that computes its CRC-32C as it
// goes. When the checksum does not match, the read that would deliver the
// last bytes returns a *tensor.FormatError naming the tensor instead, so the
// complete data is only ever returned intact.
func (t *Tensor) Open() io.Reader {
	return &checkedReader{
		r: t.OpenRaw(), want: t.CRC, file: t.file, off: t.Offset,
		item: "tensor " + strconv.Quote(t.Name),
	}
}

// Open returns a reader of the aux file's contents that verifies its
// checksum like Tensor.Open.
func (a *AuxFile) Open() io.Reader {
	return &checkedReader{
		r: io.NewSectionReader(a.r, a.Offset, a.Size), want: a.CRC, file: a.file, off: a.Offset,
		item: "aux file " + strconv.Quote(a.Name),
	}
}

// ReadAll returns the aux file's contents after checking their checksum.
// Files above MaxAuxReadAll are refused (stream them with Open instead).
func (a *AuxFile) ReadAll() ([]byte, error) {
	if a.Size > MaxAuxReadAll {
		return nil, &tensor.FormatError{
			Format: "native", File: a.file, Offset: a.Offset, Item: "aux file " + strconv.Quote(a.Name),
			Msg: fmt.Sprintf("%d bytes exceed the ReadAll cap of %d; use Open", a.Size, MaxAuxReadAll), Unsupported: true,
		}
	}
	b := make([]byte, 0, a.Size)
	w := bytesWriter{&b}
	if _, err := io.Copy(w, a.Open()); err != nil {
		return nil, err
	}
	return b, nil
}

type bytesWriter struct{ b *[]byte }

func (w bytesWriter) Write(p []byte) (int, error) {
	*w.b = append(*w.b, p...)
	return len(p), nil
}

// checkedReader checks a CRC-32C as soon as the last byte of its section
// has been read. A damaged body is never handed over whole: the read that
// would complete it returns 0 bytes and the error instead, so callers that
// stop at the expected length (io.ReadFull) see the error too.
type checkedReader struct {
	r    *io.SectionReader
	n    int64 // bytes read so far
	crc  uint32
	want uint32
	file string
	off  int64
	item string
	err  error
}

func (c *checkedReader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.r.Read(p)
	c.crc = crc32.Update(c.crc, castagnoli, p[:n])
	c.n += int64(n)
	switch {
	case c.n == c.r.Size():
		if c.crc != c.want {
			c.err = &tensor.FormatError{
				Format: "native", File: c.file, Offset: c.off, Item: c.item,
				Msg: fmt.Sprintf("checksum mismatch: stored %08x, data has %08x", c.want, c.crc),
			}
			return 0, c.err
		}
	case err == io.EOF:
		err = fmt.Errorf("native: %s: data ends after %d of %d bytes: %w", c.item, c.n, c.r.Size(), io.ErrUnexpectedEOF)
	case err != nil:
		err = fmt.Errorf("native: %s: %w", c.item, err)
	}
	if err != nil {
		c.err = err
	}
	return n, err
}

// body is an aux file or tensor during layout validation.
type body struct {
	item        string
	fieldOff    int64 // file offset of the offset field in the header
	offset, end int64
}

func newFile(r io.ReaderAt, size int64, name string) (*File, error) {
	fail := func(off int64, item, format string, args ...any) error {
		return &tensor.FormatError{Format: "native", File: name, Offset: off, Item: item, Msg: fmt.Sprintf(format, args...)}
	}
	if size < preambleSize+footerSize {
		return nil, fail(0, "", "file of %d bytes is shorter than a preamble and footer (%d)", size, preambleSize+footerSize)
	}
	var pre [preambleSize]byte
	if err := readAt(r, pre[:], 0); err != nil {
		return nil, &tensor.FormatError{Format: "native", File: name, Offset: 0, Msg: "reading preamble", Err: err}
	}
	if string(pre[:8]) != Magic {
		return nil, fail(0, "", "bad magic %q", pre[:8])
	}
	f := &File{Name: name, Size: size, Version: [2]uint16{le.Uint16(pre[8:]), le.Uint16(pre[10:])}}
	if f.Version[0] != MajorVersion {
		return nil, &tensor.FormatError{Format: "native", File: name, Offset: 8,
			Msg: fmt.Sprintf("format version %d.%d: this reader knows major version %d", f.Version[0], f.Version[1], MajorVersion), Unsupported: true}
	}
	align := int64(le.Uint32(pre[12:]))
	if align < 1 || align > MaxAlignment || align&(align-1) != 0 {
		return nil, fail(12, "", "alignment %d is not a power of two in [1, %d]", align, MaxAlignment)
	}
	f.Alignment = align
	hlen := le.Uint64(pre[16:])
	if hlen > MaxHeaderSize || hlen > uint64(size-preambleSize-footerSize) {
		return nil, fail(16, "", "header length %d exceeds the cap of %d or the %d-byte file", hlen, MaxHeaderSize, size)
	}
	hdr := make([]byte, hlen)
	if err := readAt(r, hdr, preambleSize); err != nil {
		return nil, &tensor.FormatError{Format: "native", File: name, Offset: preambleSize, Msg: "reading header", Err: err}
	}
	// The checksum is checked before parsing, so a damaged header is reported
	// as damage rather than as whatever nonsense the flipped bits spell.
	hcrc := le.Uint32(pre[24:])
	if got := headerCRC(pre[:], hdr); got != hcrc {
		return nil, fail(24, "", "header checksum mismatch: stored %08x, header has %08x", hcrc, got)
	}

	d := &decoder{b: hdr, base: preambleSize, file: name}
	var err error
	if f.Source, err = d.str("", "source", MaxSourceLen); err != nil {
		return nil, err
	}
	if f.SourceInfo, err = d.metadata("source info"); err != nil {
		return nil, err
	}
	if f.Metadata, err = d.metadata(""); err != nil {
		return nil, err
	}
	var bodies []body

	naux, err := d.count("", "aux file count", MaxAux, minAuxSize)
	if err != nil {
		return nil, err
	}
	f.Aux = make([]AuxFile, naux)
	for i := range f.Aux {
		a := &f.Aux[i]
		at := d.pos()
		if a.Name, err = d.str("", "aux file name", MaxNameLen); err != nil {
			return nil, err
		}
		item := "aux file " + strconv.Quote(a.Name)
		if !fs.ValidPath(a.Name) || a.Name == "." {
			return nil, fail(at, item, "name is not a clean relative slash-separated path")
		}
		for j := range i {
			if f.Aux[j].Name == a.Name {
				return nil, fail(at, item, "duplicate aux file name")
			}
		}
		if a.Size, err = d.int64(item, "size"); err != nil {
			return nil, err
		}
		fieldOff := d.pos()
		if a.Offset, err = d.int64(item, "offset"); err != nil {
			return nil, err
		}
		a.r, a.file = r, name
		bodies = append(bodies, body{item: item, fieldOff: fieldOff, offset: a.Offset})
		if bodies[len(bodies)-1].end, err = tensor.AddInt64(a.Offset, a.Size); err != nil {
			return nil, fail(fieldOff, item, "offset %d + size %d overflows", a.Offset, a.Size)
		}
	}

	nt, err := d.count("", "tensor count", MaxTensors, minTensorSize)
	if err != nil {
		return nil, err
	}
	f.Tensors = make([]Tensor, nt)
	f.index = make(map[string]int, nt)
	entryOff := make([]int64, nt)
	for i := range f.Tensors {
		t := &f.Tensors[i]
		at := d.pos()
		entryOff[i] = at
		if t.Name, err = d.str("", "tensor name", MaxNameLen); err != nil {
			return nil, err
		}
		item := "tensor " + strconv.Quote(t.Name)
		if t.Name == "" {
			return nil, fail(at, item, "empty tensor name")
		}
		if _, dup := f.index[t.Name]; dup {
			return nil, fail(at, item, "duplicate tensor name")
		}
		f.index[t.Name] = i
		dat := d.pos()
		dname, err := d.str(item, "dtype name", maxDTypeLen)
		if err != nil {
			return nil, err
		}
		dt, ok := tensor.Parse(dname)
		switch {
		case !ok:
			return nil, &tensor.FormatError{Format: "native", File: name, Offset: dat, Item: item,
				Msg: fmt.Sprintf("unknown dtype %q", dname), Unsupported: true}
		case dt.String() != dname:
			return nil, fail(dat, item, "dtype %q is not spelled canonically (%q)", dname, dt.String())
		}
		t.DType = dt
		rat := d.pos()
		rank, err := d.u32(item, "rank")
		if err != nil {
			return nil, err
		}
		if rank > tensor.MaxDims {
			return nil, fail(rat, item, "rank %d exceeds the cap of %d", rank, tensor.MaxDims)
		}
		t.Shape = make(tensor.Shape, rank)
		for j := range t.Shape {
			if t.Shape[j], err = d.int64(item, "dimension"); err != nil {
				return nil, err
			}
		}
		fieldOff := d.pos()
		if t.Offset, err = d.int64(item, "offset"); err != nil {
			return nil, err
		}
		sat := d.pos()
		if t.Size, err = d.int64(item, "size"); err != nil {
			return nil, err
		}
		want, err := dt.ShapeBytes(t.Shape)
		if err != nil {
			return nil, &tensor.FormatError{Format: "native", File: name, Offset: rat, Item: item, Msg: "bad shape", Err: err}
		}
		if want != t.Size {
			return nil, fail(sat, item, "size %d does not match %s %v (%d bytes)", t.Size, dt, t.Shape, want)
		}
		if t.Attrs, err = d.metadata(item); err != nil {
			return nil, err
		}
		t.r, t.file = r, name
		b := body{item: item, fieldOff: fieldOff, offset: t.Offset}
		if b.end, err = tensor.AddInt64(t.Offset, t.Size); err != nil {
			return nil, fail(fieldOff, item, "offset %d + size %d overflows", t.Offset, t.Size)
		}
		bodies = append(bodies, b)
	}
	if d.remaining() > 0 && f.Version[1] <= MinorVersion {
		// Only a newer minor version may append fields this reader skips.
		return nil, fail(d.pos(), "", "%d unexpected bytes at the end of a version %d.%d header", d.remaining(), f.Version[0], f.Version[1])
	}
	lookup := func(n string) (tensor.Info, bool) {
		i, ok := f.index[n]
		if !ok {
			return tensor.Info{}, false
		}
		return f.Tensors[i].Info, true
	}
	for i := range f.Tensors {
		t := &f.Tensors[i]
		if p := quantProblem(t.Info, t.Attrs, lookup); p != "" {
			return nil, fail(entryOff[i], "tensor "+strconv.Quote(t.Name), "%s", p)
		}
	}

	// Footer and checksum table.
	var foot [footerSize]byte
	fo := size - footerSize
	if err := readAt(r, foot[:], fo); err != nil {
		return nil, &tensor.FormatError{Format: "native", File: name, Offset: fo, Msg: "reading footer", Err: err}
	}
	if string(foot[24:]) != footerMagic {
		return nil, fail(fo+24, "", "bad footer magic %q (file truncated?)", foot[24:])
	}
	n := uint64(len(f.Aux) + len(f.Tensors))
	if c := le.Uint64(foot[8:]); c != n {
		return nil, fail(fo+8, "", "footer counts %d checksums, header declares %d bodies", c, n)
	}
	if c := le.Uint32(foot[16:]); c != hcrc {
		return nil, fail(fo+16, "", "footer header checksum %08x differs from the preamble's %08x: header and trailer are from different files", c, hcrc)
	}
	tableOff := le.Uint64(foot[0:])
	// n is bounded by MaxAux+MaxTensors, so 4*n cannot overflow.
	if tableOff > math.MaxInt64 || tableOff+crcSize*n+footerSize != uint64(size) {
		return nil, fail(fo, "", "checksum table at %d with %d entries does not end at the footer (file size %d)", tableOff, n, size)
	}

	// Bodies: aligned, in stored order, not overlapping the header, each
	// other or the checksum table.
	prev := int64(preambleSize) + int64(hlen)
	for _, b := range bodies {
		if b.offset%align != 0 {
			return nil, fail(b.fieldOff, b.item, "data offset %d is not a multiple of the alignment %d", b.offset, align)
		}
		if b.offset < prev {
			return nil, fail(b.fieldOff, b.item, "data offset %d overlaps the header or the previous body (which ends at %d)", b.offset, prev)
		}
		if b.end > int64(tableOff) {
			return nil, fail(b.fieldOff, b.item, "data [%d, %d) runs past the data section ending at %d", b.offset, b.end, tableOff)
		}
		prev = b.end
	}

	table := make([]byte, crcSize*n+footerSize)
	if err := readAt(r, table, int64(tableOff)); err != nil {
		return nil, &tensor.FormatError{Format: "native", File: name, Offset: int64(tableOff), Msg: "reading checksum table", Err: err}
	}
	if got, want := crc32.Checksum(table[:len(table)-12], castagnoli), le.Uint32(foot[20:]); got != want {
		return nil, fail(fo+20, "", "trailer checksum mismatch: stored %08x, trailer has %08x", want, got)
	}
	for i := range f.Aux {
		f.Aux[i].CRC = le.Uint32(table[crcSize*i:])
	}
	for i := range f.Tensors {
		f.Tensors[i].CRC = le.Uint32(table[crcSize*(len(f.Aux)+i):])
	}
	return f, nil
}

// readAt fills p from r at off; a short read is io.ErrUnexpectedEOF.
func readAt(r io.ReaderAt, p []byte, off int64) error {
	n, err := r.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return err
}
