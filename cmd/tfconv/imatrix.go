package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tfconv/tfconv/imatrix"
	"github.com/tfconv/tfconv/internal/atomicfile"
	"github.com/tfconv/tfconv/internal/output"
	"github.com/tfconv/tfconv/internal/progress"
	"github.com/tfconv/tfconv/model"
)

type imatrixOptions struct {
	model, file, out string
	ctx, chunks      int
	format           string
	processOutput    bool
	threads          int
	matchLlamaCpp    bool
	json, force      bool
	progress         bool
}

func newCmdImatrix(a *app) *cobra.Command {
	opts := &imatrixOptions{}
	cmd := &cobra.Command{
		Use:   "imatrix MODEL -f TEXT [-o imatrix.gguf]",
		Short: "Compute an importance matrix over a text, as llama-imatrix does",
		Long: `Imatrix runs a decoder-only model over a calibration text and records, for
every weight matrix of its blocks (blk.*), the sum of the squared input
activations of each column and the number of rows summed, as llama.cpp's
llama-imatrix does: the text is tokenized with BOS first, cut into chunks of
--ctx tokens (at least two; the tail dropped), each chunk's first token
replaced by BOS and run from an empty cache; a plain matrix counts rows
(only in evaluations of 16 tokens or more), a mixture's stacked expert
weights count per expert the tokens routed to it. --process-output also
collects output.weight.

The output is current llama.cpp's GGUF imatrix (general.type "imatrix",
"W.in_sum2" and "W.counts" tensors per weight W, imatrix.datasets /
chunk_count / chunk_size), or with --output-format dat (the default for a
name ending in .dat) the legacy imatrix.dat that llama-quantize at c392e509
reads. Both are read by 'tfconv quantize --imatrix'.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.model = args[0]
			return runImatrix(a, opts)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&opts.file, "file", "f", "", "calibration text (required)")
	f.StringVarP(&opts.out, "output-file", "o", "imatrix.gguf", "output file")
	f.IntVarP(&opts.ctx, "ctx-size", "c", imatrix.DefaultCtx, "tokens per chunk")
	f.IntVar(&opts.ctx, "ctx", imatrix.DefaultCtx, "the same as --ctx-size (perplexity's name)")
	f.IntVar(&opts.chunks, "chunks", 0, "process at most this many chunks (0: all)")
	f.StringVar(&opts.format, "output-format", "", "gguf|dat (default: dat for a name ending in .dat, else gguf)")
	f.BoolVar(&opts.processOutput, "process-output", false, "also collect output.weight")
	f.IntVarP(&opts.threads, "threads", "t", 0, "kernel threads (0: all CPUs)")
	addMatchLlamaCppFlag(cmd, &opts.matchLlamaCpp)
	f.BoolVar(&opts.json, "json", false, "print a summary as JSON")
	f.BoolVar(&opts.force, "force", false, "replace an existing output file")
	addProgressFlag(cmd, &opts.progress)
	return cmd
}

// imatrixJSON is the --json schema; fields are only ever added.
type imatrixJSON struct {
	Model    string             `json:"model"`
	File     string             `json:"file"`
	Output   string             `json:"output"`
	Format   string             `json:"format"`
	Ctx      int                `json:"ctx"`
	Chunks   int                `json:"chunks"`
	Entries  []imatrixEntryJSON `json:"entries"`
	Warnings []string           `json:"warnings"`
}

type imatrixEntryJSON struct {
	Name   string  `json:"name"`
	Cols   int     `json:"cols"`
	Counts []int64 `json:"counts"` // rows summed, per matrix (per expert for stacked weights)
}

func runImatrix(a *app, opts *imatrixOptions) error {
	if opts.file == "" {
		return fmt.Errorf("imatrix: -f/--file is required")
	}
	if opts.ctx <= 0 || opts.chunks < 0 || opts.threads < 0 {
		return fmt.Errorf("imatrix: --ctx-size must be > 0, --chunks and --threads >= 0")
	}
	format := imatrix.GGUF
	if opts.format != "" {
		var err error
		if format, err = imatrix.ParseFormat(opts.format); err != nil {
			return err
		}
	} else if strings.EqualFold(filepath.Ext(opts.out), ".dat") {
		format = imatrix.Dat
	}
	if err := atomicfile.CheckDest(opts.out, opts.force, opts.model, opts.file); err != nil {
		return fmt.Errorf("imatrix: %w", err)
	}
	text, err := os.ReadFile(opts.file)
	if err != nil {
		return fmt.Errorf("imatrix: %w", err)
	}
	m, err := model.Load(opts.model, model.LoadOptions{Threads: opts.threads, MatchLlamaCpp: opts.matchLlamaCpp, Progress: a.progressOut(opts.progress)})
	if err != nil {
		return err
	}
	defer m.Close()
	warnings, err := checkLength(a, "imatrix", m, opts.ctx)
	if err != nil {
		return err
	}
	meter := progress.New(a.progressOut(opts.progress), "imatrix", 0, progress.Items, "chunks")
	mat, err := imatrix.Compute(m, string(text), imatrix.Options{Ctx: opts.ctx, Chunks: opts.chunks,
		ProcessOutput: opts.processOutput, Dataset: opts.file,
		Progress: func(done, total int) { meter.Set(int64(done), int64(total)) }})
	meter.Finish()
	if err != nil {
		return err
	}
	out, err := atomicfile.Create(opts.out, opts.force, opts.model, opts.file)
	if err != nil {
		return fmt.Errorf("imatrix: %w", err)
	}
	defer out.Abort()
	if err := imatrix.Write(out, mat, format); err != nil {
		return fmt.Errorf("imatrix: %s: %w", opts.out, err)
	}
	if err := out.Commit(); err != nil {
		return fmt.Errorf("imatrix: %w", err)
	}
	if opts.json {
		j := imatrixJSON{Model: opts.model, File: opts.file, Output: opts.out, Format: string(format), Ctx: opts.ctx,
			Chunks: mat.ChunkCount, Entries: []imatrixEntryJSON{}, Warnings: warnings}
		for _, e := range mat.Entries {
			j.Entries = append(j.Entries, imatrixEntryJSON{Name: e.Name, Cols: e.Cols(), Counts: e.Counts})
		}
		return output.JSON(a.out, j)
	}
	fmt.Fprintf(a.out, "%s: %d chunks of %d tokens, %d weights -> %s (%s)\n",
		opts.model, mat.ChunkCount, opts.ctx, len(mat.Entries), opts.out, format)
	return nil
}
