package convert

import (
	"github.com/tfconv/tfconv/internal/progress"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/formats/native"
	"github.com/tfconv/tfconv/internal/atomicfile"
	"github.com/tfconv/tfconv/tensor"
)

// planNative repacks the source into a native file without changing a
// tensor, name or metadata entry; the side files (config.json, tokenizer
// files) go in as embedded files. A native file converts onwards exactly
// like its source (checkpoint.Open gives it the source's metadata and side
// files), so HF → native → GGUF equals HF → GGUF.
func planNative(c *checkpoint.Checkpoint, opts Options) (*plan, error) {
	if opts.OutType != "" && opts.OutType != OutAuto {
		return nil, tensor.Unsupported("convert: native output is a lossless repack of the source; --outtype %s needs --to gguf or safetensors", opts.OutType)
	}
	jobs, err := identityJobs(c, func(t *checkpoint.Tensor) tensor.DType { return t.DType })
	if err != nil {
		return nil, err
	}
	p := &plan{format: Native, outType: OutAuto, jobs: jobs, meta: c.Metadata, native: c, files: map[string][]byte{}}
	if a, ok := c.Metadata.Str(keyArch); ok {
		p.arch = a
	} else if raw, err := c.Config(); err == nil && raw != nil {
		p.arch, _ = Config(raw).Str("model_type")
	}
	return p, nil
}

func writeNative(dst string, force bool, inputs []string, p *plan, prog *progress.Meter) error {
	c := p.native
	var aux []native.AuxSpec
	var auxData [][]byte
	for _, name := range c.AuxNames() {
		b, err := c.ReadAux(name)
		if err != nil {
			return err
		}
		aux = append(aux, native.AuxSpec{Name: name, Size: int64(len(b))})
		auxData = append(auxData, b)
	}
	specs := make([]native.TensorSpec, len(p.jobs))
	for i, j := range p.jobs {
		specs[i] = native.TensorSpec{Info: tensor.Info{Name: j.out.Name, DType: j.out.DType, Shape: j.out.Shape}, Attrs: j.src.Attrs}
	}
	f, err := atomicfile.Create(dst, force, inputs...)
	if err != nil {
		return err
	}
	defer f.Abort()
	nw, err := native.NewWriter(f.Stream(), native.Header{Source: string(c.Source), SourceInfo: c.SourceInfo, Metadata: c.Metadata}, aux, specs)
	if err != nil {
		return err
	}
	for i, a := range aux {
		w, err := nw.NextAux(a.Name)
		if err != nil {
			return err
		}
		if _, err := w.Write(auxData[i]); err != nil {
			return err
		}
	}
	e := &engine{progress: prog}
	for _, j := range p.jobs {
		w, err := nw.Next(j.out.Name)
		if err != nil {
			return err
		}
		if err := e.write(w, j); err != nil {
			return err
		}
	}
	if err := nw.Close(); err != nil {
		return err
	}
	return f.Commit()
}
