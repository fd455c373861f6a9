package checkpoint

import (
	"fmt"
	"io"

	"github.com/tfconv/tfconv/tensor"
)

// Stacked is a tensor made of parts of one dtype and shape stacked along a
// new outermost dimension, read part after part: a role one format keeps as
// one tensor per head or per expert and the other as one tensor (StableLM's
// per-head norms in GGUF).
func Stacked(name string, parts []*Tensor) (*Tensor, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("checkpoint: tensor %q: nothing to stack", name)
	}
	first := parts[0]
	var size int64
	for _, p := range parts {
		if p.DType != first.DType || !p.Shape.Equal(first.Shape) {
			return nil, fmt.Errorf("checkpoint: tensor %q: cannot stack %q (%v %v) with %q (%v %v)",
				name, p.Name, p.DType, p.Shape, first.Name, first.DType, first.Shape)
		}
		size += p.Size
	}
	info := tensor.Info{Name: name, DType: first.DType, Shape: append(tensor.Shape{int64(len(parts))}, first.Shape...), Size: size}
	return joined(info, parts), nil
}

// joined is the tensor info whose bytes are those of parts one after
// another, read lazily.
func joined(info tensor.Info, parts []*Tensor) *Tensor {
	return &Tensor{Info: info, File: parts[0].File,
		open: func() io.Reader {
			rs := make([]io.Reader, len(parts))
			for i, p := range parts {
				rs[i] = &lazyReader{open: p.Open}
			}
			return io.MultiReader(rs...)
		},
		section: func() *io.SectionReader {
			secs := make([]*io.SectionReader, len(parts))
			for i, p := range parts {
				secs[i] = p.Section()
			}
			return io.NewSectionReader(concatReaderAt(secs), 0, info.Size)
		}}
}

// Concat is parts joined along their outermost dimension, whose sizes may
// differ (the rows of several GGUF tensors joined back into one Hugging
// Face weight): the parts must agree in dtype and inner dimensions.
func Concat(name string, parts []*Tensor) (*Tensor, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("checkpoint: tensor %q: nothing to join", name)
	}
	first := parts[0]
	var size, rows int64
	for _, p := range parts {
		if p.DType != first.DType || len(p.Shape) == 0 || !p.Shape[1:].Equal(first.Shape[1:]) {
			return nil, fmt.Errorf("checkpoint: tensor %q: cannot join %q (%v %v) with %q (%v %v)",
				name, p.Name, p.DType, p.Shape, first.Name, first.DType, first.Shape)
		}
		size += p.Size
		rows += p.Shape[0]
	}
	info := tensor.Info{Name: name, DType: first.DType, Shape: append(tensor.Shape{rows}, first.Shape[1:]...), Size: size}
	return joined(info, parts), nil
}

// Part is part i of n of a tensor stacked along its outermost dimension
// (shape[0] == n): the inverse of Stacked.
func (t *Tensor) Part(i, n int) (*Tensor, error) {
	if len(t.Shape) < 2 || t.Shape[0] != int64(n) || n <= 0 || t.Size%int64(n) != 0 || i < 0 || i >= n {
		return nil, fmt.Errorf("checkpoint: tensor %q (shape %v): no part %d of %d", t.Name, t.Shape, i, n)
	}
	per := t.Size / int64(n)
	info := tensor.Info{Name: t.Name, DType: t.DType, Shape: t.Shape[1:].Clone(), Size: per}
	sec := func() *io.SectionReader { return io.NewSectionReader(t.Section(), int64(i)*per, per) }
	return &Tensor{Info: info, File: t.File, open: func() io.Reader { return sec() }, section: sec}, nil
}

// lazyReader opens its reader on the first Read, so a stack of many parts
// holds one open part at a time.
type lazyReader struct {
	open func() io.Reader
	r    io.Reader
}

func (l *lazyReader) Read(p []byte) (int, error) {
	if l.r == nil {
		l.r = l.open()
	}
	return l.r.Read(p)
}

// concatReaderAt reads sections end to end.
type concatReaderAt []*io.SectionReader

func (c concatReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	for _, s := range c {
		if len(p) == 0 {
			break
		}
		if off >= s.Size() {
			off -= s.Size()
			continue
		}
		k, err := s.ReadAt(p[:min(int64(len(p)), s.Size()-off)], off)
		n += k
		p = p[k:]
		off = 0
		if err != nil && err != io.EOF {
			return n, err
		}
	}
	if len(p) > 0 {
		return n, io.EOF
	}
	return n, nil
}

// PaddedRows is t with zero rows appended along its outermost dimension up
// to rows: a table the other format keeps longer (Gemma 3n's embeddings,
// padded to the vocabulary for tokens no text maps to). t's dtype must be
// one whose zero is all zero bytes (the float types).
func PaddedRows(t *Tensor, rows int64) (*Tensor, error) {
	switch t.DType {
	case tensor.F32, tensor.F16, tensor.BF16, tensor.F64:
	default:
		return nil, fmt.Errorf("checkpoint: tensor %q: cannot pad %v rows", t.Name, t.DType)
	}
	if len(t.Shape) == 0 || t.Shape[0] <= 0 || rows < t.Shape[0] || t.Size%t.Shape[0] != 0 {
		return nil, fmt.Errorf("checkpoint: tensor %q (shape %v): cannot pad to %d rows", t.Name, t.Shape, rows)
	}
	pad := t.Size / t.Shape[0] * (rows - t.Shape[0])
	size := t.Size + pad
	shape := t.Shape.Clone()
	shape[0] = rows
	info := tensor.Info{Name: t.Name, DType: t.DType, Shape: shape, Size: size}
	zeros := func() *io.SectionReader { return io.NewSectionReader(zeroReaderAt{}, 0, pad) }
	return &Tensor{Info: info, File: t.File,
		open: func() io.Reader { return io.MultiReader(&lazyReader{open: t.Open}, zeros()) },
		section: func() *io.SectionReader {
			return io.NewSectionReader(concatReaderAt{t.Section(), zeros()}, 0, size)
		}}, nil
}

// zeroReaderAt reads zero bytes anywhere.
type zeroReaderAt struct{}

func (zeroReaderAt) ReadAt(p []byte, _ int64) (int, error) {
	clear(p)
	return len(p), nil
}
