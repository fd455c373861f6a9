package gguf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/tfconv/tfconv/tensor"
)

// Writer streams a GGUF version 3 file: the header (metadata and tensor
// directory) is written by NewWriter, then each tensor's data in the declared
// order through Next. Memory stays at the header; the bodies pass through.
//
// The output is deterministic: keys and tensors appear in the given order,
// offsets are the running padded sums ggml requires, and padding is zeros.
type Writer struct {
	w       io.Writer
	tensors []tensor.Info // Offset relative to the data section
	align   int64
	next    int   // index of the tensor Next returns next
	body    *body // the body being written, or nil
	err     error // sticky: after a failure every call returns it
	closed  bool
}

// NewWriter checks meta and tensors and writes the header to w. The alignment
// is meta's general.alignment (which must then be a uint32 power of two) or
// DefaultAlignment. Each tensor's Offset is ignored (the writer lays the data
// out); a non-zero Size must match its DType and Shape. A Shape of length 0
// (a scalar) is written as one dimension of 1, as ggml does.
func NewWriter(w io.Writer, meta tensor.Metadata, tensors []tensor.Info) (*Writer, error) {
	hdr, ts, align, err := encodeHeader(meta, tensors)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(hdr); err != nil {
		return nil, fmt.Errorf("gguf: writing header: %w", err)
	}
	return &Writer{w: w, tensors: ts, align: align}, nil
}

// encodeHeader validates the inputs and returns the header bytes including
// the padding before the data section, the tensors with relative offsets, and
// the alignment.
func encodeHeader(meta tensor.Metadata, tensors []tensor.Info) ([]byte, []tensor.Info, int64, error) {
	align := int64(DefaultAlignment)
	keys := make(map[string]bool, len(meta))
	for _, kv := range meta {
		if kv.Key == "" {
			return nil, nil, 0, errors.New("gguf: empty metadata key")
		}
		if keys[kv.Key] {
			return nil, nil, 0, fmt.Errorf("gguf: duplicate metadata key %q", kv.Key)
		}
		keys[kv.Key] = true
		if kv.Key == KeyAlignment {
			a, ok := kv.Value.Any().(uint32)
			if !ok {
				return nil, nil, 0, fmt.Errorf("gguf: key %q must be a uint32, not %s", kv.Key, kv.Value.Kind())
			}
			if a == 0 || a&(a-1) != 0 {
				return nil, nil, 0, fmt.Errorf("gguf: key %q: alignment %d is not a power of two", kv.Key, a)
			}
			align = int64(a)
		}
	}

	ts := make([]tensor.Info, len(tensors))
	names := make(map[string]bool, len(tensors))
	var off int64
	for i, t := range tensors {
		shape, size, err := checkTensor(t)
		if err != nil {
			return nil, nil, 0, err
		}
		if names[t.Name] {
			return nil, nil, 0, fmt.Errorf("gguf: duplicate tensor %q", t.Name)
		}
		names[t.Name] = true
		ts[i] = tensor.Info{Name: t.Name, DType: t.DType, Shape: shape, Offset: off, Size: size}
		padded, err := tensor.AlignUp(size, align)
		if err == nil {
			off, err = tensor.AddInt64(off, padded)
		}
		if err != nil {
			return nil, nil, 0, fmt.Errorf("gguf: tensor %q: data section size overflows", t.Name)
		}
	}

	le := binary.LittleEndian
	b := []byte(Magic)
	b = le.AppendUint32(b, Version)
	b = le.AppendUint64(b, uint64(len(ts)))
	b = le.AppendUint64(b, uint64(len(meta)))
	for _, kv := range meta {
		b = appendString(b, kv.Key)
		var err error
		if b, err = appendValue(b, kv.Value, 0); err != nil {
			return nil, nil, 0, fmt.Errorf("gguf: key %q: %w", kv.Key, err)
		}
	}
	for _, t := range ts {
		b = appendString(b, t.Name)
		b = le.AppendUint32(b, uint32(len(t.Shape)))
		for j := len(t.Shape) - 1; j >= 0; j-- {
			b = le.AppendUint64(b, uint64(t.Shape[j]))
		}
		id, _ := t.DType.GGMLType()
		b = le.AppendUint32(b, id)
		b = le.AppendUint64(b, uint64(t.Offset))
	}
	if len(ts) > 0 {
		b = appendPadding(b, int64(len(b)), align)
	}
	return b, ts, align, nil
}

// CheckTensor returns an error naming t when it cannot be a tensor of a
// GGUF file that ggml loads: a name ggml accepts, a dtype with a ggml type,
// at most MaxDims dimensions (a scalar is written as [1]), none of them 0
// (ggml's loader computes INT64_MAX/ne[1], /ne[2], /ne[3] and dies on a 0;
// an empty tensor is of no use to llama.cpp either), whole blocks per row,
// and a byte size matching a non-zero Size. NewWriter applies it to every
// tensor; callers use it to refuse an output before writing anything.
func CheckTensor(t tensor.Info) error {
	_, _, err := checkTensor(t)
	return err
}

// checkTensor is CheckTensor; it also returns the shape as written and the
// data size.
func checkTensor(t tensor.Info) (tensor.Shape, int64, error) {
	if err := checkTensorName(t.Name); err != nil {
		return nil, 0, fmt.Errorf("gguf: tensor %q: %w", t.Name, err)
	}
	if _, ok := t.DType.GGMLType(); !ok {
		return nil, 0, fmt.Errorf("gguf: tensor %q: dtype %s has no ggml type", t.Name, t.DType)
	}
	shape := t.Shape
	if len(shape) == 0 {
		shape = tensor.Shape{1}
	}
	if len(shape) > MaxDims {
		return nil, 0, fmt.Errorf("gguf: tensor %q: %d dimensions, GGUF allows at most %d", t.Name, len(shape), MaxDims)
	}
	for j, d := range shape {
		if d == 0 {
			return nil, 0, fmt.Errorf("gguf: tensor %q: dimension %d of %v is 0 (ne[%d]): ggml's loader divides by the dimensions and cannot load an empty tensor",
				t.Name, j, shape, len(shape)-1-j)
		}
	}
	size, err := t.DType.ShapeBytes(shape)
	if err != nil {
		return nil, 0, fmt.Errorf("gguf: tensor %q: %w", t.Name, err)
	}
	if t.Size != 0 && t.Size != size {
		return nil, 0, fmt.Errorf("gguf: tensor %q: Size %d, but %s %v takes %d bytes", t.Name, t.Size, t.DType, t.Shape, size)
	}
	return shape.Clone(), size, nil
}

func appendString(b []byte, s string) []byte {
	b = binary.LittleEndian.AppendUint64(b, uint64(len(s)))
	return append(b, s...)
}

func appendPadding(b []byte, n, align int64) []byte {
	for n%align != 0 {
		b = append(b, 0)
		n++
	}
	return b
}

// appendValue encodes v's type tag and value.
func appendValue(b []byte, v tensor.Value, depth int) ([]byte, error) {
	if !v.IsValid() {
		return nil, errors.New("invalid (zero) value")
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(v.Kind()))
	if a, ok := v.Array(); ok {
		return appendArray(b, a, depth+1)
	}
	return appendScalar(b, v.Any()), nil
}

func appendScalar(b []byte, x any) []byte {
	le := binary.LittleEndian
	switch x := x.(type) {
	case uint8:
		return append(b, x)
	case int8:
		return append(b, byte(x))
	case uint16:
		return le.AppendUint16(b, x)
	case int16:
		return le.AppendUint16(b, uint16(x))
	case uint32:
		return le.AppendUint32(b, x)
	case int32:
		return le.AppendUint32(b, uint32(x))
	case float32:
		return le.AppendUint32(b, math.Float32bits(x))
	case bool:
		if x {
			return append(b, 1)
		}
		return append(b, 0)
	case string:
		return appendString(b, x)
	case uint64:
		return le.AppendUint64(b, x)
	case int64:
		return le.AppendUint64(b, uint64(x))
	case float64:
		return le.AppendUint64(b, math.Float64bits(x))
	}
	panic(fmt.Sprintf("gguf: appendScalar(%T)", x))
}

// appendArray encodes an array's element type, count and elements; depth is
// its nesting level, bounded as the reader bounds it.
func appendArray(b []byte, a tensor.Array, depth int) ([]byte, error) {
	if !a.Elem.Valid() {
		return nil, fmt.Errorf("array of invalid kind %d", uint32(a.Elem))
	}
	if !dataMatches(a) {
		return nil, fmt.Errorf("array of %s holds %T", a.Elem, a.Data)
	}
	if a.Elem == tensor.KindArray && depth >= maxArrayDepth {
		return nil, fmt.Errorf("arrays nested deeper than %d levels", maxArrayDepth)
	}
	le := binary.LittleEndian
	n := a.Len()
	b = le.AppendUint32(b, uint32(a.Elem))
	b = le.AppendUint64(b, uint64(n))
	if inner, ok := a.Data.([]tensor.Array); ok {
		for i := range inner {
			var err error
			if b, err = appendArray(b, inner[i], depth+1); err != nil {
				return nil, fmt.Errorf("element %d: %w", i, err)
			}
		}
		return b, nil
	}
	if raw, ok := a.Data.([]uint8); ok {
		return append(b, raw...), nil
	}
	for i := 0; i < n; i++ {
		b = appendScalar(b, a.Index(i).Any())
	}
	return b, nil
}

// dataMatches reports whether a.Data is the Go slice type of a.Elem, since
// Array is a plain struct that a caller can fill inconsistently.
func dataMatches(a tensor.Array) bool {
	switch a.Data.(type) {
	case []uint8:
		return a.Elem == tensor.KindUint8
	case []int8:
		return a.Elem == tensor.KindInt8
	case []uint16:
		return a.Elem == tensor.KindUint16
	case []int16:
		return a.Elem == tensor.KindInt16
	case []uint32:
		return a.Elem == tensor.KindUint32
	case []int32:
		return a.Elem == tensor.KindInt32
	case []float32:
		return a.Elem == tensor.KindFloat32
	case []bool:
		return a.Elem == tensor.KindBool
	case []string:
		return a.Elem == tensor.KindString
	case []tensor.Array:
		return a.Elem == tensor.KindArray
	case []uint64:
		return a.Elem == tensor.KindUint64
	case []int64:
		return a.Elem == tensor.KindInt64
	case []float64:
		return a.Elem == tensor.KindFloat64
	}
	return false
}

// Tensors returns the tensors as they are laid out: Offset is relative to the
// start of the data section and Size is the exact data length.
func (w *Writer) Tensors() []tensor.Info { return w.tensors }

// body accepts exactly one tensor's bytes.
type body struct {
	w    *Writer
	info *tensor.Info
	n    int64
}

func (b *body) Write(p []byte) (int, error) {
	w := b.w
	if w.err != nil {
		return 0, w.err
	}
	if w.body != b {
		return 0, fmt.Errorf("gguf: tensor %q: write after its body was finished", b.info.Name)
	}
	if int64(len(p)) > b.info.Size-b.n {
		w.err = fmt.Errorf("gguf: tensor %q: body longer than its %d bytes", b.info.Name, b.info.Size)
		return 0, w.err
	}
	n, err := w.w.Write(p)
	b.n += int64(n)
	if err != nil {
		w.err = fmt.Errorf("gguf: tensor %q: %w", b.info.Name, err)
		return n, w.err
	}
	return n, nil
}

// finish checks the current body is complete and writes the padding after it.
func (w *Writer) finish() error {
	b := w.body
	if b == nil {
		return nil
	}
	if b.n != b.info.Size {
		w.err = fmt.Errorf("gguf: tensor %q: body is %d bytes, want %d", b.info.Name, b.n, b.info.Size)
		return w.err
	}
	w.body = nil
	pad := make([]byte, 0, w.align)
	if _, err := w.w.Write(appendPadding(pad, b.info.Size, w.align)); err != nil {
		w.err = fmt.Errorf("gguf: tensor %q: padding: %w", b.info.Name, err)
		return w.err
	}
	return nil
}

// Next finishes the previous tensor's body and returns a writer for the named
// tensor's, which must be the next one declared. Exactly Size bytes must be
// written to it.
func (w *Writer) Next(name string) (io.Writer, error) {
	if w.err != nil {
		return nil, w.err
	}
	if w.closed {
		return nil, errors.New("gguf: Next after Close")
	}
	if err := w.finish(); err != nil {
		return nil, err
	}
	if w.next >= len(w.tensors) {
		return nil, fmt.Errorf("gguf: Next(%q): all %d declared tensors are written", name, len(w.tensors))
	}
	t := &w.tensors[w.next]
	if t.Name != name {
		return nil, fmt.Errorf("gguf: Next(%q): tensor %d in declared order is %q", name, w.next, t.Name)
	}
	w.next++
	w.body = &body{w: w, info: t}
	return w.body, nil
}

// Close finishes the last body. It fails if any declared tensor was not
// written in full. It does not close the underlying writer.
func (w *Writer) Close() error {
	if w.closed {
		return w.err
	}
	w.closed = true
	if w.err != nil {
		return w.err
	}
	if err := w.finish(); err != nil {
		return err
	}
	if w.next < len(w.tensors) {
		missing := make([]string, 0, 3)
		for _, t := range w.tensors[w.next:] {
			if len(missing) == 3 {
				missing = append(missing, "... ("+strconv.Itoa(len(w.tensors)-w.next)+" in all)")
				break
			}
			missing = append(missing, strconv.Quote(t.Name))
		}
		w.err = fmt.Errorf("gguf: Close: tensors not written: %v", missing)
		return w.err
	}
	return nil
}
