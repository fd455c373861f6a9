package checkpoint

import (
	"fmt"

	"github.com/tfconv/tfconv/arch"
	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/tensor"
)

// PackedTensor is the tensor mapping m (one of arch.Family.Packed's) makes
// of c's tensors: a block weight's rows copied as blocks (BlockCopy) or a
// float tensor's alternating rows (InterleavedPart). Convert writes it;
// model reads a Hugging Face checkpoint's packed experts through it.
func PackedTensor(c *Checkpoint, m arch.Mapping) (*Tensor, error) {
	if len(m.Stack) > 0 {
		return unpackedTensor(c, m)
	}
	t, ok := c.Tensor(m.Source)
	if !ok {
		return nil, fmt.Errorf("checkpoint: missing tensor %q (needed for %q)", m.Source, m.Name)
	}
	if m.Blocks == 0 {
		return InterleavedPart(m, t)
	}
	sc, ok := c.Tensor(m.Scales)
	if !ok {
		return nil, fmt.Errorf("checkpoint: missing tensor %q (needed for %q)", m.Scales, m.Name)
	}
	return BlockCopy(m, t, sc)
}

// BlockCopy is the block pass-through: the output tensor of m, a weight
// the checkpoint already holds as m.Blocks's blocks (values in the OCP
// microscaling layout, tensor vals [n][rows][blocks][16], with their scale
// bytes, tensor scales [n][rows][blocks]), as that GGUF type's blocks. Its
// bytes are the checkpoint's, moved into ggml's block order: nothing is
// dequantized or quantized again, so the engine copies them (the report's
// source dtype equals its dtype). With m.Parts > 1 only the rows
// r ≡ m.Part (mod m.Parts) are taken (gate and up rows alternate).
func BlockCopy(m arch.Mapping, vals, scales *Tensor) (*Tensor, error) {
	if m.Blocks != tensor.MXFP4 {
		return nil, tensor.Unsupported("checkpoint: tensor %q: %v blocks are not read from a checkpoint's own layout", m.Name, m.Blocks)
	}
	if vals.DType != tensor.U8 || scales.DType != tensor.U8 || len(vals.Shape) != 4 || len(scales.Shape) != 3 ||
		!scales.Shape.Equal(vals.Shape[:3]) || vals.Shape[3] != 16 {
		return nil, fmt.Errorf("checkpoint: %q (%v %v) and %q (%v %v) are not MXFP4 values and scales",
			vals.Name, vals.DType, vals.Shape, scales.Name, scales.DType, scales.Shape)
	}
	n, rows, nb := int(vals.Shape[0]), int(vals.Shape[1]), int(vals.Shape[2])
	parts, part := max(m.Parts, 1), m.Part
	info := tensor.Info{Name: m.Name, DType: tensor.MXFP4, Shape: m.Shape.Clone()}
	size, err := info.DType.ShapeBytes(info.Shape)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: tensor %q: %w", m.Name, err)
	}
	if want := int64(n) * int64(rows/parts) * int64(nb) * 17; size != want || rows%parts != 0 {
		return nil, fmt.Errorf("checkpoint: tensor %q: shape %v is not every %d-th row of %q %v", m.Name, m.Shape, parts, vals.Name, vals.Shape)
	}
	info.Size = size
	return LazyTensor(info, vals.File, func() ([]byte, error) {
		v, err := vals.ReadAll()
		if err != nil {
			return nil, err
		}
		s, err := scales.ReadAll()
		if err != nil {
			return nil, err
		}
		out := make([]byte, size)
		o := 0
		for e := 0; e < n; e++ {
			for r := part; r < rows; r += parts {
				row := e*rows + r
				dst := out[o : o+17*nb]
				if err := quant.MXFP4FromOCP(dst, v[row*16*nb:(row+1)*16*nb], s[row*nb:(row+1)*nb]); err != nil {
					return nil, err
				}
				o += 17 * nb
			}
		}
		return out, nil
	}), nil
}

// InterleavedPart is the output tensor of m, the rows r ≡ m.Part (mod
// m.Parts) of axis 1 of t (a float tensor [n][rows][...]), in t's dtype.
func InterleavedPart(m arch.Mapping, t *Tensor) (*Tensor, error) {
	if m.Transposed {
		return transposedPart(m, t)
	}
	if len(t.Shape) < 2 || t.DType.Quantized() || m.Parts <= 0 || t.Shape[1]%int64(m.Parts) != 0 {
		return nil, fmt.Errorf("checkpoint: tensor %q (%v %v) does not split into %d alternating rows", t.Name, t.DType, t.Shape, m.Parts)
	}
	n, rows := int(t.Shape[0]), int(t.Shape[1])
	inner, err := t.DType.ShapeBytes(t.Shape[2:])
	if err != nil {
		return nil, fmt.Errorf("checkpoint: tensor %q: %w", t.Name, err)
	}
	info := tensor.Info{Name: m.Name, DType: t.DType, Shape: m.Shape.Clone(), Size: int64(n*rows/m.Parts) * inner}
	return LazyTensor(info, t.File, func() ([]byte, error) {
		b, err := t.ReadAll()
		if err != nil {
			return nil, err
		}
		out := make([]byte, 0, info.Size)
		for e := 0; e < n; e++ {
			for r := m.Part; r < rows; r += m.Parts {
				off := int64(e*rows+r) * inner
				out = append(out, b[off:off+inner]...)
			}
		}
		return out, nil
	}), nil
}

// unpackedTensor is PackedTensor's inverse (GGUF → HF): the rows of
// m.Stack's tensors [n][rows][...] alternating again along axis 1, as
// float (a bias) or, with m.OCP, as the OCP values or scales of their
// m.Blocks blocks, moved back without dequantizing.
func unpackedTensor(c *Checkpoint, m arch.Mapping) (*Tensor, error) {
	parts := make([]*Tensor, len(m.Stack))
	for i, name := range m.Stack {
		t, ok := c.Tensor(name)
		if !ok {
			return nil, fmt.Errorf("checkpoint: missing tensor %q (needed for %q)", name, m.Name)
		}
		parts[i] = t
		if len(t.Shape) < 2 || !t.Shape.Equal(parts[0].Shape) || t.DType != parts[0].DType {
			return nil, fmt.Errorf("checkpoint: tensors %q (%v %v) and %q (%v %v) do not alternate into %q",
				m.Stack[0], parts[0].DType, parts[0].Shape, name, t.DType, t.Shape, m.Name)
		}
	}
	k := len(parts)
	n, rows := int(parts[0].Shape[0]), int(parts[0].Shape[1])
	dt := parts[0].DType
	var rowBytes int64 // one row of one part
	var outRow func(dst []byte, src []byte) []byte
	info := tensor.Info{Name: m.Name, Shape: m.Shape.Clone()}
	if m.OCP != "" {
		if dt != m.Blocks || m.Blocks != tensor.MXFP4 {
			return nil, tensor.Unsupported("checkpoint: %q is %v: its Hugging Face form %q holds %v blocks only", m.Stack[0], dt, m.Name, m.Blocks)
		}
		var err error
		if rowBytes, err = dt.ShapeBytes(parts[0].Shape[2:]); err != nil {
			return nil, err
		}
		nb := int(rowBytes / 17)
		info.DType = tensor.U8
		outRow = func(dst, src []byte) []byte {
			v, s := make([]byte, 16*nb), make([]byte, nb)
			if err := quant.OCPFromMXFP4(v, s, src); err != nil {
				panic(err) // sizes checked above
			}
			if m.OCP == arch.ScalesSuffix {
				return append(dst, s...)
			}
			return append(dst, v...)
		}
	} else {
		if dt.Quantized() {
			return nil, tensor.Unsupported("checkpoint: %q is %v: %q is written from float tensors only", m.Stack[0], dt, m.Name)
		}
		info.DType = dt
		return Interleaved(info, parts)
	}
	size, err := info.DType.ShapeBytes(info.Shape)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: tensor %q: %w", m.Name, err)
	}
	info.Size = size
	return LazyTensor(info, parts[0].File, func() ([]byte, error) {
		data := make([][]byte, k)
		for i, p := range parts {
			b, err := p.ReadAll()
			if err != nil {
				return nil, err
			}
			data[i] = b
		}
		out := make([]byte, 0, size)
		for e := 0; e < n; e++ {
			for r := 0; r < rows; r++ {
				for i := range parts {
					off := int64(e*rows+r) * rowBytes
					out = outRow(out, data[i][off:off+rowBytes])
				}
			}
		}
		return out, nil
	}), nil
}

// transposedPart is the output tensor of m: rows r ≡ m.Part (mod m.Parts)
// of the transpose of each [in][out] matrix of t ([n][in][out], float), as
// [n][out/m.Parts][in] in t's dtype.
func transposedPart(m arch.Mapping, t *Tensor) (*Tensor, error) {
	if len(t.Shape) != 3 || t.DType.Quantized() || m.Parts <= 0 || t.Shape[2]%int64(m.Parts) != 0 {
		return nil, fmt.Errorf("checkpoint: tensor %q (%v %v) is not [n][in][out] with out split into %d", t.Name, t.DType, t.Shape, m.Parts)
	}
	n, in, outAll := int(t.Shape[0]), int(t.Shape[1]), int(t.Shape[2])
	es, err := t.DType.ByteSize(1)
	if err != nil {
		return nil, err
	}
	e := int(es)
	rows := outAll / m.Parts
	info := tensor.Info{Name: m.Name, DType: t.DType, Shape: m.Shape.Clone(), Size: int64(n*rows*in) * es}
	return LazyTensor(info, t.File, func() ([]byte, error) {
		b, err := t.ReadAll()
		if err != nil {
			return nil, err
		}
		out := make([]byte, info.Size)
		o := 0
		for x := 0; x < n; x++ {
			for r := 0; r < rows; r++ {
				col := r*m.Parts + m.Part
				for c := 0; c < in; c++ {
					off := ((x*in+c)*outAll + col) * e
					copy(out[o:o+e], b[off:off+e])
					o += e
				}
			}
		}
		return out, nil
	}), nil
}

// Interleaved is parts (each [n][rows][...], one dtype, shape and size)
// with their rows alternating along axis 1 under info, whose dtype and
// shape are the caller's (the same bytes: info's size is the parts'
// together): row r·k+i of each outer index is row r of part i, k parts.
// InterleavedPart is its inverse.
func Interleaved(info tensor.Info, parts []*Tensor) (*Tensor, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("checkpoint: tensor %q: nothing to interleave", info.Name)
	}
	first := parts[0]
	for _, p := range parts {
		if len(p.Shape) < 2 || p.DType != first.DType || !p.Shape.Equal(first.Shape) || p.Size != first.Size {
			return nil, fmt.Errorf("checkpoint: tensor %q: %q (%v %v) and %q (%v %v) do not alternate", info.Name,
				first.Name, first.DType, first.Shape, p.Name, p.DType, p.Shape)
		}
	}
	size, err := info.DType.ShapeBytes(info.Shape)
	if err != nil || size != first.Size*int64(len(parts)) {
		return nil, fmt.Errorf("checkpoint: tensor %q (%v %v) is not the %d parts %v %v together", info.Name, info.DType, info.Shape,
			len(parts), first.DType, first.Shape)
	}
	info.Size = size
	n, rows := first.Shape[0], first.Shape[1]
	if n <= 0 || rows <= 0 || first.Size%(n*rows) != 0 {
		return nil, fmt.Errorf("checkpoint: tensor %q: %q has shape %v", info.Name, first.Name, first.Shape)
	}
	row := first.Size / (n * rows)
	return LazyTensor(info, first.File, func() ([]byte, error) {
		data := make([][]byte, len(parts))
		for i, p := range parts {
			b, err := p.ReadAll()
			if err != nil {
				return nil, err
			}
			data[i] = b
		}
		out := make([]byte, 0, size)
		for off := int64(0); off < first.Size; off += row {
			for i := range parts {
				out = append(out, data[i][off:off+row]...)
			}
		}
		return out, nil
	}), nil
}

// Retyped is t's bytes under another name, dtype and shape of the same
// size (MLX's uint32 codes of OCP block bytes).
func Retyped(t *Tensor, name string, dt tensor.DType, shape tensor.Shape) (*Tensor, error) {
	size, err := dt.ShapeBytes(shape)
	if err != nil || size != t.Size {
		return nil, fmt.Errorf("checkpoint: tensor %q (%v %v) is not %v %v", t.Name, t.DType, t.Shape, dt, shape)
	}
	return &Tensor{Info: tensor.Info{Name: name, DType: dt, Shape: shape.Clone(), Size: size, Offset: t.Offset}, File: t.File,
		open: t.open, section: t.section, inFile: t.inFile}, nil
}
