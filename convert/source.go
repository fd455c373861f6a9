package convert

import (
	"bytes"
	"fmt"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/tensor"
)

// Source presents the GGUF that Run would write from the Hugging Face
// checkpoint c with opts as a checkpoint, without writing it: the same
// metadata and tensors (names, dtypes, shapes, bytes), each converted when
// it is read, so one tensor is in memory at a time. quantize reads a
// Hugging Face checkpoint through it instead of a converted file on disk.
func Source(c *checkpoint.Checkpoint, opts Options) (*checkpoint.Checkpoint, error) {
	if !c.HuggingFace() || c.LoRAConfig != nil {
		return nil, fmt.Errorf("convert: %s: a GGUF view is made of a Hugging Face model checkpoint", c.Path)
	}
	p, err := planToGGUF(c, opts)
	if err != nil {
		return nil, err
	}
	if err := checkGGUFJobs(c.Path, p.jobs); err != nil {
		return nil, err
	}
	tensors := make([]*checkpoint.Tensor, len(p.jobs))
	for i, j := range p.jobs {
		j.allowOverflow = opts.AllowOverflow
		info := tensor.Info{Name: j.out.Name, DType: j.out.DType, Shape: j.out.Shape}
		if info.Size, err = info.DType.ShapeBytes(info.Shape); err != nil {
			return nil, fmt.Errorf("convert: tensor %q: %w", info.Name, err)
		}
		tensors[i] = checkpoint.LazyTensor(info, j.src.File, func() ([]byte, error) {
			var buf bytes.Buffer
			buf.Grow(int(info.Size))
			if err := (&engine{}).write(&buf, j); err != nil {
				return nil, err
			}
			return buf.Bytes(), nil
		})
	}
	return checkpoint.Assemble(c.Path, checkpoint.GGUF, p.meta, tensors), nil
}
