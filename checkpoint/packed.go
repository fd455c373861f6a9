package checkpoint

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tfconv/tfconv/formats/mlx"
	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/tensor"
)

// SourceInfo keys of a GPTQ, AWQ or FP8 checkpoint, whose quantized
// weights the checkpoint presents dequantized.
const (
	SourceInfoQuantMethod  = "quantization.method"  // quant_method: "gptq", "gptq_v2", "awq", "fp8", "compressed-tensors", "fbgemm_fp8"
	SourceInfoQuantBits    = "quantization.bits"    // bits per stored weight
	SourceInfoQuantScheme  = "quantization.scheme"  // the layout in words: "4-bit integers, group size 128", "float8 e4m3, 128×128 blocks"
	SourceInfoQuantLayers  = "quantization.layers"  // weights presented dequantized
	SourceInfoQuantDropped = "quantization.dropped" // activation scales left out (calibration, not weights)
)

// packedConfig is the part of config.json's quantization_config that says
// how the layers are packed.
type packedConfig struct {
	method    quant.PackedMethod
	bits      int
	groupSize int // -1: the whole input dimension
	// sym: GPTQ's symmetric quantization (every zero point 2^(bits−1));
	// descAct: GPTQ's act-order (g_idx permutes the groups).
	sym, descAct bool
}

// parsePackedConfig reads quantization_config; ok is false when the
// checkpoint is not a GPTQ or AWQ one (no config, no quantization_config,
// or another method, which is left for the tensors' own dtypes to say).
func parsePackedConfig(cfg map[string]any) (pc packedConfig, ok bool, err error) {
	qc, _ := cfg["quantization_config"].(map[string]any)
	if qc == nil {
		return pc, false, nil
	}
	method, _ := qc["quant_method"].(string)
	str := func(key string) string { s, _ := qc[key].(string); return strings.ToLower(s) }
	num := func(key string) (int, bool) {
		n, ok := qc[key].(json.Number)
		if !ok {
			return 0, false
		}
		v, err := n.Int64()
		return int(v), err == nil && v >= -1 && v <= 1<<20
	}
	switch strings.ToLower(method) {
	case "gptq":
		pc.method = quant.GPTQ
		switch f := str("checkpoint_format"); f {
		case "", "gptq":
		case "gptq_v2":
			pc.method = quant.GPTQv2
		default:
			return pc, true, tensor.Unsupported("config.json: GPTQ checkpoint_format %q is not supported (gptq and gptq_v2 are)", f)
		}
		pc.sym, _ = qc["sym"].(bool)
		pc.descAct, _ = qc["desc_act"].(bool)
	case "awq":
		pc.method = quant.AWQ
		if v := str("version"); v != "" && v != "gemm" {
			return pc, true, tensor.Unsupported("config.json: AWQ version %q is not supported (only AutoAWQ's GEMM layout, version \"gemm\")", v)
		}
		if zp, ok := qc["zero_point"].(bool); ok && !zp {
			return pc, true, tensor.Unsupported("config.json: AWQ without zero points (zero_point false) is not supported")
		}
	default:
		return pc, false, nil
	}
	var okBits, okGroup bool
	pc.bits, okBits = num("bits")
	pc.groupSize, okGroup = num("group_size")
	if !okBits || !okGroup || pc.groupSize == 0 {
		return pc, true, fmt.Errorf("config.json: quantization_config (%s) needs integer bits and group_size, got %v and %v", method, qc["bits"], qc["group_size"])
	}
	return pc, true, nil
}

// unpackQuantized presents a GPTQ, AWQ or FP8 checkpoint as the float
// checkpoint it stands for: each GPTQ/AWQ packed layer (X.qweight,
// X.qzeros, X.scales and, for GPTQ, X.g_idx) becomes its weight X.weight,
// dequantized when read to the scales' type exactly as AutoGPTQ's and
// AutoAWQ's own torch code computes it; each scaled FP8 weight (fp8.go)
// becomes its float32 product with its scales. config.json is presented
// without its quantization_config, so that every command reads the result
// as it is.
func (c *Checkpoint) unpackQuantized() error {
	raw, err := c.Config()
	if err != nil || raw == nil {
		return err
	}
	qc, _ := raw["quantization_config"].(map[string]any)
	method, _ := qc["quant_method"].(string)
	mq, err := mlx.FromConfig(raw)
	if err != nil {
		return fmt.Errorf("checkpoint: %s: %w", c.Path, err)
	}
	var u *unpacked
	algo, modelOpt, err := c.modelOptAlgo(qc)
	if err != nil {
		return err
	}
	switch {
	case modelOpt:
		if u, err = c.unpackModelOpt(algo); err != nil {
			return err
		}
	case mq != nil:
		if u, err = c.unpackMLX(mq); err != nil {
			return err
		}
	default:
		switch strings.ToLower(method) {
		case "gptq", "awq":
			pc, _, err := parsePackedConfig(raw)
			if err != nil {
				return err
			}
			if u, err = c.unpackPacked(pc); err != nil {
				return err
			}
		case "compressed-tensors":
			if u, err = c.unpackCT(qc); err != nil {
				return err
			}
		case "fp8", "fbgemm_fp8":
			fc, err := parseFP8Config(qc)
			if err != nil {
				return err
			}
			if u, err = c.unscaleFP8(fc); err != nil {
				return err
			}
		default:
			return nil
		}
	}
	if u.layers == 0 {
		return nil
	}
	kept := c.Tensors[:0]
	for _, t := range c.Tensors {
		if u.drop[t.Name] {
			delete(c.byName, t.Name)
			continue
		}
		kept = append(kept, t)
	}
	c.Tensors = kept
	delete(raw, "quantization_config")
	mlx.SetConfig(raw, nil)
	b, err := json.MarshalIndent(raw, "", "  ")
	if err != nil {
		return err
	}
	if c.auxOverride == nil {
		c.auxOverride = map[string][]byte{}
	}
	c.auxOverride["config.json"] = append(b, '\n')
	c.SourceInfo.Set(SourceInfoQuantMethod, tensor.String(u.method))
	c.SourceInfo.Set(SourceInfoQuantBits, tensor.Int64(int64(u.bits)))
	c.SourceInfo.Set(SourceInfoQuantScheme, tensor.String(u.scheme))
	c.SourceInfo.Set(SourceInfoQuantLayers, tensor.Int64(int64(u.layers)))
	if u.dropped > 0 {
		c.SourceInfo.Set(SourceInfoQuantDropped, tensor.Int64(int64(u.dropped)))
	}
	return nil
}

// unpacked is what unpackQuantized replaced: the tensors it removes, and
// how the checkpoint was quantized.
type unpacked struct {
	drop    map[string]bool
	layers  int    // weights presented dequantized
	dropped int    // activation scales left out (no weight data)
	method  string // SourceInfoQuantMethod
	bits    int
	scheme  string // SourceInfoQuantScheme
}

// replace puts t in place of c.Tensors[i] (whose parts are dropped).
func (c *Checkpoint) replace(i int, t *Tensor) error {
	if prev, clash := c.byName[t.Name]; clash && prev != c.Tensors[i] {
		return fmt.Errorf("checkpoint: %s: tensor %q is both stored and quantized in %q", c.Tensors[i].File, t.Name, c.Tensors[i].Name)
	}
	c.Tensors[i] = t
	c.byName[t.Name] = t
	return nil
}

// unpackPacked replaces every GPTQ/AWQ packed layer.
func (c *Checkpoint) unpackPacked(pc packedConfig) (*unpacked, error) {
	u := &unpacked{drop: map[string]bool{}, method: pc.method.String(), bits: pc.bits}
	u.scheme = fmt.Sprintf("%d-bit integers, group size %d", pc.bits, pc.groupSize)
	if pc.groupSize < 0 {
		u.scheme = fmt.Sprintf("%d-bit integers, one group per row", pc.bits)
	}
	for i, qw := range c.Tensors {
		prefix, isQ := strings.CutSuffix(qw.Name, ".qweight")
		if !isQ {
			continue
		}
		t, parts, err := c.packedLayer(pc, prefix)
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

// packedLayer checks the stored tensors of the packed layer prefix against
// each other and the config, and returns the dequantizing tensor
// prefix.weight and the names it replaces.
func (c *Checkpoint) packedLayer(pc packedConfig, prefix string) (*Tensor, []string, error) {
	get := func(suffix string, want ...tensor.DType) (*Tensor, error) {
		t, ok := c.byName[prefix+suffix]
		if !ok {
			return nil, fmt.Errorf("checkpoint: %s: packed %s layer %q has no tensor %q", c.Path, pc.method, prefix, prefix+suffix)
		}
		for _, d := range want {
			if t.DType == d && len(t.Shape) <= 2 {
				return t, nil
			}
		}
		return nil, fmt.Errorf("checkpoint: %s: offset %d: tensor %q is %v %v, want a matrix of %v", t.File, t.Offset, t.Name, t.DType, t.Shape, want)
	}
	qw, err := get(".qweight", tensor.I32)
	if err != nil {
		return nil, nil, err
	}
	qz, err := get(".qzeros", tensor.I32)
	if err != nil {
		return nil, nil, err
	}
	sc, err := get(".scales", tensor.F16, tensor.BF16, tensor.F32)
	if err != nil {
		return nil, nil, err
	}
	parts := []string{qw.Name, qz.Name, sc.Name}
	var gi *Tensor
	if pc.method != quant.AWQ {
		if t, ok := c.byName[prefix+".g_idx"]; ok {
			if gi, err = get(".g_idx", tensor.I32); err != nil {
				return nil, nil, err
			}
			parts = append(parts, t.Name)
		}
	}
	if len(qw.Shape) != 2 {
		return nil, nil, fmt.Errorf("checkpoint: %s: offset %d: tensor %q has shape %v, want [rows, cols]", qw.File, qw.Offset, qw.Name, qw.Shape)
	}
	p := quant.PackedLinear{Method: pc.method, Bits: pc.bits}
	if pc.bits <= 0 || 32%pc.bits != 0 {
		return nil, nil, tensor.Unsupported("checkpoint: %s: %s with %d bits is not supported (2, 4 and 8 are)", c.Path, pc.method, pc.bits)
	}
	if pc.method == quant.AWQ {
		p.In, p.Out = int(qw.Shape[0]), int(qw.Shape[1])*32/pc.bits
	} else {
		p.In, p.Out = int(qw.Shape[0])*32/pc.bits, int(qw.Shape[1])
	}
	p.GroupSize = pc.groupSize
	if p.GroupSize < 0 {
		p.GroupSize = p.In
	}
	if err := p.Validate(); err != nil {
		return nil, nil, fmt.Errorf("checkpoint: %s: tensor %q: %w", qw.File, qw.Name, err)
	}
	shapeIs := func(t *Tensor, want [2]int) error {
		if len(t.Shape) == 2 && t.Shape[0] == int64(want[0]) && t.Shape[1] == int64(want[1]) {
			return nil
		}
		return fmt.Errorf("checkpoint: %s: offset %d: tensor %q has shape %v; a %s layer of %d×%d with group size %d needs [%d %d]",
			t.File, t.Offset, t.Name, t.Shape, pc.method, p.Out, p.In, p.GroupSize, want[0], want[1])
	}
	if err := shapeIs(qz, p.QZerosShape()); err != nil {
		return nil, nil, err
	}
	if err := shapeIs(sc, p.ScalesShape()); err != nil {
		return nil, nil, err
	}
	if gi != nil && (len(gi.Shape) != 1 || gi.Shape[0] != int64(p.In)) {
		return nil, nil, fmt.Errorf("checkpoint: %s: offset %d: tensor %q has shape %v, want [%d]", gi.File, gi.Offset, gi.Name, gi.Shape, p.In)
	}
	out := sc.DType
	info := tensor.Info{Name: prefix + ".weight", DType: out, Shape: tensor.Shape{int64(p.Out), int64(p.In)}}
	if info.Size, err = out.ShapeBytes(info.Shape); err != nil {
		return nil, nil, fmt.Errorf("checkpoint: %s: tensor %q: %w", qw.File, qw.Name, err)
	}
	data := func() ([]byte, error) {
		b, err := dequantizePacked(p, qw, qz, sc, gi)
		if err != nil {
			return nil, fmt.Errorf("checkpoint: %s: packed layer %q: %w", qw.File, prefix, err)
		}
		return b, nil
	}
	t := LazyTensor(info, qw.File, data)
	if p.Bits == 4 && p.GroupSize == 32 && !pc.descAct {
		// Q4_0 (symmetric GPTQ) or Q4_1 blocks hold the values exactly
		// where the scales (and −z·s) are f16 values: the exact products,
		// which the float16 weight rounds, are what such a pass-through
		// encodes.
		t.ExactQ4 = tensor.Q4_1
		if pc.method != quant.AWQ && pc.sym {
			t.ExactQ4 = tensor.Q4_0
		}
		exact := tensor.Info{Name: info.Name, DType: tensor.F32, Shape: info.Shape.Clone(), Size: 4 * int64(p.Out) * int64(p.In)}
		t.Exact = LazyTensor(exact, qw.File, func() ([]byte, error) {
			w, err := dequantizePackedF32(p, qw, qz, sc, gi)
			if err != nil {
				return nil, fmt.Errorf("checkpoint: %s: packed layer %q: %w", qw.File, prefix, err)
			}
			return f32Bytes(w), nil
		})
	}
	return t, parts, nil
}

// dequantizePacked reads a packed layer's tensors and returns its weight in
// the scales' dtype.
func dequantizePacked(p quant.PackedLinear, qw, qz, sc, gi *Tensor) ([]byte, error) {
	w, err := dequantizePackedF32(p, qw, qz, sc, gi)
	if err != nil {
		return nil, err
	}
	out := make([]byte, len(w)*int(sc.DType.BlockBytes()))
	if err := quant.Quantize(out, w, sc.DType); err != nil {
		return nil, err
	}
	return out, nil
}

// dequantizePackedF32 reads a packed layer's tensors (qz nil where the
// layout stores no zero points, gi nil without act-order) and returns its
// weight in float32.
func dequantizePackedF32(p quant.PackedLinear, qw, qz, sc, gi *Tensor) ([]float32, error) {
	qwb, err := qw.ReadAll()
	if err != nil {
		return nil, err
	}
	var qzb []byte
	if qz != nil {
		if qzb, err = qz.ReadAll(); err != nil {
			return nil, err
		}
	}
	scb, err := sc.ReadAll()
	if err != nil {
		return nil, err
	}
	scales := make([]float32, sc.NumElements())
	if err := quant.Dequantize(scales, scb, sc.DType); err != nil {
		return nil, fmt.Errorf("tensor %q: %w", sc.Name, err)
	}
	var gIdx []int32
	if gi != nil {
		gb, err := gi.ReadAll()
		if err != nil {
			return nil, err
		}
		gIdx = make([]int32, gi.NumElements())
		for i := range gIdx {
			gIdx[i] = int32(binary.LittleEndian.Uint32(gb[4*i:]))
			if gIdx[i] < 0 || int(gIdx[i]) >= p.Groups() {
				return nil, fmt.Errorf("offset %d: tensor %q: entry %d is %d, outside the layer's %d groups",
					gi.Offset+4*int64(i), gi.Name, i, gIdx[i], p.Groups())
			}
		}
	}
	w := make([]float32, p.In*p.Out)
	if err := quant.DequantizePacked(w, p, qwb, qzb, scales, gIdx); err != nil {
		return nil, err
	}
	return w, nil
}
