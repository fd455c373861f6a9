package main

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/convert"
	"github.com/tfconv/tfconv/formats/ctensors"
	"github.com/tfconv/tfconv/imatrix"
	"github.com/tfconv/tfconv/internal/output"
	"github.com/tfconv/tfconv/internal/progress"
	"github.com/tfconv/tfconv/mixfit"
	"github.com/tfconv/tfconv/quantize"
	"github.com/tfconv/tfconv/tensor"
)

type quantizeOptions struct {
	progress      bool
	bits, groupSz int    // --to mlx (and --group-size for --to compressed-tensors)
	mode          string // --to mlx: MLX's quantization mode
	bitsSet       bool
	groupSzSet    bool
	scheme        string // --to compressed-tensors
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
	// noPass: --requantize, no exact Q4_0 pass-through.
	noPass        bool
	imatrix       string
	include       []string
	exclude       []string
	overrideKV    []string
	keepSplit     bool
	splitMaxSize  string
	part          string
	resume        bool
	targetBPW     float64
	calib         string
	calibCtx      int
	pruneLayers   string
	output        string
	allowOverflow bool
	report        string
}

func newCmdQuantize(a *app) *cobra.Command {
	opts := &quantizeOptions{}
	cmd := &cobra.Command{
		Use:   "quantize SRC DST [TYPE [NTHREADS]]",
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
quantizable tensor Q8_0. q1_0 is newer llama-quantize's Q1_0 (general.file_type
40: a sign bit per weight, an f16 scale per 128); NVFP4, which newer
llama-quantize offers only per tensor, is a --tensor-type, --embedding-type and
--output-tensor-type type here too.

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
and writes nothing. --report FILE also writes it as a self-contained HTML
page: the types chosen, a layer × tensor-kind map of them, the error by layer
and the tensors (sorted by a click, filtered by text).

The requantize rule: re-encoding a source that is already integer-quantized
(a ggml block type Q*/IQ*/TQ*/MXFP4 or int8 in any tensor, or a GPTQ or AWQ
checkpoint) into another quantized type needs --allow-requantize, as
llama-quantize asks: the losses add up, and the error is then measured
against the dequantized source weights, not the originals (the report says
so). A same-type copy (a Q8_0 file to q8_0), dequantizing (--type f32, f16
or bf16: one step, no flag), --type copy (llama-quantize's COPY: every tensor
as it is, general.file_type kept) and an FP8 source (a published precision,
like bf16) need no flag.

llama-quantize's positional form works too: 'quantize SRC DST Q4_K_M 8' is
'quantize SRC DST --type q4_k_m --threads 8' (type names in any case, or
llama-quantize's ftype numbers: 15 is q4_k_m); -o DST may take DST's place.
-t is --threads, -f --calib and -c --calib-ctx.

A value beyond the range of its tensor's type (an f16 value past 65504, a
block whose f16 scale overflows) is an error naming the tensor, how many
values and the largest, and nothing is written; --tensor-type NAME=f32 (or
bf16) keeps that tensor wide, and --allow-overflow writes them as ±Inf and
reports the tensors and counts ("overflow" in --json).

Output (--to, else from DST as convert guesses it: .gguf is GGUF, .tfn
native, anything else a Hugging Face directory): GGUF (metadata kept in order,
general.file_type set to llama.cpp's ftype and moved last; not for int8,
which ggml has no type for), native (.tfn), or safetensors for f16, bf16 and
int8 (and f32): a Hugging Face directory (config.json, tokenizer files and
generation_config.json copied beside model.safetensors). int8 is symmetric
per row: an I8 tensor plus "<name>.scale", F32, one scale per row.
A Hugging Face input is read for GGUF and native output as the f32 GGUF with
llama.cpp's names and metadata that 'tfconv convert --outtype f32' would
write, each tensor converted as it is quantized (no scratch file); a GGUF or
native input is read for safetensors output as the f32 Hugging Face
directory 'tfconv convert --outtype f32' would write, likewise tensor by
tensor (no scratch folder). Into an existing folder --force writes as 'tfconv convert' does:
the files the output has are replaced, an earlier save's stale
model*.safetensors files removed, every other file kept, each one named;
--json lists them as "replaced" and "removed_stale".`,
		Args: cobra.ArbitraryArgs, // quantizeArgs
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := quantizeArgs(cmd, opts, args); err != nil {
				return err
			}
			opts.groupSzSet = cmd.Flags().Changed("group-size")
			opts.bitsSet = cmd.Flags().Changed("bits")
			return runQuantize(a, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.typ, "type", "", "target type (or as the third argument; the types are listed below): "+strings.Join(quantize.TargetNames(), "|"))
	f.StringVarP(&opts.output, "output", "o", "", "output path, in place of the DST argument")
	f.BoolVar(&opts.pure, "pure", false, "one type for every quantizable tensor (no mixture rules)")
	f.StringArrayVar(&opts.tensorTypes, "tensor-type", nil, "PATTERN=TYPE override (regexp searched in the name; repeatable, first match wins)")
	f.BoolVar(&opts.keepOutput, "keep-output", false, "leave output.weight as it is in the input")
	f.BoolVar(&opts.keepOutput, "leave-output-tensor", false, "llama-quantize's name of --keep-output")
	f.StringVar(&opts.embeddingType, "embedding-type", "", "type of token_embd.weight")
	f.StringVar(&opts.embeddingType, "token-embedding-type", "", "llama-quantize's name of --embedding-type")
	f.StringArrayVar(&opts.overrideKV, "override-kv", nil, "KEY=TYPE:VALUE set in the output (TYPE int, float, bool or str, as llama-quantize writes them; repeatable)")
	f.StringVar(&opts.outputType, "output-tensor-type", "", "type of output.weight")
	f.IntVarP(&opts.threads, "threads", "t", 0, "worker threads (0: all CPUs; or as the fourth argument)")
	f.BoolVar(&opts.dryRun, "dry-run", false, "measure and report, write nothing")
	f.BoolVar(&opts.json, "json", false, "print the report as JSON")
	f.StringVar(&opts.report, "report", "", "write the report as a self-contained HTML page to FILE (each tensor's type, a layer × kind map of types, the error by layer)")
	addProgressFlag(cmd, &opts.progress)
	f.BoolVar(&opts.force, "force", false, "replace an existing DST (a folder: only the files the output has, others kept)")
	f.StringVar(&opts.to, "to", "", "output format: gguf|native|safetensors|mlx|compressed-tensors (default: from DST as convert guesses it: .gguf, .tfn, else a Hugging Face directory); mlx quantizes as mlx_lm.convert -q (--bits, --group-size; no --type)")
	f.IntVar(&opts.bits, "bits", 4, "--to mlx: bits per weight of MLX's affine quantization (2, 3, 4, 5, 6, 8)")
	f.StringVar(&opts.mode, "mode", "affine", "--to mlx: MLX's quantization mode (mlx_lm.convert --q-mode): affine, or mxfp4, mxfp8, nvfp4 (each with its own bits and group size)")
	f.IntVar(&opts.groupSz, "group-size", 64, "--to mlx: values per scale and bias (32, 64, 128); --to compressed-tensors: values per scale of W4A16/W4A16_ASYM (default the scheme's, 128)")
	f.StringVar(&opts.scheme, "scheme", "", "--to compressed-tensors: llm-compressor's scheme name: "+strings.Join(ctensors.PresetNames(), ", "))
	f.StringVar(&opts.imatrix, "imatrix", "", "importance matrix (llama-imatrix's GGUF or legacy .dat, or tfconv imatrix's) to weigh the quantization error with")
	f.StringArrayVar(&opts.include, "include-weights", nil, "use the importance matrix only for tensors whose name contains this (repeatable)")
	f.StringArrayVar(&opts.exclude, "exclude-weights", nil, "do not use the importance matrix for tensors whose name contains this (repeatable)")
	f.Float64Var(&opts.targetBPW, "target-bpw", 0, "choose the quantized tensors' types among the IQ2…Q8_0 types by measured sensitivity (each alone, KL divergence on --calib) so that the tensor data takes at most this many bits per weight")
	f.StringVarP(&opts.calib, "calib", "f", "", "calibration text file for --target-bpw")
	f.IntVarP(&opts.calibCtx, "calib-ctx", "c", 128, "tokens per chunk of --calib (context)")
	f.StringVar(&opts.pruneLayers, "prune-layers", "", "comma-separated layers (blocks) to drop, e.g. 1,3; later blocks are renumbered and block_count lowered, as llama-quantize --prune-layers (GGUF and native output)")
	f.StringVar(&opts.splitMaxSize, "split-max-size", "", "write GGUF output as a gguf-split set with at most this much tensor data per shard, laid out as convert --split-max-size (e.g. 5GB, 2G, 500M)")
	f.StringVar(&opts.part, "part", "", "with --split-max-size or --keep-split: write only part K of N (K/N, K from 1) of the set's shards; auto/N takes K from JOB_COMPLETION_INDEX or SLURM_ARRAY_TASK_ID−SLURM_ARRAY_TASK_MIN")
	f.BoolVar(&opts.resume, "resume", false, "with --split-max-size or --keep-split: continue a run that was killed or failed, keeping the shards its record DST.tfconv-resume names whose sha256 still matches")
	f.BoolVar(&opts.keepSplit, "keep-split", false, "GGUF split set input: write one output shard per input shard, named DST-0000i-of-0000n.gguf (DST without .gguf), as llama-quantize --keep-split")
	f.BoolVar(&opts.allowOverflow, "allow-overflow", false, "write values beyond a tensor type's range (f16: 65504) as ±Inf instead of failing; the tensors and counts are reported")
	f.BoolVar(&opts.noPass, "requantize", false, "no exact pass-through: a 4-bit layer with groups of 32 (compressed-tensors W4A16 or symmetric GPTQ chosen as Q4_0, AWQ or asymmetric GPTQ as Q4_1) goes through ggml's encoder instead of keeping its values exactly")
	f.BoolVar(&opts.requantize, "allow-requantize", false, "re-encode a source that is already integer-quantized (ggml block types, int8, GPTQ, AWQ) into another quantized type; the error is then measured against its dequantized weights")
	cmd.Long += "\n\n" + quantizeTypeList()
	addTokenFlag(cmd)
	return cmd
}

// quantizeTypeList is the --help list of the types, as llama-quantize's
// usage lists them: each with the bits per weight of its base type (from
// tensor's block layout) and a hint of its quality.
func quantizeTypeList() string {
	var b strings.Builder
	b.WriteString("Types (bpw: bits per weight of the base type, which a mixture gives only\n" +
		"some tensors; ppl: perplexity increase on Llama-3-8B as llama-quantize lists it):\n")
	for _, t := range quantize.Targets() {
		base, bpw := "", ""
		if !t.Copy {
			base, bpw = t.Type.String(), fmt.Sprintf("%5.2f", t.BitsPerWeight)
		}
		fmt.Fprintf(&b, "  %-9s %-7s %5s  %s\n", t.Name, base, bpw, t.Hint)
	}
	return strings.TrimRight(b.String(), "\n")
}

// quantizeArgs reads SRC DST [TYPE [NTHREADS]], llama-quantize's
// positional form beside --type and --threads; with -o, DST is left out.
// A value given both ways must agree.
func quantizeArgs(cmd *cobra.Command, opts *quantizeOptions, args []string) error {
	min := 2
	if opts.output != "" {
		min = 1
	}
	if len(args) < min || len(args) > min+2 {
		return fmt.Errorf("quantize: expected 2 arguments SRC DST, or llama-quantize's SRC DST TYPE [NTHREADS] (DST left out with -o), "+
			"got %d (usage: %s)", len(args), cmd.UseLine())
	}
	opts.src, opts.dst = args[0], opts.output
	if opts.output == "" {
		opts.dst = args[1]
	}
	rest := args[min:]
	if len(rest) > 0 {
		if opts.typ != "" && !strings.EqualFold(opts.typ, rest[0]) {
			return fmt.Errorf("quantize: type given twice: --type %s and argument %s", opts.typ, rest[0])
		}
		opts.typ = rest[0]
	}
	if len(rest) > 1 {
		n, err := strconv.Atoi(rest[1])
		if err != nil || n <= 0 {
			return fmt.Errorf("quantize: NTHREADS %q: want a positive number of threads", rest[1])
		}
		if cmd.Flags().Changed("threads") && opts.threads != n {
			return fmt.Errorf("quantize: threads given twice: --threads %d and argument %d", opts.threads, n)
		}
		opts.threads = n
	}
	return nil
}

// quantizeJSON is the --json schema; fields are only ever added.
type quantizeJSON struct {
	Tensors       []quantizeTensorJSON `json:"tensors"`
	TotalBytes    int64                `json:"total_bytes"`
	BitsPerWeight float64              `json:"bits_per_weight"`
	// MeasuredAgainst is what the errors compare the output with:
	// "source weights", or "dequantized Q8_0 source weights" for a
	// quantized source (requantized with --allow-requantize, or
	// dequantized).
	MeasuredAgainst string `json:"measured_against"`
	// Replaced and RemovedStale say what the output did to an existing DST
	// (--force): the files replaced, and an earlier save's stale weight
	// files removed from a Hugging Face folder. Empty lists when none.
	Replaced     []string `json:"replaced"`
	RemovedStale []string `json:"removed_stale"`
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
	// Inexact counts the rows of an exact Q4_0 pass-through that held a
	// block Q4_0 cannot hold exactly (encoded by ggml's rule instead).
	Inexact int64 `json:"inexact_rows,omitempty"`
	// Overflow counts the values written as ±Inf (--allow-overflow), and
	// OverflowMaxAbs is the largest of their magnitudes.
	Overflow       int64   `json:"overflow,omitempty"`
	OverflowMaxAbs float32 `json:"overflow_max_abs,omitempty"`
}

func runQuantize(a *app, opts *quantizeOptions) error {
	if strings.EqualFold(opts.to, string(convert.CompressedTensors)) {
		if opts.typ != "" {
			return fmt.Errorf("quantize: --to compressed-tensors quantizes with the library's scheme (--scheme), not a GGUF --type (%s)", opts.typ)
		}
		gs := 0
		if opts.groupSzSet {
			gs = opts.groupSz
		}
		return runConvert(a, &convertOptions{src: opts.src, dst: opts.dst, to: string(convert.CompressedTensors), force: opts.force,
			dryRun: opts.dryRun, json: opts.json, progress: opts.progress, allowOverflow: opts.allowOverflow,
			maxShardSize: "5GiB", groupSize: gs, scheme: opts.scheme})
	}
	if strings.EqualFold(opts.to, string(convert.MLX)) {
		if opts.typ != "" {
			return fmt.Errorf("quantize: --to mlx quantizes with MLX's affine scheme (--bits, --group-size), not a GGUF --type (%s)", opts.typ)
		}
		bits, gs := opts.bits, opts.groupSz
		if opts.mode != "" && opts.mode != "affine" {
			// The mode's own bits and group size, unless given.
			bits, gs = 0, 0
			if opts.bitsSet {
				bits = opts.bits
			}
			if opts.groupSzSet {
				gs = opts.groupSz
			}
		}
		return runConvert(a, &convertOptions{src: opts.src, dst: opts.dst, to: string(convert.MLX), force: opts.force,
			dryRun: opts.dryRun, json: opts.json, progress: opts.progress, allowOverflow: opts.allowOverflow,
			maxShardSize: "5GiB", bits: bits, groupSize: gs, mlxMode: opts.mode})
	}
	if opts.typ == "" {
		return fmt.Errorf("quantize: --type is required, or TYPE after DST (one of %s)", strings.Join(quantize.TargetNames(), ", "))
	}
	target, err := quantize.ParseTarget(opts.typ)
	if err != nil {
		return err
	}
	if opts.threads < 0 {
		return fmt.Errorf("quantize: --threads %d: must be >= 0", opts.threads)
	}
	fo := convert.QuantizeOptions{
		Options: quantize.Options{Target: target, Pure: opts.pure, KeepOutput: opts.keepOutput, KeepSplit: opts.keepSplit, Requantize: opts.noPass},
		To:      opts.to, Force: opts.force, Requantize: opts.requantize, DryRun: opts.dryRun, Threads: opts.threads,
		AllowOverflow: opts.allowOverflow,
		Note:          func(msg string) { fmt.Fprintln(a.err, msg) },
	}
	if opts.splitMaxSize != "" {
		if fo.SplitMaxBytes, err = parseSize("split-max-size", opts.splitMaxSize); err != nil {
			return err
		}
	}
	if opts.part != "" {
		if fo.Part, err = convert.ParsePart(opts.part, os.Getenv); err != nil {
			return err
		}
	}
	fo.Resume = opts.resume
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
	if fo.Format, err = convert.QuantizeFormat(opts.dst, opts.to); err != nil {
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
	var fetched func() int64 // a remote source's bytes received
	fo.Remote = func(f func() int64) { fetched = f }
	fo.ProgressBytes = func(done, total int64) {
		if meter == nil {
			meter = progress.New(a.progressOut(opts.progress), "quantize", total, progress.Bytes, "")
			if fetched != nil {
				meter.Source(fetched)
			}
		}
		meter.Set(done, total)
	}
	rep, err := convert.Quantize(opts.src, opts.dst, fo)
	meter.Finish()
	if err != nil {
		return err
	}
	return quantizePrint(a, opts, rep)
}

func quantizePrint(a *app, opts *quantizeOptions, frep *convert.QuantizeReport) error {
	rep, measured := frep.Report, frep.MeasuredAgainst
	for _, t := range rep.Tensors {
		if t.Overflow > 0 {
			fmt.Fprintf(a.err, "tfconv: warning: overflow (--allow-overflow): tensor %q: %d value(s) beyond %v's range written as ±Inf (largest magnitude %g)\n",
				t.Name, t.Overflow, t.Type, t.OverflowMaxAbs)
		}
	}
	if opts.report != "" {
		inputs := []string{opts.src}
		if !opts.dryRun {
			inputs = append(inputs, opts.dst)
		}
		if err := writeQuantizeReport(opts.report, opts.force, quantizePage(quantizeData(frep), opts.src, opts.typ), inputs...); err != nil {
			return fmt.Errorf("quantize: %w", err)
		}
	}
	if opts.json {
		return output.JSON(a.out, quantizeData(frep))
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
	if _, err := fmt.Fprintf(a.out, "%s %d tensors, %d bytes (%s), %.3f bits per weight; error measured against the %s\n",
		verb, len(rep.Tensors), rep.TotalBytes, output.Bytes(rep.TotalBytes), rep.BitsPerWeight, measured); err != nil {
		return err
	}
	return printReplaced(a.out, opts.dst, frep.Format == quantize.Safetensors, frep.Replaced, frep.RemovedStale)
}

// quantizeData is the --json report (and what the --report page embeds).
func quantizeData(frep *convert.QuantizeReport) *quantizeJSON {
	rep := frep.Report
	j := &quantizeJSON{Tensors: []quantizeTensorJSON{}, TotalBytes: rep.TotalBytes, BitsPerWeight: rep.BitsPerWeight,
		MeasuredAgainst: frep.MeasuredAgainst, Replaced: nonNil(frep.Replaced), RemovedStale: nonNil(frep.RemovedStale)}
	for _, t := range rep.Tensors {
		tj := quantizeTensorJSON{Name: t.Name, Type: t.Type.String(), Bytes: t.Bytes, RMSE: t.RMSE, MaxAbs: t.MaxAbs, Reason: t.Reason,
			Overflow: t.Overflow, OverflowMaxAbs: t.OverflowMaxAbs, Inexact: t.Inexact}
		if !math.IsInf(t.SQNR, 0) && !math.IsNaN(t.SQNR) {
			v := t.SQNR
			tj.SQNRdB = &v
		}
		j.Tensors = append(j.Tensors, tj)
	}
	return j
}

// nonNil makes a missing list an empty one, for --json.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
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
