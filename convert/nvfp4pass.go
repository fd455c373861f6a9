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
