package checkpoint

import (
	"fmt"
	"strings"

	"github.com/tfconv/tfconv/arch"

	"github.com/tfconv/tfconv/formats/mlx"
	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/tensor"
)

// QuantMethodMLX is SourceInfoQuantMethod of a checkpoint mlx-lm quantized.
const QuantMethodMLX = "mlx"

// unpackMLX replaces every quantized layer of an MLX checkpoint (P.weight
// uint32 codes, P.scales, P.biases: formats/mlx) by its float weight
// P.weight, computed when read exactly as mx.dequantize computes it: in
// the scales' type for affine layers, in bf16 (mx.dequantize's default)
// for the floating-point modes, whose scales are bytes.
func (c *Checkpoint) unpackMLX(q *mlx.Quantization) (*unpacked, error) {
	infos := make([]tensor.Info, len(c.Tensors))
	for i, t := range c.Tensors {
		infos[i] = t.Info
	}
	layers, err := mlx.Layers(q, infos)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %s: %w", c.Path, err)
	}
	u := &unpacked{drop: map[string]bool{}, method: QuantMethodMLX, bits: q.Bits, scheme: q.String()}
	index := map[string]int{}
	for i, t := range c.Tensors {
		index[t.Name] = i
	}
	for _, l := range layers {
		w, s, b := c.byName[l.Weight.Name], c.byName[l.Scales.Name], c.byName[l.Biases.Name]
		info := tensor.Info{Name: l.Weight.Name, DType: l.Scales.DType, Shape: l.Shape}
		if _, fp := l.Params.FP(); fp {
			info.DType = mlxFPType
		}
		if info.Size, err = info.DType.ShapeBytes(info.Shape); err != nil {
			return nil, fmt.Errorf("checkpoint: %s: tensor %q: %w", w.File, w.Name, err)
		}
		l := l
		t := LazyTensor(info, w.File, func() ([]byte, error) {
			out, err := dequantizeMLX(l, w, s, b)
			if err != nil {
				return nil, fmt.Errorf("checkpoint: %s: MLX layer %q: %w", w.File, l.Path, err)
			}
			return out, nil
		})
		switch l.Params.Mode {
		case mlx.ModeMXFP4:
			t.MXFP4 = &MXFP4Layer{Packed: w, Scales: s}
		case mlx.ModeNVFP4:
			t.NVFP4 = &NVFP4Layer{Packed: w, Scales: s, mlx: true}
		}
		// The weight's own name: the float weight takes its place.
		c.Tensors[index[w.Name]] = t
		c.byName[t.Name] = t
		u.drop[s.Name] = true
		if b != nil {
			u.drop[b.Name] = true
		}
		u.layers++
	}
	if err := c.unstackMLX(); err != nil {
		return nil, err
	}
	return u, c.unsplitMLX()
}

// unsplitMLX presents the tensors mlx-lm's sanitize split out of a
// Hugging Face tensor (arch.Family.MLXSplits: gpt-oss's experts, each an
// mxfp4 layer with a bias) as that tensor, their rows alternating again:
// the layers' codes and scales as the OCP blocks and scales they are (at
// the first layer's place), the biases as one bias (at the first bias's).
// Nothing is dequantized.
func (c *Checkpoint) unsplitMLX() error {
	raw, err := c.Config()
	if err != nil || raw == nil {
		return err
	}
	f, err := arch.LookupConfig(arch.Config(raw))
	if err != nil {
		return nil
	}
	at := map[string][]*Tensor{} // a stored name → the Hugging Face tensors that take its place
	drop := map[string]bool{}
	for bid := 0; ; bid++ {
		found := false
		for _, s := range f.MLXSplits(bid) {
			bias := strings.HasSuffix(s.MLX[0], ".bias")
			parts := make([]*Tensor, 0, len(s.MLX))
			names := make([]string, 0, len(s.MLX)) // the stored tensors the parts come from
			for _, m := range s.MLX {
				name := m
				if !bias {
					name = strings.TrimSuffix(strings.TrimSuffix(m, mlx.ScalesSuffix), mlx.WeightSuffix) + mlx.WeightSuffix
				}
				t, ok := c.byName[name]
				if !ok {
					break
				}
				names = append(names, name)
				switch {
				case bias:
					parts = append(parts, t)
				case t.MXFP4 == nil:
					return tensor.Unsupported("checkpoint: %s: MLX layer %q is not mode mxfp4: %s's %q is read back from mxfp4 layers only "+
						"(mlx-lm's layout of it)", c.Path, strings.TrimSuffix(name, mlx.WeightSuffix), f.Name, s.HF)
				case s.Codes:
					parts = append(parts, t.MXFP4.Packed)
				default:
					parts = append(parts, t.MXFP4.Scales)
				}
			}
			if len(parts) == 0 {
				continue
			}
			if len(parts) < len(s.MLX) {
				return fmt.Errorf("checkpoint: %s: %q has no %q beside it", c.Path, s.MLX[0], s.MLX[len(parts)])
			}
			found = true
			first := parts[0]
			info := tensor.Info{Name: s.HF, DType: first.DType, Shape: first.Shape.Clone()}
			if len(info.Shape) < 2 {
				return fmt.Errorf("checkpoint: %s: tensor %q has shape %v: no rows to alternate", c.Path, first.Name, first.Shape)
			}
			info.Shape[1] *= int64(len(parts))
			if s.Codes {
				// uint32 codes [n][rows][cols/8] are OCP bytes [n][rows][cols/32][16]
				if len(first.Shape) != 3 || first.DType != tensor.U32 || first.Shape[2]%4 != 0 {
					return fmt.Errorf("checkpoint: %s: MLX layer %q has codes %v %v", c.Path, names[0], first.DType, first.Shape)
				}
				info.DType, info.Shape = tensor.U8, tensor.Shape{first.Shape[0], info.Shape[1], first.Shape[2] / 4, 16}
			}
			t, err := Interleaved(info, parts)
			if err != nil {
				return fmt.Errorf("checkpoint: %s: %w", c.Path, err)
			}
			at[names[0]] = append(at[names[0]], t)
			for _, n := range names {
				drop[n] = true
			}
		}
		if !found {
			break
		}
	}
	if len(at) == 0 {
		return nil
	}
	var out []*Tensor
	for _, t := range c.Tensors {
		for _, r := range at[t.Name] {
			if _, clash := c.byName[r.Name]; clash {
				return fmt.Errorf("checkpoint: %s: tensor %q is both stored and made of %q", c.Path, r.Name, t.Name)
			}
			c.byName[r.Name] = r
			out = append(out, r)
		}
		if drop[t.Name] {
			delete(c.byName, t.Name)
			continue
		}
		out = append(out, t)
	}
	c.Tensors = out
	return nil
}

// unstackMLX presents each tensor mlx-lm keeps stacked where Hugging Face
// keeps one per part (arch.Family.MLXParts: a MoE's switch_mlp experts,
// [experts][out][in]) as those parts under Hugging Face's names, in index
// order at its place, each a slice of it read lazily (Tensor.Part).
func (c *Checkpoint) unstackMLX() error {
	raw, err := c.Config()
	if err != nil || raw == nil {
		return err
	}
	f, err := arch.LookupConfig(arch.Config(raw))
	if err != nil {
		return nil // a family tfconv does not know: names as they are
	}
	var out []*Tensor
	changed := false
	for _, t := range c.Tensors {
		if len(t.Shape) != 3 || t.Shape[0] <= 0 || t.Shape[0] > maxMLXParts {
			out = append(out, t)
			continue
		}
		names, ok := f.MLXParts(t.Name, int(t.Shape[0]))
		if !ok {
			out = append(out, t)
			continue
		}
		for i, name := range names {
			p, err := t.Part(i, len(names))
			if err != nil {
				return fmt.Errorf("checkpoint: %s: %w", c.Path, err)
			}
			p.Info.Name = name
			if _, clash := c.byName[name]; clash {
				return fmt.Errorf("checkpoint: %s: tensor %q is both stored and a part of %q", c.Path, name, t.Name)
			}
			c.byName[name] = p
			out = append(out, p)
		}
		delete(c.byName, t.Name)
		changed = true
	}
	if changed {
		c.Tensors = out
	}
	return nil
}

// maxMLXParts caps the parts a stacked MLX tensor is cut into (the
// largest MoEs have a few hundred experts).
const maxMLXParts = 1 << 16

// mlxFPType is the type mx.dequantize gives a floating-point mode's
// weight when none is asked for (846d176 validate_mode_with_type):
// every mxfp4 and nvfp4 value, and every mxfp8 one but e4m3 subnormals
// under a scale below 2^-124, is exact in it.
const mlxFPType = tensor.BF16

// dequantizeMLX reads a quantized layer's tensors and returns its weight in
// the scales' type (mlxFPType for a floating-point mode).
func dequantizeMLX(l mlx.Layer, w, s, b *Tensor) ([]byte, error) {
	wb, err := w.ReadAll()
	if err != nil {
		return nil, err
	}
	if m, fp := l.Params.FP(); fp {
		return dequantizeMLXFP(l, m, wb, s)
	}
	scales, err := readFloats(s)
	if err != nil {
		return nil, err
	}
	biases, err := readFloats(b)
	if err != nil {
		return nil, err
	}
	n, err := l.Shape.NumElements()
	if err != nil {
		return nil, err
	}
	out := make([]float32, n)
	a := quant.Affine{Bits: l.Params.Bits, GroupSize: l.Params.GroupSize}
	if err := a.Dequantize(out, wb, scales, biases, l.Scales.DType); err != nil {
		return nil, err
	}
	ob := make([]byte, n*l.Scales.DType.BlockBytes())
	if err := quant.Quantize(ob, out, l.Scales.DType); err != nil {
		return nil, err
	}
	return ob, nil
}

// readFloats reads a float tensor as float32.
func readFloats(t *Tensor) ([]float32, error) {
	raw, err := t.ReadAll()
	if err != nil {
		return nil, err
	}
	f := make([]float32, t.NumElements())
	if err := quant.Dequantize(f, raw, t.DType); err != nil {
		return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
	}
	return f, nil
}

// dequantizeMLXFP dequantizes a floating-point mode's layer (codes wb,
// scale bytes s) to mlxFPType.
func dequantizeMLXFP(l mlx.Layer, m mlx.FPMode, wb []byte, s *Tensor) ([]byte, error) {
	sb, err := s.ReadAll()
	if err != nil {
		return nil, err
	}
	n, err := l.Shape.NumElements()
	if err != nil {
		return nil, err
	}
	out := make([]float32, n)
	q := quant.MLXFP{Bits: m.Bits, GroupSize: m.GroupSize, E4M3Scales: m.E4M3Scales}
	if err := q.Dequantize(out, wb, sb, mlxFPType); err != nil {
		return nil, err
	}
	ob := make([]byte, n*mlxFPType.BlockBytes())
	if err := quant.Quantize(ob, out, mlxFPType); err != nil {
		return nil, err
	}
	return ob, nil
}

// MXFP4Layer is an MXFP4 layer as MLX stores it (mode "mxfp4"), kept beside
// the weight the checkpoint presents (Tensor.MXFP4), so that a conversion
// can carry its blocks into GGUF MXFP4 instead of dequantizing them.
type MXFP4Layer struct {
	Packed *Tensor // uint32 [rows, cols/8]: e2m1 codes, value 2j of a row in the low nibble of byte j (OCP's order)
	Scales *Tensor // uint8 [rows, cols/32]: e8m0
}

// MXFP4Blocks is t's MXFP4 layer as GGUF MXFP4 blocks under name, its rows
// in the order rows gives (row i of the output is row rows[i] of the
// weight; nil: as stored): MLX's scale bytes and codes moved into ggml's
// block order by quant.MXFP4FromOCP, nothing dequantized. MLX's e2m1 codes
// are ggml's (kvalues_mxfp4 are their doubles, under a halved e8m0 scale),
// so the blocks hold the weight's values exactly.
func MXFP4Blocks(name string, t *Tensor, rows []int) (*Tensor, error) {
	l := t.MXFP4
	if l == nil {
		return nil, fmt.Errorf("checkpoint: tensor %q is not an MXFP4 layer", t.Name)
	}
	if len(t.Shape) != 2 || t.Shape[1]%32 != 0 {
		return nil, fmt.Errorf("checkpoint: MXFP4 layer %q has shape %v, want rows of whole 32-value blocks", t.Name, t.Shape)
	}
	return fp4Blocks("MXFP4", name, t, l.Packed, l.Scales, tensor.MXFP4, 32, rows, quant.MXFP4FromOCP)
}
