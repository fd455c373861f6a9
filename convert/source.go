package convert

import (
	"fmt"
	"io"
	"slices"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/formats/safetensors"
	"github.com/tfconv/tfconv/tensor"
)

// Source presents the GGUF that Run would write from the Hugging Face
// checkpoint c with opts as a checkpoint, without writing it: the same
// metadata and tensors (names, dtypes, shapes, bytes), each converted when
// it is read, so one tensor is in memory at a time. quantize reads a
// Hugging Face checkpoint through it instead of a converted file on disk.
//
// With opts.To Safetensors it is the other way round: c is a GGUF (or a
// native file made from one) and the view is the Hugging Face directory Run
// would write from it (names mapped back, layouts undone, config.json and
// the tokenizer files as side files, tensors in the order the directory's
// safetensors file would hold them), again one tensor converted at a time.
func Source(c *checkpoint.Checkpoint, opts Options) (*checkpoint.Checkpoint, error) {
	if opts.To == Safetensors {
		return hfSource(c, opts)
	}
	if !c.HuggingFace() || c.LoRAConfig != nil {
		return nil, fmt.Errorf("convert: %s: a GGUF view is made of a Hugging Face model checkpoint", c.Path)
	}
	opts.nvfp4Float = true
	p, err := planToGGUF(c, opts)
	if err != nil {
		return nil, err
	}
	if err := checkGGUFJobs(c.Path, p.jobs); err != nil {
		return nil, err
	}
	chk := checkSources(c, p.jobs)
	tensors, err := lazyTensors(p.jobs, opts)
	if err != nil {
		return nil, err
	}
	view := checkpoint.Assemble(c.Path, checkpoint.GGUF, p.meta, tensors)
	view.SetSourceCheck(chk)
	return view, nil
}

// hfSource is Source's Hugging Face view of a GGUF checkpoint c.
func hfSource(c *checkpoint.Checkpoint, opts Options) (*checkpoint.Checkpoint, error) {
	if c.Source != checkpoint.GGUF || c.LoRAConfig != nil {
		return nil, fmt.Errorf("convert: %s: a Hugging Face view is made of a GGUF model checkpoint", c.Path)
	}
	p, err := planToHF(c, opts)
	if err != nil {
		return nil, err
	}
	// writeHF's order, which a reader of the folder reads back.
	infos := make([]tensor.Info, len(p.jobs))
	byName := map[string]*job{}
	for i, j := range p.jobs {
		infos[i] = tensor.Info{Name: j.out.Name, DType: j.out.DType, Shape: j.out.Shape}
		byName[j.out.Name] = j
	}
	jobs := make([]*job, len(infos))
	for i, in := range safetensors.ReferenceOrder(infos) {
		jobs[i] = byName[in.Name]
	}
	chk := checkSources(c, jobs)
	ts, err := lazyTensors(jobs, opts)
	if err != nil {
		return nil, err
	}
	view := checkpoint.AssembleDir(c.Path, slices.Clone(hfMetadata), ts, p.files)
	view.SetSourceCheck(chk)
	return view, nil
}

// lazyTensors are the outputs of jobs, each converted as it is read
// (engine.reader): about one chunk in memory at a time.
func lazyTensors(jobs []*job, opts Options) ([]*checkpoint.Tensor, error) {
	tensors := make([]*checkpoint.Tensor, len(jobs))
	for i, j := range jobs {
		j.allowOverflow = opts.AllowOverflow
		info := tensor.Info{Name: j.out.Name, DType: j.out.DType, Shape: j.out.Shape}
		var err error
		if info.Size, err = info.DType.ShapeBytes(info.Shape); err != nil {
			return nil, fmt.Errorf("convert: tensor %q: %w", info.Name, err)
		}
		_, whole := rowOrder(j)
		q4 := j.src.ExactQ4
		exact := q4 != tensor.Invalid && whole && info.DType == tensor.F32
		if exact && j.src.Exact != nil {
			// the values without the rounding the source presents
			j = &job{out: j.out, src: j.src.Exact, m: j.m, allowOverflow: j.allowOverflow}
		}
		tensors[i] = checkpoint.StreamTensor(info, j.src.File, func() io.Reader { return (&engine{}).reader(j) })
		if exact {
			tensors[i].ExactQ4 = q4 // its rows are the layer's, whole
		}
	}
	return tensors, nil
}
