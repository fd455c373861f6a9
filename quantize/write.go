package quantize

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/formats/gguf"
	"github.com/tfconv/tfconv/formats/native"
	"github.com/tfconv/tfconv/formats/safetensors"
	"github.com/tfconv/tfconv/tensor"
)

// Format is an output container.
type Format string

// The output formats.
const (
	GGUF        Format = "gguf"
	Native      Format = "native"
	Safetensors Format = "safetensors"
)

// ParseFormat parses a --to value.
func ParseFormat(s string) (Format, error) {
	switch f := Format(strings.ToLower(s)); f {
	case GGUF, Native, Safetensors:
		return f, nil
	}
	return "", fmt.Errorf("quantize: unknown output format %q (gguf, native or safetensors)", s)
}

// GGUF keys llama-quantize sets.
const (
	keyFileType     = "general.file_type"
	keyQuantVersion = "general.quantization_version"
	// quantVersion is ggml's GGML_QNT_VERSION.
	quantVersion = 2
)

// OutputMetadata is the input's metadata as llama-quantize writes it:
// every key in order, then general.quantization_version = 2 and
// general.file_type = the target's ftype, each removed and appended
// (llama-quantize re-sets both with gguf_set_val_u32, which moves a key
// that is there to the end; see shared/fixtures/interop/llama/README.md:
// an input from a newer convert_hf_to_gguf.py, which writes the version
// before the tokenizer keys, shows it). split.* keys are dropped: the
// output is one file.
func OutputMetadata(c *checkpoint.Checkpoint, t Target) tensor.Metadata {
	var m tensor.Metadata
	for _, kv := range c.Metadata {
		if kv.Key == keyFileType || kv.Key == keyQuantVersion || strings.HasPrefix(kv.Key, "split.") {
			continue
		}
		m = append(m, kv)
	}
	ft := tensor.Uint32(uint32(t.FileType))
	if v, ok := c.Metadata.Get(keyFileType); ok && t.Copy {
		ft = v // llama-quantize's COPY keeps the input's file type
	}
	return append(m, tensor.KV{Key: keyQuantVersion, Value: tensor.Uint32(quantVersion)},
		tensor.KV{Key: keyFileType, Value: ft})
}

// withKeys is m with each of extra removed and appended.
func withKeys(m, extra tensor.Metadata) tensor.Metadata {
	for _, kv := range extra {
		m = slices.DeleteFunc(m, func(o tensor.KV) bool { return o.Key == kv.Key })
		m = append(m, kv)
	}
	return m
}

// Keys llama-quantize --imatrix writes (examples/quantize/quantize.cpp).
const (
	KeyImatrixFile     = "quantize.imatrix.file"
	KeyImatrixDataset  = "quantize.imatrix.dataset"
	KeyImatrixEntries  = "quantize.imatrix.entries_count"
	KeyImatrixChunks   = "quantize.imatrix.chunks_count"
	maxImatrixKVString = 127 // llama_model_kv_override's val_str holds 127 bytes
)

// ImatrixMetadata is what llama-quantize c392e509 records of the
// importance matrix it used: the file as named on its command line and the
// dataset (each cut to 127 bytes), the entries used (after
// --include-weights/--exclude-weights) and the chunks, when known (> 0).
func ImatrixMetadata(file, dataset string, entries, chunks int) tensor.Metadata {
	cut := func(s string) string { return s[:min(len(s), maxImatrixKVString)] }
	m := tensor.Metadata{{Key: KeyImatrixFile, Value: tensor.String(cut(file))}}
	if dataset != "" {
		m = append(m, tensor.KV{Key: KeyImatrixDataset, Value: tensor.String(cut(dataset))})
	}
	m = append(m, tensor.KV{Key: KeyImatrixEntries, Value: tensor.Int32(int32(entries))})
	if chunks > 0 {
		m = append(m, tensor.KV{Key: KeyImatrixChunks, Value: tensor.Int32(int32(chunks))})
	}
	return m
}

// Check reports why plan cannot be written as format f from c, or nil.
func Check(c *checkpoint.Checkpoint, plan []Choice, t Target, f Format) error {
	if c.HuggingFace() && f != Safetensors {
		return tensor.Unsupported("quantize: %s is a Hugging Face checkpoint; turning it into %s is conversion "+
			"(tensor names, layouts, metadata): convert it first with 'tfconv convert', then quantize the result",
			c.Path, f)
	}
	if err := CheckTarget(t, f); err != nil {
		return err
	}
	if f == GGUF {
		// What the GGUF writer would refuse, refused before any work (and
		// by --dry-run).
		for _, in := range OutputInfos(plan) {
			if err := gguf.CheckTensor(in); err != nil {
				return fmt.Errorf("quantize: %s: %w", c.Path, err)
			}
		}
	}
	if f == Safetensors {
		for _, ch := range plan {
			if _, ok := ch.Type.SafetensorsName(); !ok {
				return tensor.Unsupported("quantize: tensor %q: %v has no safetensors dtype", ch.Tensor.Name, ch.Type)
			}
		}
	}
	return nil
}

// CheckTarget reports why target t cannot be written as format f, or nil:
// the part of Check that needs no input, for refusing before any work.
func CheckTarget(t Target, f Format) error {
	switch f {
	case GGUF:
		// ggml has no type for int8 rows with a float32 scale each (Q8_0
		// is the 8-bit type llama.cpp loads), so no GGUF reader could run it.
		if t.Type == tensor.I8 {
			return tensor.Unsupported("quantize: int8 with per-row scales has no GGUF type; use --to native or --to safetensors")
		}
	case Safetensors:
		switch {
		case t.Copy:
			return tensor.Unsupported("quantize: --type copy keeps each tensor's type, which a Hugging Face directory may not hold; " +
				"write GGUF or native (DST ending .gguf or .tfn, or --to), or pick f32, f16, bf16 or int8")
		case t.Type != tensor.I8 && t.Type != tensor.F16 && t.Type != tensor.BF16 && t.Type != tensor.F32:
			return tensor.Unsupported("quantize: safetensors holds f32, f16, bf16 and int8 output, not %s; use --to gguf or native "+
				"(or a DST ending .gguf or .tfn)", t.Name)
		}
	case Native:
	default:
		return fmt.Errorf("quantize: unknown output format %q", f)
	}
	return nil
}

// Write quantizes c by plan into w as format f and returns the report. The
// GGUF and native metadata is OutputMetadata; native output records Source
// "gguf" and, for int8 tensors, the quant.scale/quant.axis attributes
// pointing at the "<name>.scale" companion. Safetensors output carries no
// metadata: GGUF's typed KVs do not fit its string map.
func Write(w io.Writer, c *checkpoint.Checkpoint, plan []Choice, t Target, f Format, opts RunOptions) (*Report, error) {
	if err := Check(c, plan, t, f); err != nil {
		return nil, err
	}
	infos := OutputInfos(plan)
	type closer interface {
		Sink
		Close() error
	}
	var sink closer
	switch f {
	case GGUF:
		meta, ginfos := GGUFLayout(c, plan, t, opts)
		gw, err := gguf.NewWriter(w, meta, ginfos)
		if err != nil {
			return nil, err
		}
		sink = gw
	case Native:
		var specs []native.TensorSpec
		for _, in := range infos {
			spec := native.TensorSpec{Info: in}
			if in.DType == tensor.I8 {
				spec.Attrs = tensor.Metadata{
					{Key: native.AttrQuantScale, Value: tensor.String(in.Name + tensor.ScaleSuffix)},
					{Key: native.AttrQuantAxis, Value: tensor.Int32(0)},
				}
			}
			specs = append(specs, spec)
		}
		src := string(c.Source)
		if c.Format == checkpoint.GGUF || src == "" {
			src = native.SourceGGUF
		}
		nw, err := native.NewWriter(w, native.Header{Source: src, SourceInfo: c.SourceInfo, Metadata: withKeys(OutputMetadata(c, t), opts.Metadata)}, nil, specs)
		if err != nil {
			return nil, err
		}
		sink = nw
	case Safetensors:
		sw, err := safetensors.NewWriter(w, infos, nil)
		if err != nil {
			return nil, err
		}
		sink = sw
	}
	rep, err := Run(plan, sink, opts)
	if err != nil {
		return nil, err
	}
	if err := sink.Close(); err != nil {
		return nil, err
	}
	return rep, nil
}

// GGUFLayout is the metadata and tensors of plan's GGUF output, as Write
// and NewSplitWriter declare them.
func GGUFLayout(c *checkpoint.Checkpoint, plan []Choice, t Target, opts RunOptions) (tensor.Metadata, []tensor.Info) {
	return withKeys(OutputMetadata(c, t), opts.Metadata), ggmlDims(OutputInfos(plan))
}

// ggmlDims drops the outermost dimensions of 1 from each shape (keeping
// one), as llama-quantize writes tensors: it stores ggml_n_dims, which
// ignores trailing ne of 1 (Qwen2-MoE's [1][d] shared-expert gate comes out
// as [d]).
func ggmlDims(infos []tensor.Info) []tensor.Info {
	out := make([]tensor.Info, len(infos))
	for i, in := range infos {
		for len(in.Shape) > 1 && in.Shape[0] == 1 {
			in.Shape = in.Shape[1:]
		}
		out[i] = in
	}
	return out
}

// ParseOverrideKV parses llama-quantize's --override-kv KEY=TYPE:VALUE as
// llama.cpp's string_parse_kv_override does, into the value llama-quantize
// sets: int → int32 (the value's low 32 bits, as gguf_set_val_i32 takes
// it), float → float32, bool (true or false), str (at most 127 bytes); the
// key is under 128 bytes. Values are parsed strictly where atol/atof would
// read a prefix: a malformed number is an error here.
func ParseOverrideKV(s string) (tensor.KV, error) {
	key, val, ok := strings.Cut(s, "=")
	if !ok || key == "" || len(key) >= 128 {
		return tensor.KV{}, fmt.Errorf("quantize: --override-kv %q: want KEY=TYPE:VALUE with a key under 128 bytes", s)
	}
	typ, v, ok := strings.Cut(val, ":")
	if !ok {
		return tensor.KV{}, fmt.Errorf("quantize: --override-kv %q: want KEY=TYPE:VALUE (TYPE int, float, bool or str)", s)
	}
	switch typ {
	case "int":
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return tensor.KV{}, fmt.Errorf("quantize: --override-kv %q: %q is not an integer", s, v)
		}
		return tensor.KV{Key: key, Value: tensor.Int32(int32(n))}, nil
	case "float":
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return tensor.KV{}, fmt.Errorf("quantize: --override-kv %q: %q is not a number", s, v)
		}
		return tensor.KV{Key: key, Value: tensor.Float32(float32(f))}, nil
	case "bool":
		if v != "true" && v != "false" {
			return tensor.KV{}, fmt.Errorf("quantize: --override-kv %q: a bool is true or false", s)
		}
		return tensor.KV{Key: key, Value: tensor.Bool(v == "true")}, nil
	case "str":
		if len(v) > maxImatrixKVString {
			return tensor.KV{}, fmt.Errorf("quantize: --override-kv %q: a string value holds at most %d bytes", s, maxImatrixKVString)
		}
		return tensor.KV{Key: key, Value: tensor.String(v)}, nil
	}
	return tensor.KV{}, fmt.Errorf("quantize: --override-kv %q: type %q is not int, float, bool or str", s, typ)
}

// NewSplitWriter lays out plan's GGUF output as a split set named after
// prefix, its shards created through create in order. With maxBytes 0 it
// is llama-quantize --keep-split's: one shard per input shard, each with the
// tensors of its input shard (plan made with Options.KeepSplit); the first
// carries the metadata, every one split.no, split.count and
// split.tensors.count when there is more than one. With maxBytes > 0 it is
// gguf-split --split-max-size's (gguf.PlanSplit, the layout tfconv convert
// --split-max-size writes).
func NewSplitWriter(prefix string, maxBytes int64, create func(name string) (io.WriteCloser, error), c *checkpoint.Checkpoint, plan []Choice, t Target, opts RunOptions) (*gguf.SplitWriter, error) {
	if err := Check(c, plan, t, GGUF); err != nil {
		return nil, err
	}
	meta, infos := GGUFLayout(c, plan, t, opts)
	if maxBytes > 0 {
		return gguf.NewSplitWriter(prefix, maxBytes, meta, infos, create)
	}
	n := 1
	for _, ch := range plan {
		n = max(n, ch.Shard+1)
	}
	shards := make([][]tensor.Info, n)
	for i, ch := range plan {
		if i > 0 && ch.Shard < plan[i-1].Shard {
			return nil, fmt.Errorf("quantize: tensor %q of shard %d comes after shard %d: plan the split with KeepSplit", ch.Tensor.Name, ch.Shard, plan[i-1].Shard)
		}
		shards[ch.Shard] = append(shards[ch.Shard], infos[i])
	}
	return gguf.NewSplitWriterShards(prefix, meta, shards, create)
}

// WriteSplit quantizes into sw (made by NewSplitWriter for plan) the
// tensors of plan that sw takes: all of them, or those of the shards its
// Range chose; the report covers those.
func WriteSplit(sw *gguf.SplitWriter, plan []Choice, opts RunOptions) (*Report, error) {
	want := map[string]bool{}
	for _, in := range sw.Pending() {
		want[in.Name] = true
	}
	var part []Choice
	for _, ch := range plan {
		if want[ch.Tensor.Name] {
			part = append(part, ch)
		}
	}
	rep, err := Run(part, sw, opts)
	if err != nil {
		sw.Close()
		return nil, err
	}
	if err := sw.Close(); err != nil {
		return nil, err
	}
	return rep, nil
}
