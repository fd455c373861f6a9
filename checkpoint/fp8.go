package checkpoint

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/tensor"
)

// fp8Config is how an FP8 checkpoint scales its weights.
type fp8Config struct {
	method string
	// scaleSuffix follows a weight's name to name its scales:
	// "_scale_inv" (DeepSeek's "fp8"), "_scale" (compressed-tensors,
	// FBGEMM).
	scaleSuffix string
	block       [2]int // rows × columns per scale; 0: per tensor or per row, as the scale's shape says
	// intWeights: the weights are 8-bit integers (compressed-tensors'
	// int-quantized), not 8-bit floats.
	intWeights bool
}

// activationScales are the suffixes (after the module name) of the
// calibrated activation bounds FP8 checkpoints carry beside the weights:
// they scale inputs at run time, hold no weight data, and are left out of
// the dequantized checkpoint.
var activationScales = []string{".input_scale", ".input_scale_ub", ".activation_scale", ".k_scale", ".v_scale"}

// parseFP8Config reads an FP8 quantization_config: DeepSeek-V3's "fp8"
// (weight_block_size, weight_scale_inv) and FBGEMM's "fbgemm_fp8" (per-row
// weight_scale); compressed-tensors' float-quantized FP8 is read by
// parseCTConfig (ctensors.go), which gives its fp8Config.
func parseFP8Config(qc map[string]any) (fp8Config, error) {
	fc := fp8Config{}
	fc.method, _ = qc["quant_method"].(string)
	fc.method = strings.ToLower(fc.method)
	block := func(v any, key string) error {
		bs, ok := v.([]any)
		if v == nil {
			return nil
		}
		if !ok || len(bs) != 2 {
			return fmt.Errorf("config.json: quantization_config %s is %v, want [rows, columns]", key, v)
		}
		for i, b := range bs {
			n, ok := b.(json.Number)
			x, err := n.Int64()
			if !ok || err != nil || x <= 0 || x > 1<<16 {
				return fmt.Errorf("config.json: quantization_config %s is %v, want two positive sizes", key, v)
			}
			fc.block[i] = int(x)
		}
		return nil
	}
	switch fc.method {
	case "fp8":
		fc.scaleSuffix = "_scale_inv"
		if f, _ := qc["fmt"].(string); f != "" && f != "e4m3" {
			return fc, tensor.Unsupported("config.json: fp8 fmt %q is not supported (e4m3 is)", f)
		}
		return fc, block(qc["weight_block_size"], "weight_block_size")
	case "fbgemm_fp8":
		fc.scaleSuffix = "_scale"
		return fc, nil
	}
	return fc, tensor.Unsupported("config.json: quant_method %q is not an FP8 method", fc.method)
}

// unscaleFP8 replaces every 8-bit float weight that has scales with its
// float32 values, weight × scale as llama.cpp's converter and DeepSeek's
// weight_dequant compute it (each code decoded exactly, the scale widened
// to float32, one float32 product), and leaves out the scales and the
// activation bounds.
func (c *Checkpoint) unscaleFP8(fc fp8Config) (*unpacked, error) {
	u := &unpacked{drop: map[string]bool{}, method: fc.method, bits: 8}
	var kind tensor.DType
	var perRow, perTensor bool
	for i, w := range c.Tensors {
		for _, suffix := range activationScales {
			if strings.HasSuffix(w.Name, suffix) && w.NumElements() <= 1 {
				u.drop[w.Name] = true
				u.dropped++
			}
		}
		if !quant.IsFP8(w.DType) && !(fc.intWeights && w.DType == tensor.I8) {
			continue
		}
		s, ok := c.byName[w.Name+fc.scaleSuffix]
		if !ok {
			return nil, fmt.Errorf("checkpoint: %s: offset %d: %v tensor %q has no scale tensor %q (%s checkpoint)",
				w.File, w.Offset, w.DType, w.Name, w.Name+fc.scaleSuffix, fc.method)
		}
		if len(w.Shape) != 2 {
			return nil, fmt.Errorf("checkpoint: %s: offset %d: %v tensor %q has shape %v; scaled FP8 weights are matrices", w.File, w.Offset, w.DType, w.Name, w.Shape)
		}
		rows, cols := int(w.Shape[0]), int(w.Shape[1])
		sc, err := fp8ScaleLayout(fc, s, rows, cols)
		if err != nil {
			return nil, err
		}
		perRow = perRow || sc.perRow
		perTensor = perTensor || sc.perTensor
		kind = w.DType
		t := fp8Tensor(w, s, sc)
		if err := c.replace(i, t); err != nil {
			return nil, err
		}
		u.drop[s.Name] = true
		u.layers++
	}
	name := map[tensor.DType]string{tensor.F8_E4M3: "e4m3", tensor.F8_E5M2: "e5m2", tensor.F8_E4M3FNUZ: "e4m3fnuz", tensor.F8_E5M2FNUZ: "e5m2fnuz", tensor.F8_E8M0: "e8m0"}[kind]
	if fc.intWeights {
		name = "int8"
	} else {
		name = "float8 " + name
	}
	switch {
	case fc.block[0] > 0:
		u.scheme = fmt.Sprintf("%s, a scale per %d×%d block", name, fc.block[0], fc.block[1])
	case perRow && perTensor:
		u.scheme = fmt.Sprintf("%s, a scale per row or per tensor", name)
	case perRow:
		u.scheme = fmt.Sprintf("%s, a scale per row", name)
	default:
		u.scheme = fmt.Sprintf("%s, a scale per tensor", name)
	}
	return u, nil
}

// fp8Scales says how a weight's scale tensor covers it.
type fp8Scales struct {
	block             [2]int // for block scales: rows, columns per scale
	blockCols         int    // scales per row of blocks
	perRow, perTensor bool
}

// fp8ScaleLayout checks the scale tensor s of a rows×cols FP8 weight: one
// per block of fc.block (the last blocks may be partial), one per row
// ([rows, 1] or [rows]), or one for the whole tensor ([], [1], [1, 1]), in
// float32, bfloat16 or float16.
func fp8ScaleLayout(fc fp8Config, s *Tensor, rows, cols int) (fp8Scales, error) {
	var l fp8Scales
	if s.DType != tensor.F32 && s.DType != tensor.BF16 && s.DType != tensor.F16 {
		return l, fmt.Errorf("checkpoint: %s: offset %d: scale tensor %q is %v, want F32, BF16 or F16", s.File, s.Offset, s.Name, s.DType)
	}
	n := s.NumElements()
	switch {
	case fc.block[0] > 0:
		br, bc := (rows+fc.block[0]-1)/fc.block[0], (cols+fc.block[1]-1)/fc.block[1]
		if len(s.Shape) == 2 && s.Shape[0] == int64(br) && s.Shape[1] == int64(bc) {
			l.block, l.blockCols = fc.block, bc
			return l, nil
		}
		return l, fmt.Errorf("checkpoint: %s: offset %d: scale tensor %q has shape %v; a %d×%d weight in %d×%d blocks needs [%d %d]",
			s.File, s.Offset, s.Name, s.Shape, rows, cols, fc.block[0], fc.block[1], br, bc)
	case n == 1 && len(s.Shape) <= 2:
		l.perTensor = true
		return l, nil
	case n == int64(rows) && (len(s.Shape) == 1 || len(s.Shape) == 2 && s.Shape[1] == 1):
		l.perRow = true
		return l, nil
	}
	return l, fmt.Errorf("checkpoint: %s: offset %d: scale tensor %q has shape %v; a %d×%d weight takes one scale, one per row ([%d 1]) or, with a block size in the config, one per block",
		s.File, s.Offset, s.Name, s.Shape, rows, cols, rows)
}

// fp8Tensor is the float32 weight of the FP8 tensor w scaled by s, decoded
// as it is read: a group of rows at a time (fp8Reader), so that a
// 18432×7168 weight (DeepSeek-V3's and Kimi K2's dense MLP, 132 MB of FP8)
// holds a few MiB, not its FP8 bytes and two float32 copies (1.2 GB).
func fp8Tensor(w, s *Tensor, l fp8Scales) *Tensor {
	rows, cols := int(w.Shape[0]), int(w.Shape[1])
	info := tensor.Info{Name: w.Name, DType: tensor.F32, Shape: w.Shape.Clone(), Size: 4 * int64(rows) * int64(cols)}
	return StreamTensor(info, w.File, func() io.Reader {
		return &fp8Reader{w: w, s: s, l: l, rows: rows, cols: cols}
	})
}

// fp8Rows is how many rows fp8Reader decodes at a time when the scales do
// not set it (a block of rows shares its scales): about 1 MiB of FP8 for a
// 7168-wide weight.
const fp8Rows = 128

// fp8Reader reads the float32 bytes of an FP8 weight, decoding groups of
// rows (a scale block's rows, or fp8Rows) as they are asked for; the scales
// are read whole on the first Read (one per 128×128 block: 8 KiB for a
// 2048×7168 expert).
type fp8Reader struct {
	w, s       *Tensor
	l          fp8Scales
	rows, cols int

	src    io.Reader
	scales []float32
	row    int // rows decoded so far
	raw    []byte
	vals   []float32
	buf    []byte // a group of rows' float32 bytes
	out    []byte // the part of buf not yet returned
	err    error
}

func (f *fp8Reader) Read(p []byte) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	if f.scales == nil {
		sb, err := f.s.ReadAll()
		if err != nil {
			f.err = fmt.Errorf("checkpoint: %s: %w", f.s.File, err)
			return 0, f.err
		}
		f.scales = make([]float32, f.s.NumElements())
		if err := quant.Dequantize(f.scales, sb, f.s.DType); err != nil {
			f.err = fmt.Errorf("checkpoint: %s: tensor %q: %w", f.s.File, f.s.Name, err)
			return 0, f.err
		}
		f.src = f.w.Open()
	}
	if len(f.out) == 0 {
		if f.row >= f.rows {
			return 0, io.EOF
		}
		if f.err = f.decode(); f.err != nil {
			return 0, f.err
		}
	}
	n := copy(p, f.out)
	f.out = f.out[n:]
	return n, nil
}

// decode decodes the next group of rows into f.out.
func (f *fp8Reader) decode() error {
	g := fp8Rows
	if f.l.block[0] > 0 {
		g = f.l.block[0]
	}
	g = min(g, f.rows-f.row)
	n := g * f.cols
	if cap(f.raw) < n {
		f.raw, f.vals, f.buf = make([]byte, n), make([]float32, n), make([]byte, 4*n)
	}
	raw, vals, out := f.raw[:n], f.vals[:n], f.buf[:4*n]
	if _, err := io.ReadFull(f.src, raw); err != nil {
		return fmt.Errorf("checkpoint: %s: tensor %q: rows %d-%d: %w", f.w.File, f.w.Name, f.row, f.row+g-1, err)
	}
	if err := quant.Dequantize(vals, raw, f.w.DType); err != nil {
		return fmt.Errorf("checkpoint: %s: tensor %q: %w", f.w.File, f.w.Name, err)
	}
	l := f.l
	for i := 0; i < g; i++ {
		r := f.row + i
		for k := 0; k < f.cols; k++ {
			var sc float32
			switch {
			case l.perTensor:
				sc = f.scales[0]
			case l.perRow:
				sc = f.scales[r]
			default:
				sc = f.scales[(r/l.block[0])*l.blockCols+k/l.block[1]]
			}
			binary.LittleEndian.PutUint32(out[4*(i*f.cols+k):], math.Float32bits(vals[i*f.cols+k]*sc))
		}
	}
	f.row += g
	f.out = out
	return nil
}
