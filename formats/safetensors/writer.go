package safetensors

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tfconv/tfconv/tensor"
)

// headerAlign is the multiple that 8+N is padded to with spaces, as the
// reference serializer does, so that every tensor body is 8-byte aligned
// in an mmap of the file when the dtypes are laid out by descending size.
const headerAlign = 8

// Writer streams a safetensors file. The tensors are declared to NewWriter,
// which writes the header at once; then each body is written in the declared
// order through the io.Writer that Next returns.
type Writer struct {
	w       io.Writer
	names   []string
	sizes   []int64
	next    int   // index of the tensor Next will start
	left    int64 // bytes still owed to the current body
	cur     *body // the current body, nil before the first Next
	err     error // sticky: once failed, every call fails
	closed  bool
	written int64 // header and data bytes written so far
}

// body is the io.Writer of one tensor's bytes.
type body struct {
	w    *Writer
	name string
}

// NewWriter validates the tensors (Name, DType and Shape are used; Offset and
// Size are ignored) and the metadata, and writes the header to w. Data is
// laid out in the order given: pass ReferenceOrder(tensors) to lay it out as
// the reference writer would. Metadata values must all be strings; nil
// metadata writes no "__metadata__" key, empty non-nil metadata writes
// "__metadata__":{}.
func NewWriter(w io.Writer, tensors []tensor.Info, meta tensor.Metadata) (*Writer, error) {
	hdr, sizes, err := encodeHeader(tensors, meta)
	if err != nil {
		return nil, err
	}
	var nb [lenBytes]byte
	binary.LittleEndian.PutUint64(nb[:], uint64(len(hdr)))
	if _, err := w.Write(nb[:]); err != nil {
		return nil, fmt.Errorf("safetensors: writing header: %w", err)
	}
	if _, err := w.Write(hdr); err != nil {
		return nil, fmt.Errorf("safetensors: writing header: %w", err)
	}
	sw := &Writer{w: w, sizes: sizes, written: lenBytes + int64(len(hdr))}
	for _, t := range tensors {
		sw.names = append(sw.names, t.Name)
	}
	return sw, nil
}

// encodeHeader builds the padded JSON header exactly as serde_json
// serializes the reference's Metadata: compact, "__metadata__" first, then
// each tensor in data order as {"dtype","shape","data_offsets"}.
func encodeHeader(tensors []tensor.Info, meta tensor.Metadata) ([]byte, []int64, error) {
	b := []byte{'{'}
	if meta != nil {
		b = append(b, `"__metadata__":{`...)
		seen := map[string]bool{}
		for i, kv := range meta {
			v, ok := kv.Value.Str()
			if !ok {
				return nil, nil, fmt.Errorf("safetensors: metadata %q: value is %s, but safetensors metadata values are strings", kv.Key, kv.Value.Kind())
			}
			if seen[kv.Key] {
				return nil, nil, fmt.Errorf("safetensors: metadata %q: duplicate key", kv.Key)
			}
			seen[kv.Key] = true
			if !utf8.ValidString(kv.Key) || !utf8.ValidString(v) {
				return nil, nil, fmt.Errorf("safetensors: metadata %q: not valid UTF-8", kv.Key)
			}
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, kv.Key)
			b = append(b, ':')
			b = appendJSONString(b, v)
		}
		b = append(b, '}')
	}
	sizes := make([]int64, len(tensors))
	seen := make(map[string]bool, len(tensors))
	var off int64
	for i, t := range tensors {
		name, ok := t.DType.SafetensorsName()
		if !ok {
			return nil, nil, fmt.Errorf("safetensors: tensor %q: dtype %s cannot be stored in safetensors", t.Name, t.DType)
		}
		switch {
		case t.Name == metadataKey:
			return nil, nil, fmt.Errorf("safetensors: tensor %q: name is reserved for metadata", t.Name)
		case seen[t.Name]:
			return nil, nil, fmt.Errorf("safetensors: tensor %q: declared twice", t.Name)
		case !utf8.ValidString(t.Name):
			return nil, nil, fmt.Errorf("safetensors: tensor %q: name is not valid UTF-8", t.Name)
		case len(t.Shape) > tensor.MaxDims:
			return nil, nil, fmt.Errorf("safetensors: tensor %q: shape has more than %d dimensions", t.Name, tensor.MaxDims)
		}
		seen[t.Name] = true
		size, err := t.DType.ShapeBytes(t.Shape)
		if err != nil {
			return nil, nil, fmt.Errorf("safetensors: tensor %q: %w", t.Name, err)
		}
		end, err := tensor.AddInt64(off, size)
		if err != nil {
			return nil, nil, fmt.Errorf("safetensors: tensor %q: data offset %w", t.Name, err)
		}
		sizes[i] = size
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = appendJSONString(b, t.Name)
		b = append(b, `:{"dtype":`...)
		b = appendJSONString(b, name)
		b = append(b, `,"shape":[`...)
		for j, d := range t.Shape {
			if j > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, d, 10)
		}
		b = append(b, `],"data_offsets":[`...)
		b = strconv.AppendInt(b, off, 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, end, 10)
		b = append(b, "]}"...)
		off = end
	}
	b = append(b, '}')
	for len(b)%headerAlign != 0 {
		b = append(b, ' ')
	}
	if len(b) > MaxHeaderLen {
		return nil, nil, fmt.Errorf("safetensors: header of %d bytes exceeds the limit of %d", len(b), MaxHeaderLen)
	}
	return b, sizes, nil
}

// Next starts the body of the named tensor, which must be the next one
// declared, after the previous body is complete. The returned writer
// accepts exactly the tensor's size in bytes.
func (w *Writer) Next(name string) (io.Writer, error) {
	if err := w.ready(); err != nil {
		return nil, err
	}
	if err := w.finishBody(); err != nil {
		return nil, err
	}
	if w.next >= len(w.names) {
		return nil, w.fail(fmt.Errorf("safetensors: Next(%q): all %d declared tensors were already written", name, len(w.names)))
	}
	if want := w.names[w.next]; want != name {
		return nil, w.fail(fmt.Errorf("safetensors: Next(%q): the next declared tensor is %q", name, want))
	}
	w.cur = &body{w: w, name: name}
	w.left = w.sizes[w.next]
	w.next++
	return w.cur, nil
}

// Close checks that every declared tensor was written in full. It does not
// close the underlying writer.
func (w *Writer) Close() error {
	if w.closed {
		return w.err
	}
	if err := w.ready(); err != nil {
		w.closed = true
		return err
	}
	w.closed = true
	if err := w.finishBody(); err != nil {
		return err
	}
	if w.next < len(w.names) {
		return w.fail(fmt.Errorf("safetensors: Close: %d of %d declared tensors were not written, the first being %q", len(w.names)-w.next, len(w.names), w.names[w.next]))
	}
	return nil
}

// Written returns the number of bytes written to the underlying writer.
func (w *Writer) Written() int64 { return w.written }

func (w *Writer) ready() error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return errors.New("safetensors: writer is closed")
	}
	return nil
}

func (w *Writer) fail(err error) error {
	w.err = err
	return err
}

// finishBody checks that the current body got all its bytes.
func (w *Writer) finishBody() error {
	if w.cur != nil && w.left != 0 {
		size := w.sizes[w.next-1]
		return w.fail(fmt.Errorf("safetensors: tensor %q: body is short: %d of %d bytes written", w.cur.name, size-w.left, size))
	}
	w.cur = nil
	return nil
}

// Write writes part of the tensor's body. Writing more than the tensor's
// size fails without writing anything and fails the Writer.
func (b *body) Write(p []byte) (int, error) {
	w := b.w
	if err := w.ready(); err != nil {
		return 0, err
	}
	if w.cur != b {
		return 0, w.fail(fmt.Errorf("safetensors: tensor %q: write after its body was finished", b.name))
	}
	if int64(len(p)) > w.left {
		size := w.sizes[w.next-1]
		return 0, w.fail(fmt.Errorf("safetensors: tensor %q: body is longer than its %d bytes", b.name, size))
	}
	n, err := w.w.Write(p)
	w.left -= int64(n)
	w.written += int64(n)
	if err != nil {
		return n, w.fail(fmt.Errorf("safetensors: tensor %q: %w", b.name, err))
	}
	if n < len(p) {
		return n, w.fail(fmt.Errorf("safetensors: tensor %q: %w", b.name, io.ErrShortWrite))
	}
	return n, nil
}

// referenceRank is each dtype's position in the reference's Dtype enum
// (safetensors/src/tensor.rs), which is declared in increasing alignment
// order and which the serializer sorts by, descending.
var referenceRank = map[tensor.DType]int{
	tensor.BOOL: 0, tensor.F4: 1, tensor.F6_E2M3: 2, tensor.F6_E3M2: 3,
	tensor.U8: 4, tensor.I8: 5, tensor.F8_E5M2: 6, tensor.F8_E4M3: 7,
	tensor.F8_E8M0: 8, tensor.F8_E4M3FNUZ: 9, tensor.F8_E5M2FNUZ: 10,
	tensor.I16: 11, tensor.U16: 12, tensor.F16: 13, tensor.BF16: 14,
	tensor.I32: 15, tensor.U32: 16, tensor.F32: 17, tensor.C64: 18,
	tensor.F64: 19, tensor.I64: 20, tensor.U64: 21,
}

// ReferenceOrder returns the tensors in the order the reference writer lays
// their data out: by dtype in descending reference enum order (so the widest
// types come first and every body stays aligned), then by name (byte-wise).
// Dtypes safetensors cannot hold sort last. The input is not modified.
func ReferenceOrder(tensors []tensor.Info) []tensor.Info {
	out := slices.Clone(tensors)
	rank := func(d tensor.DType) int {
		if r, ok := referenceRank[d]; ok {
			return r
		}
		return -1
	}
	slices.SortStableFunc(out, func(a, b tensor.Info) int {
		if ra, rb := rank(a.DType), rank(b.DType); ra != rb {
			return rb - ra
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}
