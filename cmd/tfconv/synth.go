package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tfconv/tfconv/internal/atomicfile"
	"github.com/tfconv/tfconv/internal/output"
	"github.com/tfconv/tfconv/internal/progress"
	"github.com/tfconv/tfconv/synth"
	"github.com/tfconv/tfconv/tensor"
)

type synthOptions struct {
	like     string
	out      string
	typ      string
	to       string
	seed     uint64
	layers   int
	force    bool
	progress bool
}

func newCmdSynth(a *app) *cobra.Command {
	opts := &synthOptions{}
	var names []string
	for _, s := range synth.Shapes() {
		names = append(names, s.Name)
	}
	cmd := &cobra.Command{
		Use:   "synth --like NAME OUT",
		Short: "Write a random-weight checkpoint with a real model's shapes, for benchmarks",
		Long: `Synth writes a checkpoint whose tensors have the names and shapes of a real
model and random values (weights ≈ N(0, 0.02), norms ≈ 1), streaming tensor
by tensor. The same --seed gives the same bytes.

GGUF output (default, or --to gguf) carries llama.cpp's metadata for the
architecture and a real tokenizer (LLaMA SentencePiece, GPT-2 BPE or BERT
WordPiece), so llama.cpp loads it. Safetensors output (--to safetensors, or an
OUT without the .gguf extension) is a Hugging Face folder: config.json and
model.safetensors, sharded above 5 GB; into an existing folder --force
replaces the files synth writes and an earlier save's stale shards, and
keeps every other file, as 'tfconv convert' does. 1-D tensors are always f32.

Shapes: ` + strings.Join(names, ", ") + `.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.out = args[0]
			return runSynth(a, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.like, "like", "", "shape to copy: "+strings.Join(names, "|"))
	f.StringVar(&opts.typ, "type", "f16", "type of the matrices: f32|f16|bf16|q8_0 (q8_0: GGUF only)")
	f.StringVar(&opts.to, "to", "", "output format: gguf|safetensors (default: gguf when OUT ends in .gguf, else safetensors)")
	f.Uint64Var(&opts.seed, "seed", 1, "random seed")
	f.IntVar(&opts.layers, "layers", 0, "keep only the first N layers (same widths, a shallower model that fits in memory; 0: all)")
	f.BoolVar(&opts.force, "force", false, "replace an existing OUT (a folder: only the files synth writes, others kept)")
	addProgressFlag(cmd, &opts.progress)
	return cmd
}

func runSynth(a *app, opts *synthOptions) error {
	if opts.like == "" {
		return fmt.Errorf("synth: --like is required")
	}
	s, ok := synth.Lookup(opts.like)
	if !ok {
		var names []string
		for _, s := range synth.Shapes() {
			names = append(names, s.Name)
		}
		return fmt.Errorf("synth: unknown shape %q (one of %s)", opts.like, strings.Join(names, ", "))
	}
	if opts.layers < 0 || (opts.layers > 0 && opts.layers > s.Layers) {
		return fmt.Errorf("synth: --layers %d: want 1 to %d", opts.layers, s.Layers)
	}
	if opts.layers > 0 {
		s.Layers = opts.layers
	}
	d, ok := tensor.Parse(opts.typ)
	if !ok || (d != tensor.F32 && d != tensor.F16 && d != tensor.BF16 && d != tensor.Q8_0) {
		return fmt.Errorf("synth: --type %q: want f32, f16, bf16 or q8_0", opts.typ)
	}
	to := opts.to
	if to == "" {
		to = "safetensors"
		if strings.EqualFold(filepath.Ext(opts.out), ".gguf") {
			to = "gguf"
		}
	}
	var err error
	var infos []tensor.Info
	var res atomicfile.DirResult
	// A full-size shape is gigabytes of random numbers: one progress line
	// in bytes of tensor data.
	meterFor := func(infos []tensor.Info) *progress.Meter {
		var total int64
		for _, t := range infos {
			total += t.Size
		}
		return progress.New(a.progressOut(opts.progress), "synth", total, progress.Bytes, "")
	}
	switch to {
	case "gguf":
		if infos, err = synth.GGUFTensors(s, d); err != nil {
			return err
		}
		var f *atomicfile.File
		if f, err = atomicfile.Create(opts.out, opts.force); err != nil {
			return err
		}
		defer f.Abort()
		meter := meterFor(infos)
		err = synth.WriteGGUFProgress(f, s, d, opts.seed, meterWriter(meter))
		meter.Finish()
		if err != nil {
			return err
		}
		if err = f.Commit(); err != nil {
			return err
		}
	case "safetensors":
		if infos, err = synth.HFTensors(s, d); err != nil {
			return err
		}
		if err = checkOutDir(opts.out, opts.force); err != nil {
			return err
		}
		meter := meterFor(infos)
		res, err = synth.WriteHFDir(opts.out, opts.force, s, d, opts.seed, meterWriter(meter))
		meter.Finish()
		if err != nil {
			return err
		}
	default:
		return fmt.Errorf("synth: --to %q: want gguf or safetensors", to)
	}
	var params, size int64
	for _, t := range infos {
		n, _ := t.Shape.NumElements()
		params += n
		size += t.Size
	}
	if _, err = fmt.Fprintf(a.out, "wrote %s: %s %s %s, %d tensors, %s parameters, %s of tensor data\n",
		opts.out, to, s.Name, d, len(infos), output.Count(params), output.Bytes(size)); err != nil {
		return err
	}
	return printReplaced(a.out, opts.out, to == "safetensors", res.Replaced, res.Removed)
}

// meterWriter is m as an io.Writer, or nil (not a nil *Meter in an
// interface) for no meter.
func meterWriter(m *progress.Meter) io.Writer {
	if m == nil {
		return nil
	}
	return m
}

// checkOutDir refuses an existing non-empty folder (or a file) without
// force: an HF checkpoint is a folder, so --force replaces the files synth
// writes and leaves others.
func checkOutDir(dir string, force bool) error {
	st, err := os.Stat(dir)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("synth: %s: exists and is not a folder", dir)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(ents) > 0 && !force {
		return fmt.Errorf("synth: %s: %w", dir, atomicfile.ErrExists)
	}
	return nil
}
