package convert

import (
	"encoding/binary"
	"math"
	"slices"
	"strings"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/tensor"
)

// nvfp4Pass carries the NVFP4 layers of a compressed-tensors, ModelOpt or
// MLX (mode nvfp4, when checkpoint.NVFP4Layer.GGUFExact) checkpoint into GGUF as llama.cpp's converter does (d32676d7,
// conversion/base.py _generate_nvfp4_tensors): each weight as GGUF NVFP4
// blocks, its codes and scale bytes copied (checkpoint.NVFP4Blocks), with
// "<name>.scale" (F32 [1], the per-tensor factor) and "<name>.input_scale"
// (the activation scale) after it unless they are 1 (within 1e-6, the
// converter's _scale_is_trivial). The converter writes these first, in the
// checkpoint's order, before every other tensor; nv are those jobs and
// rest the others, in their order. A layer is re-encoded like any float
// tensor instead when its mapping is more than a rename and a row
// permutation (Llama's Q/K rows), or its rows are not whole blocks of 64.
// With requantize (Options.Requantize) such a layer stays in rest, still
// NVFP4 but encoded again from its float32 values (the per-tensor factor
// in them, so without ".scale").
func nvfp4Pass(c *checkpoint.Checkpoint, jobs []*job, requantize bool) (nv, rest []*job, err error) {
	type pass struct {
		at   int
		jobs []*job
	}
	var passes []pass
	index := map[string]int{}
	for i, t := range c.Tensors {
		index[t.Name] = i
	}
	for _, j := range jobs {
		t, m := j.src, j.m
		if len(m.Stack) > 0 {
			p, ok, err := nvfp4Experts(c, j, index, requantize)
			if err != nil {
				return nil, nil, err
			}
			if ok {
				passes = append(passes, pass{at: p.at, jobs: p.jobs})
			} else {
				rest = append(rest, j)
			}
			continue
		}
		rows, ok := rowOrder(j)
		if !ok || t.NVFP4 == nil || m.Interleaved || t.Shape[1]%64 != 0 {
			rest = append(rest, j)
			continue
		}
		if exact, err := t.NVFP4.GGUFExact(); err != nil {
			return nil, nil, err
		} else if !exact {
			rest = append(rest, j)
			continue
		}
		if requantize {
			j.out.DType = tensor.NVFP4
			rest = append(rest, j)
			continue
		}
		b, err := checkpoint.NVFP4Blocks(t.Name, t, rows)
		if err != nil {
			return nil, nil, err
		}
		pj := &job{out: tensor.Info{Name: m.Name, DType: tensor.NVFP4, Shape: m.Shape.Clone()}, src: b,
			m: Mapping{Name: m.Name, Source: m.Source, Shape: m.Shape, Blocks: tensor.NVFP4}}
		p := pass{at: index[t.Name], jobs: []*job{pj}}
		scale, err := t.NVFP4.Scale()
		if err != nil {
			return nil, nil, err
		}
		in, _, err := t.NVFP4.InputScale()
		if err != nil {
			return nil, nil, err
		}
		base := strings.TrimSuffix(t.Name, ".weight")
		for _, s := range []struct {
			suffix, from string
			v            float32
		}{{".scale", base + ".weight_scale_2", scale}, {".input_scale", base + ".input_scale", in}} {
			if math.Abs(float64(s.v)-1) < 1e-6 {
				continue
			}
			name := strings.Replace(m.Name, ".weight", s.suffix, 1)
			data := binary.LittleEndian.AppendUint32(nil, math.Float32bits(s.v))
			src := checkpoint.MemTensor(tensor.Info{Name: s.from, DType: tensor.F32, Shape: tensor.Shape{1}}, data)
			p.jobs = append(p.jobs, &job{out: tensor.Info{Name: name, DType: tensor.F32, Shape: tensor.Shape{1}}, src: src,
				m: Mapping{Name: name, Source: s.from, Shape: tensor.Shape{1}}})
		}
		passes = append(passes, p)
	}
	slices.SortStableFunc(passes, func(a, b pass) int { return a.at - b.at })
	for _, p := range passes {
		nv = append(nv, p.jobs...)
	}
	return nv, rest, finishJobs(slices.Concat(nv, rest))
}

// nvfp4ExpertPass is a stacked experts job's NVFP4 blocks and per-expert
// scale vectors, and where the converter writes them: at the last
// expert's weight in the checkpoint's order (index), when it has seen
// every expert of the layer and projection (_flush_nvfp4_experts).
type nvfp4ExpertPass struct {
	at   int
	jobs []*job
}

// nvfp4Experts carries a MoE projection that the checkpoint stores one
// NVFP4 tensor per expert (ModelOpt's and compressed-tensors' Qwen3-MoE or
// Mixtral) into GGUF as llama.cpp's converter does (d32676d7,
// conversion/base.py _flush_nvfp4_experts): the experts' blocks
// (NVFP4Blocks) stacked in expert order into one [experts][rows][cols]
// NVFP4 tensor, then "<name>.scale" and "<name>.input_scale", F32
// [experts], each expert's per-tensor factor and activation scale, unless
// every one is 1 (numpy's allclose with atol 1e-6, as the converter
// tests). ok is false when the job is not such a stack (a stacked part
// that is no NVFP4 layer, rows not whole blocks of 64, an MLX layer whose
// scale bytes ggml reads differently), or when requantize, in which case
// the output is still NVFP4 but encoded from the float values.
func nvfp4Experts(c *checkpoint.Checkpoint, j *job, index map[string]int, requantize bool) (p nvfp4ExpertPass, ok bool, err error) {
	m := j.m
	if m.Transform != nil || m.Interleaved || m.Join || m.Blocks != 0 || m.OCP != "" || len(j.out.Shape) != 3 {
		return p, false, nil
	}
	parts := make([]*checkpoint.Tensor, len(m.Stack))
	for i, name := range m.Stack {
		t, found := c.Tensor(name)
		if !found || t.NVFP4 == nil || len(t.Shape) != 2 || t.Shape[1]%64 != 0 || !t.Shape.Equal(j.out.Shape[1:]) {
			return p, false, nil
		}
		if exact, err := t.NVFP4.GGUFExact(); err != nil || !exact {
			return p, false, err
		}
		parts[i] = t
	}
	if requantize {
		j.out.DType = tensor.NVFP4
		return p, false, nil
	}
	blocks := make([]*checkpoint.Tensor, len(parts))
	scales, inputs := make([]float32, len(parts)), make([]float32, len(parts))
	for i, t := range parts {
		if blocks[i], err = checkpoint.NVFP4Blocks(t.Name, t, nil); err != nil {
			return p, false, err
		}
		if scales[i], err = t.NVFP4.Scale(); err != nil {
			return p, false, err
		}
		if inputs[i], _, err = t.NVFP4.InputScale(); err != nil {
			return p, false, err
		}
		p.at = max(p.at, index[t.Name])
	}
	stacked, err := checkpoint.Stacked(m.Name, blocks)
	if err != nil {
		return p, false, err
	}
	p.jobs = append(p.jobs, &job{out: tensor.Info{Name: m.Name, DType: tensor.NVFP4, Shape: m.Shape.Clone()}, src: stacked,
		m: Mapping{Name: m.Name, Source: m.Source, Shape: m.Shape, Blocks: tensor.NVFP4}})
	base := strings.TrimSuffix(m.Source, ".weight")
	for _, s := range []struct {
		suffix, from string
		v            []float32
	}{{".scale", base + ".weight_scale_2", scales}, {".input_scale", base + ".input_scale", inputs}} {
		trivial := true
		for _, v := range s.v {
			// numpy.allclose(v, 1, atol=1e-6): |v−1| ≤ 1e-6 + 1e-5·1
			if math.Abs(float64(v)-1) > 1e-6+1e-5 {
				trivial = false
			}
		}
		if trivial {
			continue
		}
		name := strings.Replace(m.Name, ".weight", s.suffix, 1)
		var data []byte
		for _, v := range s.v {
			data = binary.LittleEndian.AppendUint32(data, math.Float32bits(v))
		}
		shape := tensor.Shape{int64(len(s.v))}
		src := checkpoint.MemTensor(tensor.Info{Name: s.from, DType: tensor.F32, Shape: shape}, data)
		p.jobs = append(p.jobs, &job{out: tensor.Info{Name: name, DType: tensor.F32, Shape: shape}, src: src,
			m: Mapping{Name: name, Source: s.from, Shape: shape}})
	}
	return p, true, nil
}
