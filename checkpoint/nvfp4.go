package checkpoint

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/tensor"
)

// NVFP4Layer is an NVFP4 layer as a compressed-tensors or ModelOpt
// checkpoint stores it, kept beside the float32 weight the checkpoint
// presents (Tensor.NVFP4), so that a conversion can carry its blocks into
// GGUF NVFP4 instead of dequantizing them (NVFP4Blocks).
type NVFP4Layer struct {
	Packed *Tensor // uint8 [rows][cols/2]: E2M1 codes, value 2j of a row in the low nibble of byte j
	Scales *Tensor // F8_E4M3 [rows][cols/16]
	// factor is the per-tensor float32 the blocks' values are multiplied
	// by (ModelOpt's weight_scale_2; the reciprocal of compressed-tensors'
	// weight_global_scale when invert); input the activation scale
	// (ModelOpt's input_scale, the reciprocal of compressed-tensors'
	// input_global_scale), nil when the layer has none.
	factor, input *Tensor
	invert        bool
	// mlx: the layer is MLX's (mode nvfp4): no per-tensor factor, and
	// MLX's reading of a scale byte is ggml's only from 0x00 to 0x7e
	// (GGUFExact).
	mlx bool
}

// GGUFExact reports whether GGUF NVFP4 blocks made from the layer hold its
// values: always for compressed-tensors and ModelOpt (llama.cpp's
// converter's own reading), and for an MLX layer when every scale byte is
// below 0x7f — MLX reads 0x7f as 480 and a set sign bit as negative,
// ggml's UE4M3 0x7f as 0 and no sign (MLX's quantize writes neither).
func (l *NVFP4Layer) GGUFExact() (bool, error) {
	if !l.mlx {
		return true, nil
	}
	s, err := l.Scales.ReadAll()
	if err != nil {
		return false, err
	}
	for _, b := range s {
		if b >= 0x7f {
			return false, nil
		}
	}
	return true, nil
}

// Scale is the per-tensor factor of the layer's values as llama.cpp's
// converter writes it (the GGUF's "<tensor>.scale"): ModelOpt's
// weight_scale_2, or 1/weight_global_scale in float32 for
// compressed-tensors.
func (l *NVFP4Layer) Scale() (float32, error) {
	if l.factor == nil {
		return 1, nil // MLX keeps none
	}
	return l.scalar(l.factor)
}

// InputScale is the layer's activation scale as the converter writes it
// ("<tensor>.input_scale"); ok is false when the checkpoint has none (the
// converter then takes 1).
func (l *NVFP4Layer) InputScale() (v float32, ok bool, err error) {
	if l.input == nil {
		return 1, false, nil
	}
	v, err = l.scalar(l.input)
	return v, err == nil, err
}

func (l *NVFP4Layer) scalar(t *Tensor) (float32, error) {
	if t.DType != tensor.F32 || t.NumElements() != 1 {
		return 0, fmt.Errorf("checkpoint: %s: offset %d: NVFP4 scale %q is %v %v, want one float32", t.File, t.Offset, t.Name, t.DType, t.Shape)
	}
	b, err := t.ReadAll()
	if err != nil {
		return 0, err
	}
	v := math.Float32frombits(binary.LittleEndian.Uint32(b))
	if l.invert {
		v = 1 / v
	}
	return v, nil
}

// NVFP4Blocks is layer l of t's weight as GGUF NVFP4 blocks under name, its
// rows in the order rows gives (row i of the output is row rows[i] of the
// weight; nil: as stored): the checkpoint's codes and scale bytes moved
// into ggml's block order by quant.NVFP4FromOCP, nothing dequantized. The
// row length must be a whole number of 64-value blocks.
func NVFP4Blocks(name string, t *Tensor, rows []int) (*Tensor, error) {
	l := t.NVFP4
	if l == nil {
		return nil, fmt.Errorf("checkpoint: tensor %q is not an NVFP4 layer", t.Name)
	}
	if len(t.Shape) != 2 {
		return nil, fmt.Errorf("checkpoint: NVFP4 layer %q has shape %v", t.Name, t.Shape)
	}
	if cols := t.Shape[1]; cols%64 != 0 {
		return nil, tensor.Unsupported("checkpoint: NVFP4 layer %q: rows of %d values are not whole GGUF NVFP4 blocks of 64", t.Name, cols)
	}
	return fp4Blocks("NVFP4", name, t, l.Packed, l.Scales, tensor.NVFP4, 16, rows, quant.NVFP4FromOCP)
}

// fp4Blocks is the 2-D weight t (a kind layer: codes in packed, one scale
// byte per group values in scales) as GGUF blocks of type dt under name,
// row i of the output row rows[i] of the weight (nil: as stored), each row
// moved into ggml's order by conv: the one body of MXFP4Blocks and
// NVFP4Blocks, which check their own shapes first.
func fp4Blocks(kind, name string, t, packed, scales *Tensor, dt tensor.DType, group int, rows []int, conv func(dst, codes, scales []byte) error) (*Tensor, error) {
	n, cols := int(t.Shape[0]), int(t.Shape[1])
	if rows != nil && len(rows) != n {
		return nil, fmt.Errorf("checkpoint: %s layer %q: %d rows, a row order of %d", kind, t.Name, n, len(rows))
	}
	info := tensor.Info{Name: name, DType: dt, Shape: t.Shape.Clone()}
	size, err := info.DType.ShapeBytes(info.Shape)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: tensor %q: %w", name, err)
	}
	info.Size = size
	return LazyTensor(info, packed.File, func() ([]byte, error) {
		v, err := packed.ReadAll()
		if err != nil {
			return nil, err
		}
		s, err := scales.ReadAll()
		if err != nil {
			return nil, err
		}
		if len(v) != n*cols/2 || len(s) != n*cols/group {
			return nil, fmt.Errorf("checkpoint: %s layer %q: %d code and %d scale bytes for %d×%d", kind, t.Name, len(v), len(s), n, cols)
		}
		out := make([]byte, size)
		rb := int(size) / n
		for i := range n {
			r := i
			if rows != nil {
				r = rows[i]
			}
			if err := conv(out[i*rb:(i+1)*rb], v[r*cols/2:(r+1)*cols/2], s[r*cols/group:(r+1)*cols/group]); err != nil {
				return nil, err
			}
		}
		return out, nil
	}), nil
}
