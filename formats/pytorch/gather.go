package pytorch

import (
	"fmt"
	"io"
	"sync"
)

// gather is the io.ReaderAt of a non-contiguous view: on the first read it
// copies the view's elements, row-major, into a buffer of the tensor's size
// (checked against the storage's bytes in the file when the file was
// opened), then serves reads from it.
type gather struct {
	t    *Tensor
	once sync.Once
	buf  []byte
	err  error
}

// spanSlack is how much larger than the tensor the storage range it
// touches may be for gather to read that range in one go (a transpose
// touches exactly its own size); sparser views are read run by run.
const spanSlack = 1 << 20

func (g *gather) ReadAt(p []byte, off int64) (int, error) {
	g.once.Do(func() { g.buf, g.err = g.t.gatherAll() })
	if g.err != nil {
		return 0, g.err
	}
	if off >= int64(len(g.buf)) {
		return 0, io.EOF
	}
	n := copy(p, g.buf[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// gatherAll reads the view's elements in row-major order.
func (t *Tensor) gatherAll() ([]byte, error) {
	out := make([]byte, t.Size)
	if t.Size == 0 {
		return out, nil
	}
	es := t.elemSize
	rank := len(t.Shape)
	// The bytes of the storage the view touches: [lo, hi).
	lo := t.StorageOffset * es
	hi := lo
	for i, d := range t.Shape {
		hi += (d - 1) * t.Strides[i] * es
	}
	hi += es
	// Innermost run: elements that are adjacent in the storage.
	run, runStride := int64(1), int64(1)
	if rank > 0 {
		run, runStride = t.Shape[rank-1], t.Strides[rank-1]
	}
	var src []byte
	if hi-lo <= 2*t.Size+spanSlack {
		src = make([]byte, hi-lo)
		if err := t.readStorage(src, lo); err != nil {
			return nil, err
		}
	}
	idx := make([]int64, rank) // index of the current run's first element, innermost dim 0
	for o := int64(0); o < t.Size; {
		start := t.StorageOffset
		for i := 0; i < rank; i++ {
			start += idx[i] * t.Strides[i]
		}
		pos := start*es - lo
		switch {
		case src != nil:
			for j := int64(0); j < run; j++ {
				copy(out[o+j*es:o+(j+1)*es], src[pos+j*runStride*es:])
			}
		case runStride == 1:
			if err := t.readStorage(out[o:o+run*es], start*es); err != nil {
				return nil, err
			}
		default:
			for j := int64(0); j < run; j++ {
				if err := t.readStorage(out[o+j*es:o+(j+1)*es], (start+j*runStride)*es); err != nil {
					return nil, err
				}
			}
		}
		o += run * es
		// Next run: count up the outer dimensions.
		for i := rank - 2; i >= 0; i-- {
			idx[i]++
			if idx[i] < t.Shape[i] {
				break
			}
			idx[i] = 0
		}
	}
	return out, nil
}

// readStorage reads len(b) bytes at byte offset off of the tensor's storage.
func (t *Tensor) readStorage(b []byte, off int64) error {
	n, err := t.r.ReadAt(b, t.base+off)
	if n == len(b) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("pytorch: %s: tensor %q: reading storage %q at %d: %w", t.file, t.Name, t.Storage, t.base+off, err)
}
