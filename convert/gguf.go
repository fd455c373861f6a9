package convert

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"

	"github.com/tfconv/tfconv/internal/progress"

	"github.com/tfconv/tfconv/arch"
	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/formats/gguf"
	"github.com/tfconv/tfconv/internal/atomicfile"
	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/tensor"
	"github.com/tfconv/tfconv/tokenizer"
)

// GGUF keys the converter writes itself (the architecture's come from Arch).
const (
	keyArch         = "general.architecture"
	keyType         = "general.type"
	keyName         = "general.name"
	keySizeLabel    = "general.size_label"
	keyFileType     = "general.file_type"
	keyQuantVersion = "general.quantization_version"
	// quantVersion is ggml's GGML_QNT_VERSION.
	quantVersion = 2
)

// ProvenanceKeys are the GGUF keys that describe where a file came from
// rather than what the model is; they are derived from the source's
// directory name (or Hub cache repository) as convert_hf_to_gguf.py
// derives them, and may legitimately differ between two conversions of the
// same model from differently named folders. general.name is always
// written; the others when the name yields them ("TinyLlama-1.1B-Chat-v1.0":
// basename TinyLlama, finetune Chat, version v1.0).
var ProvenanceKeys = []string{keyName, "general.organization", "general.basename", "general.finetune", "general.version"}

// ggufFileType is llama.cpp's LlamaFileType for an outtype: one of the
// types quant's records name for --outtype (quant.OutType).
func ggufFileType(outType string) (uint32, tensor.DType, error) {
	for _, d := range quant.OutTypes() {
		if strings.ToLower(d.String()) == outType {
			ft, _ := quant.FileTypeOf(d)
			return ft, d, nil
		}
	}
	return 0, 0, tensor.Unsupported("convert: unknown --outtype %q (one of %s)", outType, strings.Join(OutTypes, ", "))
}

// blockFileType is general.file_type of a GGUF written at file type ft
// whose weights include blocks of type d copied from the checkpoint: the
// newer converter calls an MXFP4 checkpoint's GGUF MOSTLY_MXFP4_MOE and an
// NVFP4 one's MOSTLY_NVFP4 whatever float type (f32, f16, bf16) its other
// tensors get.
func blockFileType(d tensor.DType, ft uint32) (uint32, bool) {
	switch gguf.FileType(ft) {
	case gguf.FileTypeF32, gguf.FileTypeF16, gguf.FileTypeBF16:
		switch d {
		case tensor.MXFP4:
			return uint32(gguf.FileTypeMXFP4MoE), true
		case tensor.NVFP4:
			return uint32(gguf.FileTypeNVFP4), true
		}
	}
	return 0, false
}

// planToGGUF converts a Hugging Face checkpoint (or a native file made from
// one) to GGUF as convert_hf_to_gguf.py does.
func planToGGUF(c *checkpoint.Checkpoint, opts Options) (*plan, error) {
	raw, err := c.Config()
	if err != nil {
		return nil, err
	}
	if raw == nil {
		return nil, fmt.Errorf("convert: %s has no config.json; it is needed to know the architecture and hyper-parameters", c.Path)
	}
	cfg := Config(raw)
	fam, err := lookupConfig(cfg, opts.Arch)
	if err != nil {
		return nil, err
	}
	if len(c.Tensors) == 0 {
		return nil, fmt.Errorf("convert: %s has no tensors", c.Path)
	}
	outType := opts.OutType
	switch outType {
	case "":
		outType = OutF16 // convert_hf_to_gguf.py's default
	case OutAuto:
		// --outtype auto: "can't use torch_dtype in config.json, because
		// some finetunes lie": the first tensor decides.
		outType = OutBF16
		if c.Tensors[0].DType == tensor.F16 {
			outType = OutF16
		}
	}
	ft, want, err := ggufFileType(outType)
	if err != nil {
		return nil, err
	}
	infos := make([]tensor.Info, len(c.Tensors))
	for i, t := range c.Tensors {
		infos[i] = t.Info
	}
	if fam.ConfigFromTensors != nil {
		names := make([]string, len(infos))
		for i, t := range infos {
			names[i] = t.Name
		}
		own := make(Config, len(cfg)+1)
		for k, v := range cfg {
			own[k] = v
		}
		fam.ConfigFromTensors(own, names)
		cfg = own
	}
	maps, dropped, err := fam.ToGGUF(cfg, infos)
	if err != nil {
		return nil, err
	}
	blockParts := map[string]bool{} // the parts of block-stored weights, copied as they are
	for _, m := range maps {
		if m.Blocks != 0 {
			blockParts[m.Source], blockParts[m.Scales] = true, true
			// The converter learns the checkpoint is MXFP4 as it repacks
			// the blocks, which --vocab-only does not do: the outtype's.
			if bft, ok := blockFileType(m.Blocks, ft); ok && !opts.VocabOnly {
				ft = bft
			}
		}
	}
	for _, t := range c.Tensors {
		if !blockParts[t.Name] && (!t.DType.Float() || t.DType.Quantized()) {
			return nil, tensor.Unsupported("convert: tensor %q is %v; Hugging Face input must be float", t.Name, t.DType)
		}
	}
	p := &plan{format: GGUF, arch: fam.Name, outType: outType, dropped: dropped, warn: arch.DropWarnings(dropped)}
	if y, _, ok, _ := arch.YaRNOf(cfg); ok && y.NoTruncate {
		// Every published gpt-oss says so, and the converter writes it
		// regardless: said, not refused.
		p.warn = append(p.warn, "config.json: rope_scaling truncate false is not kept: GGUF has no such key, and llama.cpp "+
			"floors and ceils YaRN's ramp bounds (transformers keeps them as computed)")
	}
	if p.jobs, err = jobsFor(c, maps, dropped, func(m Mapping, _ *checkpoint.Tensor) tensor.DType {
		if m.Blocks != 0 {
			return m.Blocks
		}
		return fam.TensorType(m.Name, m.Shape, want)
	}); err != nil {
		return nil, err
	}
	for _, j := range p.jobs {
		j.reencode = opts.Requantize && j.m.Blocks != 0 // MXFP4 → MXFP4 decoded and encoded again
	}
	// MLX's mxfp4 layers as GGUF MXFP4 blocks; not in quantize's view of
	// the source (nvfp4Float), which reads the float values.
	if !opts.nvfp4Float {
		var mx bool
		if p.jobs, mx, err = mxfp4Pass(p.jobs, opts.Requantize); err != nil {
			return nil, err
		}
		if bft, ok := blockFileType(tensor.MXFP4, ft); ok && mx && !opts.VocabOnly {
			ft = bft
		}
	}
	nv, others := []*job(nil), p.jobs
	if !opts.nvfp4Float {
		if nv, others, err = nvfp4Pass(c, p.jobs, opts.Requantize); err != nil {
			return nil, err
		}
	}
	if slices.ContainsFunc(slices.Concat(nv, others), func(j *job) bool { return j.out.DType == tensor.NVFP4 }) && !opts.VocabOnly {
		if bft, ok := blockFileType(tensor.NVFP4, ft); ok {
			ft = bft
		}
	}
	gen, err := generated(fam, cfg)
	if err != nil {
		return nil, err
	}
	p.jobs = slices.Concat(nv, gen, others)
	for _, j := range p.jobs {
		j.ggufBF16 = true
	}
	outs := make([]tensor.Info, len(p.jobs))
	for i, j := range p.jobs {
		outs[i] = j.out
	}
	archKV, err := fam.GGUFMetadata(cfg, ft)
	if err != nil {
		return nil, fmt.Errorf("convert: %w", err)
	}
	md := tensor.Metadata{{Key: keyArch, Value: tensor.String(fam.Name)}}
	var rest tensor.Metadata
	for _, kv := range archKV {
		if fam.Early(kv.Key) {
			md = append(md, kv)
		} else {
			rest = append(rest, kv)
		}
	}
	if opts.VocabOnly {
		// write_vocab: no tensors, so no parameter count.
		p.jobs, outs = nil, nil
	}
	var total int64
	for _, t := range outs {
		total += t.NumElements()
	}
	who, warn, err := loadAuthorship(c, cfg, opts, total, func() string { return ggufSizeLabel(outs) })
	if err != nil {
		return nil, err
	}
	p.warn = append(p.warn, warn...)
	p.name = who
	md = append(md, tensor.KV{Key: keyType, Value: tensor.String("model")})
	md = append(md, who.kvs()...)
	md = append(md, rest...)
	tok, err := tokenizer.FromSource(c.Sides())
	switch {
	case err == nil:
		var prefix *bool
		rules := fam.Vocab.For(cfg)
		if rules.SpacePrefixFromConfig {
			if prefix, err = configAddPrefixSpace(c.Sides()); err != nil {
				return nil, err
			}
		}
		vmd, err := rules.Apply(tok.GGUFMetadata(), prefix, cfg)
		if err != nil {
			return nil, err
		}
		md = append(md, vmd...)
		if n := tok.PreNote(); n != "" {
			p.preNote = fmt.Sprintf("tokenizer.ggml.pre %q: %s", tok.Pre(), n)
		}
	case errors.Is(err, fs.ErrNotExist):
		p.warn = append(p.warn, "no tokenizer files: the GGUF has no tokenizer.ggml.* keys and llama.cpp will not load it without a vocabulary")
	default:
		return nil, err
	}
	md = append(md, tensor.KV{Key: keyQuantVersion, Value: tensor.Uint32(quantVersion)})
	p.meta = md
	return p, nil
}

// jobsFor turns mappings into jobs and checks that every input tensor is
// used exactly once (copies aside) or dropped. dtype gives each output
// tensor's type from its mapping and source tensor.
func jobsFor(c *checkpoint.Checkpoint, maps []Mapping, dropped []Dropped, dtype func(Mapping, *checkpoint.Tensor) tensor.DType) ([]*job, error) {
	used := map[string]int{}
	for _, d := range dropped {
		used[d.Name]++
	}
	seen := map[string]bool{}
	var jobs []*job
	for _, m := range maps {
		if seen[m.Name] {
			return nil, fmt.Errorf("convert: two tensors map to %q", m.Name)
		}
		seen[m.Name] = true
		switch {
		case m.Copy:
		case m.Blocks != 0 || m.Interleaved:
			switch {
			case len(m.Stack) > 0:
				// GGUF → HF: the values and the scales read the same
				// tensors; count them once.
				if m.OCP != arch.ScalesSuffix {
					for _, n := range m.Stack {
						used[n]++
					}
				}
			case m.Part == 0:
				used[m.Source]++
				if m.Blocks != 0 {
					used[m.Scales]++
				}
			}
		case len(m.Stack) > 0:
			for _, name := range m.Stack {
				used[name]++
			}
		case m.Parts > 0:
			if m.Part == 0 {
				used[m.Source]++
			}
		case m.Cut > 1: // the first part counted it
		default:
			used[m.Source]++
		}
		t, err := checkpoint.MappedTensor(c, m)
		if err != nil {
			return nil, fmt.Errorf("convert: %w", err)
		}
		jobs = append(jobs, &job{out: tensor.Info{Name: m.Name, DType: dtype(m, t), Shape: m.Shape}, src: t, m: m})
	}
	for _, t := range c.Tensors {
		switch used[t.Name] {
		case 1:
		case 0:
			return nil, fmt.Errorf("convert: unexpected tensor %q: neither converted nor dropped", t.Name)
		default:
			return nil, fmt.Errorf("convert: tensor %q used %d times", t.Name, used[t.Name])
		}
	}
	return jobs, finishJobs(jobs)
}

// identityJobs copies every tensor under its own name, as dtype says.
func identityJobs(c *checkpoint.Checkpoint, dtype func(*checkpoint.Tensor) tensor.DType) ([]*job, error) {
	var jobs []*job
	for _, t := range c.Tensors {
		jobs = append(jobs, &job{out: tensor.Info{Name: t.Name, DType: dtype(t), Shape: t.Shape.Clone()}, src: t,
			m: Mapping{Name: t.Name, Source: t.Name, Shape: t.Shape}})
	}
	return jobs, finishJobs(jobs)
}

// planGGUFRepack writes a GGUF (a split set, or a native file made from
// one) as one GGUF file with the same tensors and metadata; with an
// --outtype, each tensor gets the type convert_hf_to_gguf.py would give it
// at that outtype (Family.TensorType by its GGUF name; the family's own
// F32 roles and the 1-D tensors stay F32) and general.file_type says the
// outtype. A tensor already of its type is copied as it is; a quantized
// one is dequantized to a float type, and re-encoded in another quantized
// type only with opts.AllowRequantize (llama-quantize's rule), which the
// report counts as lossy.
func planGGUFRepack(c *checkpoint.Checkpoint, opts Options) (*plan, error) {
	var md tensor.Metadata
	for _, kv := range c.Metadata {
		if !strings.HasPrefix(kv.Key, "split.") {
			md = append(md, kv)
		}
	}
	archName, _ := md.Str(keyArch)
	if opts.OutType == "" || opts.OutType == OutAuto {
		jobs, err := identityJobs(c, func(t *checkpoint.Tensor) tensor.DType { return t.DType })
		if err != nil {
			return nil, err
		}
		reencodeSameType(jobs, opts.Requantize)
		return &plan{format: GGUF, arch: archName, outType: OutAuto, meta: md, jobs: jobs}, nil
	}
	ft, want, err := ggufFileType(opts.OutType)
	if err != nil {
		return nil, err
	}
	typeOf := func(name string, shape tensor.Shape) tensor.DType { return arch.GGUFTensorType(name, shape, want) }
	if fam, err := arch.Lookup(archName); err == nil {
		typeOf = func(name string, shape tensor.Shape) tensor.DType { return fam.TensorType(name, shape, want) }
	}
	var requant []string
	jobs, err := identityJobs(c, func(t *checkpoint.Tensor) tensor.DType {
		d := typeOf(t.Name, t.Shape)
		if t.DType.Quantized() && d.Quantized() && d != t.DType {
			requant = append(requant, t.Name)
		}
		return d
	})
	if err != nil {
		return nil, err
	}
	if len(requant) > 0 && !opts.AllowRequantize {
		first, _ := c.Tensor(requant[0])
		return nil, tensor.Unsupported("convert: %s: --outtype %s would re-encode %d quantized tensor(s) in another quantized type (%s, %v → %v); that loses precision twice: pass --allow-requantize to do it, or --outtype f32 to dequantize",
			c.Path, opts.OutType, len(requant), first.Name, first.DType, typeOf(first.Name, first.Shape))
	}
	reencodeSameType(jobs, opts.Requantize)
	md.Set(keyFileType, tensor.Uint32(ft))
	return &plan{format: GGUF, arch: archName, outType: opts.OutType, meta: md, jobs: jobs}, nil
}

// reencodeSameType, with requantize (--requantize), sends each quantized
// tensor a GGUF → GGUF repack keeps in its own type through the decoder and
// that type's encoder instead of copying its blocks, so that the report
// says "reencoded" (or "exact" where the blocks come out the same) with
// the largest error.
func reencodeSameType(jobs []*job, requantize bool) {
	if !requantize {
		return
	}
	for _, j := range jobs {
		if j.src.DType == j.out.DType && j.out.DType.Quantized() {
			j.reencode = true
		}
	}
}

// checkGGUFJobs refuses, before anything is written, an output tensor the
// GGUF writer would refuse (a 0 dimension, say), naming the source.
func checkGGUFJobs(src string, jobs []*job) error {
	for _, j := range jobs {
		if err := gguf.CheckTensor(j.out); err != nil {
			return fmt.Errorf("convert: %s: %w", src, err)
		}
	}
	return nil
}

// writeGGUF writes the plan as one GGUF file, atomically.
func writeGGUF(dst string, force bool, inputs []string, p *plan, prog *progress.Meter) error {
	f, err := atomicfile.Create(dst, force, inputs...)
	if err != nil {
		return err
	}
	defer f.Abort()
	if err := writeGGUFTo(f, p, prog); err != nil {
		return err
	}
	return f.Commit()
}

// writeGGUFTo writes the plan as one GGUF file into f, not committed.
func writeGGUFTo(f *atomicfile.File, p *plan, prog *progress.Meter) error {
	infos := make([]tensor.Info, len(p.jobs))
	for i, j := range p.jobs {
		infos[i] = tensor.Info{Name: j.out.Name, DType: j.out.DType, Shape: j.out.Shape}
	}
	gw, err := gguf.NewWriter(f.Stream(), p.meta, infos)
	if err != nil {
		return err
	}
	e := &engine{progress: prog}
	for _, j := range p.jobs {
		w, err := gw.Next(j.out.Name)
		if err != nil {
			return err
		}
		if err := e.write(w, j); err != nil {
			return err
		}
	}
	return gw.Close()
}

// writeGGUFSplit writes the plan as a gguf-split set named after dst
// (with opts.Part, that part's shards) and returns the shards it wrote. Each
// shard goes to a temporary file beside its destination and is renamed
// into place once written and synced, its sha256 first recorded in
// DST.tfconv-resume (splitOut): an interrupted run leaves whole shards and
// the record, from which --resume (opts.Resume) continues; the record goes
// when the set is done. resumed reports whether shards of an earlier run
// were kept.
func writeGGUFSplit(dst string, c *checkpoint.Checkpoint, opts Options, inputs []string, p *plan, prog *progress.Meter, note func(string)) (written []string, resumed bool, err error) {
	prefix := strings.TrimSuffix(dst, ".gguf")
	infos := make([]tensor.Info, len(p.jobs))
	for i, j := range p.jobs {
		infos[i] = tensor.Info{Name: j.out.Name, DType: j.out.DType, Shape: j.out.Shape}
	}
	var out *splitOut
	sw, err := gguf.NewSplitWriter(prefix, opts.SplitMaxBytes, p.meta, infos, func(name string) (io.WriteCloser, error) { return out.create(name) })
	if err != nil {
		return nil, false, err
	}
	id := resumeIdentity("convert", map[string]string{"outtype": p.outType, "split-max-size": fmt.Sprint(opts.SplitMaxBytes),
		"arch": opts.Arch, "part": opts.Part.String()}, c, sw.Shards())
	// Refuses existing shards before writing any.
	if out, err = openSplitOut(dst, opts.Part, id, sw.Shards(), opts.Resume, opts.Force, inputs, note); err != nil {
		return nil, false, err
	}
	defer func() {
		out.abort()
		if errors.Is(err, checkpoint.ErrSourceMismatch) {
			out.discard()
		}
	}()
	if err := sw.Range(out.start, out.end); err != nil {
		return nil, false, err
	}
	want := map[string]bool{}
	var names []string
	for _, t := range sw.Pending() {
		want[t.Name] = true
		names = append(names, t.Name)
	}
	// A part (or a resumed run) reads only its shards' sources: the
	// check waits for those, and hashes only the files they touch.
	p.check.Only(names)
	e := &engine{progress: prog}
	for _, j := range p.jobs {
		if !want[j.out.Name] {
			continue
		}
		w, err := sw.Next(j.out.Name)
		if err != nil {
			return nil, false, err
		}
		if err := e.write(w, j); err != nil {
			return nil, false, err
		}
	}
	if err := sw.Close(); err != nil {
		return nil, false, err
	}
	if err := out.finish(); err != nil {
		return nil, false, err
	}
	return out.names[out.start:out.end], out.start > out.first, nil
}

// ggufLayout is the GGUF files a conversion of p to dst writes, as planned:
// each shard of a split set, or the one file.
func ggufLayout(dst string, to Format, p *plan, opts Options) ([]gguf.Shard, error) {
	if to != GGUF {
		return nil, fmt.Errorf("convert: a plan is made for GGUF output, not %s", to)
	}
	infos := make([]tensor.Info, len(p.jobs))
	for i, j := range p.jobs {
		infos[i] = tensor.Info{Name: j.out.Name, DType: j.out.DType, Shape: j.out.Shape}
	}
	if opts.SplitMaxBytes > 0 {
		sw, err := gguf.NewSplitWriter(strings.TrimSuffix(dst, ".gguf"), opts.SplitMaxBytes, p.meta, infos, nil)
		if err != nil {
			return nil, err
		}
		return sw.Shards(), nil
	}
	size, placed, err := gguf.FileSize(p.meta, infos)
	if err != nil {
		return nil, err
	}
	return []gguf.Shard{{Name: dst, Tensors: placed, Size: size}}, nil
}
