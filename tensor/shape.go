package tensor

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxDims is the largest rank tfconv accepts from any file. GGUF allows 4;
// safetensors has no limit, but no real checkpoint comes near this one and a
// cap keeps hostile headers from sizing allocations.
const MaxDims = 16

// Shape lists a tensor's dimensions outermost first (row-major, as numpy and
// PyTorch print them): a [vocab, hidden] embedding has Shape{vocab, hidden}.
// GGUF stores dimensions innermost first (ne[0] is the row length); the gguf
// package reverses them. A Shape of length 0 is a scalar with one element.
type Shape []int64

// NumElements returns the product of the dimensions, overflow-checked.
func (s Shape) NumElements() (int64, error) {
	n := int64(1)
	for i, d := range s {
		if d < 0 {
			return 0, fmt.Errorf("tensor: dimension %d is negative (%d)", i, d)
		}
		var err error
		if n, err = MulInt64(n, d); err != nil {
			return 0, fmt.Errorf("tensor: shape %v: element count overflows int64", s)
		}
	}
	return n, nil
}

// RowLen is the innermost dimension (1 for a scalar).
func (s Shape) RowLen() int64 {
	if len(s) == 0 {
		return 1
	}
	return s[len(s)-1]
}

// Equal reports whether two shapes have the same dimensions.
func (s Shape) Equal(o Shape) bool {
	if len(s) != len(o) {
		return false
	}
	for i := range s {
		if s[i] != o[i] {
			return false
		}
	}
	return true
}

// Clone returns a copy that does not share memory with s.
func (s Shape) Clone() Shape { return append(Shape(nil), s...) }

// String formats the shape as [d0 d1 ...].
func (s Shape) String() string {
	var b strings.Builder
	b.WriteByte('[')
	for i, d := range s {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.FormatInt(d, 10))
	}
	b.WriteByte(']')
	return b.String()
}

// Reversed returns the dimensions in the opposite order (row-major <-> GGUF ne).
func (s Shape) Reversed() Shape {
	r := make(Shape, len(s))
	for i, d := range s {
		r[len(s)-1-i] = d
	}
	return r
}

// ShapeBytes returns the byte size of a tensor of dtype d and shape s. The
// ggml block types need each row (the innermost dimension) to be a whole
// number of blocks, as ggml does; the packed sub-byte types (F4, F6_*) need
// the whole tensor to fill whole bytes, as safetensors does.
func (d DType) ShapeBytes(s Shape) (int64, error) {
	if !d.Valid() {
		return 0, fmt.Errorf("tensor: invalid dtype %d", uint8(d))
	}
	n, err := s.NumElements()
	if err != nil {
		return 0, err
	}
	if d.Quantized() && s.RowLen()%d.BlockSize() != 0 {
		return 0, fmt.Errorf("tensor: row length %d is not a multiple of the %s block size %d", s.RowLen(), d, d.BlockSize())
	}
	return d.ByteSize(n)
}

// Info describes one tensor stored in a file.
type Info struct {
	Name  string
	DType DType
	Shape Shape
	// Offset is the absolute byte offset of the tensor's data in its file.
	Offset int64
	// Size is the length of the data in bytes (DType.ShapeBytes(Shape)).
	Size int64
}

// NumElements returns the element count; Shape must already be validated.
func (i Info) NumElements() int64 {
	n, _ := i.Shape.NumElements()
	return n
}
