package gguf

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/tfconv/tfconv/tensor"
)

// Code says what kind of defect a Problem is, so that a caller (check's
// rule ids) can tell them apart without reading messages.
type Code int

// The defects Walk reports. The comment says whether the walk can go on past
// one (in lenient mode) or must stop because what follows cannot be located.
const (
	CodeSize            Code = iota + 1 // stop: the size given is negative
	CodeTruncated                       // stop: the file ends inside a field (What, Need, Left)
	CodeIO                              // stop: the underlying reader failed (What, Err)
	CodeMagic                           // stop: not "GGUF" (N: the 4 bytes, little-endian)
	CodeBigEndian                       // stop: the version reads as a byte-swapped 2 or 3 (N)
	CodeVersion                         // stop: version 0, 1 or newer than Version (N)
	CodeCount                           // stop: the KV or tensor count cannot fit in the file
	CodeStringLength                    // stop: a string length past the limit or the file
	CodeValueType                       // stop: a value or array element type that is not 0..12 (What, N)
	CodeArrayDepth                      // stop: arrays nested deeper than maxArrayDepth
	CodeArrayLength                     // stop: an array count past the limit or the file (N, Elem, Need, Left)
	CodeBool                            // go on: a bool that is neither 0 nor 1 (N; the first per key)
	CodeNestedArray                     // lint: a key's value is an array of arrays, which ggml refuses
	CodeEmptyKey                        // go on: a key of zero bytes
	CodeDuplicateKey                    // go on: a key seen before; the value is walked, not kept
	CodeAlignment                       // go on: general.alignment not a uint32 power of two
	CodeTensorName                      // go on: an empty, overlong or NUL-holding tensor name
	CodeDuplicateTensor                 // go on: a tensor name seen before
	CodeDims                            // go on: n_dims outside 1..MaxDims (stop past tensor.MaxDims)
	CodeShape                           // go on: a negative ne, or an element or byte count that overflows
	CodeZeroDim                         // lint: an ne of 0, which ggml's loader divides by
	CodeType                            // go on: a ggml type id ggml removed or never had (N)
	CodeBlockSize                       // go on: ne[0] not a multiple of the type's block size
	CodeDataStart                       // stop: the data section starts past the end of the file (Need: the alignment)
	CodePadding                         // lint: a non-zero byte in the padding before the data section (N)
	CodeDataTruncated                   // go on: the file ends inside a well-laid-out data section (Need: the size it needs, Left: its size)
)

// A Problem is one defect found by Walk. Its FormatError is what the strict
// reader returns (the message is the reader's); the fields after it give the
// numbers in the message to a caller that words its own.
type Problem struct {
	tensor.FormatError
	Code Code
	// Lint marks what the format allows but ggml refuses or never writes;
	// the strict reader accepts it.
	Lint bool
	// Fatal marks a defect past which nothing can be located: the walk ends.
	Fatal bool

	What       string      // the field being read (CodeTruncated, CodeIO, CodeValueType)
	Need, Left int64       // bytes needed (per element for CodeArrayLength) and bytes left
	N          uint64      // the offending number: version, type id, count, bool byte, magic
	Elem       tensor.Kind // CodeArrayLength: the element kind
}

// WalkOptions controls Walk.
type WalkOptions struct {
	// Name is the file name that problems carry.
	Name string
	// Problem, when set, makes the walk lenient: it is called with every
	// defect in file order (lints included) and the walk goes on wherever
	// the rest of the header can still be located. When nil the walk is
	// strict: it stops at the first defect that is not a lint.
	Problem func(*Problem)
	// SkipArrays walks array values without keeping them (their Metadata
	// entries hold the zero Value), so a lint of a large vocabulary does
	// not hold it in memory.
	SkipArrays bool
}

// Header is a GGUF header as Walk read it, up to where it stopped.
type Header struct {
	Version   uint32
	Alignment int64 // general.alignment or DefaultAlignment
	// Metadata holds each key at its first appearance, in file order;
	// KeyOffsets[i] is the offset of Metadata[i]'s key.
	Metadata   tensor.Metadata
	KeyOffsets []int64
	Tensors    []TensorInfo // in tensor-info order
	InfoEnd    int64        // offset just past the last tensor info
	DataOffset int64        // InfoEnd padded to the alignment when there are tensors
	// DataEnd is the file offset where the last tensor's data ends when
	// every tensor is usable and laid out as ggml lays them out (each at
	// the previous one's padded end, the first at 0), else -1. A file
	// shorter than DataEnd is truncated (CodeDataTruncated).
	DataEnd int64
	// Lints are the lints a strict walk passed over (a lenient walk hands
	// them to WalkOptions.Problem instead): what the format allows but ggml
	// refuses or never writes, such as a 0 dimension.
	Lints []*Problem
}

// TensorInfo is one tensor info as read. Info.Offset is left 0: placing the
// data is the layout's business (the reader's, or check's).
type TensorInfo struct {
	tensor.Info
	At        int64  // offset of the tensor info (its name)
	OffsetPos int64  // offset of its data-offset field
	Rel       uint64 // the data offset as stored, relative to the data section
	// Usable says the dtype and shape are valid, so Info.Size is known. In a
	// strict walk every tensor returned is usable.
	Usable bool
}

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
	// maxWalkDims is how many dimensions a lenient walk reads from a tensor
	// info whose n_dims is out of range before it gives up: past this the
	// count is garbage and the rest of the header cannot be located.
	maxWalkDims = tensor.MaxDims
	// maxPaddingCheck caps the padding bytes a lenient walk reads to check
	// they are zero.
	maxPaddingCheck = 1 << 16
)

// Smallest encodings, used to bound counts by the bytes that remain before
// anything is allocated from them.
const (
	minKVBytes         = 8 + 1 + 4 + 1         // key length, 1-byte key, type, 1-byte value
	minTensorInfoBytes = 8 + 1 + 4 + 8 + 4 + 8 // name length, 1-byte name, n_dims, one ne, type, offset
	arrayHeaderBytes   = 4 + 8                 // element type, count
	stringHeaderBytes  = 8                     // length
)

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

// walker reads the header sequentially through a buffer, tracking the
// absolute offset so that every problem can say where it is.
type walker struct {
	br      *bufio.Reader
	size    int64
	off     int64
	item    string // `key "k"` or `tensor "t"` while inside one
	opt     WalkOptions
	lints   []*Problem // a strict walk's lints (Header.Lints)
	badBool bool       // a bad bool was reported in the current key's value
	b       [8]byte
}

// stopped is returned up the walk after a lenient walk's fatal problem (the
// problem itself went to WalkOptions.Problem).
type stopped struct{ p *Problem }

func (s stopped) Error() string { return s.p.Error() }

// flag hands p to the caller. It returns nil when the walk goes on, else
// the error that ends it.
func (w *walker) flag(p *Problem) error {
	p.Format, p.File, p.Item = "gguf", w.opt.Name, w.item
	if w.opt.Problem == nil {
		if p.Lint {
			w.lints = append(w.lints, p)
			return nil
		}
		return &p.FormatError
	}
	w.opt.Problem(p)
	if p.Fatal {
		return stopped{p}
	}
	return nil
}

// problem builds a Problem at off with the reader's message.
func problem(code Code, off int64, format string, args ...any) *Problem {
	p := &Problem{Code: code}
	p.Offset, p.Msg = off, fmt.Sprintf(format, args...)
	switch code {
	case CodeSize, CodeTruncated, CodeIO, CodeMagic, CodeBigEndian, CodeVersion, CodeCount, CodeStringLength,
		CodeValueType, CodeArrayDepth, CodeArrayLength, CodeDataStart:
		p.Fatal = true
	case CodeNestedArray, CodeZeroDim, CodePadding:
		p.Lint = true
	}
	return p
}

func (w *walker) remaining() int64 { return w.size - w.off }

// read fills p (its length small enough to be a field, or already checked
// against the remaining size by the caller).
func (w *walker) read(p []byte, what string) error {
	if int64(len(p)) > w.remaining() {
		pr := problem(CodeTruncated, w.off, "unexpected end of file reading %s: need %d bytes, %d left", what, len(p), w.remaining())
		pr.What, pr.Need, pr.Left = what, int64(len(p)), w.remaining()
		return w.flag(pr)
	}
	if _, err := io.ReadFull(w.br, p); err != nil {
		pr := problem(CodeIO, w.off, "reading %s", what)
		pr.What, pr.Err = what, err
		return w.flag(pr)
	}
	w.off += int64(len(p))
	return nil
}

// discard skips n bytes already checked against the remaining size.
func (w *walker) discard(n int64, what string) error {
	if _, err := w.br.Discard(int(n)); err != nil {
		pr := problem(CodeIO, w.off, "reading %s", what)
		pr.What, pr.Err = what, err
		return w.flag(pr)
	}
	w.off += n
	return nil
}

func (w *walker) u8(what string) (uint8, error) {
	err := w.read(w.b[:1], what)
	return w.b[0], err
}

func (w *walker) u16(what string) (uint16, error) {
	err := w.read(w.b[:2], what)
	return binary.LittleEndian.Uint16(w.b[:2]), err
}

func (w *walker) u32(what string) (uint32, error) {
	err := w.read(w.b[:4], what)
	return binary.LittleEndian.Uint32(w.b[:4]), err
}

func (w *walker) u64(what string) (uint64, error) {
	err := w.read(w.b[:8], what)
	return binary.LittleEndian.Uint64(w.b[:8]), err
}

// str reads a length-prefixed string, checking the length against the bytes
// left before allocating. When keep is false the bytes are skipped.
func (w *walker) str(what string, keep bool) (string, error) {
	start := w.off
	n, err := w.u64(what + " length")
	if err != nil {
		return "", err
	}
	if n > maxStringLen {
		return "", w.flag(problem(CodeStringLength, start, "%s length %d exceeds the limit of %d bytes", what, n, maxStringLen))
	}
	if n > uint64(w.remaining()) {
		return "", w.flag(problem(CodeStringLength, start, "%s length %d exceeds the %d bytes left in the file", what, n, w.remaining()))
	}
	if !keep {
		return "", w.discard(int64(n), what)
	}
	p := make([]byte, n)
	if err := w.read(p, what); err != nil {
		return "", err
	}
	return string(p), nil
}

func (w *walker) kind(what string) (tensor.Kind, error) {
	off := w.off
	k, err := w.u32(what)
	if err != nil {
		return 0, err
	}
	if !tensor.Kind(k).Valid() {
		p := problem(CodeValueType, off, "invalid value type %d", int32(k))
		p.What, p.N = what, uint64(k)
		return 0, w.flag(p)
	}
	return tensor.Kind(k), nil
}

// badBoolAt reports a bool byte that is neither 0 nor 1 (ggml reads any
// non-zero byte as true; we refuse, so that what we read is what we would
// write back). A lenient walk reports the first per key.
func (w *walker) badBoolAt(off int64, x uint8, format string, args ...any) error {
	if w.badBool {
		return nil
	}
	w.badBool = true
	p := problem(CodeBool, off, format, args...)
	p.N = uint64(x)
	return w.flag(p)
}

// value reads one value of kind k. depth counts the arrays enclosing it.
func (w *walker) value(k tensor.Kind, depth int) (tensor.Value, error) {
	off := w.off
	switch k {
	case tensor.KindUint8:
		x, err := w.u8("uint8 value")
		return tensor.Uint8(x), err
	case tensor.KindInt8:
		x, err := w.u8("int8 value")
		return tensor.Int8(int8(x)), err
	case tensor.KindUint16:
		x, err := w.u16("uint16 value")
		return tensor.Uint16(x), err
	case tensor.KindInt16:
		x, err := w.u16("int16 value")
		return tensor.Int16(int16(x)), err
	case tensor.KindUint32:
		x, err := w.u32("uint32 value")
		return tensor.Uint32(x), err
	case tensor.KindInt32:
		x, err := w.u32("int32 value")
		return tensor.Int32(int32(x)), err
	case tensor.KindFloat32:
		x, err := w.u32("float32 value")
		return tensor.Float32(math.Float32frombits(x)), err
	case tensor.KindBool:
		x, err := w.u8("bool value")
		if err != nil {
			return tensor.Value{}, err
		}
		if x > 1 {
			return tensor.Bool(x != 0), w.badBoolAt(off, x, "bool value %d is neither 0 nor 1", x)
		}
		return tensor.Bool(x == 1), nil
	case tensor.KindString:
		s, err := w.str("string value", true)
		return tensor.String(s), err
	case tensor.KindUint64:
		x, err := w.u64("uint64 value")
		return tensor.Uint64(x), err
	case tensor.KindInt64:
		x, err := w.u64("int64 value")
		return tensor.Int64(int64(x)), err
	case tensor.KindFloat64:
		x, err := w.u64("float64 value")
		return tensor.Float64(math.Float64frombits(x)), err
	case tensor.KindArray:
		a, err := w.array(depth + 1)
		if err != nil || a.Data == nil {
			return tensor.Value{}, err
		}
		return tensor.ArrayOf(a.Data), nil
	}
	// Unreachable: kind has checked k.
	p := problem(CodeValueType, off, "invalid value type %d", uint32(k))
	p.What, p.N = "value type", uint64(k)
	return tensor.Value{}, w.flag(p)
}

// array reads an array header and its elements; depth is this array's
// nesting level (1 for an array that is a key's value). With SkipArrays the
// elements are walked and the returned Array is empty.
func (w *walker) array(depth int) (tensor.Array, error) {
	start := w.off
	elem, err := w.kind("array element type")
	if err != nil {
		return tensor.Array{}, err
	}
	if elem == tensor.KindArray {
		if depth >= maxArrayDepth {
			return tensor.Array{}, w.flag(problem(CodeArrayDepth, start, "arrays nested deeper than %d levels", maxArrayDepth))
		}
		if depth == 1 {
			if err := w.flag(problem(CodeNestedArray, start, "array of arrays: ggml refuses these")); err != nil {
				return tensor.Array{}, err
			}
		}
	}
	countOff := w.off
	n64, err := w.u64("array length")
	if err != nil {
		return tensor.Array{}, err
	}
	if n64 > maxArrayLen {
		p := problem(CodeArrayLength, countOff, "array length %d exceeds the limit of %d elements", n64, maxArrayLen)
		p.N, p.Elem = n64, elem
		return tensor.Array{}, w.flag(p)
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
	if n64 > uint64(w.remaining()/per) {
		p := problem(CodeArrayLength, countOff, "array of %d %s elements needs at least %d bytes per element, %d bytes left", n64, elem, per, w.remaining())
		p.N, p.Elem, p.Need, p.Left = n64, elem, per, w.remaining()
		return tensor.Array{}, w.flag(p)
	}
	n := int(n64)
	keep := !w.opt.SkipArrays
	if elem.Size() > 0 && elem != tensor.KindBool {
		if !keep {
			return tensor.Array{}, w.discard(int64(n)*per, "array data")
		}
		raw := make([]byte, n*elem.Size())
		if err := w.read(raw, "array data"); err != nil {
			return tensor.Array{}, err
		}
		return tensor.Array{Elem: elem, Data: decodeFixed(elem, raw, n)}, nil
	}
	switch elem {
	case tensor.KindBool:
		var out []bool
		if keep {
			out = make([]bool, n)
		}
		for i := 0; i < n; i++ {
			off := w.off
			x, err := w.u8("bool element")
			if err != nil {
				return tensor.Array{}, err
			}
			if x > 1 {
				if err := w.badBoolAt(off, x, "bool element %d is %d, neither 0 nor 1", i, x); err != nil {
					return tensor.Array{}, err
				}
			}
			if keep {
				out[i] = x == 1
			}
		}
		if !keep {
			return tensor.Array{}, nil
		}
		return tensor.Array{Elem: elem, Data: out}, nil
	case tensor.KindString:
		var out []string
		if keep {
			out = make([]string, n)
		}
		for i := 0; i < n; i++ {
			// str checks each length against the bytes left as it goes.
			s, err := w.str("string element "+strconv.Itoa(i), keep)
			if err != nil {
				return tensor.Array{}, err
			}
			if keep {
				out[i] = s
			}
		}
		if !keep {
			return tensor.Array{}, nil
		}
		return tensor.Array{Elem: elem, Data: out}, nil
	default: // tensor.KindArray
		var out []tensor.Array
		if keep {
			out = make([]tensor.Array, n)
		}
		for i := 0; i < n; i++ {
			a, err := w.array(depth + 1)
			if err != nil {
				return tensor.Array{}, err
			}
			if keep {
				out[i] = a
			}
		}
		if !keep {
			return tensor.Array{}, nil
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

// Walk reads the header of the GGUF file held by r, which has size bytes:
// the fixed fields, the metadata and the tensor infos, up to the start of
// the data section. It is the one parse of GGUF: NewFile is Walk in strict
// mode followed by the layout checks, and check's lint is Walk in lenient
// mode (see WalkOptions.Problem).
//
// It returns the header as far as it got. The error is the first defect in
// strict mode (a *tensor.FormatError); in lenient mode it is non-nil only
// when the walk stopped early (the problem was reported as well).
func Walk(r io.ReaderAt, size int64, opt WalkOptions) (*Header, error) {
	w := &walker{size: size, opt: opt}
	h := &Header{Alignment: DefaultAlignment}
	if size < 0 {
		return h, w.flag(problem(CodeSize, -1, "negative file size %d", size))
	}
	w.br = bufio.NewReaderSize(io.NewSectionReader(r, 0, size), 1<<16)
	h.DataEnd = -1
	err := w.header(h)
	if err == nil {
		err = w.dataEnd(h)
	}
	h.Lints = w.lints
	if s, ok := err.(stopped); ok {
		err = &s.p.FormatError
	}
	return h, err
}

func (w *walker) header(h *Header) error {
	var magic [4]byte
	if err := w.read(magic[:], "magic"); err != nil {
		return err
	}
	if string(magic[:]) != Magic {
		p := problem(CodeMagic, 0, "bad magic %q, want %q", magic[:], Magic)
		p.N = uint64(binary.LittleEndian.Uint32(magic[:]))
		return w.flag(p)
	}
	version, err := w.u32("version")
	if err != nil {
		return err
	}
	var p *Problem
	switch {
	case version == 0:
		p = problem(CodeVersion, 4, "bad version 0")
	case version&0xFFFF == 0:
		// A big-endian file's version 2 or 3 reads as 0x02000000 or
		// 0x03000000 here; no real version is a multiple of 65536.
		p = problem(CodeBigEndian, 4, "version reads as %#x: big-endian GGUF is not supported", version)
	case version == 1:
		p = problem(CodeVersion, 4, "GGUF version 1 is not supported (it used 32-bit counts and lengths); convert the file with a current llama.cpp")
	case version > Version:
		p = problem(CodeVersion, 4, "GGUF version %d is newer than the supported versions 2 and 3", version)
	}
	if p != nil {
		p.N = uint64(version)
		p.Unsupported = p.Code == CodeBigEndian || version != 0
		return w.flag(p)
	}
	h.Version = version

	nTensors, err := w.u64("tensor count")
	if err != nil {
		return err
	}
	nKV, err := w.u64("metadata count")
	if err != nil {
		return err
	}
	if nKV > uint64(w.remaining()/minKVBytes) {
		return w.flag(problem(CodeCount, 16, "metadata count %d cannot fit in the %d bytes left", nKV, w.remaining()))
	}
	if nTensors > uint64(w.remaining()/minTensorInfoBytes) {
		return w.flag(problem(CodeCount, 8, "tensor count %d cannot fit in the %d bytes left", nTensors, w.remaining()))
	}
	if err := w.metadata(h, nKV); err != nil {
		return err
	}
	if err := w.tensorInfos(h, nTensors); err != nil {
		return err
	}

	// ggml pads to the alignment only when there is data to align; a file
	// without tensors ends right after its metadata.
	h.InfoEnd, h.DataOffset = w.off, w.off
	if nTensors > 0 {
		var err error
		if h.DataOffset, err = tensor.AlignUp(w.off, h.Alignment); err != nil || h.DataOffset > w.size {
			p := problem(CodeDataStart, w.off, "data section at %d (header end %d padded to %d) is past the end of the file (%d bytes)", h.DataOffset, w.off, h.Alignment, w.size)
			p.Need, p.Left = h.Alignment, w.size-w.off
			return w.flag(p)
		}
		// A lint either way: the strict walk keeps it in Header.Lints.
		return w.zeros(h.InfoEnd, h.DataOffset)
	}
	return nil
}

// dataEnd sets h.DataEnd from a layout as ggml writes it and reports a file
// that ends before it as one truncation, rather than one out-of-bounds
// tensor after another (and the last whole tensor's cut successor as
// trailing bytes). A layout ggml would refuse for its own sake (a gap, an
// overlap, an unusable tensor) leaves DataEnd at -1: its offsets are not
// trusted to say how long the file should be.
func (w *walker) dataEnd(h *Header) error {
	if len(h.Tensors) == 0 {
		return nil
	}
	var next, end int64 // relative to the data section
	for _, e := range h.Tensors {
		if !e.Usable || e.Rel != uint64(next) {
			return nil
		}
		var err error
		if end, err = tensor.AddInt64(next, e.Size); err != nil {
			return nil
		}
		padded, err := tensor.AlignUp(e.Size, h.Alignment)
		if err == nil {
			next, err = tensor.AddInt64(next, padded)
		}
		if err != nil {
			return nil
		}
	}
	abs, err := tensor.AddInt64(h.DataOffset, end)
	if err != nil {
		return nil
	}
	h.DataEnd = abs
	if abs <= w.size {
		return nil
	}
	// The first tensor whose data the end of the file cuts.
	cut := 0
	for i, e := range h.Tensors {
		if h.DataOffset+int64(e.Rel)+e.Size > w.size {
			cut = i
			break
		}
	}
	w.item = "tensor " + strconv.Quote(h.Tensors[cut].Name)
	defer func() { w.item = "" }()
	p := problem(CodeDataTruncated, w.size, "truncated: expected %d bytes, got %d (the data of %d of the %d tensors, from this one on, is cut or missing)",
		abs, w.size, len(h.Tensors)-cut, len(h.Tensors))
	p.Need, p.Left = abs, w.size
	return w.flag(p)
}

// metadata reads the n key-value pairs.
func (w *walker) metadata(h *Header, n uint64) error {
	h.Metadata = make(tensor.Metadata, 0, n)
	h.KeyOffsets = make([]int64, 0, n)
	seen := make(map[string]bool, n)
	for i := uint64(0); i < n; i++ {
		w.item = ""
		keyOff := w.off
		key, err := w.str("key "+strconv.FormatUint(i, 10), true)
		if err != nil {
			return err
		}
		if key == "" {
			if err := w.flag(problem(CodeEmptyKey, keyOff, "key %d is empty", i)); err != nil {
				return err
			}
		}
		w.item = "key " + strconv.Quote(key)
		dup := seen[key]
		if dup && key != "" {
			if err := w.flag(problem(CodeDuplicateKey, keyOff, "duplicate key")); err != nil {
				return err
			}
		}
		seen[key] = true
		typeOff := w.off
		k, err := w.kind("value type")
		if err != nil {
			return err
		}
		w.badBool = false
		v, err := w.value(k, 0)
		if err != nil {
			return err
		}
		if dup {
			continue
		}
		if key == KeyAlignment {
			var p *Problem
			if a, ok := v.Any().(uint32); !ok {
				p = problem(CodeAlignment, typeOff, "must be a uint32, not %s", k)
			} else if a == 0 || a&(a-1) != 0 {
				p = problem(CodeAlignment, typeOff+4, "alignment %d is not a power of two", a)
			} else {
				h.Alignment = int64(a)
			}
			if p != nil {
				if err := w.flag(p); err != nil {
					return err
				}
			}
		}
		h.Metadata = append(h.Metadata, tensor.KV{Key: key, Value: v})
		h.KeyOffsets = append(h.KeyOffsets, keyOff)
	}
	w.item = ""
	return nil
}

// tensorInfos reads the n tensor infos.
func (w *walker) tensorInfos(h *Header, n uint64) error {
	h.Tensors = make([]TensorInfo, 0, n)
	names := make(map[string]bool, n)
	for i := uint64(0); i < n; i++ {
		w.item = ""
		e := TensorInfo{At: w.off, Usable: true}
		name, err := w.str("tensor name "+strconv.FormatUint(i, 10), true)
		if err != nil {
			return err
		}
		w.item = "tensor " + strconv.Quote(name)
		for _, msg := range tensorNameProblems(name) {
			if err := w.flag(problem(CodeTensorName, e.At, "%s", msg)); err != nil {
				return err
			}
		}
		if names[name] {
			if err := w.flag(problem(CodeDuplicateTensor, e.At, "duplicate tensor name")); err != nil {
				return err
			}
		}
		names[name] = true
		dimsOff := w.off
		nDims, err := w.u32("dimension count")
		if err != nil {
			return err
		}
		if nDims < 1 || nDims > MaxDims {
			p := problem(CodeDims, dimsOff, "has %d dimensions, want 1 to %d", nDims, MaxDims)
			p.Fatal = nDims > maxWalkDims
			e.Usable = false
			if err := w.flag(p); err != nil {
				return err
			}
		}
		ne := make([]int64, nDims)
		for j := range ne {
			off := w.off
			x, err := w.u64("dimension")
			if err != nil {
				return err
			}
			ne[j] = int64(x)
			if !e.Usable {
				continue
			}
			if ne[j] < 0 {
				e.Usable = false
				err = w.flag(problem(CodeShape, off, "dimension %d is negative (%d)", j, ne[j]))
			} else if ne[j] == 0 {
				// Still usable: the data (none) can be located and the rest
				// of the layout checked.
				err = w.flag(problem(CodeZeroDim, off, "ne[%d] is 0: ggml's loader divides by ne[1..3] and dies", j))
			}
			if err != nil {
				return err
			}
		}
		shape := tensor.Shape(ne).Reversed()
		if _, nerr := shape.NumElements(); nerr != nil && e.Usable {
			e.Usable = false
			if err := w.flag(problem(CodeShape, dimsOff+4, "ne %v: element count overflows int64", ne)); err != nil {
				return err
			}
		}
		typeOff := w.off
		id, err := w.u32("tensor type")
		if err != nil {
			return err
		}
		dt, ok := tensor.DTypeFromGGML(id)
		if !ok {
			var p *Problem
			if old, removed := removedTypes[id]; removed {
				p = problem(CodeType, typeOff, "ggml type id %d (%s) was removed from ggml and is not supported", id, old)
			} else {
				p = problem(CodeType, typeOff, "unknown ggml type id %d", id)
			}
			p.N, p.Unsupported = uint64(id), true
			e.Usable = false
			if err := w.flag(p); err != nil {
				return err
			}
		}
		if e.Usable {
			if bs := dt.BlockSize(); ne[0]%bs != 0 {
				e.Usable = false
				err = w.flag(problem(CodeBlockSize, dimsOff+4, "row length ne[0]=%d is not a multiple of the %s block size %d", ne[0], dt, bs))
			} else if nbytes, serr := dt.ShapeBytes(shape); serr != nil {
				e.Usable = false
				err = w.flag(problem(CodeShape, dimsOff+4, "%s %v: %v", dt, ne, serr))
			} else {
				e.Size = nbytes
			}
			if err != nil {
				return err
			}
		}
		e.OffsetPos = w.off
		if e.Rel, err = w.u64("data offset"); err != nil {
			return err
		}
		e.Name, e.DType, e.Shape = name, dt, shape
		h.Tensors = append(h.Tensors, e)
	}
	w.item = ""
	return nil
}

// zeros reports a lint when [from, to) holds a non-zero byte (looking at no
// more than maxPaddingCheck bytes).
func (w *walker) zeros(from, to int64) error {
	n := min(to-from, maxPaddingCheck)
	if n <= 0 {
		return nil
	}
	p := make([]byte, n)
	if err := w.read(p, "the header's padding"); err != nil {
		return err
	}
	for i, c := range p {
		if c != 0 {
			pr := problem(CodePadding, from+int64(i), "the header's padding holds byte %#02x", c)
			pr.N = uint64(c)
			return w.flag(pr)
		}
	}
	return nil
}

// tensorNameProblems applies ggml's rules for tensor names, plus two of our
// own that keep names unambiguous: not empty and no NUL (ggml would cut the
// name at the NUL and could then see two tensors under one name).
func tensorNameProblems(name string) []string {
	var out []string
	switch {
	case name == "":
		out = append(out, "tensor name is empty")
	case len(name) >= MaxNameLen:
		out = append(out, fmt.Sprintf("tensor name is %d bytes long, the limit is %d", len(name), MaxNameLen-1))
	}
	for i := 0; i < len(name); i++ {
		if name[i] == 0 {
			out = append(out, fmt.Sprintf("tensor name has a NUL byte at %d", i))
			break
		}
	}
	return out
}

// checkTensorName returns the first of tensorNameProblems, for writers.
func checkTensorName(name string) error {
	if ps := tensorNameProblems(name); len(ps) > 0 {
		return fmt.Errorf("%s", ps[0])
	}
	return nil
}
