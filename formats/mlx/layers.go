package mlx

import (
	"fmt"
	"strings"

	"github.com/tfconv/tfconv/tensor"
)

// The suffixes of a quantized layer's tensors.
const (
	WeightSuffix = ".weight"
	ScalesSuffix = ".scales"
	BiasesSuffix = ".biases"
)

// Metadata is the __metadata__ mlx-lm's save_model gives every
// safetensors file.
var Metadata = tensor.Metadata{{Key: "format", Value: tensor.String("mlx")}}

// Layer is one quantized layer of a checkpoint: its three stored tensors
// and the float weight they stand for.
type Layer struct {
	Path   string // module path: the tensors' names without the suffix
	Params Params
	// Biases is the zero Info in a floating-point mode (Params.FP), whose
	// Scales are uint8.
	Weight, Scales, Biases tensor.Info
	// Shape is the float weight's: Weight's with the last dimension
	// unpacked (cols = scales' last dimension × group size).
	Shape tensor.Shape
}

// Layers finds the quantized layers among a checkpoint's tensors: every
// P.scales beside a uint32 P.weight, checked against q's parameters for P
// and against each other. A P.scales without a uint32 P.weight is no
// quantized layer (some families have a tensor of that name); a quantized
// weight without scales or biases, or with shapes that disagree, is an
// error naming the tensor.
func Layers(q *Quantization, infos []tensor.Info) ([]Layer, error) {
	byName := make(map[string]tensor.Info, len(infos))
	for _, in := range infos {
		byName[in.Name] = in
	}
	var layers []Layer
	for _, in := range infos {
		path, ok := strings.CutSuffix(in.Name, WeightSuffix)
		if !ok || in.DType != tensor.U32 {
			continue
		}
		l := Layer{Path: path, Weight: in}
		p, quantized := q.For(path)
		if !quantized {
			return nil, fmt.Errorf("mlx: tensor %q is uint32 codes, but config.json's %q keeps layer %q in float", in.Name, ConfigKey, path)
		}
		if err := p.Check(); err != nil {
			return nil, fmt.Errorf("layer %q: %w", path, err)
		}
		l.Params = p
		if l.Scales, ok = byName[path+ScalesSuffix]; !ok {
			return nil, fmt.Errorf("mlx: quantized tensor %q has no %q", in.Name, path+ScalesSuffix)
		}
		_, fp := p.FP()
		b, hasBiases := byName[path+BiasesSuffix]
		switch {
		case fp && hasBiases:
			return nil, fmt.Errorf("mlx: layer %q is %s, which has no biases, but the checkpoint has %q", path, p.Mode, b.Name)
		case !fp && !hasBiases:
			return nil, fmt.Errorf("mlx: quantized tensor %q has no %q (affine quantization stores biases)", in.Name, path+BiasesSuffix)
		}
		l.Biases = b
		if err := l.check(); err != nil {
			return nil, err
		}
		layers = append(layers, l)
	}
	return layers, nil
}

// check holds the three tensors' dtypes and shapes to each other and sets
// Shape.
func (l *Layer) check() error {
	w, s, b := l.Weight, l.Scales, l.Biases
	_, fp := l.Params.FP()
	switch {
	case fp:
		if s.DType != tensor.U8 {
			return fmt.Errorf("mlx: tensor %q is %v, want u8 (%s scales)", s.Name, s.DType, l.Params.Mode)
		}
		b.Shape = s.Shape // no biases to hold to the scales
	case s.DType != tensor.F32 && s.DType != tensor.F16 && s.DType != tensor.BF16:
		return fmt.Errorf("mlx: tensor %q is %v, want f32, f16 or bf16", s.Name, s.DType)
	case b.DType != s.DType:
		return fmt.Errorf("mlx: tensor %q is %v and %q is %v: scales and biases share a type", s.Name, s.DType, b.Name, b.DType)
	}
	n := len(w.Shape)
	if n < 2 || len(s.Shape) != n || !s.Shape.Equal(b.Shape) {
		return fmt.Errorf("mlx: layer %q: weight %v, scales %v and biases %v: want shapes [..., cols·bits/32], [..., cols/group] and the same", l.Path, w.Shape, s.Shape, b.Shape)
	}
	for i := 0; i < n-1; i++ {
		if w.Shape[i] != s.Shape[i] {
			return fmt.Errorf("mlx: layer %q: weight %v and scales %v differ before the last dimension", l.Path, w.Shape, s.Shape)
		}
	}
	groups := s.Shape[n-1]
	if groups <= 0 || groups > 1<<40/int64(l.Params.GroupSize) {
		return fmt.Errorf("mlx: tensor %q: %d groups per row", s.Name, groups)
	}
	cols := groups * int64(l.Params.GroupSize)
	if words := w.Shape[n-1]; words < 0 || words > 1<<40 || words*32 != cols*int64(l.Params.Bits) {
		return fmt.Errorf("mlx: tensor %q has %d words per row; %d columns at %d bits (group size %d, %d groups) need %d",
			w.Name, w.Shape[n-1], cols, l.Params.Bits, l.Params.GroupSize, groups, cols*int64(l.Params.Bits)/32)
	}
	l.Shape = w.Shape.Clone()
	l.Shape[n-1] = cols
	return nil
}

// Quantizable reports whether mlx_lm.convert quantizes a float tensor of
// this name and shape with group size g: the weight of a linear or
// embedding layer (a matrix, or a stack of them for experts), whose input
// dimension is a multiple of the group size. Norms and biases are vectors
// and stay in float.
func Quantizable(name string, shape tensor.Shape, g int) bool {
	if !strings.HasSuffix(name, WeightSuffix) || len(shape) < 2 || len(shape) > 3 {
		return false
	}
	return shape[len(shape)-1]%int64(g) == 0
}
