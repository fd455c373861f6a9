package convert

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/formats/ctensors"
	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/tensor"
)

// planCT writes a checkpoint as a compressed-tensors directory: the Hugging
// Face directory Run would write (from a GGUF: names mapped back, layouts
// undone), every linear layer but lm_head (ctensors.Quantizable) quantized
// by the scheme opts.Scheme names as the library quantizes and compresses
// it (quant.CTQuant, quant.PackCT), and config.json's quantization_config as
// the library writes it.
func planCT(c *checkpoint.Checkpoint, opts Options) (*plan, error) {
	if opts.Scheme == "" {
		return nil, fmt.Errorf("convert: compressed-tensors output needs a scheme (--scheme: %s)", strings.Join(ctensors.PresetNames(), ", "))
	}
	sc, err := ctensors.Preset(opts.Scheme)
	if err != nil {
		return nil, fmt.Errorf("convert: %w", err)
	}
	if sc.Strategy != "group" && sc.Strategy != "channel" {
		return nil, fmt.Errorf("convert: compressed-tensors scheme %s (strategy %s) is not one tfconv writes: per group or per row", opts.Scheme, sc.Strategy)
	}
	if opts.GroupSize != 0 {
		if sc.Strategy != "group" {
			return nil, fmt.Errorf("convert: compressed-tensors scheme %s has no groups (strategy %s); --group-size applies to W4A16 and W4A16_ASYM", opts.Scheme, sc.Strategy)
		}
		sc.GroupSize = opts.GroupSize
	}
	var p *plan
	if c.Source == checkpoint.GGUF {
		p, err = planToHF(c, opts)
	} else {
		p, err = planHFRecast(c, opts)
	}
	if err != nil {
		return nil, err
	}
	p.format = CompressedTensors
	var jobs []*job
	layers := 0
	for _, j := range p.jobs {
		if _, float := torchDType[j.out.DType]; !float || !ctensors.Quantizable(j.out.Name, j.out.Shape) {
			jobs = append(jobs, j)
			continue
		}
		q := quant.CTQuant{Bits: sc.Bits, Float: sc.Type == "float", Symmetric: sc.Symmetric, T: j.out.DType}
		if sc.Strategy == "group" {
			q.GroupSize = sc.GroupSize
		}
		if err := q.Check(int(j.out.Shape[1])); err != nil {
			return nil, fmt.Errorf("convert: tensor %q %v: %w", j.out.Name, j.out.Shape, err)
		}
		jobs = append(jobs, ctJobs(j, q)...)
		layers++
	}
	if layers == 0 {
		return nil, fmt.Errorf("convert: no linear layer to quantize for compressed-tensors")
	}
	p.jobs = jobs
	if err := finishJobs(jobs); err != nil {
		return nil, err
	}
	raw := p.files["config.json"]
	if raw == nil {
		return nil, fmt.Errorf("convert: compressed-tensors output needs config.json (its quantization_config goes there), and the source has none")
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var cfg map[string]any
	if err := d.Decode(&cfg); err != nil {
		return nil, fmt.Errorf("convert: config.json: %w", err)
	}
	cfg["quantization_config"] = sc.ConfigValue()
	b, err := marshalConfig(Config(cfg))
	if err != nil {
		return nil, err
	}
	p.files["config.json"] = b
	p.outType = "compressed-tensors-" + sc.Format
	return p, nil
}

// ctJobs replaces the float job j by the tensors of its compressed layer:
// pack-quantized P.weight_packed, P.weight_shape, P.weight_scale (and
// P.weight_zero_point when asymmetric); float-quantized P.weight (E4M3)
// and P.weight_scale. The layer is quantized once, when the first part is
// read, and let go when the last one is.
func ctJobs(j *job, q quant.CTQuant) []*job {
	prefix := j.out.Name[:len(j.out.Name)-len(ctensors.SuffixWeight)]
	rows, cols := j.out.Shape[0], j.out.Shape[1]
	groups := int64(q.Groups(int(cols)))
	l := &ctLayer{src: j, q: q}
	type part struct {
		name  string
		d     tensor.DType
		shape tensor.Shape
	}
	var parts []part
	if q.Float {
		parts = []part{{prefix + ctensors.SuffixWeight, tensor.F8_E4M3, tensor.Shape{rows, cols}},
			{prefix + ctensors.SuffixScale, q.T, tensor.Shape{rows, groups}}}
	} else {
		per := int64(32 / q.Bits)
		parts = []part{{prefix + ctensors.SuffixPacked, tensor.I32, tensor.Shape{rows, (cols + per - 1) / per}},
			{prefix + ctensors.SuffixShape, tensor.I64, tensor.Shape{2}},
			{prefix + ctensors.SuffixScale, q.T, tensor.Shape{rows, groups}}}
		if !q.Symmetric {
			parts = append(parts, part{prefix + ctensors.SuffixZeroPoint, tensor.I32, tensor.Shape{(rows + per - 1) / per, groups}})
		}
	}
	l.taken = make([]bool, len(parts))
	jobs := make([]*job, len(parts))
	for i, pt := range parts {
		info := tensor.Info{Name: pt.name, DType: pt.d, Shape: pt.shape}
		info.Size, _ = pt.d.ShapeBytes(pt.shape)
		src := checkpoint.LazyTensor(info, j.src.File, func() ([]byte, error) { return l.part(i) })
		jobs[i] = &job{out: info, src: src, m: Mapping{Name: pt.name, Source: j.src.Name, Shape: pt.shape}, from: j.src, quantized: i == 0}
	}
	return jobs
}

// ctLayer is one layer being quantized: its outputs, computed together.
type ctLayer struct {
	src   *job
	q     quant.CTQuant
	mu    sync.Mutex
	parts [][]byte
	taken []bool
}

func (l *ctLayer) part(i int) ([]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.parts == nil {
		if err := l.quantize(); err != nil {
			return nil, err
		}
	}
	b := l.parts[i]
	l.taken[i] = true
	for _, t := range l.taken {
		if !t {
			return b, nil
		}
	}
	l.parts = nil
	clear(l.taken)
	return b, nil
}

func (l *ctLayer) quantize() error {
	j := l.src
	raw, err := io.ReadAll((&engine{}).reader(j))
	if err != nil {
		return fmt.Errorf("convert: tensor %q: %w", j.out.Name, err)
	}
	rows, cols := int(j.out.Shape[0]), int(j.out.Shape[1])
	w := make([]float32, rows*cols)
	if err := quant.Dequantize(w, raw, j.out.DType); err != nil {
		return fmt.Errorf("convert: tensor %q: %w", j.out.Name, err)
	}
	codes, scales, zeros, err := l.q.Quantize(w, rows, cols)
	if err != nil {
		return fmt.Errorf("convert: tensor %q: %w", j.out.Name, err)
	}
	sb := make([]byte, len(scales)*int(l.q.T.BlockBytes()))
	if err := quant.Quantize(sb, scales, l.q.T); err != nil {
		return err
	}
	if l.q.Float {
		cb := make([]byte, len(codes))
		for i, v := range codes {
			cb[i] = quant.EncodeE4M3(v)
		}
		l.parts = [][]byte{cb, sb}
		return nil
	}
	shape := make([]byte, 16)
	binary.LittleEndian.PutUint64(shape, uint64(rows))
	binary.LittleEndian.PutUint64(shape[8:], uint64(cols))
	l.parts = [][]byte{quant.PackCT(codes, rows, cols, l.q.Bits, false), shape, sb}
	if !l.q.Symmetric {
		l.parts = append(l.parts, quant.PackCT(zeros, rows, l.q.Groups(cols), l.q.Bits, true))
	}
	return nil
}
