package native

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"

	"github.com/tfconv/tfconv/tensor"
)

// Format versions. A reader accepts every minor version of its major version:
// minor versions only add things an older reader may skip (trailing header
// bytes, flag bits, new attribute keys); a new major version may change
// anything, so it is rejected with ErrUnsupported.
const (
	MajorVersion = 1
	MinorVersion = 0
)

// Magic opens every file. Like PNG's signature it starts with a non-ASCII byte
// and holds CR LF, ^Z and LF, so a file mangled by a text-mode transfer or
// mistaken for text is rejected at once.
const Magic = "\x89TFN\r\n\x1a\n"

// footerMagic closes every file; a reader that starts from the end (or a
// truncated download) finds it in the last 8 bytes.
const footerMagic = "TFN\x00TAIL"

// Layout constants and caps. Every count and length read from a file is
// checked against these and against the bytes actually left, before anything
// is allocated from it.
const (
	// DefaultAlignment is the data alignment when Header.Alignment is 0: a
	// cache line, and enough for every SIMD load of an mmapped tensor.
	DefaultAlignment = 64
	// MaxAlignment allows page (4 KiB, 16 KiB, 64 KiB) and 2 MiB huge-page
	// alignment and nothing sillier.
	MaxAlignment = 1 << 21
	// MaxHeaderSize bounds the leading header. Real headers are dominated by
	// tokenizer arrays in GGUF metadata: a few MiB for a 256k vocabulary.
	MaxHeaderSize = 256 << 20
	// MaxNameLen bounds tensor names, aux file names and metadata keys.
	MaxNameLen = 1024
	// MaxSourceLen bounds the source format name.
	MaxSourceLen = 64
	// MaxTensors bounds the tensor count; the largest real checkpoints have
	// tens of thousands.
	MaxTensors = 1 << 20
	// MaxAux bounds the number of embedded auxiliary files.
	MaxAux = 1024
	// MaxKVs bounds the entries of one metadata list.
	MaxKVs = 1 << 20
	// MaxDepth bounds array nesting in metadata (GGUF files use 2 at most).
	MaxDepth = 8
	// MaxAuxReadAll is the largest aux file AuxFile.ReadAll returns in one
	// slice; larger ones must be streamed with AuxFile.Open.
	MaxAuxReadAll = 256 << 20

	maxDTypeLen  = 32
	preambleSize = 32
	footerSize   = 32
	crcSize      = 4
)

// Minimum encoded sizes, used to bound counts by the bytes left before
// allocating: a count that could not fit in the rest of the header is an error.
const (
	minKVSize     = 8 + 4 + 1             // key length, kind, smallest value
	minAuxSize    = 8 + 8 + 8             // name length, size, offset
	minTensorSize = 8 + 8 + 4 + 8 + 8 + 8 // name length, dtype length, rank, offset, size, attr count
	minArraySize  = 4 + 8                 // element kind, count
)

// Attribute keys of the int8-with-separate-scales convention (see doc.go).
const (
	// AttrQuantScale names the F32 companion tensor holding the scales.
	AttrQuantScale = "quant.scale"
	// AttrQuantAxis (int32) is the axis the scales run along; absent or -1
	// means one scale for the whole tensor.
	AttrQuantAxis = "quant.axis"
)

// Known values of File.Source.
const (
	SourceSafetensors = "safetensors"
	SourceGGUF        = "gguf"
)

// castagnoli is CRC-32C, which amd64 (SSE 4.2) and arm64 compute in hardware.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var le = binary.LittleEndian

// headerCRC computes the preamble's checksum: every byte of the preamble
// except the checksum field itself, then the header.
func headerCRC(pre, hdr []byte) uint32 {
	c := crc32.Update(0, castagnoli, pre[:24])
	c = crc32.Update(c, castagnoli, pre[28:preambleSize])
	return crc32.Update(c, castagnoli, hdr)
}

// --- encoding ---

type encoder struct{ b []byte }

func (e *encoder) u32(x uint32) { e.b = le.AppendUint32(e.b, x) }
func (e *encoder) u64(x uint64) { e.b = le.AppendUint64(e.b, x) }
func (e *encoder) str(s string) {
	e.u64(uint64(len(s)))
	e.b = append(e.b, s...)
}

// metadata appends a metadata list that checkMetadata accepted.
func (e *encoder) metadata(md tensor.Metadata) {
	e.u64(uint64(len(md)))
	for _, kv := range md {
		e.str(kv.Key)
		k := kv.Value.Kind()
		e.u32(uint32(k))
		if k == tensor.KindArray {
			a, _ := kv.Value.Array()
			e.array(a)
			continue
		}
		e.scalar(kv.Value.Any())
	}
}

func (e *encoder) scalar(v any) {
	switch x := v.(type) {
	case uint8:
		e.b = append(e.b, x)
	case int8:
		e.b = append(e.b, uint8(x))
	case uint16:
		e.b = le.AppendUint16(e.b, x)
	case int16:
		e.b = le.AppendUint16(e.b, uint16(x))
	case uint32:
		e.u32(x)
	case int32:
		e.u32(uint32(x))
	case float32:
		e.u32(math.Float32bits(x))
	case bool:
		if x {
			e.b = append(e.b, 1)
		} else {
			e.b = append(e.b, 0)
		}
	case string:
		e.str(x)
	case uint64:
		e.u64(x)
	case int64:
		e.u64(uint64(x))
	case float64:
		e.u64(math.Float64bits(x))
	}
}

func (e *encoder) array(a tensor.Array) {
	e.u32(uint32(a.Elem))
	n := a.Len()
	e.u64(uint64(n))
	if a.Elem == tensor.KindArray {
		for _, sub := range a.Data.([]tensor.Array) {
			e.array(sub)
		}
		return
	}
	for i := 0; i < n; i++ {
		e.scalar(a.Index(i).Any())
	}
}

// checkMetadata validates a metadata list for writing: known kinds, arrays
// whose Go data matches their element kind, bounded nesting and names, and no
// duplicate keys (a reader could not tell which one Get means).
func checkMetadata(md tensor.Metadata) error {
	if len(md) > MaxKVs {
		return fmt.Errorf("%d metadata entries exceed the cap of %d", len(md), MaxKVs)
	}
	seen := make(map[string]struct{}, len(md))
	for _, kv := range md {
		if len(kv.Key) > MaxNameLen {
			return fmt.Errorf("metadata key of %d bytes exceeds the cap of %d", len(kv.Key), MaxNameLen)
		}
		if _, dup := seen[kv.Key]; dup {
			return fmt.Errorf("duplicate metadata key %q", kv.Key)
		}
		seen[kv.Key] = struct{}{}
		if err := checkValue(kv.Value, 0); err != nil {
			return fmt.Errorf("metadata key %q: %w", kv.Key, err)
		}
	}
	return nil
}

func checkValue(v tensor.Value, depth int) error {
	if !v.IsValid() || !v.Kind().Valid() {
		return fmt.Errorf("invalid value")
	}
	a, ok := v.Array()
	if !ok {
		return nil
	}
	return checkArray(a, depth+1)
}

func checkArray(a tensor.Array, depth int) error {
	if depth > MaxDepth {
		return fmt.Errorf("arrays nested deeper than %d", MaxDepth)
	}
	if !a.Elem.Valid() {
		return fmt.Errorf("array of invalid kind %d", uint32(a.Elem))
	}
	if a.Data == nil {
		return nil // an empty array of a.Elem
	}
	if k, ok := goKind(a.Data); !ok || k != a.Elem {
		return fmt.Errorf("array of %s holds %T", a.Elem, a.Data)
	}
	if subs, ok := a.Data.([]tensor.Array); ok {
		for _, s := range subs {
			if err := checkArray(s, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// goKind is the element kind of one of the slice types tensor.Array allows.
func goKind(data any) (tensor.Kind, bool) {
	switch data.(type) {
	case []uint8:
		return tensor.KindUint8, true
	case []int8:
		return tensor.KindInt8, true
	case []uint16:
		return tensor.KindUint16, true
	case []int16:
		return tensor.KindInt16, true
	case []uint32:
		return tensor.KindUint32, true
	case []int32:
		return tensor.KindInt32, true
	case []float32:
		return tensor.KindFloat32, true
	case []bool:
		return tensor.KindBool, true
	case []string:
		return tensor.KindString, true
	case []tensor.Array:
		return tensor.KindArray, true
	case []uint64:
		return tensor.KindUint64, true
	case []int64:
		return tensor.KindInt64, true
	case []float64:
		return tensor.KindFloat64, true
	}
	return 0, false
}

// --- decoding ---

// decoder reads the in-memory header. base is the file offset of b[0], so
// every error can name the absolute byte offset of the bad field.
type decoder struct {
	b    []byte
	off  int
	base int64
	file string
}

func (d *decoder) pos() int64     { return d.base + int64(d.off) }
func (d *decoder) remaining() int { return len(d.b) - d.off }

func (d *decoder) errAt(at int64, item, format string, args ...any) *tensor.FormatError {
	return &tensor.FormatError{Format: "native", File: d.file, Offset: at, Item: item, Msg: fmt.Sprintf(format, args...)}
}

func (d *decoder) need(n int, item, what string) error {
	if n > d.remaining() {
		return d.errAt(d.pos(), item, "header ends inside %s (%d bytes needed, %d left)", what, n, d.remaining())
	}
	return nil
}

func (d *decoder) u8(item, what string) (uint8, error) {
	if err := d.need(1, item, what); err != nil {
		return 0, err
	}
	x := d.b[d.off]
	d.off++
	return x, nil
}

func (d *decoder) u16(item, what string) (uint16, error) {
	if err := d.need(2, item, what); err != nil {
		return 0, err
	}
	x := le.Uint16(d.b[d.off:])
	d.off += 2
	return x, nil
}

func (d *decoder) u32(item, what string) (uint32, error) {
	if err := d.need(4, item, what); err != nil {
		return 0, err
	}
	x := le.Uint32(d.b[d.off:])
	d.off += 4
	return x, nil
}

func (d *decoder) u64(item, what string) (uint64, error) {
	if err := d.need(8, item, what); err != nil {
		return 0, err
	}
	x := le.Uint64(d.b[d.off:])
	d.off += 8
	return x, nil
}

// int64 reads a u64 that must fit an int64 (a size, offset or dimension).
func (d *decoder) int64(item, what string) (int64, error) {
	at := d.pos()
	x, err := d.u64(item, what)
	if err != nil {
		return 0, err
	}
	if x > math.MaxInt64 {
		return 0, d.errAt(at, item, "%s %d exceeds 2^63-1", what, x)
	}
	return int64(x), nil
}

// str reads a length-prefixed string of at most max bytes.
func (d *decoder) str(item, what string, max int) (string, error) {
	at := d.pos()
	n, err := d.u64(item, what+" length")
	if err != nil {
		return "", err
	}
	if n > uint64(max) {
		return "", d.errAt(at, item, "%s length %d exceeds the cap of %d", what, n, max)
	}
	if n > uint64(d.remaining()) {
		return "", d.errAt(at, item, "%s length %d exceeds the %d header bytes left", what, n, d.remaining())
	}
	s := string(d.b[d.off : d.off+int(n)])
	d.off += int(n)
	return s, nil
}

// count reads a u64 element count, each element taking at least minSize
// bytes, and checks it against the cap and the header bytes left.
func (d *decoder) count(item, what string, max uint64, minSize int) (int, error) {
	at := d.pos()
	n, err := d.u64(item, what)
	if err != nil {
		return 0, err
	}
	if n > max {
		return 0, d.errAt(at, item, "%s %d exceeds the cap of %d", what, n, max)
	}
	if minSize > 0 && n > uint64(d.remaining()/minSize) {
		return 0, d.errAt(at, item, "%s %d cannot fit in the %d header bytes left", what, n, d.remaining())
	}
	return int(n), nil
}

// metadata reads a metadata list. item names its owner for errors.
func (d *decoder) metadata(item string) (tensor.Metadata, error) {
	n, err := d.count(item, "metadata count", MaxKVs, minKVSize)
	if err != nil {
		return nil, err
	}
	md := make(tensor.Metadata, 0, n)
	seen := make(map[string]struct{}, n)
	for range n {
		at := d.pos()
		key, err := d.str(item, "metadata key", MaxNameLen)
		if err != nil {
			return nil, err
		}
		kitem := fmt.Sprintf("key %q", key)
		if item != "" {
			kitem = item + ": " + kitem
		}
		if _, dup := seen[key]; dup {
			return nil, d.errAt(at, kitem, "duplicate metadata key")
		}
		seen[key] = struct{}{}
		kat := d.pos()
		k, err := d.u32(kitem, "value kind")
		if err != nil {
			return nil, err
		}
		if !tensor.Kind(k).Valid() {
			return nil, d.errAt(kat, kitem, "unknown value kind %d", k)
		}
		v, err := d.value(kitem, tensor.Kind(k), 0)
		if err != nil {
			return nil, err
		}
		md = append(md, tensor.KV{Key: key, Value: v})
	}
	return md, nil
}

func (d *decoder) value(item string, k tensor.Kind, depth int) (tensor.Value, error) {
	at := d.pos()
	switch k {
	case tensor.KindUint8:
		x, err := d.u8(item, "uint8")
		return tensor.Uint8(x), err
	case tensor.KindInt8:
		x, err := d.u8(item, "int8")
		return tensor.Int8(int8(x)), err
	case tensor.KindUint16:
		x, err := d.u16(item, "uint16")
		return tensor.Uint16(x), err
	case tensor.KindInt16:
		x, err := d.u16(item, "int16")
		return tensor.Int16(int16(x)), err
	case tensor.KindUint32:
		x, err := d.u32(item, "uint32")
		return tensor.Uint32(x), err
	case tensor.KindInt32:
		x, err := d.u32(item, "int32")
		return tensor.Int32(int32(x)), err
	case tensor.KindFloat32:
		x, err := d.u32(item, "float32")
		return tensor.Float32(math.Float32frombits(x)), err
	case tensor.KindBool:
		x, err := d.u8(item, "bool")
		if err != nil {
			return tensor.Value{}, err
		}
		if x > 1 {
			return tensor.Value{}, d.errAt(at, item, "bool byte %d is neither 0 nor 1", x)
		}
		return tensor.Bool(x == 1), nil
	case tensor.KindString:
		s, err := d.str(item, "string", d.remaining())
		return tensor.String(s), err
	case tensor.KindUint64:
		x, err := d.u64(item, "uint64")
		return tensor.Uint64(x), err
	case tensor.KindInt64:
		x, err := d.u64(item, "int64")
		return tensor.Int64(int64(x)), err
	case tensor.KindFloat64:
		x, err := d.u64(item, "float64")
		return tensor.Float64(math.Float64frombits(x)), err
	case tensor.KindArray:
		a, err := d.array(item, depth+1)
		if err != nil {
			return tensor.Value{}, err
		}
		return tensor.ArrayOf(a.Data), nil
	}
	return tensor.Value{}, d.errAt(at, item, "unknown value kind %d", uint32(k))
}

// array reads an array's element kind, count and elements.
func (d *decoder) array(item string, depth int) (tensor.Array, error) {
	at := d.pos()
	if depth > MaxDepth {
		return tensor.Array{}, d.errAt(at, item, "arrays nested deeper than %d", MaxDepth)
	}
	ek, err := d.u32(item, "array element kind")
	if err != nil {
		return tensor.Array{}, err
	}
	elem := tensor.Kind(ek)
	if !elem.Valid() {
		return tensor.Array{}, d.errAt(at, item, "unknown array element kind %d", ek)
	}
	min := elem.Size()
	switch elem {
	case tensor.KindString:
		min = 8
	case tensor.KindArray:
		min = minArraySize
	}
	n, err := d.count(item, "array length", math.MaxInt64, min)
	if err != nil {
		return tensor.Array{}, err
	}
	// Scalar arrays are decoded in bulk: the count was checked against the
	// bytes left, so each slice is bounded by the header size.
	p := d.b[d.off:]
	var data any
	switch elem {
	case tensor.KindUint8:
		data = append([]uint8{}, p[:n]...)
	case tensor.KindInt8:
		s := make([]int8, n)
		for i := range s {
			s[i] = int8(p[i])
		}
		data = s
	case tensor.KindUint16:
		s := make([]uint16, n)
		for i := range s {
			s[i] = le.Uint16(p[2*i:])
		}
		data = s
	case tensor.KindInt16:
		s := make([]int16, n)
		for i := range s {
			s[i] = int16(le.Uint16(p[2*i:]))
		}
		data = s
	case tensor.KindUint32:
		s := make([]uint32, n)
		for i := range s {
			s[i] = le.Uint32(p[4*i:])
		}
		data = s
	case tensor.KindInt32:
		s := make([]int32, n)
		for i := range s {
			s[i] = int32(le.Uint32(p[4*i:]))
		}
		data = s
	case tensor.KindFloat32:
		s := make([]float32, n)
		for i := range s {
			s[i] = math.Float32frombits(le.Uint32(p[4*i:]))
		}
		data = s
	case tensor.KindUint64:
		s := make([]uint64, n)
		for i := range s {
			s[i] = le.Uint64(p[8*i:])
		}
		data = s
	case tensor.KindInt64:
		s := make([]int64, n)
		for i := range s {
			s[i] = int64(le.Uint64(p[8*i:]))
		}
		data = s
	case tensor.KindFloat64:
		s := make([]float64, n)
		for i := range s {
			s[i] = math.Float64frombits(le.Uint64(p[8*i:]))
		}
		data = s
	case tensor.KindBool:
		s := make([]bool, n)
		for i := range s {
			if p[i] > 1 {
				return tensor.Array{}, d.errAt(d.pos()+int64(i), item, "bool byte %d is neither 0 nor 1", p[i])
			}
			s[i] = p[i] == 1
		}
		data = s
	case tensor.KindString:
		s := make([]string, n)
		for i := range s {
			if s[i], err = d.str(item, "string", d.remaining()); err != nil {
				return tensor.Array{}, err
			}
		}
		return tensor.Array{Elem: elem, Data: s}, nil
	case tensor.KindArray:
		s := make([]tensor.Array, n)
		for i := range s {
			if s[i], err = d.array(item, depth+1); err != nil {
				return tensor.Array{}, err
			}
		}
		return tensor.Array{Elem: elem, Data: s}, nil
	}
	d.off += n * elem.Size()
	return tensor.Array{Elem: elem, Data: data}, nil
}

// quantProblem checks the quant.* attribute convention for one tensor and
// returns what is wrong, or "". lookup finds another tensor by name.
func quantProblem(self tensor.Info, attrs tensor.Metadata, lookup func(string) (tensor.Info, bool)) string {
	sv, hasScale := attrs.Get(AttrQuantScale)
	av, hasAxis := attrs.Get(AttrQuantAxis)
	if !hasScale {
		if hasAxis {
			return AttrQuantAxis + " without " + AttrQuantScale
		}
		return ""
	}
	name, ok := sv.Str()
	if !ok {
		return fmt.Sprintf("%s is a %s, not a string", AttrQuantScale, sv.Kind())
	}
	if name == self.Name {
		return AttrQuantScale + " names the tensor itself"
	}
	sc, ok := lookup(name)
	if !ok {
		return fmt.Sprintf("%s tensor %q does not exist", AttrQuantScale, name)
	}
	if sc.DType != tensor.F32 {
		return fmt.Sprintf("%s tensor %q is %s, not F32", AttrQuantScale, name, sc.DType)
	}
	axis := int64(-1)
	if hasAxis {
		if av.Kind() != tensor.KindInt32 {
			return fmt.Sprintf("%s is a %s, not an int32", AttrQuantAxis, av.Kind())
		}
		axis, _ = av.Int()
		if axis < -1 || axis >= int64(len(self.Shape)) {
			return fmt.Sprintf("%s %d is outside [-1, %d)", AttrQuantAxis, axis, len(self.Shape))
		}
	}
	want := int64(1)
	if axis >= 0 {
		want = self.Shape[axis]
	}
	if n := sc.NumElements(); n != want {
		return fmt.Sprintf("%s tensor %q has %d elements, want %d", AttrQuantScale, name, n, want)
	}
	return ""
}
