package checkpoint

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/tfconv/tfconv/formats/native"
	"github.com/tfconv/tfconv/tensor"
)

// Int8Scale returns the scale tensor of the I8 tensor t: the one t's native
// quant.scale attribute names, or else t.Name+tensor.ScaleSuffix, as tfconv
// quantize writes it in every format. ok is false when there is none: the
// int8 values of t are then plain integers.
func (c *Checkpoint) Int8Scale(t *Tensor) (s *Tensor, ok bool) {
	return c.Tensor(int8ScaleName(t))
}

func int8ScaleName(t *Tensor) string {
	if v, ok := t.Attrs.Get(native.AttrQuantScale); ok {
		name, _ := v.Str()
		return name
	}
	return t.Name + tensor.ScaleSuffix
}

// ReadInt8Scales reads the scales of the I8 tensor t and returns one per
// row (a row is the last dimension): the weights are scale·int8. The scale
// tensor (Int8Scale) must be F32 with one value per row (a companion of
// t's shape without its last dimension, or quant.axis 0 of a 2-D native
// tensor) or a single value for the whole tensor; a missing or mis-shaped
// one is an error naming both tensors.
func (c *Checkpoint) ReadInt8Scales(t *Tensor) ([]float32, error) {
	rowLen := t.Shape.RowLen()
	n := t.NumElements()
	if t.DType != tensor.I8 || rowLen <= 0 || n%rowLen != 0 {
		return nil, fmt.Errorf("checkpoint: %s: tensor %q is %v %v, not an int8 matrix", t.File, t.Name, t.DType, t.Shape)
	}
	rows := n / rowLen
	s, ok := c.Int8Scale(t)
	if !ok {
		return nil, fmt.Errorf("checkpoint: %s: int8 tensor %q has no scale tensor %q", t.File, t.Name, int8ScaleName(t))
	}
	sn := s.NumElements()
	valid := sn == rows || sn == 1
	axis := int64(0)
	if _, attr := t.Attrs.Get(native.AttrQuantScale); attr {
		axis = -1
		if a, ok := t.Attrs.Get(native.AttrQuantAxis); ok {
			axis, _ = a.Int()
		}
		valid = (axis == 0 && len(t.Shape) == 2 && sn == rows) || (axis == -1 && sn == 1)
	}
	if !valid || s.DType != tensor.F32 || s.Size != 4*sn {
		return nil, fmt.Errorf("checkpoint: %s: int8 tensor %q %v: scale tensor %q is %v %v (axis %d), want F32 with %d values (one per row) or 1",
			t.File, t.Name, t.Shape, s.Name, s.DType, s.Shape, axis, rows)
	}
	b, err := s.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %s: %w", s.File, err)
	}
	out := make([]float32, rows)
	for i := range out {
		j := i
		if sn == 1 {
			j = 0
		}
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*j:]))
	}
	return out, nil
}
