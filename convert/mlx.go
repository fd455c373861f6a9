package convert

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"

	"github.com/tfconv/tfconv/arch"
	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/formats/mlx"
	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/tensor"
)

// planMLX writes a checkpoint as an MLX directory: the Hugging Face
// directory Run would write (from a GGUF: names mapped back, layouts
// undone), with mlx-lm's safetensors metadata and, with opts.Bits, every
// weight mlx_lm.convert quantizes (mlx.Quantizable) as affine codes,
// scales and biases computed as mx.quantize computes them (quant.Affine).
func planMLX(c *checkpoint.Checkpoint, opts Options) (*plan, error) {
	if c.Source == checkpoint.GGUF {
		p, err := planToHF(c, opts)
		if err != nil {
			return nil, err
		}
		return mlxFrom(p, opts)
	}
	p, err := planHFRecast(c, opts)
	if err != nil {
		return nil, err
	}
	return mlxFrom(p, opts)
}

// mlxFrom turns a Hugging Face plan into an MLX one.
func mlxFrom(p *plan, opts Options) (*plan, error) {
	p.format = MLX
	bits, group := opts.Bits, opts.GroupSize
	if fp, ok := mlx.FPModes[opts.MLXMode]; ok {
		q := &mlx.Quantization{Params: mlx.Params{Bits: fp.Bits, GroupSize: fp.GroupSize, Mode: opts.MLXMode}}
		if bits != 0 && bits != fp.Bits || group != 0 && group != fp.GroupSize {
			return nil, tensor.Unsupported("convert: MLX mode %s takes %d bits and group size %d (asked: %d bits, group size %d)", opts.MLXMode, fp.Bits, fp.GroupSize, bits, group)
		}
		if err := mlxQuantizeAll(p, q); err != nil {
			return nil, err
		}
		return p, mlxSetConfig(p, q)
	}
	if opts.MLXMode != "" && opts.MLXMode != mlx.ModeAffine {
		return nil, tensor.Unsupported("convert: MLX mode %q is not one of affine, mxfp4, mxfp8, nvfp4", opts.MLXMode)
	}
	if bits == 0 && group == 0 {
		if !opts.Requantize {
			return mlxPassThrough(p)
		}
		if j := mlxMXFP4Job(p); j != nil {
			return nil, tensor.Unsupported("convert: --requantize: tensor %q holds GGUF MXFP4 blocks, which MLX keeps as mode mxfp4 by copying them "+
				"in Hugging Face's packed form; tfconv encodes MLX's mxfp4 only for the weights it quantizes (quantize --to mlx --mode mxfp4)", j.out.Name)
		}
		// --requantize: the layers the pass-through would copy are
		// quantized by MLX's rule instead, at its bits and groups of 32.
		if bits = mlxPassDefaultBits(p); bits == 0 {
			return p, nil
		}
		group = 32
	}
	q := &mlx.Quantization{Params: mlx.Params{Bits: bits, GroupSize: group, Mode: mlx.ModeAffine}}
	if q.Bits == 0 {
		q.Bits = 4 // mlx_lm.convert's defaults for affine
	}
	if q.GroupSize == 0 {
		q.GroupSize = 64
	}
	if err := q.CheckWrite(); err != nil {
		return nil, err
	}
	if err := mlxQuantizeAll(p, q); err != nil {
		return nil, err
	}
	return p, mlxSetConfig(p, q)
}

// mlxQuantizeAll replaces every float weight mlx_lm.convert quantizes by
// its layer's three tensors (mlxJobs).
func mlxQuantizeAll(p *plan, q *mlx.Quantization) error {
	f, err := mlxStackExperts(p, mlx.WeightSuffix)
	if err != nil {
		return err
	}
	// Layers the source holds in MLX's mxfp4 already (gpt-oss's experts)
	// are copied, and stay mxfp4 whatever the mode asked: mlx-lm loads them
	// quantized and its quantize_model leaves quantized layers alone.
	experts, err := mlxSplitPacked(p)
	if err != nil {
		return err
	}
	for _, path := range experts {
		if q.Params != mxfp4Params {
			if q.Layers == nil {
				q.Layers = map[string]*mlx.Params{}
			}
			prm := mxfp4Params
			q.Layers[path] = &prm
		}
	}
	var jobs []*job
	layers := 0
	for _, j := range p.jobs {
		if _, float := torchDType[j.out.DType]; !float || !mlx.Quantizable(j.out.Name, j.out.Shape, q.GroupSize) {
			jobs = append(jobs, j)
			continue
		}
		prm := q.Params
		path := strings.TrimSuffix(j.out.Name, mlx.WeightSuffix)
		if bits, group, ok := mlxQuantOf(f, path); ok && q.Mode == mlx.ModeAffine {
			// mlx-lm's quant_predicate: this layer's own bits and group
			prm = mlx.Params{Bits: bits, GroupSize: group, Mode: mlx.ModeAffine}
			if !mlx.Quantizable(j.out.Name, j.out.Shape, group) {
				jobs = append(jobs, j)
				continue
			}
			if q.Layers == nil {
				q.Layers = map[string]*mlx.Params{}
			}
			q.Layers[path] = &mlx.Params{Bits: bits, GroupSize: group}
		}
		jobs = append(jobs, mlxJobs(j, prm)...)
		layers++
	}
	if layers == 0 {
		return fmt.Errorf("convert: no weight has an input dimension that is a multiple of group size %d: nothing to quantize", q.GroupSize)
	}
	p.jobs = jobs
	return finishJobs(jobs)
}

// mlxSetConfig writes q into the plan's config.json.
func mlxSetConfig(p *plan, q *mlx.Quantization) error {
	raw := p.files["config.json"]
	if raw == nil {
		return fmt.Errorf("convert: MLX output needs config.json (its quantization goes there), and the source has none")
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var cfg map[string]any
	if err := d.Decode(&cfg); err != nil {
		return fmt.Errorf("convert: config.json: %w", err)
	}
	mlx.SetConfig(cfg, q)
	b, err := marshalConfig(Config(cfg))
	if err != nil {
		return err
	}
	p.files["config.json"] = b
	p.outType = fmt.Sprintf("mlx-affine-%d-bit-g%d", q.Bits, q.GroupSize)
	if _, fp := q.FP(); fp {
		p.outType = "mlx-" + q.Mode
	}
	return nil
}

// mlxJobs replaces the float job j (written in its output type T) by the
// three tensors of its quantized layer: P.weight uint32 codes, P.scales
// and P.biases in T. The layer is quantized once, when the first of the
// three is read, and let go when the last one is.
func mlxJobs(j *job, prm mlx.Params) []*job {
	path := j.out.Name[:len(j.out.Name)-len(mlx.WeightSuffix)]
	t := j.out.DType
	n := j.out.Shape[len(j.out.Shape)-1]
	q := &mlxLayer{src: j, a: quant.Affine{Bits: prm.Bits, GroupSize: prm.GroupSize}, taken: [3]bool{2: false}}
	if fp, ok := prm.FP(); ok {
		q.fp = &quant.MLXFP{Bits: fp.Bits, GroupSize: fp.GroupSize, E4M3Scales: fp.E4M3Scales}
		q.taken[2] = true // no biases
	}
	wShape := j.out.Shape.Clone()
	wShape[len(wShape)-1] = n * int64(prm.Bits) / 32
	sShape := j.out.Shape.Clone()
	sShape[len(sShape)-1] = n / int64(prm.GroupSize)
	part := func(name string, d tensor.DType, shape tensor.Shape, i int) *job {
		info := tensor.Info{Name: name, DType: d, Shape: shape}
		info.Size, _ = d.ShapeBytes(shape)
		src := checkpoint.LazyTensor(info, j.src.File, func() ([]byte, error) { return q.part(i) })
		return &job{out: info, src: src, m: Mapping{Name: name, Source: j.src.Name, Shape: shape}, from: j.src, quantized: i == 0}
	}
	if q.fp != nil {
		jobs := []*job{
			part(path+mlx.WeightSuffix, tensor.U32, wShape, 0),
			part(path+mlx.ScalesSuffix, tensor.U8, sShape, 1),
		}
		q.codes = jobs[0]
		return jobs
	}
	jobs := []*job{
		part(path+mlx.WeightSuffix, tensor.U32, wShape, 0),
		part(path+mlx.ScalesSuffix, t, sShape, 1),
		part(path+mlx.BiasesSuffix, t, sShape, 2),
	}
	q.codes = jobs[0]
	return jobs
}

// mlxLayer is one layer being quantized: its three outputs, computed
// together.
type mlxLayer struct {
	src   *job
	a     quant.Affine
	fp    *quant.MLXFP // a floating-point mode: codes and scale bytes, no biases
	codes *job         // the codes' job: its maxErr is the layer's (the report's)
	mu    sync.Mutex
	parts [3][]byte
	taken [3]bool
}

// part returns output i (codes, scales, biases), quantizing the layer when
// no output is held.
func (l *mlxLayer) part(i int) ([]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.parts[i] == nil {
		if err := l.quantize(); err != nil {
			return nil, err
		}
	}
	b := l.parts[i]
	l.taken[i] = true
	if l.taken == [3]bool{true, true, true} {
		l.parts, l.taken = [3][]byte{}, [3]bool{2: l.fp != nil}
	}
	return b, nil
}

func (l *mlxLayer) quantize() error {
	j := l.src
	t := j.out.DType
	raw, err := io.ReadAll((&engine{}).reader(j))
	if err != nil {
		return fmt.Errorf("convert: tensor %q: %w", j.out.Name, err)
	}
	w := make([]float32, j.out.NumElements())
	if err := quant.Dequantize(w, raw, t); err != nil {
		return fmt.Errorf("convert: tensor %q: %w", j.out.Name, err)
	}
	if l.fp != nil {
		return l.quantizeFP(w, t)
	}
	groups := len(w) / l.a.GroupSize
	codes := make([]byte, l.a.PackedBytes(len(w)))
	scales, biases := make([]float32, groups), make([]float32, groups)
	l.a.Quantize(codes, scales, biases, w)
	sb := make([]byte, groups*int(t.BlockBytes()))
	bb := make([]byte, groups*int(t.BlockBytes()))
	if err := quant.Quantize(sb, scales, t); err != nil {
		return err
	}
	if err := quant.Quantize(bb, biases, t); err != nil {
		return err
	}
	// The layer's error: MLX's dequantization of what is stored against w.
	sf, bf, back := make([]float32, groups), make([]float32, groups), make([]float32, len(w))
	if err := quant.Dequantize(sf, sb, t); err != nil {
		return err
	}
	if err := quant.Dequantize(bf, bb, t); err != nil {
		return err
	}
	if err := l.a.Dequantize(back, codes, sf, bf, t); err != nil {
		return err
	}
	for i, v := range w {
		if d := math.Abs(float64(back[i]) - float64(v)); d > l.codes.maxErr && !math.IsInf(d, 0) && !math.IsNaN(d) {
			l.codes.maxErr = d
		}
	}
	l.parts = [3][]byte{codes, sb, bb}
	l.taken = [3]bool{}
	return nil
}

// quantizeFP quantizes w (t's values) in a floating-point mode: codes and
// scale bytes as MLX's quantize writes them, the error against MLX's
// dequantization of them.
func (l *mlxLayer) quantizeFP(w []float32, t tensor.DType) error {
	codes := make([]byte, l.fp.PackedBytes(len(w)))
	scales := make([]byte, len(w)/l.fp.GroupSize)
	if err := l.fp.Quantize(codes, scales, w, t); err != nil {
		return err
	}
	back := make([]float32, len(w))
	if err := l.fp.Dequantize(back, codes, scales, t); err != nil {
		return err
	}
	for i, v := range w {
		if d := math.Abs(float64(back[i]) - float64(v)); d > l.codes.maxErr && !math.IsInf(d, 0) && !math.IsNaN(d) {
			l.codes.maxErr = d
		}
	}
	l.parts = [3][]byte{codes, scales, nil}
	l.taken = [3]bool{2: true}
	return nil
}

// mlxStackExperts replaces, in an MLX plan made from a Hugging Face one,
// each role its family keeps one tensor per part of in Hugging Face's form
// and stacked in mlx-lm's (arch.Tensor.MLX: a MoE's experts under
// switch_mlp, as mlx-lm's sanitize stacks them on load) by one tensor of
// the parts stacked along a new outermost dimension, at the first part's
// place, for each suffix (".weight" before quantizing; codes, scales and
// biases after a block pass-through). Parts whose types, shapes or passed
// bits differ stay as they are. It returns the family (nil when
// config.json names none).
func mlxStackExperts(p *plan, suffixes ...string) (*arch.Family, error) {
	f, err := mlxFamily(p)
	if err != nil || f == nil {
		return nil, err
	}
	at := map[string]int{}
	for i, j := range p.jobs {
		at[j.out.Name] = i
	}
	has := func(name string) bool { _, ok := at[name]; return ok }
	var stacks []arch.MLXStack
	for _, suffix := range suffixes {
		stacks = append(stacks, f.MLXStacks(suffix, has)...)
	}
	if len(stacks) == 0 {
		return f, nil
	}
	replace := map[int]*job{}
	drop := map[int]bool{}
stacks:
	for _, st := range stacks {
		parts := make([]*job, len(st.Parts))
		for i, name := range st.Parts {
			parts[i] = p.jobs[at[name]]
			if q := parts[0]; parts[i].out.DType != q.out.DType || !parts[i].out.Shape.Equal(q.out.Shape) || parts[i].passBits != q.passBits {
				continue stacks
			}
		}
		for _, name := range st.Parts {
			drop[at[name]] = true
		}
		ts, err := lazyTensors(parts, Options{})
		if err != nil {
			return nil, err
		}
		t, err := checkpoint.Stacked(st.Name, ts)
		if err != nil {
			return nil, fmt.Errorf("convert: %w", err)
		}
		first := parts[0]
		replace[at[st.Parts[0]]] = &job{out: tensor.Info{Name: st.Name, DType: t.DType, Shape: t.Shape.Clone()}, src: t,
			m: Mapping{Name: st.Name, Source: first.m.Source, Shape: t.Shape.Clone()}, allowOverflow: first.allowOverflow,
			passBits: first.passBits}
	}
	var jobs []*job
	for i, j := range p.jobs {
		if nj, ok := replace[i]; ok {
			jobs = append(jobs, nj)
		} else if !drop[i] {
			jobs = append(jobs, j)
		}
	}
	p.jobs = jobs
	return f, finishJobs(jobs)
}

// mlxFamily is the family the plan's config.json names, nil when it has
// none or names a family tfconv does not know (nothing to stack or split).
func mlxFamily(p *plan) (*arch.Family, error) {
	raw := p.files["config.json"]
	if raw == nil {
		return nil, nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var cfg map[string]any
	if err := d.Decode(&cfg); err != nil {
		return nil, fmt.Errorf("convert: config.json: %w", err)
	}
	f, err := arch.LookupConfig(Config(cfg))
	if err != nil {
		return nil, nil
	}
	return f, nil
}

// mlxQuantOf is f.MLXQuant, ok false without a family.
func mlxQuantOf(f *arch.Family, path string) (bits, group int, ok bool) {
	if f == nil {
		return 0, 0, false
	}
	return f.MLXQuant(path)
}
