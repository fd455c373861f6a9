package main

import (
	"fmt"
	"math"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/imatrix"
	"github.com/tfconv/tfconv/internal/output"
	"github.com/tfconv/tfconv/internal/progress"
	"github.com/tfconv/tfconv/mixfit"
	"github.com/tfconv/tfconv/quantize"
	"github.com/tfconv/tfconv/tensor"
)

type quantizeOptions struct {
	progress      bool
	src, dst      string
	typ           string
	pure          bool
	tensorTypes   []string
	keepOutput    bool
	embeddingType string
	outputType    string
	threads       int
	dryRun        bool
	json          bool
	force         bool
	to            string
	requantize    bool
	imatrix       string
	include       []string
	exclude       []string
	overrideKV    []string
	keepSplit     bool
	targetBPW     float64
	calib         string
	calibCtx      int
	pruneLayers   string
}

func newCmdQuantize(a *app) *cobra.Command {
	opts := &quantizeOptions{}
	cmd := &cobra.Command{
		Use:   "quantize SRC DST --type TYPE",
		Short: "Quantize a checkpoint with llama-quantize's policy and report the error",
		Long: `Quantize reads any checkpoint tfconv opens and writes it with a lower precision,
choosing a type per tensor as llama-quantize does: 1-D tensors, norms, position
and token-type embeddings stay as they are; --pure gives every other tensor the
--type; without it the llama.cpp mixture rules apply (q4_k_m: output.weight and
the attn_v/ffn_down tensors of the layers llama.cpp picks get Q6_K). q3_k, q4_k
and q5_k are llama-quantize's aliases of Q3_K_M, Q4_K_M and Q5_K_M; the _S
and _L mixtures are there too (q2_k_s only with --imatrix), and iq4_nl,
iq4_xs, iq3_xxs, iq3_xs, iq3_s, iq3_m, tq1_0 and tq2_0, and the 2-bit grid
mixtures iq2_xxs, iq2_xs, iq2_s (only with --imatrix), iq2_m (and iq3_xxs:
an IQ2_S tensor needs its imatrix entry), and the 1-bit grid mixtures iq1_s
and iq1_m (only with --imatrix). mxfp4_moe is newer llama-quantize's
MXFP4_MOE (general.file_type 38): stacked expert tensors MXFP4, every other
quantizable tensor Q8_0.

--prune-layers 1,3 drops those blocks as newer llama-quantize does: their
tensors are left out, later blocks are renumbered to close the gaps (blk.2
becomes blk.1), <arch>.block_count is lowered (and moved last), and the
per-layer arrays llama.cpp reads (head_count, head_count_kv,
feed_forward_length, ...) lose the pruned entries, which llama-quantize
leaves in. A layer the model does not have, or pruning every layer, is an
error.

--target-bpw X --calib TEXT re-chooses the quantized tensors' types by
measured sensitivity: each tensor alone in each type, the model's mean KL
divergence on TEXT, then the best divergence per byte within X bits per
weight (README: against llama.cpp's mixtures at their sizes).

--imatrix FILE (llama-imatrix's GGUF or legacy .dat, or tfconv imatrix's)
weighs each column's quantization error with its mean squared activation, as
llama-quantize --imatrix does (Q4_0, Q4_1, Q5_0, Q5_1, Q2_K..Q6_K, IQ4_NL,
IQ4_XS, IQ3_XXS, IQ3_S, IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S, IQ1_M; byte-identical
to llama-quantize c392e509 with the same .dat); --include-weights and
--exclude-weights keep the entries whose names contain / do not contain a string.

For every tensor the report gives the type, size and the error of the output
against the input measured on the data (RMSE, max abs, SQNR in dB), and the
totals, and what the error is measured against. --dry-run prints the report
and writes nothing.

A source that is already quantized (a ggml block type or int8 in any tensor)
is refused unless --allow-requantize, as llama-quantize does: the losses add
up, and the error is then measured against the dequantized source weights,
not the originals (the report says so).

Output (--to, else from DST: .tfn is native, an existing directory is
Hugging Face, anything else GGUF): GGUF (metadata kept in order,
general.file_type set to llama.cpp's ftype and moved last; not for int8,
which ggml has no type for), native (.tfn), or safetensors for f16, bf16 and
int8: a Hugging Face directory (config.json, tokenizer files and
generation_config.json copied beside model.safetensors). int8 is symmetric
per row: an I8 tensor plus "<name>.scale", F32, one scale per row.
A Hugging Face input is read for GGUF and native output as the f32 GGUF with
llama.cpp's names and metadata that 'tfconv convert --outtype f32' would
write, each tensor converted as it is quantized (no scratch file); a GGUF or
native input is first converted to an f32 Hugging Face directory for
safetensors output, in a scratch folder beside DST, which needs that much
free disk.`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.src, opts.dst = args[0], args[1]
			return runQuantize(a, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.typ, "type", "", "target type: "+strings.Join(quantize.TargetNames(), "|"))
	f.BoolVar(&opts.pure, "pure", false, "one type for every quantizable tensor (no mixture rules)")
	f.StringArrayVar(&opts.tensorTypes, "tensor-type", nil, "PATTERN=TYPE override (regexp searched in the name; repeatable, first match wins)")
	f.BoolVar(&opts.keepOutput, "keep-output", false, "leave output.weight as it is in the input")
	f.BoolVar(&opts.keepOutput, "leave-output-tensor", false, "llama-quantize's name of --keep-output")
	f.StringVar(&opts.embeddingType, "embedding-type", "", "type of token_embd.weight")
	f.StringVar(&opts.embeddingType, "token-embedding-type", "", "llama-quantize's name of --embedding-type")
	f.StringArrayVar(&opts.overrideKV, "override-kv", nil, "KEY=TYPE:VALUE set in the output (TYPE int, float, bool or str, as llama-quantize writes them; repeatable)")
	f.StringVar(&opts.outputType, "output-tensor-type", "", "type of output.weight")
	f.IntVar(&opts.threads, "threads", 0, "worker threads (0: all CPUs)")
	f.BoolVar(&opts.dryRun, "dry-run", false, "measure and report, write nothing")
	f.BoolVar(&opts.json, "json", false, "print the report as JSON")
	addProgressFlag(cmd, &opts.progress)
	f.BoolVar(&opts.force, "force", false, "replace an existing DST")
	f.StringVar(&opts.to, "to", "", "output format: gguf|native|safetensors (default from DST's extension, else gguf)")
	f.StringVar(&opts.imatrix, "imatrix", "", "importance matrix (llama-imatrix's GGUF or legacy .dat, or tfconv imatrix's) to weigh the quantization error with")
	f.StringArrayVar(&opts.include, "include-weights", nil, "use the importance matrix only for tensors whose name contains this (repeatable)")
	f.StringArrayVar(&opts.exclude, "exclude-weights", nil, "do not use the importance matrix for tensors whose name contains this (repeatable)")
	f.Float64Var(&opts.targetBPW, "target-bpw", 0, "choose the quantized tensors' types among the IQ2…Q8_0 types by measured sensitivity (each alone, KL divergence on --calib) so that the tensor data takes at most this many bits per weight")
	f.StringVar(&opts.calib, "calib", "", "calibration text for --target-bpw")
	f.IntVar(&opts.calibCtx, "calib-ctx", 128, "tokens per chunk of --calib")
	f.StringVar(&opts.pruneLayers, "prune-layers", "", "comma-separated layers (blocks) to drop, e.g. 1,3; later blocks are renumbered and block_count lowered, as llama-quantize --prune-layers (GGUF and native output)")
	f.BoolVar(&opts.keepSplit, "keep-split", false, "GGUF split set input: write one output shard per input shard, named DST-0000i-of-0000n.gguf (DST without .gguf), as llama-quantize --keep-split")
	f.BoolVar(&opts.requantize, "allow-requantize", false, "quantize a source that is already quantized (block types or int8); the error is then measured against its dequantized weights")
	return cmd
}

// quantizeJSON is the --json schema; fields are only ever added.
type quantizeJSON struct {
	Tensors       []quantizeTensorJSON `json:"tensors"`
	TotalBytes    int64                `json:"total_bytes"`
	BitsPerWeight float64              `json:"bits_per_weight"`
	// MeasuredAgainst is what the errors compare the output with:
	// "source weights", or "dequantized Q8_0 source weights" for a
	// quantized source (--allow-requantize).
	MeasuredAgainst string `json:"measured_against"`
}

type quantizeTensorJSON struct {
	Name   string  `json:"name"`
	Type   string  `json:"type"`
	Bytes  int64   `json:"bytes"`
	RMSE   float64 `json:"rmse"`
	MaxAbs float64 `json:"max_abs"`
	// SQNRdB is null when the output is exact (infinite SQNR).
	SQNRdB *float64 `json:"sqnr_db"`
	Reason string   `json:"reason"`
}

func runQuantize(a *app, opts *quantizeOptions) error {
	if opts.typ == "" {
		return fmt.Errorf("quantize: --type is required (one of %s)", strings.Join(quantize.TargetNames(), ", "))
	}
	target, err := quantize.ParseTarget(opts.typ)
	if err != nil {
		return err
	}
	if opts.threads < 0 {
		return fmt.Errorf("quantize: --threads %d: must be >= 0", opts.threads)
	}
	fo := quantize.FileOptions{
		Options: quantize.Options{Target: target, Pure: opts.pure, KeepOutput: opts.keepOutput, KeepSplit: opts.keepSplit},
		To:      opts.to, Force: opts.force, Requantize: opts.requantize, DryRun: opts.dryRun, Threads: opts.threads,
		Note: func(msg string) { fmt.Fprintln(a.err, msg) },
	}
	for _, s := range opts.tensorTypes {
		o, err := quantize.ParseOverride(s)
		if err != nil {
			return err
		}
		fo.Overrides = append(fo.Overrides, o)
	}
	for _, p := range []struct {
		flag, val string
		dst       *tensor.DType
	}{{"--embedding-type", opts.embeddingType, &fo.EmbeddingType}, {"--output-tensor-type", opts.outputType, &fo.OutputType}} {
		if p.val == "" {
			continue
		}
		d, err := quantize.ParseTensorType(p.val)
		if err != nil {
			return fmt.Errorf("%s: %w", p.flag, err)
		}
		*p.dst = d
	}
	if fo.Format, err = quantize.OutputFormat(opts.dst, opts.to); err != nil {
		return err
	}
	if opts.pruneLayers != "" {
		if fo.PruneLayers, err = quantize.ParsePruneLayers(opts.pruneLayers); err != nil {
			return err
		}
	}
	// llama-quantize sets the --override-kv keys, then its imatrix keys.
	for _, o := range opts.overrideKV {
		kv, err := quantize.ParseOverrideKV(o)
		if err != nil {
			return err
		}
		fo.Metadata = append(fo.Metadata, kv)
	}
	if opts.imatrix != "" {
		var keys tensor.Metadata
		if fo.Imatrix, keys, err = loadImatrix(opts); err != nil {
			return err
		}
		fo.Metadata = append(fo.Metadata, keys...)
	} else if len(opts.include) > 0 || len(opts.exclude) > 0 {
		return fmt.Errorf("quantize: --include-weights and --exclude-weights need --imatrix")
	}
	if opts.targetBPW != 0 {
		if opts.targetBPW < 0 || opts.targetBPW > 32 || opts.calib == "" {
			return fmt.Errorf("quantize: --target-bpw %g: want bits per weight above 0 and at most 32, and --calib TEXT", opts.targetBPW)
		}
		text, err := os.ReadFile(opts.calib)
		if err != nil {
			return err
		}
		fo.Refine = func(c *checkpoint.Checkpoint, plan []quantize.Choice) ([]quantize.Choice, error) {
			// Minutes of model runs: a line of their own, ended before
			// the tensors' starts.
			cal := progress.New(a.progressOut(opts.progress), "calibrate --target-bpw", 0, progress.Items, "model runs")
			defer cal.Finish()
			return mixfit.Fit(c, plan, mixfit.Options{Text: string(text), Ctx: opts.calibCtx, BitsPerWeight: opts.targetBPW,
				Progress: func(done, total int64) { cal.Set(done, total) }})
		}
	}
	// One progress line on a terminal (or with --progress), in bytes of
	// the source read; piped stderr stays clean. It starts with the first
	// tensor, so that its rate and ETA leave out the calibration before it.
	var meter *progress.Meter
	fo.ProgressBytes = func(done, total int64) {
		if meter == nil {
			meter = progress.New(a.progressOut(opts.progress), "quantize", total, progress.Bytes, "")
		}
		meter.Set(done, total)
	}
	rep, err := quantize.File(opts.src, opts.dst, fo)
	meter.Finish()
	if err != nil {
		return err
	}
	return quantizePrint(a, opts, rep.Report, rep.MeasuredAgainst)
}

func quantizePrint(a *app, opts *quantizeOptions, rep *quantize.Report, measured string) error {
	if opts.json {
		j := quantizeJSON{Tensors: []quantizeTensorJSON{}, TotalBytes: rep.TotalBytes, BitsPerWeight: rep.BitsPerWeight,
			MeasuredAgainst: measured}
		for _, t := range rep.Tensors {
			tj := quantizeTensorJSON{Name: t.Name, Type: t.Type.String(), Bytes: t.Bytes, RMSE: t.RMSE, MaxAbs: t.MaxAbs, Reason: t.Reason}
			if !math.IsInf(t.SQNR, 0) && !math.IsNaN(t.SQNR) {
				v := t.SQNR
				tj.SQNRdB = &v
			}
			j.Tensors = append(j.Tensors, tj)
		}
		return output.JSON(a.out, j)
	}
	tb := output.NewTable("tensor", "type", "bytes", "rmse", "max abs", "sqnr dB", "reason")
	for _, t := range rep.Tensors {
		sq := "exact"
		if !math.IsInf(t.SQNR, 0) {
			sq = fmt.Sprintf("%.2f", t.SQNR)
		}
		tb.Row(t.Name, t.Type, t.Bytes, fmt.Sprintf("%.3g", t.RMSE), fmt.Sprintf("%.3g", t.MaxAbs), sq, t.Reason)
	}
	if err := tb.Render(a.out); err != nil {
		return err
	}
	verb := "wrote"
	if opts.dryRun {
		verb = "would write"
	}
	_, err := fmt.Fprintf(a.out, "%s %d tensors, %d bytes (%s), %.3f bits per weight; error measured against the %s\n",
		verb, len(rep.Tensors), rep.TotalBytes, output.Bytes(rep.TotalBytes), rep.BitsPerWeight, measured)
	return err
}

// loadImatrix reads --imatrix as llama-quantize does: the importance per
// weight after --include-weights/--exclude-weights, and the keys it records
// in the output (none when no entry is left, as llama-quantize then
// quantizes without one).
func loadImatrix(opts *quantizeOptions) (map[string][]float32, tensor.Metadata, error) {
	m, err := imatrix.Open(opts.imatrix)
	if err != nil {
		return nil, nil, fmt.Errorf("quantize: --imatrix: %w", err)
	}
	imp, err := imatrix.Select(m.Importance(), opts.include, opts.exclude)
	if err != nil {
		return nil, nil, fmt.Errorf("quantize: %w", err)
	}
	if len(imp) == 0 {
		return nil, nil, nil
	}
	var dataset string
	if n := len(m.Datasets); n > 0 {
		dataset = m.Datasets[n-1]
	}
	return imp, quantize.ImatrixMetadata(opts.imatrix, dataset, len(imp), m.ChunkCount), nil
}
