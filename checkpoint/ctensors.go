package checkpoint

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"github.com/tfconv/tfconv/formats/ctensors"
	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/tensor"
)

// scaled is the fp8Config of a float-, int- or naive-quantized
// checkpoint, whose weights are stored one value per element beside their
// scales: 8-bit floats, or 8-bit integers.
func ctScaled(cc ctensors.Scheme) (fp8Config, error) {
	fc := fp8Config{method: "compressed-tensors", scaleSuffix: "_scale"}
	switch {
	case cc.Type == "float" && cc.Bits == 8:
	case cc.Type == "int" && cc.Bits == 8:
		fc.intWeights = true
	default:
		return fc, tensor.Unsupported("config.json: compressed-tensors %s weights of type %q with %d bits are not supported (8-bit float and 8-bit int are)", cc.Format, cc.Type, cc.Bits)
	}
	switch cc.Strategy {
	case "tensor", "channel":
	case "block":
		if cc.Block[0] == 0 {
			return fc, fmt.Errorf("config.json: compressed-tensors strategy block without a block_structure")
		}
		fc.block = cc.Block
	default:
		return fc, tensor.Unsupported("config.json: compressed-tensors %s strategy %q is not supported (tensor, channel and block are)", cc.Format, cc.Strategy)
	}
	if !cc.Symmetric {
		return fc, tensor.Unsupported("config.json: compressed-tensors %s weights with zero points (symmetric false) are not supported", cc.Format)
	}
	return fc, nil
}

// unpackCT presents a compressed-tensors checkpoint dequantized: the
// scaled formats through unscaleFP8, the packed ones here.
func (c *Checkpoint) unpackCT(qc map[string]any) (*unpacked, error) {
	cc, err := ctensors.ParseConfig(qc)
	if err != nil {
		return nil, err
	}
	switch cc.Format {
	case ctensors.FormatPacked:
		return c.unpackCTPacked(cc)
	case ctensors.FormatNVFP4:
		return c.unpackCTFP4(cc)
	}
	fc, err := ctScaled(cc)
	if err != nil {
		return nil, err
	}
	return c.unscaleFP8(fc)
}

// ctPart fetches the tensor prefix+suffix of a compressed-tensors layer,
// checking its dtype and rank.
func (c *Checkpoint) ctPart(prefix, suffix string, rank int, want ...tensor.DType) (*Tensor, error) {
	t, ok := c.byName[prefix+suffix]
	if !ok {
		return nil, fmt.Errorf("checkpoint: %s: compressed-tensors layer %q has no tensor %q", c.Path, prefix, prefix+suffix)
	}
	for _, d := range want {
		if t.DType == d && len(t.Shape) == rank {
			return t, nil
		}
	}
	return nil, fmt.Errorf("checkpoint: %s: offset %d: tensor %q is %v %v, want %d dimensions of %v", t.File, t.Offset, t.Name, t.DType, t.Shape, rank, want)
}

// ctShape reads a layer's weight_shape tensor: two positive int64 sizes.
func ctShape(t *Tensor) (rows, cols int, err error) {
	b, err := t.ReadAll()
	if err != nil {
		return 0, 0, err
	}
	if t.DType != tensor.I64 && t.DType != tensor.I32 || t.NumElements() != 2 {
		return 0, 0, fmt.Errorf("checkpoint: %s: offset %d: tensor %q is %v %v, want two integers", t.File, t.Offset, t.Name, t.DType, t.Shape)
	}
	var v [2]int64
	for i := range v {
		if t.DType == tensor.I64 {
			v[i] = int64(binary.LittleEndian.Uint64(b[8*i:]))
		} else {
			v[i] = int64(int32(binary.LittleEndian.Uint32(b[4*i:])))
		}
		if v[i] <= 0 || v[i] > 1<<31 {
			return 0, 0, fmt.Errorf("checkpoint: %s: offset %d: tensor %q holds %v, want two positive sizes", t.File, t.Offset, t.Name, v)
		}
	}
	return int(v[0]), int(v[1]), nil
}

// unpackCTPacked replaces every pack-quantized layer (X.weight_packed,
// X.weight_shape, X.weight_scale, and X.weight_zero_point when asymmetric,
// X.weight_g_idx with activation ordering) by its float32 weight X.weight:
// (q − z) · scale, exact in float32 as llama.cpp's converter computes it;
// rounded to the scales' type it is what compressed-tensors' own
// decompression gives.
func (c *Checkpoint) unpackCTPacked(cc ctensors.Scheme) (*unpacked, error) {
	if cc.Type != "int" || cc.Bits != 4 && cc.Bits != 8 && cc.Bits != 2 {
		return nil, tensor.Unsupported("config.json: compressed-tensors pack-quantized weights of type %q with %d bits are not supported (2-, 4- and 8-bit int are)", cc.Type, cc.Bits)
	}
	u := &unpacked{drop: map[string]bool{}, method: "compressed-tensors", bits: cc.Bits}
	switch cc.Strategy {
	case "group":
		u.scheme = fmt.Sprintf("%d-bit integers, group size %d", cc.Bits, cc.GroupSize)
	case "channel":
		u.scheme = fmt.Sprintf("%d-bit integers, one group per row", cc.Bits)
	default:
		return nil, tensor.Unsupported("config.json: compressed-tensors pack-quantized strategy %q is not supported (group and channel are)", cc.Strategy)
	}
	if !cc.Symmetric {
		u.scheme += ", zero points"
	}
	for i, pw := range c.Tensors {
		prefix, ok := strings.CutSuffix(pw.Name, ctensors.SuffixPacked)
		if !ok {
			continue
		}
		t, parts, err := c.ctPackedLayer(cc, prefix)
		if err != nil {
			return nil, err
		}
		if err := c.replace(i, t); err != nil {
			return nil, err
		}
		for _, p := range parts {
			u.drop[p] = true
		}
		u.layers++
	}
	return u, nil
}

func (c *Checkpoint) ctPackedLayer(cc ctensors.Scheme, prefix string) (*Tensor, []string, error) {
	pw, err := c.ctPart(prefix, ctensors.SuffixPacked, 2, tensor.I32)
	if err != nil {
		return nil, nil, err
	}
	st, err := c.ctPart(prefix, ctensors.SuffixShape, 1, tensor.I64, tensor.I32)
	if err != nil {
		return nil, nil, err
	}
	sc, err := c.ctPart(prefix, ctensors.SuffixScale, 2, tensor.F32, tensor.BF16, tensor.F16)
	if err != nil {
		return nil, nil, err
	}
	rows, cols, err := ctShape(st)
	if err != nil {
		return nil, nil, err
	}
	parts := []string{pw.Name, st.Name, sc.Name}
	p := quant.PackedLinear{Method: quant.CompressedTensors, Bits: cc.Bits, In: cols, Out: rows, GroupSize: cc.GroupSize, Symmetric: cc.Symmetric}
	if cc.Strategy == "channel" {
		p.GroupSize = cols
	}
	if err := p.Validate(); err != nil {
		return nil, nil, fmt.Errorf("checkpoint: %s: tensor %q: %w", pw.File, pw.Name, err)
	}
	var zp, gi *Tensor
	if !cc.Symmetric {
		if zp, err = c.ctPart(prefix, ctensors.SuffixZeroPoint, 2, tensor.I32); err != nil {
			return nil, nil, err
		}
		parts = append(parts, zp.Name)
	} else if t, ok := c.byName[prefix+ctensors.SuffixZeroPoint]; ok {
		// Symmetric layers may carry zero points that are all zero.
		parts = append(parts, t.Name)
	}
	if _, ok := c.byName[prefix+ctensors.SuffixGIdx]; ok {
		if gi, err = c.ctPart(prefix, ctensors.SuffixGIdx, 1, tensor.I32); err != nil {
			return nil, nil, err
		}
		parts = append(parts, gi.Name)
	}
	shapeIs := func(t *Tensor, want [2]int) error {
		if t.Shape[0] == int64(want[0]) && t.Shape[1] == int64(want[1]) {
			return nil
		}
		return fmt.Errorf("checkpoint: %s: offset %d: tensor %q has shape %v; a %d-bit layer of %d×%d with group size %d needs [%d %d]",
			t.File, t.Offset, t.Name, t.Shape, cc.Bits, rows, cols, p.GroupSize, want[0], want[1])
	}
	if err := shapeIs(pw, p.QWeightShape()); err != nil {
		return nil, nil, err
	}
	if err := shapeIs(sc, p.ScalesShape()); err != nil {
		return nil, nil, err
	}
	if zp != nil {
		if err := shapeIs(zp, p.QZerosShape()); err != nil {
			return nil, nil, err
		}
	}
	if gi != nil && gi.Shape[0] != int64(cols) {
		return nil, nil, fmt.Errorf("checkpoint: %s: offset %d: tensor %q has shape %v, want [%d]", gi.File, gi.Offset, gi.Name, gi.Shape, cols)
	}
	info := tensor.Info{Name: prefix + ctensors.SuffixWeight, DType: tensor.F32, Shape: tensor.Shape{int64(rows), int64(cols)}, Size: 4 * int64(rows) * int64(cols)}
	data := func() ([]byte, error) {
		w, err := dequantizePackedF32(p, pw, zp, sc, gi)
		if err != nil {
			return nil, fmt.Errorf("checkpoint: %s: compressed-tensors layer %q: %w", pw.File, prefix, err)
		}
		return f32Bytes(w), nil
	}
	t := LazyTensor(info, pw.File, data)
	if cc.Bits == 4 && p.GroupSize == 32 && cc.Symmetric && zp == nil && gi == nil {
		t.ExactQ4 = tensor.Q4_0
	}
	return t, parts, nil
}

// unpackCTFP4 replaces every nvfp4-pack-quantized layer (X.weight_packed
// uint8, X.weight_scale float8 e4m3 per 16 values, X.weight_global_scale)
// by its float32 weight X.weight, e2m1 · (scale / global_scale) as
// compressed-tensors' decompression computes it in float32; the NVFP4
// activation scales (input_global_scale) are left out with the others.
func (c *Checkpoint) unpackCTFP4(cc ctensors.Scheme) (*unpacked, error) {
	if cc.Type != "float" || cc.Bits != 4 || cc.GroupSize != 16 || cc.Strategy != "tensor_group" || !cc.Symmetric {
		return nil, tensor.Unsupported("config.json: compressed-tensors nvfp4-pack-quantized with weights %+v is not supported (4-bit float, tensor_group strategy, group size 16, symmetric is)", cc)
	}
	u := &unpacked{drop: map[string]bool{}, method: "compressed-tensors", bits: 4, scheme: "NVFP4: e2m1, a float8 e4m3 scale per 16 values and a float32 global scale"}
	for i, t := range c.Tensors {
		if strings.HasSuffix(t.Name, ".input_global_scale") && t.NumElements() <= 1 {
			u.drop[t.Name] = true
			u.dropped++
		}
		prefix, ok := strings.CutSuffix(t.Name, ctensors.SuffixPacked)
		if !ok {
			continue
		}
		pw, err := c.ctPart(prefix, ctensors.SuffixPacked, 2, tensor.U8)
		if err != nil {
			return nil, err
		}
		sc, err := c.ctPart(prefix, ctensors.SuffixScale, 2, tensor.F8_E4M3)
		if err != nil {
			return nil, err
		}
		gs, err := c.ctPart(prefix, ctensors.SuffixGlobalScale, 1, tensor.F32)
		if err != nil {
			return nil, err
		}
		rows, cols := int(pw.Shape[0]), 2*int(pw.Shape[1])
		if gs.Shape[0] != 1 || sc.Shape[0] != int64(rows) || int64(cols) != 16*sc.Shape[1] {
			return nil, fmt.Errorf("checkpoint: %s: offset %d: compressed-tensors NVFP4 layer %q: packed %v, scales %v and global scale %v do not fit (want [rows, cols/2], [rows, cols/16], [1])",
				pw.File, pw.Offset, prefix, pw.Shape, sc.Shape, gs.Shape)
		}
		t := fp4Tensor(prefix+ctensors.SuffixWeight, pw, sc, gs, func(s, g float32) float32 { return s / g }, true)
		t.NVFP4 = &NVFP4Layer{Packed: pw, Scales: sc, factor: gs, invert: true}
		if in, ok := c.byName[prefix+".input_global_scale"]; ok && in.NumElements() <= 1 {
			t.NVFP4.input = in
		}
		if err := c.replace(i, t); err != nil {
			return nil, err
		}
		u.drop[sc.Name], u.drop[gs.Name] = true, true
		u.layers++
	}
	return u, nil
}

// fp4Tensor is the float32 weight name of an NVFP4 layer as Hugging Face
// checkpoints store it: packed E2M1 pairs, a float8 e4m3 scale per 16
// values and a float32 per-tensor factor k, each group's multiplier
// combine(scale, k) in the format's float32 order (compressed-tensors
// scale / global_scale, ModelOpt scale · scale_2), negZero as
// quant.DequantizeFP4Packed takes it.
func fp4Tensor(name string, packed, scales, k *Tensor, combine func(s, k float32) float32, negZero bool) *Tensor {
	rows, cols := int(packed.Shape[0]), 2*int(packed.Shape[1])
	info := tensor.Info{Name: name, DType: tensor.F32, Shape: tensor.Shape{int64(rows), int64(cols)}, Size: 4 * int64(rows) * int64(cols)}
	return LazyTensor(info, packed.File, func() ([]byte, error) {
		pb, err := packed.ReadAll()
		if err != nil {
			return nil, err
		}
		sb, err := scales.ReadAll()
		if err != nil {
			return nil, err
		}
		kb, err := k.ReadAll()
		if err != nil {
			return nil, err
		}
		mults := make([]float32, scales.NumElements())
		if err := quant.Dequantize(mults, sb, tensor.F8_E4M3); err != nil {
			return nil, err
		}
		kv := math.Float32frombits(binary.LittleEndian.Uint32(kb))
		for i := range mults {
			mults[i] = combine(mults[i], kv)
		}
		w := make([]float32, rows*cols)
		if err := quant.DequantizeFP4Packed(w, pb, mults, rows, cols, negZero); err != nil {
			return nil, fmt.Errorf("checkpoint: %s: NVFP4 layer %q: %w", packed.File, name, err)
		}
		return f32Bytes(w), nil
	})
}

// f32Bytes is w as little-endian float32 bytes.
func f32Bytes(w []float32) []byte {
	out := make([]byte, 4*len(w))
	for i, v := range w {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v))
	}
	return out
}
