package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/tfconv/tfconv/internal/openfile"
	"github.com/tfconv/tfconv/tensor"
)

// Magic is the four bytes every GGUF file starts with.
const Magic = "GGUF"

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

// Limits applied to untrusted files. ggml's loader uses the same values for
// strings and arrays; the others follow from the format itself.
const (
	// MaxDims is GGML_MAX_DIMS: a tensor has 1 to 4 dimensions.
	MaxDims = 4
	// MaxNameLen is GGML_MAX_NAME: tensor names are shorter than 64 bytes,
	// because ggml copies them into a fixed char[64] with a terminating NUL.
	MaxNameLen = 64
	// maxStringLen is GGUF_MAX_STRING_LENGTH (1 GiB).
	maxStringLen = 1 << 30
	// maxArrayLen is GGUF_MAX_ARRAY_ELEMENTS (1 Gi elements).
	maxArrayLen = 1 << 30
	// maxArrayDepth bounds arrays of arrays. ggml rejects nesting entirely;
	// gguf-py reads it. No real file nests at all, and a bound keeps the
	// recursion (and the per-level headers' allocations) small.
	maxArrayDepth = 4
)

// Smallest encodings, used to bound counts by the bytes that remain before
// anything is allocated from them.
const (
	minKVBytes         = 8 + 1 + 4 + 1         // key length, 1-byte key, type, 1-byte value
	minTensorInfoBytes = 8 + 1 + 4 + 8 + 4 + 8 // name length, 1-byte name, n_dims, one ne, type, offset
	arrayHeaderBytes   = 4 + 8                 // element type, count
	stringHeaderBytes  = 8                     // length
)

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

// removedTypes names the ggml type ids that ggml has dropped, so that an old
// file gets a message saying what it holds rather than "unknown type".
var removedTypes = map[uint32]string{
	4:  "Q4_2",
	5:  "Q4_3",
	31: "Q4_0_4_4",
	32: "Q4_0_4_8",
	33: "Q4_0_8_8",
	36: "IQ4_NL_4_4",
	37: "IQ4_NL_4_8",
	38: "IQ4_NL_8_8",
}

// decoder reads the header sequentially through a buffer, tracking the
// absolute offset so that every error can say where it happened.
type decoder struct {
	br   *bufio.Reader
	size int64
	off  int64
	file string
	item string // `key "k"` or `tensor "t"` while inside one
	b    [8]byte
}

func (d *decoder) errAt(off int64, format string, args ...any) *tensor.FormatError {
	return &tensor.FormatError{Format: "gguf", File: d.file, Offset: off, Item: d.item, Msg: fmt.Sprintf(format, args...)}
}

func (d *decoder) unsupportedAt(off int64, format string, args ...any) *tensor.FormatError {
	e := d.errAt(off, format, args...)
	e.Unsupported = true
	return e
}

func (d *decoder) remaining() int64 { return d.size - d.off }

// read returns the next n bytes (n small enough to be a field, or already
// checked against the remaining size by the caller).
func (d *decoder) read(p []byte, what string) error {
	if int64(len(p)) > d.remaining() {
		return d.errAt(d.off, "unexpected end of file reading %s: need %d bytes, %d left", what, len(p), d.remaining())
	}
	if _, err := io.ReadFull(d.br, p); err != nil {
		e := d.errAt(d.off, "reading %s", what)
		e.Err = err
		return e
	}
	d.off += int64(len(p))
	return nil
}

func (d *decoder) u8(what string) (uint8, error) {
	err := d.read(d.b[:1], what)
	return d.b[0], err
}

func (d *decoder) u16(what string) (uint16, error) {
	err := d.read(d.b[:2], what)
	return binary.LittleEndian.Uint16(d.b[:2]), err
}

func (d *decoder) u32(what string) (uint32, error) {
	err := d.read(d.b[:4], what)
	return binary.LittleEndian.Uint32(d.b[:4]), err
}

func (d *decoder) u64(what string) (uint64, error) {
	err := d.read(d.b[:8], what)
	return binary.LittleEndian.Uint64(d.b[:8]), err
}

// str reads a length-prefixed string, checking the length against the bytes
// left before allocating.
func (d *decoder) str(what string) (string, error) {
	start := d.off
	n, err := d.u64(what + " length")
	if err != nil {
		return "", err
	}
	if n > maxStringLen {
		return "", d.errAt(start, "%s length %d exceeds the limit of %d bytes", what, n, maxStringLen)
	}
	if n > uint64(d.remaining()) {
		return "", d.errAt(start, "%s length %d exceeds the %d bytes left in the file", what, n, d.remaining())
	}
	p := make([]byte, n)
	if err := d.read(p, what); err != nil {
		return "", err
	}
	return string(p), nil
}

func (d *decoder) kind(what string) (tensor.Kind, error) {
	off := d.off
	k, err := d.u32(what)
	if err != nil {
		return 0, err
	}
	if !tensor.Kind(k).Valid() {
		return 0, d.errAt(off, "invalid value type %d", int32(k))
	}
	return tensor.Kind(k), nil
}

// value reads one value of kind k. depth counts the arrays enclosing it.
func (d *decoder) value(k tensor.Kind, depth int) (tensor.Value, error) {
	off := d.off
	switch k {
	case tensor.KindUint8:
		x, err := d.u8("uint8 value")
		return tensor.Uint8(x), err
	case tensor.KindInt8:
		x, err := d.u8("int8 value")
		return tensor.Int8(int8(x)), err
	case tensor.KindUint16:
		x, err := d.u16("uint16 value")
		return tensor.Uint16(x), err
	case tensor.KindInt16:
		x, err := d.u16("int16 value")
		return tensor.Int16(int16(x)), err
	case tensor.KindUint32:
		x, err := d.u32("uint32 value")
		return tensor.Uint32(x), err
	case tensor.KindInt32:
		x, err := d.u32("int32 value")
		return tensor.Int32(int32(x)), err
	case tensor.KindFloat32:
		x, err := d.u32("float32 value")
		return tensor.Float32(math.Float32frombits(x)), err
	case tensor.KindBool:
		x, err := d.u8("bool value")
		if err != nil {
			return tensor.Value{}, err
		}
		if x > 1 {
			// ggml reads any non-zero byte as true; we refuse, so that what
			// we read is what we would write back.
			return tensor.Value{}, d.errAt(off, "bool value %d is neither 0 nor 1", x)
		}
		return tensor.Bool(x == 1), nil
	case tensor.KindString:
		s, err := d.str("string value")
		return tensor.String(s), err
	case tensor.KindUint64:
		x, err := d.u64("uint64 value")
		return tensor.Uint64(x), err
	case tensor.KindInt64:
		x, err := d.u64("int64 value")
		return tensor.Int64(int64(x)), err
	case tensor.KindFloat64:
		x, err := d.u64("float64 value")
		return tensor.Float64(math.Float64frombits(x)), err
	case tensor.KindArray:
		a, err := d.array(depth + 1)
		if err != nil {
			return tensor.Value{}, err
		}
		return tensor.ArrayOf(a.Data), nil
	}
	return tensor.Value{}, d.errAt(off, "invalid value type %d", uint32(k))
}

// array reads an array header and its elements; depth is this array's
// nesting level (1 for an array that is a key's value).
func (d *decoder) array(depth int) (tensor.Array, error) {
	start := d.off
	elem, err := d.kind("array element type")
	if err != nil {
		return tensor.Array{}, err
	}
	if elem == tensor.KindArray && depth >= maxArrayDepth {
		return tensor.Array{}, d.errAt(start, "arrays nested deeper than %d levels", maxArrayDepth)
	}
	countOff := d.off
	n64, err := d.u64("array length")
	if err != nil {
		return tensor.Array{}, err
	}
	if n64 > maxArrayLen {
		return tensor.Array{}, d.errAt(countOff, "array length %d exceeds the limit of %d elements", n64, maxArrayLen)
	}
	// Each element takes at least this many bytes, so the count can be
	// checked against what is left before anything is allocated from it.
	per := int64(elem.Size())
	switch elem {
	case tensor.KindString:
		per = stringHeaderBytes
	case tensor.KindArray:
		per = arrayHeaderBytes
	}
	if n64 > uint64(d.remaining()/per) {
		return tensor.Array{}, d.errAt(countOff, "array of %d %s elements needs at least %d bytes per element, %d bytes left", n64, elem, per, d.remaining())
	}
	n := int(n64)
	if elem.Size() > 0 && elem != tensor.KindBool {
		raw := make([]byte, n*elem.Size())
		if err := d.read(raw, "array data"); err != nil {
			return tensor.Array{}, err
		}
		return tensor.Array{Elem: elem, Data: decodeFixed(elem, raw, n)}, nil
	}
	switch elem {
	case tensor.KindBool:
		out := make([]bool, n)
		for i := range out {
			off := d.off
			x, err := d.u8("bool element")
			if err != nil {
				return tensor.Array{}, err
			}
			if x > 1 {
				return tensor.Array{}, d.errAt(off, "bool element %d is %d, neither 0 nor 1", i, x)
			}
			out[i] = x == 1
		}
		return tensor.Array{Elem: elem, Data: out}, nil
	case tensor.KindString:
		out := make([]string, n)
		for i := range out {
			// str checks each length against the bytes left as it goes.
			if out[i], err = d.str("string element " + strconv.Itoa(i)); err != nil {
				return tensor.Array{}, err
			}
		}
		return tensor.Array{Elem: elem, Data: out}, nil
	default: // tensor.KindArray
		out := make([]tensor.Array, n)
		for i := range out {
			if out[i], err = d.array(depth + 1); err != nil {
				return tensor.Array{}, err
			}
		}
		return tensor.Array{Elem: elem, Data: out}, nil
	}
}

// decodeFixed turns n little-endian elements of a fixed-size kind into the
// matching Go slice.
func decodeFixed(k tensor.Kind, raw []byte, n int) any {
	le := binary.LittleEndian
	switch k {
	case tensor.KindUint8:
		return raw
	case tensor.KindInt8:
		out := make([]int8, n)
		for i := range out {
			out[i] = int8(raw[i])
		}
		return out
	case tensor.KindUint16:
		out := make([]uint16, n)
		for i := range out {
			out[i] = le.Uint16(raw[2*i:])
		}
		return out
	case tensor.KindInt16:
		out := make([]int16, n)
		for i := range out {
			out[i] = int16(le.Uint16(raw[2*i:]))
		}
		return out
	case tensor.KindUint32:
		out := make([]uint32, n)
		for i := range out {
			out[i] = le.Uint32(raw[4*i:])
		}
		return out
	case tensor.KindInt32:
		out := make([]int32, n)
		for i := range out {
			out[i] = int32(le.Uint32(raw[4*i:]))
		}
		return out
	case tensor.KindFloat32:
		out := make([]float32, n)
		for i := range out {
			out[i] = math.Float32frombits(le.Uint32(raw[4*i:]))
		}
		return out
	case tensor.KindUint64:
		out := make([]uint64, n)
		for i := range out {
			out[i] = le.Uint64(raw[8*i:])
		}
		return out
	case tensor.KindInt64:
		out := make([]int64, n)
		for i := range out {
			out[i] = int64(le.Uint64(raw[8*i:]))
		}
		return out
	case tensor.KindFloat64:
		out := make([]float64, n)
		for i := range out {
			out[i] = math.Float64frombits(le.Uint64(raw[8*i:]))
		}
		return out
	}
	panic("gguf: decodeFixed on " + k.String())
}

// tensorEntry is a tensor info as read, before offsets are resolved.
type tensorEntry struct {
	info      tensor.Info
	start     int64 // offset of the tensor info (its name)
	offsetPos int64 // offset of its data-offset field
	rel       uint64
}

func parse(r io.ReaderAt, size int64, name string) (*File, error) {
	d := &decoder{
		br:   bufio.NewReaderSize(io.NewSectionReader(r, 0, size), 1<<16),
		size: size,
		file: name,
	}
	if size < 0 {
		return nil, d.errAt(-1, "negative file size %d", size)
	}
	var magic [4]byte
	if err := d.read(magic[:], "magic"); err != nil {
		return nil, err
	}
	if string(magic[:]) != Magic {
		return nil, d.errAt(0, "bad magic %q, want %q", magic[:], Magic)
	}
	version, err := d.u32("version")
	if err != nil {
		return nil, err
	}
	switch {
	case version == 0:
		return nil, d.errAt(4, "bad version 0")
	case version&0xFFFF == 0:
		// A big-endian file's version 2 or 3 reads as 0x02000000 or
		// 0x03000000 here; no real version is a multiple of 65536.
		return nil, d.unsupportedAt(4, "version reads as %#x: big-endian GGUF is not supported", version)
	case version == 1:
		return nil, d.unsupportedAt(4, "GGUF version 1 is not supported (it used 32-bit counts and lengths); convert the file with a current llama.cpp")
	case version > Version:
		return nil, d.unsupportedAt(4, "GGUF version %d is newer than the supported versions 2 and 3", version)
	}
	f := &File{Size: size, Version: version, Alignment: DefaultAlignment}

	nTensors, err := d.u64("tensor count")
	if err != nil {
		return nil, err
	}
	nKV, err := d.u64("metadata count")
	if err != nil {
		return nil, err
	}
	if nKV > uint64(d.remaining()/minKVBytes) {
		return nil, d.errAt(16, "metadata count %d cannot fit in the %d bytes left", nKV, d.remaining())
	}
	if nTensors > uint64(d.remaining()/minTensorInfoBytes) {
		return nil, d.errAt(8, "tensor count %d cannot fit in the %d bytes left", nTensors, d.remaining())
	}

	f.Metadata = make(tensor.Metadata, 0, nKV)
	seen := make(map[string]bool, nKV)
	for i := uint64(0); i < nKV; i++ {
		d.item = ""
		keyOff := d.off
		key, err := d.str("key " + strconv.FormatUint(i, 10))
		if err != nil {
			return nil, err
		}
		if key == "" {
			return nil, d.errAt(keyOff, "key %d is empty", i)
		}
		d.item = "key " + strconv.Quote(key)
		if seen[key] {
			return nil, d.errAt(keyOff, "duplicate key")
		}
		seen[key] = true
		typeOff := d.off
		k, err := d.kind("value type")
		if err != nil {
			return nil, err
		}
		v, err := d.value(k, 0)
		if err != nil {
			return nil, err
		}
		if key == KeyAlignment {
			a, ok := v.Any().(uint32)
			if !ok {
				return nil, d.errAt(typeOff, "must be a uint32, not %s", v.Kind())
			}
			if a == 0 || a&(a-1) != 0 {
				return nil, d.errAt(typeOff+4, "alignment %d is not a power of two", a)
			}
			f.Alignment = int64(a)
		}
		f.Metadata = append(f.Metadata, tensor.KV{Key: key, Value: v})
	}

	entries := make([]tensorEntry, 0, nTensors)
	names := make(map[string]bool, nTensors)
	for i := uint64(0); i < nTensors; i++ {
		d.item = ""
		e := tensorEntry{start: d.off}
		tn, err := d.str("tensor name " + strconv.FormatUint(i, 10))
		if err != nil {
			return nil, err
		}
		d.item = "tensor " + strconv.Quote(tn)
		if err := checkTensorName(tn); err != nil {
			return nil, d.errAt(e.start, "%s", err)
		}
		if names[tn] {
			return nil, d.errAt(e.start, "duplicate tensor name")
		}
		names[tn] = true
		dimsOff := d.off
		nDims, err := d.u32("dimension count")
		if err != nil {
			return nil, err
		}
		if nDims < 1 || nDims > MaxDims {
			return nil, d.errAt(dimsOff, "has %d dimensions, want 1 to %d", nDims, MaxDims)
		}
		ne := make([]int64, nDims)
		for j := range ne {
			off := d.off
			x, err := d.u64("dimension")
			if err != nil {
				return nil, err
			}
			if int64(x) < 0 {
				return nil, d.errAt(off, "dimension %d is negative (%d)", j, int64(x))
			}
			ne[j] = int64(x)
		}
		shape := tensor.Shape(ne).Reversed()
		if _, err := shape.NumElements(); err != nil {
			return nil, d.errAt(dimsOff+4, "ne %v: element count overflows int64", ne)
		}
		typeOff := d.off
		id, err := d.u32("tensor type")
		if err != nil {
			return nil, err
		}
		dt, ok := tensor.DTypeFromGGML(id)
		if !ok {
			if old, removed := removedTypes[id]; removed {
				return nil, d.unsupportedAt(typeOff, "ggml type id %d (%s) was removed from ggml and is not supported", id, old)
			}
			return nil, d.unsupportedAt(typeOff, "unknown ggml type id %d", id)
		}
		if bs := dt.BlockSize(); ne[0]%bs != 0 {
			return nil, d.errAt(dimsOff+4, "row length ne[0]=%d is not a multiple of the %s block size %d", ne[0], dt, bs)
		}
		nbytes, err := dt.ShapeBytes(shape)
		if err != nil {
			return nil, d.errAt(dimsOff+4, "%s %v: %v", dt, ne, err)
		}
		e.offsetPos = d.off
		if e.rel, err = d.u64("data offset"); err != nil {
			return nil, err
		}
		e.info = tensor.Info{Name: tn, DType: dt, Shape: shape, Size: nbytes}
		entries = append(entries, e)
	}
	d.item = ""

	// ggml pads to the alignment only when there is data to align; a file
	// without tensors ends right after its metadata.
	f.DataOffset = d.off
	if nTensors > 0 {
		if f.DataOffset, err = tensor.AlignUp(d.off, f.Alignment); err != nil || f.DataOffset > size {
			return nil, d.errAt(d.off, "data section at %d (header end %d padded to %d) is past the end of the file (%d bytes)", f.DataOffset, d.off, f.Alignment, size)
		}
	}

	// ggml requires each tensor to start exactly where the previous one's
	// padded data ends, which also rules out gaps and overlaps.
	f.Tensors = make([]Tensor, len(entries))
	var next int64
	for i, e := range entries {
		d.item = "tensor " + strconv.Quote(e.info.Name)
		if e.rel%uint64(f.Alignment) != 0 {
			return nil, d.errAt(e.offsetPos, "data offset %d is not a multiple of the alignment %d", e.rel, f.Alignment)
		}
		if e.rel != uint64(next) {
			return nil, d.errAt(e.offsetPos, "data offset %d, want %d (the end of the previous tensor's padded data)", e.rel, next)
		}
		abs, err := tensor.AddInt64(f.DataOffset, next)
		if err != nil {
			return nil, d.errAt(e.offsetPos, "data offset %d overflows", e.rel)
		}
		end, err := tensor.AddInt64(abs, e.info.Size)
		if err != nil || end > size {
			return nil, d.errAt(e.offsetPos, "data [%d, %d+%d) extends past the end of the file (%d bytes)", abs, abs, e.info.Size, size)
		}
		padded, err := tensor.AlignUp(e.info.Size, f.Alignment)
		if err == nil {
			next, err = tensor.AddInt64(next, padded)
		}
		if err != nil {
			return nil, d.errAt(e.offsetPos, "data section size overflows")
		}
		e.info.Offset = abs
		f.Tensors[i] = Tensor{Info: e.info, r: r}
	}
	d.item = ""
	// The file ends with the last tensor's data and at most its padding (or
	// right after the metadata when there are no tensors). Anything beyond
	// is not described by the header: a second file appended (a polyglot),
	// or a botched concatenation; ggml ignores it, we refuse it.
	end, err := tensor.AddInt64(f.DataOffset, next)
	if len(entries) == 0 {
		end, err = f.DataOffset, nil
	}
	if err == nil {
		end, err = tensor.AlignUp(end, f.Alignment)
	}
	if err == nil && size > end {
		return nil, d.errAt(end, "%d trailing bytes after the data section (which ends at %d)", size-end, end)
	}
	return f, nil
}

// checkTensorName applies ggml's rules for tensor names, plus two of our own
// that keep names unambiguous: not empty and no NUL (ggml would cut the name
// at the NUL and could then see two tensors under one name).
func checkTensorName(name string) error {
	if name == "" {
		return errors.New("tensor name is empty")
	}
	if len(name) >= MaxNameLen {
		return fmt.Errorf("tensor name is %d bytes long, the limit is %d", len(name), MaxNameLen-1)
	}
	for i := 0; i < len(name); i++ {
		if name[i] == 0 {
			return fmt.Errorf("tensor name has a NUL byte at %d", i)
		}
	}
	return nil
}
