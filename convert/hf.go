package convert

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/tfconv/tfconv/arch"
	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/formats/mlx"
	"github.com/tfconv/tfconv/formats/safetensors"
	"github.com/tfconv/tfconv/internal/atomicfile"
	"github.com/tfconv/tfconv/internal/progress"
	"github.com/tfconv/tfconv/tensor"
	"github.com/tfconv/tfconv/tokenizer"
)

// torchDType is config.json's torch_dtype for an HF output dtype.
var torchDType = map[tensor.DType]string{tensor.F32: "float32", tensor.F16: "float16", tensor.BF16: "bfloat16"}

// hfTypes is the dtype policy of Hugging Face output. safetensors holds a
// dtype per tensor and transformers casts at load time as torch_dtype says,
// so by default (auto) every tensor keeps its own float type and a round
// trip loses nothing; an explicit --outtype casts every tensor to it, as
// save_pretrained does after model.to(dtype).
type hfTypes struct {
	name  string       // the outtype reported: the forced type's, or torch's under auto
	force tensor.DType // every tensor's type, or Invalid under auto
	torch tensor.DType // config.json torch_dtype
}

// of is the output dtype of a tensor stored as src: the forced type, or
// under auto src itself when transformers holds it (f32, f16, bf16) and f32
// otherwise (quantized tensors decode to f32 exactly, see lossless).
func (h hfTypes) of(src tensor.DType) tensor.DType {
	if h.force != tensor.Invalid {
		return h.force
	}
	if _, ok := torchDType[src]; ok {
		return src
	}
	return tensor.F32
}

// hfOutType resolves --outtype for Hugging Face output. Under auto,
// torch_dtype is the type most of the checkpoint's parameters have once
// each tensor has its output type.
func hfOutType(c *checkpoint.Checkpoint, outType string) (hfTypes, error) {
	names := map[tensor.DType]string{tensor.F32: OutF32, tensor.F16: OutF16, tensor.BF16: OutBF16}
	switch outType {
	case OutF32, OutF16, OutBF16:
		for d, n := range names {
			if n == outType {
				return hfTypes{name: n, force: d, torch: d}, nil
			}
		}
	case "", OutAuto:
	default:
		return hfTypes{}, tensor.Unsupported("convert: --outtype %s: safetensors output holds f32, f16 or bf16", outType)
	}
	var h hfTypes
	count := map[tensor.DType]int64{}
	for _, t := range c.Tensors {
		count[h.of(t.DType)] += t.NumElements()
	}
	best := tensor.F32
	for _, d := range []tensor.DType{tensor.F16, tensor.BF16} {
		if count[d] > count[best] {
			best = d
		}
	}
	h.name, h.torch = names[best], best
	return h, nil
}

// planToHF converts a GGUF (or a native file made from one) to a Hugging
// Face directory.
func planToHF(c *checkpoint.Checkpoint, opts Options) (*plan, error) {
	archName := opts.Arch
	if archName == "" {
		archName, _ = c.Metadata.Str(keyArch)
	}
	fam, err := arch.Lookup(archName)
	if err != nil {
		return nil, err
	}
	types, err := hfOutType(c, opts.OutType)
	if err != nil {
		return nil, err
	}
	infos := make([]tensor.Info, len(c.Tensors))
	for i, t := range c.Tensors {
		infos[i] = t.Info
	}
	maps, dropped, err := fam.ToHF(c.Metadata, infos)
	if err != nil {
		return nil, err
	}
	maps, dropped, cfgInfos, err := untieCopies(fam, c, maps, dropped, infos)
	if err != nil {
		return nil, err
	}
	p := &plan{format: Safetensors, arch: fam.Name, outType: types.name, dropped: dropped, files: map[string][]byte{}}
	dtype := func(m Mapping, src *checkpoint.Tensor) tensor.DType {
		if m.OCP != "" {
			return tensor.U8 // a packed weight's values or scales, as Hugging Face keeps them
		}
		return types.of(src.DType)
	}
	if p.jobs, err = jobsFor(c, maps, dropped, dtype); err != nil {
		return nil, err
	}
	cfg, err := fam.HFConfigOf(c.Metadata, cfgInfos)
	if err != nil {
		return nil, fmt.Errorf("convert: %w", err)
	}
	if err := configFromData(fam, c, cfg); err != nil {
		return nil, err
	}
	cfg["torch_dtype"] = torchDType[types.torch]
	if p.files["config.json"], err = marshalConfig(cfg); err != nil {
		return nil, err
	}
	if fam.HFWarning != "" {
		p.warn = append(p.warn, fam.HFWarning)
	}
	if gen := generationConfig(fam, cfg); gen != nil {
		p.files["generation_config.json"] = gen
	}
	if tokenizer.HasMetadata(c.Metadata) {
		tok, err := tokenizer.FromMetadata(c.Metadata, c.Path)
		if err != nil {
			return nil, err
		}
		files, err := tok.HFFiles()
		if err != nil {
			p.warn = append(p.warn, fmt.Sprintf("tokenizer files not written: %v", err))
		}
		for name, b := range files {
			p.files[name] = b
		}
	} else {
		p.warn = append(p.warn, "the GGUF has no tokenizer.ggml.* keys: no tokenizer files written")
	}
	return p, nil
}

// generationConfig is the generation_config.json transformers derives from
// config.json for a causal LM (what save_pretrained writes when the model
// has no separate one), or nil for encoders.
func generationConfig(f *arch.Family, cfg Config) []byte {
	if f.Graph.EncoderOnly {
		return nil
	}
	g := Config{"_from_model_config": true}
	for _, k := range []string{"bos_token_id", "eos_token_id", "pad_token_id"} {
		if v, ok := cfg[k]; ok {
			g[k] = v
		}
	}
	b, err := marshalConfig(g)
	if err != nil {
		return nil
	}
	return b
}

// marshalConfig writes a config the way transformers does: indented by two
// spaces, keys sorted, newline at the end.
func marshalConfig(c Config) ([]byte, error) {
	b, err := json.MarshalIndent(map[string]any(c), "", "  ")
	if err != nil {
		return nil, fmt.Errorf("convert: config.json: %w", err)
	}
	return append(b, '\n'), nil
}

// planHFRecast rewrites a Hugging Face checkpoint as a Hugging Face
// directory: same names, side files copied, tensors cast to --outtype and
// resharded to --max-shard-size.
func planHFRecast(c *checkpoint.Checkpoint, opts Options) (*plan, error) {
	types, err := hfOutType(c, opts.OutType)
	if err != nil {
		return nil, err
	}
	// Integer tensors (gpt-oss's MXFP4 blocks and scales, buffers) are
	// copied as they are: there is nothing to cast.
	for _, t := range c.Tensors {
		if _, ok := torchDType[t.DType]; !ok && !t.DType.Integer() {
			return nil, tensor.Unsupported("convert: tensor %q is %v; only float tensors can be cast", t.Name, t.DType)
		}
	}
	jobs, err := identityJobs(c, func(t *checkpoint.Tensor) tensor.DType {
		if t.DType.Integer() {
			return t.DType
		}
		return types.of(t.DType)
	})
	if err != nil {
		return nil, err
	}
	p := &plan{format: Safetensors, outType: types.name, jobs: jobs, files: map[string][]byte{}}
	for _, name := range c.AuxNames() {
		b, err := c.ReadAux(name)
		if err != nil {
			return nil, err
		}
		p.files[name] = b
	}
	raw, err := c.Config()
	if err != nil {
		return nil, err
	}
	if raw != nil {
		cfg := Config(raw)
		p.arch, _ = cfg.Str("model_type")
		cfg["torch_dtype"] = torchDType[types.torch]
		if p.files["config.json"], err = marshalConfig(cfg); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// writeHF writes p as a Hugging Face directory at dst (WriteHFDir), tensors
// in the order transformers saves them.
func writeHF(dst string, force bool, p *plan, opts Options, prog *progress.Meter) (atomicfile.DirResult, error) {
	infos := make([]tensor.Info, len(p.jobs))
	byName := map[string]*job{}
	for i, j := range p.jobs {
		infos[i] = tensor.Info{Name: j.out.Name, DType: j.out.DType, Shape: j.out.Shape}
		byName[j.out.Name] = j
	}
	infos = safetensors.ReferenceOrder(infos)
	e := &engine{progress: prog}
	meta := hfMetadata
	if p.format == MLX {
		meta = mlx.Metadata
	}
	maxShard := opts.MaxShardBytes
	if maxShard <= 0 {
		maxShard = DefaultMaxShardBytes
	}
	return safetensors.WriteFolder(dst, force, p.files, infos, maxShard, meta, func(next func(string) (io.Writer, error)) error {
		for _, in := range infos {
			w, err := next(in.Name)
			if err != nil {
				return err
			}
			if err := e.write(w, byName[in.Name]); err != nil {
				return err
			}
		}
		return nil
	})
}

// WriteHFDir writes a Hugging Face directory at dst: the side files (base
// name → contents, config.json among them) and the tensors infos, as
// model.safetensors or, above maxShardBytes (0: DefaultMaxShardBytes),
// shards with model.safetensors.index.json, with transformers' "format":
// "pt" metadata. fill writes the tensor bodies through next, one per tensor
// in the order of infos. See safetensors.WriteFolder: dst appears whole or
// not at all, on SIGINT too; into an existing folder (force) only the files
// written here are replaced and an earlier save's stale weight files
// removed, as transformers' save_pretrained removes stale shards; every
// other file stays. The result names the files replaced and removed.
func WriteHFDir(dst string, force bool, files map[string][]byte, infos []tensor.Info, maxShardBytes int64,
	fill func(next func(name string) (io.Writer, error)) error) (atomicfile.DirResult, error) {
	if maxShardBytes <= 0 {
		maxShardBytes = DefaultMaxShardBytes
	}
	return safetensors.WriteFolder(dst, force, files, infos, maxShardBytes, hfMetadata, fill)
}

// hfMetadata is the __metadata__ of the safetensors files of Hugging Face
// output: transformers' "format": "pt".
var hfMetadata = tensor.Metadata{{Key: "format", Value: tensor.String("pt")}}
