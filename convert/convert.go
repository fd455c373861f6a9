package convert

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tfconv/tfconv/internal/progress"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/formats/gguf"
	"github.com/tfconv/tfconv/formats/safetensors"
	"github.com/tfconv/tfconv/internal/atomicfile"
	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/tensor"
)

// Format is an output container.
type Format string

// The output formats.
const (
	GGUF Format = "gguf"
	// Safetensors output is a Hugging Face directory: config.json,
	// model.safetensors (or shards and model.safetensors.index.json) and
	// tokenizer files.
	Safetensors Format = "safetensors"
	// Native output is a .tfn file (NativeExt), a lossless repack of the
	// source: same tensor names, bytes and metadata, side files embedded.
	Native Format = "native"
	// MLX output is a directory as mlx-lm saves it (formats/mlx): Hugging
	// Face names, {"format": "mlx"} safetensors metadata and, with
	// Options.Bits, affine-quantized layers and config.json's
	// "quantization".
	MLX Format = "mlx"
	// CompressedTensors output is a Hugging Face directory in
	// compressed-tensors' layout (formats/ctensors), the linear layers
	// quantized by Options.Scheme as the library quantizes them.
	CompressedTensors Format = "compressed-tensors"
)

// isDir reports whether format to is written as a directory.
func isDir(to Format) bool { return to == Safetensors || to == MLX || to == CompressedTensors }

// NativeExt is the file extension of tfconv's native format.
const NativeExt = ".tfn"

// DefaultMaxShardBytes is the shard size of Hugging Face output, the
// transformers save_pretrained default ("5GB").
const DefaultMaxShardBytes = 5_000_000_000

// Output types (--outtype).
const (
	OutAuto = "auto"
	OutF32  = "f32"
	OutF16  = "f16"
	OutBF16 = "bf16"
	OutQ8_0 = "q8_0"
)

// OutTypes lists the --outtype values: the types quant's records name for
// it (quant.OutTypes), then OutAuto.
var OutTypes = outTypes()

func outTypes() []string {
	var s []string
	for _, d := range quant.OutTypes() {
		s = append(s, strings.ToLower(d.String()))
	}
	return append(s, OutAuto)
}

// Options control a conversion.
type Options struct {
	// To is the output format; "" picks it from DST: ".gguf" is GGUF,
	// NativeExt is native, anything else is a Hugging Face directory.
	To Format
	// OutType is the type of the converted weights. "" is llama.cpp's
	// default for GGUF output (f16) and OutAuto otherwise. For GGUF, OutAuto
	// is convert_hf_to_gguf.py's --outtype auto: f16 when the first tensor
	// of the checkpoint is float16, else bf16. For Hugging Face output,
	// OutAuto keeps every f32, f16 and bf16 tensor in its own type
	// (quantized ones become f32, which holds them exactly), so nothing is
	// lost, and config.json's torch_dtype is the type most parameters then
	// have; f32, f16 or bf16 casts every tensor. Native output takes only
	// OutAuto. A tensor written in a type that cannot hold every value of
	// its source is flagged (TensorReport.Lossy) and named in a warning.
	OutType string
	// Force replaces an existing DST.
	Force bool
	// Arch overrides the architecture read from config.json (model_type) or
	// from GGUF general.architecture.
	Arch string
	// MaxShardBytes is the largest Hugging Face shard; 0 is
	// DefaultMaxShardBytes.
	MaxShardBytes int64
	// SplitMaxBytes, when positive, writes GGUF output as a split set the
	// way llama.cpp's gguf-split --split-max-size does: DST names the set
	// (model.gguf gives model-00001-of-0000N.gguf, …), each shard holding at
	// most about this many bytes of tensor data, the first one all metadata.
	SplitMaxBytes int64
	// Progress, when set, receives a progress line (bytes, rate).
	Progress io.Writer
	// AllowOverflow writes values beyond the range of a tensor's output
	// type (an f16 weight past 65504, a block scale past f16's range) as
	// ±Inf or NaN, as the cast gives them, and reports them
	// (TensorReport.Overflow, a warning). Without it such a value is an
	// error naming the tensor, and the output is not written.
	AllowOverflow bool
	// Base is the base model of a PEFT LoRA adapter being converted to a
	// GGUF adapter (convert_lora_to_gguf.py's --base): a Hugging Face
	// directory, of which only config.json is read. "" falls back to the
	// adapter's base_model_name_or_path when that is a local directory.
	Base string
	// ModelName sets general.name (convert_hf_to_gguf.py's --model-name),
	// and with it the default output name.
	ModelName string
	// MetadataFile is convert_hf_to_gguf.py's --metadata: a JSON object of
	// general.* keys (MetadataKeys) that override what the converter
	// derives from the source (Hugging Face → GGUF only).
	MetadataFile string
	// VocabOnly writes the GGUF without tensors: the vocabulary and every
	// metadata key (convert_hf_to_gguf.py's --vocab-only).
	VocabOnly bool
	// DryRun works the conversion out, checks DST, and reports what would be
	// written (Report.Files) without writing anything.
	DryRun bool
	// Part writes only the shards of one part of a split set (--part;
	// SplitMaxBytes must be set).
	Part Part
	// Bits and GroupSize quantize MLX output (To MLX) as mlx_lm.convert -q
	// does: every linear and embedding weight whose input dimension is a
	// multiple of GroupSize becomes affine codes of Bits bits with scales
	// and biases (formats/mlx). Bits 0 writes the weights in float.
	Bits, GroupSize int
	// MLXMode is MLX's quantization mode for MLX output (mlx_lm.convert
	// --q-mode): "" or "affine", or one of formats/mlx's FPModes, whose
	// bits and group size are the mode's (Bits and GroupSize 0, or equal).
	MLXMode string
	// AllowRequantize lets GGUF → GGUF with an --outtype re-encode a
	// quantized tensor in another quantized type (--allow-requantize, as
	// quantize's); without it that is refused.
	AllowRequantize bool
	// Requantize turns the block pass-throughs off (--requantize): a
	// weight whose blocks the target type could hold as they are (MXFP4 →
	// MXFP4, NVFP4 → NVFP4, GGUF Q4_0/Q8_0 → MLX affine groups of 32, MLX
	// mxfp4 → GGUF MXFP4, a GGUF → GGUF tensor kept in its quantized type)
	// is dequantized and encoded again in that type by tfconv's encoder.
	Requantize bool
	// Scheme is the compressed-tensors scheme (To CompressedTensors): one
	// of llm-compressor's preset names ctensors.Presets lists; GroupSize,
	// when set, replaces its group size.
	Scheme string
	// Resume continues a split run that was killed or failed: the shards
	// its record (DST.tfconv-resume) names and whose sha256 still matches
	// are kept, and writing starts at the first other one (--resume).
	Resume bool
	// Note, when set, receives a line about what --resume kept.
	Note func(string)
	// MmprojFile, for GGUF → Hugging Face, is the projector GGUF (an
	// mmproj) of the text GGUF being converted: the output is the
	// multimodal checkpoint again (Gemma3ForConditionalGeneration: the text
	// model under language_model., the tower, one config.json, the
	// processor's files).
	MmprojFile string
	// Multimodal says what Hugging Face → GGUF writes of a checkpoint with a
	// vision/audio projector (--mmproj, --mmproj-only, --text-only); unset,
	// such a conversion is refused.
	Multimodal Multimodal

	// planOnly: work the plan out and return it (Plan); nothing is
	// checked at DST or written.
	planOnly bool
	// nvfp4Float keeps NVFP4 layers as their float32 values in a GGUF view
	// (Source, which quantize reads): the blocks without the ".scale" a
	// reader of the view does not apply would mean other values.
	nvfp4Float bool
}

// TensorReport describes one output tensor.
type TensorReport struct {
	Name       string       `json:"name"`
	SourceName string       `json:"source_name"`
	DType      string       `json:"dtype"`
	Shape      tensor.Shape `json:"shape"`
	Bytes      int64        `json:"bytes"`
	// SourceDType is the dtype of the source tensor.
	SourceDType string `json:"source_dtype"`
	// Lossy is set when DType cannot hold every value of SourceDType, so
	// the output may differ from the source (see lossless).
	Lossy bool `json:"lossy"`
	// Overflow counts the finite source values beyond DType's range that
	// were written as ±Inf or NaN (only with Options.AllowOverflow), and
	// OverflowMaxAbs is the largest of their magnitudes.
	Overflow       int64   `json:"overflow,omitempty"`
	OverflowMaxAbs float32 `json:"overflow_max_abs,omitempty"`
	// Copied is set when the tensor's blocks are the checkpoint's own,
	// copied into the output type's block order (a block pass-through:
	// gpt-oss's MXFP4 experts), never dequantized.
	Copied bool `json:"copied,omitempty"`
	// Conversion says what became of the values: "copied" (the source's
	// blocks, moved as they are: a pass-through, or a quantized tensor
	// kept in its type), "exact" (encoded, and every value equals the
	// source's), or "reencoded" (encoded with rounding: MaxAbsError is the
	// largest |output − source| over the finite values). Empty when
	// nothing was written (a dry run).
	Conversion  string  `json:"conversion,omitempty"`
	MaxAbsError float64 `json:"max_abs_error,omitempty"`
	// Quantized marks the codes of a quantization the run was asked for
	// (MLX's affine codes, compressed-tensors' packed or FP8 weights): lossy
	// by request, so no lossy-cast warning names it.
	Quantized bool `json:"quantized,omitempty"`
}

// Report is what a conversion did. Its JSON form is the --json output of
// tfconv convert; fields are only ever added.
type Report struct {
	Source  string         `json:"source"`
	Output  string         `json:"output"`
	Format  Format         `json:"format"`
	Arch    string         `json:"arch"`
	OutType string         `json:"outtype"`
	Tensors []TensorReport `json:"tensors"`
	Dropped []Dropped      `json:"dropped"`
	// Bytes is the total size of the output tensor data.
	Bytes   int64   `json:"bytes"`
	Seconds float64 `json:"seconds"`
	// SelfCheck is "ok" once the output was re-read and matched.
	SelfCheck string `json:"self_check"`
	// SelfCheckLine is the one-line verdict printed by the CLI.
	SelfCheckLine string `json:"-"`
	// Warnings are things the output lacks that a user should know about
	// (no tokenizer, a pooler transformers will re-initialise, tensors
	// rounded to a narrower type).
	Warnings []string `json:"warnings,omitempty"`
	// PreTokenizer says how a GGUF's tokenizer.ggml.pre was chosen when no
	// hash of llama.cpp's table named the tokenizer: the name whose
	// splitting is the tokenizer.json's (tokenizer.PreNote).
	PreTokenizer string `json:"pre_tokenizer,omitempty"`
	// LoRA is set by MergeLoRA: the adapter merged in.
	LoRA *LoRAReport `json:"lora,omitempty"`
	// Replaced names the files of an existing DST that the output replaced
	// (--force): the one file, or in a Hugging Face folder the files of the
	// same names as the new ones; every other file there was left alone.
	Replaced []string `json:"replaced"`
	// RemovedStale names the files removed from an existing Hugging Face
	// folder because they belong to an earlier save of another shard count
	// (model-*-of-*.safetensors, model.safetensors and its index) that the
	// new output does not have.
	RemovedStale []string `json:"removed_stale"`
	// Files are the files written (for Hugging Face output, those of the
	// directory), or with DryRun the files that would be.
	Files []string `json:"files,omitempty"`
	// DryRun is set when nothing was written (Options.DryRun).
	DryRun bool `json:"dry_run,omitempty"`
	// Part is --part K/N, when given.
	Part string `json:"part,omitempty"`
	// Mmproj is the projector GGUF written beside the text model
	// (--mmproj), with its own tensors and self-check.
	Mmproj *Report `json:"mmproj,omitempty"`
	// LeftOut is what --text-only did not convert (the projector).
	LeftOut *LeftOut `json:"left_out,omitempty"`

	plan   *plan        // planOnly: the plan
	layout []gguf.Shard // planOnly: the GGUF files as planned
}

// plan is a conversion worked out before any byte is written.
type plan struct {
	format  Format
	arch    string
	outType string
	meta    tensor.Metadata // GGUF or native metadata
	jobs    []*job
	dropped []Dropped
	files   map[string][]byte // side files (HF output, native aux)
	warn    []string
	preNote string                 // Report.PreTokenizer
	native  *checkpoint.Checkpoint // native output: the source, for its header
	name    *authorship            // GGUF output from Hugging Face: general.* about the model
	// check is a remote source's checksum check over the jobs' sources
	// (checkSources), nil for a local one.
	check *checkpoint.SourceCheck
}

// Run converts the checkpoint at src (anything checkpoint.Open reads) into
// dst. The source is only read. The output appears whole or not at all, is
// refused when it exists unless opts.Force, and is re-read afterwards to
// check every tensor (Report.SelfCheck).
//
// DST "" (or an existing directory, or a name ending in a path separator,
// when the output is GGUF) gets the name convert_hf_to_gguf.py gives its
// output by default (DefaultName) in that directory ("" is the current
// one); "{ftype}" in DST's name becomes the file type ("f16"), as there.
func Run(src, dst string, opts Options) (*Report, error) {
	if _, err := OutputFormat(dst, opts.To); err != nil {
		return nil, err
	}
	c, err := checkpoint.Open(src)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if opts.Base != "" && c.LoRAConfig == nil {
		return nil, fmt.Errorf("convert: --base applies to a PEFT LoRA adapter, and %s is not one (no %s)", src, checkpoint.LoRAConfigName)
	}
	return runOn(c, src, dst, opts, []string{src})
}

// runOn is Run on an opened checkpoint (or a view of one); inputs are the
// paths the output must not replace.
func runOn(c *checkpoint.Checkpoint, src, dst string, opts Options, inputs []string) (*Report, error) {
	start := time.Now()
	to, err := OutputFormat(dst, opts.To)
	if err != nil {
		return nil, err
	}
	// A name the plan decides: DST is then checked once it is known.
	namedIn, named := defaultDir(dst, to)
	templated := !named && strings.Contains(filepath.Base(dst), "{")
	for _, f := range c.Files {
		inputs = append(inputs, f.Path)
	}
	if c.LoRAConfig != nil && to != GGUF {
		return nil, tensor.Unsupported("convert: %s is a PEFT LoRA adapter: it converts to a GGUF adapter (OUT.gguf, with --base); "+
			"'tfconv merge-lora' writes a merged model in any format", src)
	}
	for _, t := range c.Tensors {
		if _, ok := c.Int8Scale(t); ok && t.DType == tensor.I8 {
			return nil, tensor.Unsupported("convert: %s holds int8 weights with per-row scales (tensor %q); "+
				"convert the checkpoint they were quantized from, then quantize the result", src, t.Name)
		}
	}
	if opts.SplitMaxBytes > 0 && to != GGUF {
		return nil, fmt.Errorf("convert: a split size applies to GGUF output only (Hugging Face output is sharded by --max-shard-size)")
	}
	if (opts.VocabOnly || opts.MetadataFile != "" || opts.ModelName != "") && (to != GGUF || c.Source == checkpoint.GGUF || c.LoRAConfig != nil) {
		return nil, fmt.Errorf("convert: --vocab-only, --metadata and --model-name apply to Hugging Face → GGUF conversion (as convert_hf_to_gguf.py's)")
	}
	if opts.VocabOnly && opts.SplitMaxBytes > 0 {
		return nil, fmt.Errorf("convert: --vocab-only writes no tensors; a split size does not apply")
	}
	if !opts.Part.Whole() && opts.SplitMaxBytes == 0 {
		return nil, fmt.Errorf("convert: --part %s writes part of a split set: give --split-max-size", opts.Part)
	}
	if opts.Resume && (opts.SplitMaxBytes == 0 || to != GGUF) {
		return nil, fmt.Errorf("convert: --resume continues a split GGUF run: give --split-max-size")
	}
	// A split set's shard names are checked when they are known.
	if !named && !templated && !opts.planOnly {
		if err := checkDestEarly(dst, to, opts, inputs); err != nil {
			return nil, err
		}
	}
	proj, err := projectorOf(c)
	if err != nil {
		return nil, err
	}
	switch {
	case opts.MmprojFile != "" && (to != Safetensors || c.Source != checkpoint.GGUF):
		return nil, fmt.Errorf("convert: an mmproj GGUF (%s) is put back together with its text GGUF into a Hugging Face folder: SRC a GGUF, DST a directory", opts.MmprojFile)
	case proj == nil && opts.Multimodal != MultimodalUnset:
		return nil, tensor.Unsupported("convert: %s: %s applies to a multimodal checkpoint with a projector tfconv converts (%s)", src,
			opts.Multimodal.Flag(), strings.Join(projectorClasses(), ", "))
	case proj != nil && to != GGUF && opts.Multimodal != MultimodalUnset:
		return nil, fmt.Errorf("convert: %s applies to GGUF output (DST a .gguf file, or --to gguf)", opts.Multimodal.Flag())
	case proj != nil && to == GGUF && opts.Multimodal == MultimodalUnset:
		return nil, refuseMultimodal(src, proj)
	case proj != nil && to == GGUF && opts.Multimodal == MultimodalBoth:
		return runBoth(c, proj, src, dst, opts, inputs)
	}
	var p *plan
	switch {
	case proj != nil && to == GGUF && opts.Multimodal == MultimodalProjector:
		p, err = planMmproj(c, proj, opts)
	case c.LoRAConfig != nil:
		p, err = planLoRAToGGUF(c, opts)
	case to == Native:
		p, err = planNative(c, opts)
	case to == GGUF && c.Source == checkpoint.GGUF:
		p, err = planGGUFRepack(c, opts)
	case to == GGUF:
		p, err = planToGGUF(c, opts)
	case to == Safetensors && c.Source == checkpoint.GGUF && opts.MmprojFile != "":
		var mm *checkpoint.Checkpoint
		p, mm, err = planToHFMultimodal(c, opts)
		if mm != nil {
			defer mm.Close()
			inputs = append(inputs, opts.MmprojFile)
		}
	case to == Safetensors && c.Source == checkpoint.GGUF:
		p, err = planToHF(c, opts)
	case to == Safetensors:
		p, err = planHFRecast(c, opts)
	case to == MLX:
		p, err = planMLX(c, opts)
	case to == CompressedTensors:
		p, err = planCT(c, opts)
	default:
		err = fmt.Errorf("convert: unknown output format %q", to)
	}
	if err != nil {
		return nil, err
	}
	if to == GGUF {
		if err := checkGGUFJobs(src, p.jobs); err != nil {
			return nil, err
		}
	}
	p.check = checkSources(c, p.jobs)
	if named || templated {
		if p.name == nil {
			return nil, fmt.Errorf("convert: give DST: the default output name is convert_hf_to_gguf.py's, for Hugging Face → GGUF conversion")
		}
		if named {
			dst = filepath.Join(namedIn, defaultName(p, opts.VocabOnly))
		} else {
			dst = filepath.Join(filepath.Dir(dst), fillTemplate(filepath.Base(dst), p.outType))
		}
		if !opts.planOnly {
			if err := checkDestEarly(dst, to, opts, inputs); err != nil {
				return nil, err
			}
		}
	}
	if opts.planOnly {
		rep := newReport(src, dst, to, p, nil)
		rep.plan = p
		rep.layout, err = ggufLayout(dst, to, p, opts)
		return rep, err
	}
	files, err := outputFiles(dst, to, p, opts, inputs)
	if err != nil {
		return nil, err
	}
	if opts.DryRun {
		rep := newReport(src, dst, to, p, files)
		rep.DryRun, rep.SelfCheck = true, "dry run"
		rep.SelfCheckLine = "dry run: nothing written"
		rep.Seconds = time.Since(start).Seconds()
		return rep, nil
	}
	for _, j := range p.jobs {
		j.allowOverflow = opts.AllowOverflow
	}
	var total int64
	for _, j := range p.jobs {
		total += j.out.Size
	}
	prog := progress.New(opts.Progress, "convert", total, progress.Bytes, "")
	if c.Remote() {
		prog.Source(func() int64 { n, _ := c.Fetched(); return n })
	}
	check := dst
	var partFiles []string
	var replaced atomicfile.DirResult
	if _, err := os.Lstat(dst); err == nil && !isDir(to) && opts.SplitMaxBytes == 0 {
		replaced.Replaced = []string{filepath.Base(dst)}
	}
	switch {
	case to == GGUF && opts.SplitMaxBytes > 0:
		var written []string
		var resumed bool
		written, resumed, err = writeGGUFSplit(dst, c, opts, inputs, p, prog, opts.Note)
		if opts.Part.Whole() && !resumed && len(written) > 0 {
			check = written[0]
		} else {
			// A part, or a resumed set: the shards written now are
			// checked one by one; the kept ones were by their sha256.
			check, partFiles = "", written
		}
	case to == GGUF:
		err = writeGGUF(dst, opts.Force, inputs, p, prog)
	case to == Native:
		err = writeNative(dst, opts.Force, inputs, p, prog)
	case isDir(to):
		replaced, err = writeHF(dst, opts.Force, p, opts, prog)
	}
	prog.Finish()
	if err != nil {
		return nil, err
	}
	var line string
	if check != "" || opts.SplitMaxBytes == 0 {
		line, err = selfCheck(check, p.jobs)
	} else {
		line, err = selfCheckShards(partFiles, p.jobs)
	}
	if err != nil {
		return nil, err
	}
	if check == "" { // a part of a split set
		check = dst
	}
	rep := newReport(src, check, to, p, files)
	rep.SelfCheck, rep.SelfCheckLine = "ok", line
	if proj != nil && to == GGUF && opts.Multimodal == MultimodalText {
		rep.LeftOut = leftOut(c, proj, p.dropped)
	}
	rep.Part = opts.Part.String()
	if !opts.Part.Whole() {
		// The report is the part's: the tensors of its shards.
		layout, err := ggufLayout(dst, to, p, opts)
		if err != nil {
			return nil, err
		}
		first, end := opts.Part.Range(len(layout))
		in := map[string]bool{}
		for _, sh := range layout[first:end] {
			for _, t := range sh.Tensors {
				in[t.Name] = true
			}
		}
		rep.Tensors = slices.DeleteFunc(rep.Tensors, func(t TensorReport) bool { return !in[t.Name] })
		rep.Bytes = 0
		for _, t := range rep.Tensors {
			rep.Bytes += t.Bytes
		}
	}
	if replaced.Replaced != nil {
		rep.Replaced = replaced.Replaced
	}
	if replaced.Removed != nil {
		rep.RemovedStale = replaced.Removed
	}
	rep.Seconds = time.Since(start).Seconds()
	return rep, nil
}

// checkSources makes the jobs' sources report to one check of a remote
// checkpoint's files against the Hub's checksums (checkpoint.SourceCheck),
// which runs once every job's source has been read, in whatever order the
// run reads them: the writers commit after their last job, so a mismatch
// stops the run with nothing written. A run that reads only some jobs (a
// part of a split set, a resumed one) narrows the check to them (Only).
// Nil for a local checkpoint.
func checkSources(c *checkpoint.Checkpoint, jobs []*job) *checkpoint.SourceCheck {
	chk := c.NewSourceCheck()
	if chk == nil {
		return nil
	}
	for _, j := range jobs {
		j.src = chk.Wrap(j.out.Name, j.src)
	}
	return chk
}

// checkDestEarly is CheckDest, or for a split set (whose shard names are
// known once planned) a check of its folder.
func checkDestEarly(dst string, to Format, opts Options, inputs []string) error {
	if opts.SplitMaxBytes == 0 {
		return CheckDest(dst, to, opts.Force, inputs)
	}
	if err := atomicfile.CheckFolder(dst); err != nil {
		return fmt.Errorf("convert: %w", err)
	}
	return nil
}

// newReport is the report of plan p written (or to be written) to out.
func newReport(src, out string, to Format, p *plan, files []string) *Report {
	rep := &Report{Source: src, Output: out, Format: to, Arch: p.arch, OutType: p.outType,
		Tensors: []TensorReport{}, Dropped: p.dropped, Warnings: p.warn, Files: files,
		Replaced: []string{}, RemovedStale: []string{}, PreTokenizer: p.preNote}
	if rep.Dropped == nil {
		rep.Dropped = []Dropped{}
	}
	for _, j := range p.jobs {
		src := j.src
		if j.from != nil {
			src = j.from
		}
		rep.Tensors = append(rep.Tensors, TensorReport{Name: j.out.Name, SourceName: src.Name,
			DType: j.out.DType.String(), Shape: j.out.Shape, Bytes: j.out.Size,
			SourceDType: src.DType.String(), Lossy: j.quantized || j.from == nil && !lossless(j.src.DType, j.out.DType),
			Overflow: j.overflow.Count, OverflowMaxAbs: j.overflow.MaxAbs, Copied: j.copied(), Quantized: j.quantized,
			Conversion: j.conversion(), MaxAbsError: j.maxErr})
		rep.Bytes += j.out.Size
	}
	rep.Warnings = append(rep.Warnings, lossyWarnings(rep.Tensors, p.outType)...)
	rep.Warnings = append(rep.Warnings, overflowWarnings(rep.Tensors)...)
	return rep
}

// defaultDir reports whether GGUF output to dst is to be named as
// convert_hf_to_gguf.py names it by default, and in which directory: dst
// "" (the current directory), an existing directory, or a name ending in a
// path separator.
func defaultDir(dst string, to Format) (string, bool) {
	if to != GGUF {
		return "", false
	}
	if dst == "" {
		return ".", true
	}
	if strings.HasSuffix(dst, string(filepath.Separator)) || strings.HasSuffix(dst, "/") {
		return dst, true
	}
	if st, err := os.Stat(dst); err == nil && st.IsDir() {
		return dst, true
	}
	return "", false
}

// defaultName is the file name convert_hf_to_gguf.py gives a conversion's
// output when --outfile names no file (gguf-py's naming_convention):
// "TinyLlama-1.1B-Chat-v1.0-F16.gguf" from TinyLlama-1.1B-Chat-v1.0,
// "Hf-2.1M-F16.gguf" from a directory "hf"; with vocabOnly
// "<name>-vocab.gguf".
func defaultName(p *plan, vocabOnly bool) string {
	if vocabOnly {
		return namingConvention(p.name, "", "", "vocab") + ".gguf"
	}
	return namingConvention(p.name, p.name.sizeLabel, p.outType, "") + ".gguf"
}

// outputFiles lists the files a conversion writes to dst: the GGUF or
// native file, a split set's shards, or a Hugging Face directory's files.
// Existing shards of a split set are refused here without force, before
// anything is written.
func outputFiles(dst string, to Format, p *plan, opts Options, inputs []string) ([]string, error) {
	infos := make([]tensor.Info, len(p.jobs))
	for i, j := range p.jobs {
		infos[i] = tensor.Info{Name: j.out.Name, DType: j.out.DType, Shape: j.out.Shape}
	}
	switch {
	case to == GGUF && opts.SplitMaxBytes > 0:
		sw, err := gguf.NewSplitWriter(strings.TrimSuffix(dst, ".gguf"), opts.SplitMaxBytes, p.meta, infos, nil)
		if err != nil {
			return nil, err
		}
		first, end := opts.Part.Range(len(sw.Names()))
		names := sw.Names()[first:end]
		if !opts.DryRun {
			return names, nil // openSplitOut checks them, knowing an earlier run's record
		}
		for _, name := range names {
			if err := CheckDest(name, GGUF, opts.Force, inputs); err != nil {
				return nil, err
			}
		}
		return names, nil
	case isDir(to):
		maxShard := opts.MaxShardBytes
		if maxShard <= 0 {
			maxShard = DefaultMaxShardBytes
		}
		plan, err := safetensors.PlanShards("model", maxShard, safetensors.ReferenceOrder(infos))
		if err != nil {
			return nil, err
		}
		var files []string
		for name := range p.files {
			files = append(files, name)
		}
		files = append(files, plan.Files...)
		if len(plan.Files) > 1 {
			files = append(files, "model"+safetensors.IndexSuffix)
		}
		sort.Strings(files)
		for i, f := range files {
			files[i] = filepath.Join(dst, f)
		}
		return files, nil
	}
	return []string{dst}, nil
}

// lossless reports whether dtype out holds every value of dtype src: the
// same type, or f32 from a float type narrower than it (f16, bf16, fp8 and
// every ggml block type decode to float32 exactly: their scales and values
// are at most f16 and their dequantizers compute in float32).
func lossless(src, out tensor.DType) bool {
	return src == out || out == tensor.F32 && src.Float() && src.BitsPerElement() < 32
}

// lossyWarnings names the output tensors written in a type that cannot hold
// every value of their source, one line per pair of types; outType is the
// run's (at f32 the narrower ones are types the converter forces, which no
// --outtype changes).
func lossyWarnings(ts []TensorReport, outType string) []string {
	type pair struct{ src, out string }
	var order []pair
	names := map[pair][]string{}
	for _, t := range ts {
		if !t.Lossy || t.Quantized {
			continue
		}
		p := pair{t.SourceDType, t.DType}
		if names[p] == nil {
			order = append(order, p)
		}
		names[p] = append(names[p], t.Name)
	}
	var out []string
	for _, p := range order {
		n := names[p]
		list := strings.Join(n[:min(len(n), 3)], ", ")
		if len(n) > 3 {
			list += ", …"
		}
		w := fmt.Sprintf("lossy: %d tensor(s) written as %s from %s, values rounded (%s)", len(n), p.out, p.src, list)
		if p.out != tensor.F32.String() && outType != OutF32 {
			w += "; --outtype f32 keeps them exact"
		}
		out = append(out, w)
	}
	return out
}

// overflowWarnings names the tensors whose values beyond their type's range
// were written as ±Inf (Options.AllowOverflow), one line for all.
func overflowWarnings(ts []TensorReport) []string {
	var n int64
	var largest float32
	var names []string
	for _, t := range ts {
		if t.Overflow > 0 {
			n += t.Overflow
			largest = max(largest, t.OverflowMaxAbs)
			names = append(names, fmt.Sprintf("%s: %d", t.Name, t.Overflow))
		}
	}
	if n == 0 {
		return nil
	}
	list := strings.Join(names[:min(len(names), 5)], ", ")
	if len(names) > 5 {
		list += ", …"
	}
	return []string{fmt.Sprintf("overflow (--allow-overflow): %d value(s) beyond their type's range written as ±Inf in %d tensor(s) (%s); largest magnitude %g",
		n, len(names), list, largest)}
}

// OutputFormat resolves to, the format asked for ("" when none), against
// dst's name: ".gguf" is GGUF, NativeExt native, ".safetensors" a mistake
// (Hugging Face output is a directory), anything else a Hugging Face
// directory. It is the one guess of every command that writes a
// checkpoint (convert, quantize).
func OutputFormat(dst string, to Format) (Format, error) {
	if dst == "" {
		// convert_hf_to_gguf.py's habit: the output named by default.
		if to == "" || to == GGUF {
			return GGUF, nil
		}
		return "", fmt.Errorf("convert: give DST: only GGUF output is named by default")
	}
	ext := strings.ToLower(filepath.Ext(dst))
	if to == "" {
		switch ext {
		case ".gguf":
			return GGUF, nil
		case NativeExt:
			return Native, nil
		case ".safetensors":
			return "", fmt.Errorf("convert: %s: Hugging Face output is a directory (config.json, model.safetensors, tokenizer files); give a directory name", dst)
		}
		return Safetensors, nil
	}
	switch to {
	case GGUF, Native:
		return to, nil
	case Safetensors, MLX, CompressedTensors:
		if ext == ".gguf" || ext == NativeExt || ext == ".safetensors" {
			return "", fmt.Errorf("convert: %s: %s output is a directory; give a directory name", dst, to)
		}
		return to, nil
	}
	return "", fmt.Errorf("convert: unknown output format %q (gguf, safetensors, mlx, compressed-tensors or native)", to)
}

// CheckDest refuses, before any work, a destination that conversion to
// format to could not write: a missing folder, the input itself (or, for a
// directory, the folder holding it), a file where a directory goes or the
// reverse, and without force anything that exists.
func CheckDest(dst string, to Format, force bool, inputs []string) error {
	if err := atomicfile.CheckFolder(dst); err != nil {
		return fmt.Errorf("convert: %w", err)
	}
	st, err := os.Stat(dst)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, in := range inputs {
		ist, err := os.Stat(in)
		if err != nil {
			continue
		}
		if os.SameFile(st, ist) {
			return fmt.Errorf("convert: %s: refusing to overwrite the input %s", dst, in)
		}
		if st.IsDir() {
			// A directory output must not hold the input either.
			if d, err := os.Stat(filepath.Dir(in)); err == nil && os.SameFile(st, d) {
				return fmt.Errorf("convert: %s: refusing to replace the directory holding the input %s", dst, in)
			}
		}
	}
	if st.IsDir() != isDir(to) {
		if st.IsDir() {
			return fmt.Errorf("convert: %s is a directory; %s output is a file", dst, to)
		}
		return fmt.Errorf("convert: %s is a file; Hugging Face output is a directory", dst)
	}
	if !force {
		if st.IsDir() {
			// A folder made for the output holds nothing to lose.
			if ents, err := os.ReadDir(dst); err == nil && len(ents) == 0 {
				return nil
			}
			return fmt.Errorf("convert: %s already exists and is not empty (use --force to write the model files into it; other files there are kept)", dst)
		}
		return fmt.Errorf("convert: %s already exists (use --force to replace it)", dst)
	}
	return nil
}

// finishJobs fills each job's output size and checks the sources exist.
func finishJobs(jobs []*job) error {
	for _, j := range jobs {
		n, err := j.out.DType.ShapeBytes(j.out.Shape)
		if err != nil {
			return fmt.Errorf("convert: tensor %q: %w", j.out.Name, err)
		}
		j.out.Size = n
		srcN, err := j.src.Shape.NumElements()
		if err != nil {
			return fmt.Errorf("convert: tensor %q: %w", j.src.Name, err)
		}
		if outN := j.out.NumElements(); outN != srcN && !(j.m.Cut != 0 && outN < srcN) {
			return fmt.Errorf("convert: tensor %q: %d elements from %q with %d", j.out.Name, outN, j.src.Name, srcN)
		}
	}
	return nil
}

// sizeLabel is gguf-py's model_weight_count_rounded_notation: the parameter
// count scaled to K/M/B/T with at least two significant digits ("2.1M").
// ggufSizeLabel is gguf-py's general.size_label of a model with these
// tensors: the rounded parameter count, or for a mixture of experts
// "<experts>x<shared + one expert's parameters>" (stacked expert tensors
// are the "_exps." ones, experts outermost).
func ggufSizeLabel(ts []tensor.Info) string {
	var total, shared, perExpert, expertSum, stacks int64
	for _, t := range ts {
		n := t.NumElements()
		total += n
		if e, ok := checkpoint.ExpertTensor(t.Name, t.Shape); ok && strings.Contains(t.Name, "_exps.") {
			perExpert += n / e
			expertSum += e
			stacks++
			continue
		}
		shared += n
	}
	if stacks > 0 {
		return fmt.Sprintf("%dx%s", expertSum/stacks, sizeLabel(shared+perExpert))
	}
	return sizeLabel(total)
}

func sizeLabel(n int64) string {
	f := float64(n)
	var scaled float64
	var suffix string
	switch {
	case f > 1e12:
		scaled, suffix = f*1e-12, "T"
	case f > 1e9:
		scaled, suffix = f*1e-9, "B"
	case f > 1e6:
		scaled, suffix = f*1e-6, "M"
	default:
		scaled, suffix = f*1e-3, "K"
	}
	digits := len(strings.TrimLeft(fmt.Sprint(int64(math.RoundToEven(scaled))), "0"))
	fix := max(2-digits, 0)
	return fmt.Sprintf("%.*f%s", fix, scaled, suffix)
}
