package convert

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tfconv/tfconv/arch"
	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/formats/gguf"
	"github.com/tfconv/tfconv/internal/atomicfile"
	"github.com/tfconv/tfconv/quantize"
	"github.com/tfconv/tfconv/tensor"
)

// QuantizeOptions are the choices of Quantize beyond the plan's (quantize.Options).
type QuantizeOptions struct {
	quantize.Options
	// Format of the output; "" takes it from the destination's name
	// (QuantizeFormat).
	Format quantize.Format
	// To is the format asked for by name (tfconv quantize --to); used
	// when Format is "".
	To string
	// Force replaces an existing destination.
	Force bool
	// Requantize allows a source that is already quantized
	// (llama-quantize --allow-requantize).
	Requantize bool
	// AllowOverflow writes values beyond a tensor's type as ±Inf
	// (quantize.RunOptions.AllowOverflow).
	AllowOverflow bool
	// DryRun measures and reports; nothing is written.
	DryRun bool
	// Threads is the worker count for the rows of one tensor (0: GOMAXPROCS).
	Threads int
	// Metadata is set in the GGUF and native output after
	// general.file_type, in order (quantize.RunOptions.Metadata).
	Metadata tensor.Metadata
	// Refine, when set, re-chooses the plan's types before anything is
	// written (tfconv quantize --target-bpw passes mixfit.Fit here).
	Refine func(c *checkpoint.Checkpoint, plan []quantize.Choice) ([]quantize.Choice, error)
	// Progress is called before each tensor and once at the end with i == n.
	Progress func(i, n int, name string)
	// Remote, when set, is called once the source is open when it is read
	// over HTTP, with a function giving the bytes fetched so far.
	Remote func(fetched func() int64)
	// ProgressBytes, when set, is called at the same moments with the
	// source bytes of the tensors before this one and of them all.
	ProgressBytes func(done, total int64)
	// Note, when set, receives one line about a conversion Quantize made of the
	// source before quantizing it.
	Note func(msg string)
	// SplitMaxBytes, when positive, writes GGUF output as a gguf-split set
	// of at most about this much tensor data per shard, laid out as
	// tfconv convert --split-max-size lays it out (gguf.PlanSplit).
	SplitMaxBytes int64
	// Part writes only the shards of one part of a split set (--part).
	Part Part
	// Resume continues a split run that was killed or failed (Options.Resume).
	Resume bool

	// planOnly: work the plan out and return its layout (Plan); nothing
	// is checked at DST, read or written.
	planOnly bool
}

// QuantizeReport is Quantize's result: the per-tensor report and what the errors
// in it are measured against (quantize.MeasuredAgainst).
type QuantizeReport struct {
	*quantize.Report
	MeasuredAgainst string
	Format          quantize.Format
	// Replaced names the files of an existing DST the output replaced
	// (--force): the file, or in a Hugging Face folder the files of the
	// same names; RemovedStale the earlier save's weight files of another
	// shard count removed from that folder (WriteHFDir).
	Replaced, RemovedStale []string
	// Files are the files written: DST, or a split set's shards (with
	// Part, those of the part).
	Files []string

	// layout is the GGUF output's files as planned (planOnly).
	layout []gguf.Shard
	// plan is the quantization plan (planOnly).
	plan []quantize.Choice
	// viaConvert: the source was read through convert's f32 GGUF view.
	viaConvert bool
}

// QuantizeFormat is the format to, if given, else the one dst's name says,
// guessed exactly as tfconv convert guesses it (OutputFormat):
// ".gguf" is GGUF, ".tfn" native, anything else a Hugging Face directory;
// a name ending in .safetensors is refused rather than guessed at.
func QuantizeFormat(dst, to string) (quantize.Format, error) {
	var want Format
	if to != "" {
		f, err := quantize.ParseFormat(to)
		if err != nil {
			return "", err
		}
		want = Format(f)
	}
	f, err := OutputFormat(dst, want)
	if err != nil {
		return "", err
	}
	return quantize.Format(f), nil
}

// Quantize quantizes the checkpoint at src into dst: tfconv quantize SRC DST.
// The destination is checked before any data is read and appears whole or
// not at all (a --keep-split set: every shard or none). A Hugging Face
// source is read for GGUF and native output through convert's f32 GGUF view
// (Source: what convert --outtype f32 would write, tensor by tensor,
// no file); a GGUF or native source for safetensors output likewise through
// convert's f32 Hugging Face view (names mapped back, layouts undone,
// config.json and tokenizer files made), no scratch folder.
func Quantize(src, dst string, o QuantizeOptions) (*QuantizeReport, error) {
	format := o.Format
	if format == "" {
		var err error
		if format, err = QuantizeFormat(dst, o.To); err != nil {
			return nil, err
		}
	}
	if err := quantize.CheckTarget(o.Target, format); err != nil {
		return nil, err
	}
	c, err := checkpoint.Open(src)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	inputs := []string{src}
	for _, f := range c.Files {
		inputs = append(inputs, f.Path)
	}
	if o.Remote != nil && c.Remote() {
		remote := c
		o.Remote(func() int64 { n, _ := remote.Fetched(); return n })
	}
	// Known before a conversion below decodes the quantized weights: the
	// plan of a converted source (lost) has only f32 tensors.
	source := quantize.SourceOf(c)
	lost := (format == quantize.Safetensors) != c.HuggingFace()
	if o.Target.Copy && o.Refine != nil {
		return nil, fmt.Errorf("quantize: --type copy writes every tensor as it is; --target-bpw would choose other types")
	}
	if o.Target.Copy && c.HuggingFace() {
		return nil, tensor.Unsupported("quantize: --type copy writes a quantize.GGUF or native file's tensors as they are; %s is a "+
			"Hugging Face checkpoint: convert it with 'tfconv convert', or pick a type", src)
	}
	if lost && format == quantize.Safetensors && !o.Requantize && source.Reencodes(tensor.F32, o.Target.Type, true) {
		// Refused before the f32 conversion below spends time and disk.
		return nil, quantize.RequantizeError(src, source, "", o.Target.Type)
	}
	rep := &QuantizeReport{MeasuredAgainst: quantize.MeasuredAgainst(source), Format: format}
	split := o.KeepSplit || o.SplitMaxBytes > 0
	switch {
	case o.KeepSplit && o.SplitMaxBytes > 0:
		return nil, fmt.Errorf("quantize: --keep-split keeps the input's shards; --split-max-size makes new ones: give one")
	case o.SplitMaxBytes > 0 && format != quantize.GGUF:
		return nil, fmt.Errorf("quantize: --split-max-size writes GGUF output as a gguf-split set, not %s", format)
	case !o.Part.Whole() && !split:
		return nil, fmt.Errorf("quantize: --part %s writes part of a split set: give --split-max-size (or --keep-split)", o.Part)
	case o.Resume && !split:
		return nil, fmt.Errorf("quantize: --resume continues a split GGUF run: give --split-max-size (or --keep-split)")
	case !o.Part.Whole() && o.DryRun:
		return nil, fmt.Errorf("quantize: --dry-run measures the whole model; --part does not go with it")
	}
	// --keep-split: llama-quantize's shard names, one per input shard.
	var shardNames []string
	prefix := strings.TrimSuffix(dst, ".gguf")
	if o.KeepSplit {
		if format != quantize.GGUF || c.Format != checkpoint.GGUF {
			return nil, fmt.Errorf("quantize: --keep-split reads and writes quantize.GGUF (a split set's shards), not %s to %s", c.Format, format)
		}
		first, end := o.Part.Range(len(c.Files))
		for i := first; i < end; i++ {
			shardNames = append(shardNames, gguf.SplitPath(prefix, i, len(c.Files)))
		}
	}
	// Refuse a bad destination before spending time on the data; a
	// --split-max-size set's names are known once the plan is.
	var err2 error
	switch {
	case o.planOnly || o.SplitMaxBytes > 0:
	case o.KeepSplit && !o.Resume:
		_, err2 = atomicfile.NewGroup(shardNames, o.Force, inputs...)
	case o.KeepSplit:
	case format == quantize.Safetensors:
		err2 = CheckDest(dst, Safetensors, o.Force, inputs)
	default:
		err2 = atomicfile.CheckDest(dst, o.Force, inputs...)
	}
	if err2 != nil {
		return nil, err2
	}
	note := func(format string, args ...any) {
		if o.Note != nil {
			o.Note(fmt.Sprintf(format, args...))
		}
	}
	// Hugging Face output is made from a Hugging Face checkpoint, GGUF and
	// native output from a GGUF one. Either way the source's files are
	// checked against the Hub's checksums once every tensor the run reads
	// has been read (checkpoint.SourceCheck; Source's views make theirs),
	// narrowed to the plan's tensors below.
	switch toHF := format == quantize.Safetensors; {
	case toHF == c.HuggingFace():
		c.CheckSources()
	case !toHF && c.HuggingFace():
		if c, err = Source(c, Options{To: GGUF, OutType: OutF32}); err != nil {
			return nil, err
		}
		note("quantize: %s read with quantize.GGUF names and metadata (as tfconv convert --outtype f32 would write them)", src)
		rep.viaConvert = true
	case toHF && !c.HuggingFace():
		if c, err = Source(c, Options{To: Safetensors, OutType: OutF32}); err != nil {
			return nil, err
		}
		note("quantize: %s read with Hugging Face names and metadata (as tfconv convert --outtype f32 would write them)", src)
	}
	metadata := o.Metadata
	if len(o.PruneLayers) > 0 {
		switch {
		case format == quantize.Safetensors:
			return nil, fmt.Errorf("quantize: --prune-layers writes quantize.GGUF or native output (block names and block_count), not safetensors")
		case o.Refine != nil:
			return nil, fmt.Errorf("quantize: --prune-layers and --target-bpw do not go together (the fit measures the unpruned model)")
		}
		// c is Quantize's own: its metadata becomes the pruned one, in which
		// block_count is still the input's for quantize.Plan's rules; the new one is
		// set after every other key, as llama-quantize sets it.
		pruned, blocks, err := quantize.PruneMetadata(c.Metadata, o.PruneLayers)
		if err != nil {
			return nil, err
		}
		c.Metadata = pruned
		metadata = append(slices.Clone(metadata), blocks)
	}
	popts := o.Options
	if format == quantize.Safetensors && popts.GGUFName == nil {
		// llama.cpp's rules read GGUF names.
		if cfg, err := c.Config(); err == nil && cfg != nil {
			if mt, ok := cfg["model_type"].(string); ok {
				popts.GGUFName = func(name string) (string, bool) { return arch.GGUFName(mt, name) }
			}
		}
	}
	plan, err := quantize.Plan(c, popts)
	if err != nil {
		return nil, err
	}
	if err := quantize.CheckRequantize(src, source, plan, lost, o.Requantize); err != nil {
		return nil, err
	}
	if o.Refine != nil {
		if plan, err = o.Refine(c, plan); err != nil {
			return nil, err
		}
		if err := quantize.CheckRequantize(src, source, plan, lost, o.Requantize); err != nil {
			return nil, err
		}
	}
	if err := quantize.Check(c, plan, o.Target, format); err != nil {
		return nil, err
	}
	// The run reads the plan's tensors (those of the part's shards, below,
	// with --part or --resume): the source check waits for those.
	readSet := make([]string, len(plan))
	for i, ch := range plan {
		readSet[i] = ch.Tensor.Name
	}
	c.SourceCheck().Only(readSet)
	ropts := quantize.RunOptions{Threads: o.Threads, Metadata: metadata, Progress: o.progress(plan), AllowOverflow: o.AllowOverflow}
	var sw *gguf.SplitWriter
	var out *splitOut
	if split {
		create := func(name string) (io.WriteCloser, error) { return out.create(name) }
		if sw, err = quantize.NewSplitWriter(prefix, o.SplitMaxBytes, create, c, plan, o.Target, ropts); err != nil {
			return nil, err
		}
		first, end := o.Part.Range(len(sw.Names()))
		rep.Files = sw.Names()[first:end]
		if o.planOnly {
			if err := sw.Range(first, end); err != nil {
				return nil, err
			}
			rep.layout, rep.plan = sw.Shards(), plan
			return rep, nil
		}
		if !o.DryRun {
			for _, name := range rep.Files {
				if _, serr := os.Lstat(name); serr == nil {
					rep.Replaced = append(rep.Replaced, filepath.Base(name))
				}
			}
			id := resumeIdentity("quantize", map[string]string{"type": o.Target.Name, "split-max-size": fmt.Sprint(o.SplitMaxBytes),
				"keep-split": fmt.Sprint(o.KeepSplit), "part": o.Part.String()}, c, sw.Shards())
			if out, err = openSplitOut(dst, o.Part, id, sw.Shards(), o.Resume, o.Force, inputs, o.Note); err != nil {
				return nil, err
			}
			if err := sw.Range(out.start, out.end); err != nil {
				return nil, err
			}
			readSet = readSet[:0]
			for _, in := range sw.Pending() {
				readSet = append(readSet, in.Name)
			}
			c.SourceCheck().Only(readSet)
			if out.start > out.first {
				rep.Replaced = nil
			}
		}
	} else if o.planOnly {
		if format != quantize.GGUF {
			return nil, fmt.Errorf("quantize: a plan is made for GGUF output, not %s", format)
		}
		meta, infos := quantize.GGUFLayout(c, plan, o.Target, ropts)
		size, placed, err := gguf.FileSize(meta, infos)
		if err != nil {
			return nil, err
		}
		rep.layout, rep.plan = []gguf.Shard{{Name: dst, Tensors: placed, Size: size}}, plan
		return rep, nil
	}
	switch {
	case o.DryRun:
		rep.Report, err = quantize.Run(plan, nil, ropts)
	case format == quantize.Safetensors:
		var res atomicfile.DirResult
		rep.Report, res, err = writeQuantizedHF(c, dst, o.Force, plan, ropts)
		rep.Replaced, rep.RemovedStale = res.Replaced, res.Removed
	case split:
		defer out.abort()
		if rep.Report, err = quantize.WriteSplit(sw, plan, ropts); err == nil {
			err = out.finish()
		} else if errors.Is(err, checkpoint.ErrSourceMismatch) {
			out.abort()
			out.discard()
		}
	default:
		var f *atomicfile.File
		if f, err = atomicfile.Create(dst, o.Force, inputs...); err != nil {
			return nil, err
		}
		if _, serr := os.Lstat(dst); serr == nil {
			rep.Replaced = []string{filepath.Base(dst)}
		}
		defer f.Abort()
		if rep.Report, err = quantize.Write(f.Stream(), c, plan, o.Target, format, ropts); err == nil {
			err = f.Commit()
		}
		rep.Files = []string{dst}
	}
	if err != nil {
		return nil, err
	}
	if ropts.Progress != nil {
		ropts.Progress(len(plan), len(plan), "")
	}
	return rep, nil
}

// progress is the callback quantize.Run gets: Progress and ProgressBytes, the
// latter from the source bytes of plan's tensors; nil when neither is set.
func (o *QuantizeOptions) progress(plan []quantize.Choice) func(i, n int, name string) {
	if o.Progress == nil && o.ProgressBytes == nil {
		return nil
	}
	before := make([]int64, len(plan)+1) // before[i]: bytes of plan[:i]
	for i, ch := range plan {
		before[i+1] = before[i] + ch.Tensor.Size
	}
	return func(i, n int, name string) {
		if o.Progress != nil {
			o.Progress(i, n, name)
		}
		if o.ProgressBytes != nil && i >= 0 && i <= len(plan) {
			o.ProgressBytes(before[i], before[len(plan)])
		}
	}
}

// writeHF writes the quantized Hugging Face checkpoint c as a Hugging Face
// directory: its side files (config.json, tokenizer files,
// generation_config.json) as they are, beside the quantized safetensors.
func writeQuantizedHF(c *checkpoint.Checkpoint, dst string, force bool, plan []quantize.Choice, ropts quantize.RunOptions) (*quantize.Report, atomicfile.DirResult, error) {
	files := map[string][]byte{}
	for _, name := range c.AuxNames() {
		b, err := c.ReadAux(name)
		if err != nil {
			return nil, atomicfile.DirResult{}, err
		}
		files[name] = b
	}
	var rep *quantize.Report
	res, err := WriteHFDir(dst, force, files, quantize.OutputInfos(plan), 0,
		func(next func(string) (io.Writer, error)) error {
			var err error
			rep, err = quantize.Run(plan, sinkFunc(next), ropts)
			return err
		})
	return rep, res, err
}

// sinkFunc makes a Sink of a function.
type sinkFunc func(name string) (io.Writer, error)

func (f sinkFunc) Next(name string) (io.Writer, error) { return f(name) }
