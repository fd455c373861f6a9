package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"gonum.org/v1/gonum/stat"

	"github.com/tfconv/tfconv/internal/output"
	"github.com/tfconv/tfconv/internal/progress"

	"github.com/tfconv/tfconv/kernels"
	"github.com/tfconv/tfconv/model"
)

type benchOptions struct {
	progress bool
	path     string
	prompt   int
	gen      int
	reps     int
	threads  int
	json     bool
	// matchLlamaCpp: model.LoadOptions.MatchLlamaCpp (--match-llamacpp).
	matchLlamaCpp bool
	// bandwidth: measure the machine's read bandwidth after the run
	// (--bandwidth).
	bandwidth bool
}

func newCmdBench(a *app) *cobra.Command {
	opts := &benchOptions{}
	cmd := &cobra.Command{
		Use:   "bench MODEL",
		Short: "Measure prefill and decode speed, like llama-bench",
		Long: `Bench loads a checkpoint and measures, after a warm-up run as llama-bench's
(the whole prompt, one decoded token), the prefill rate over a prompt of
--prompt tokens (one batched step, logits of the last position only) and
the decode rate over --gen tokens generated one at a time with the KV cache.
Token ids are a fixed pseudo-random sequence. With -r/--repetitions N the
measurement runs N times and the rates are their mean, with the standard
deviation beside it, as llama-bench reports them.

Decode is bound by memory: each token streams every weight matrix once.
Bench reports those bytes per token and the rate they streamed at, beside
the machine's read bandwidth measured the same way (a float32 matrix of
` + readBandwidthSize + ` streamed by the same kernels and threads;
--bandwidth=false skips it).`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.path = args[0]
			return runBench(a, opts)
		},
	}
	f := cmd.Flags()
	f.IntVar(&opts.prompt, "prompt", 128, "prompt tokens for the prefill measurement")
	f.IntVar(&opts.gen, "gen", 32, "tokens generated for the decode measurement")
	f.IntVarP(&opts.reps, "repetitions", "r", 1, "measured runs; the rates are their mean (llama-bench's -r)")
	f.IntVarP(&opts.threads, "threads", "t", 0, "kernel threads (default: all CPUs)")
	f.BoolVar(&opts.json, "json", false, "print JSON")
	f.BoolVar(&opts.bandwidth, "bandwidth", true, "measure the machine's read bandwidth after the run ("+readBandwidthSize+", about a second)")
	addProgressFlag(cmd, &opts.progress)
	addMatchLlamaCppFlag(cmd, &opts.matchLlamaCpp)
	return cmd
}

// matchLlamaCppUsage is the help of --match-llamacpp, the same on every
// command that runs a model.
const matchLlamaCppUsage = "compute as llama.cpp's CPU backend does (activations rounded to 8 bits inside " +
	"quantized matrix products, f16/bf16 for half-precision weights; ggml's fp16 GELU table): logits close to " +
	"llama.cpp's rather than the float32 reference, and faster on CPUs with int8 dot products"

// addMatchLlamaCppFlag binds --match-llamacpp to p, for model.LoadOptions.MatchLlamaCpp.
func addMatchLlamaCppFlag(cmd *cobra.Command, p *bool) {
	cmd.Flags().BoolVar(p, "match-llamacpp", false, matchLlamaCppUsage)
}

// benchJSON is the JSON output of bench; fields are only ever added.
type benchJSON struct {
	PrefillTokS float64 `json:"prefill_tok_s"`
	DecodeTokS  float64 `json:"decode_tok_s"`
	Threads     int     `json:"threads"`
	Prompt      int     `json:"prompt"`
	Gen         int     `json:"gen"`
	Arch        string  `json:"arch"`
	// MatchLlamaCpp reports --match-llamacpp.
	MatchLlamaCpp bool `json:"match_llamacpp"`
	// Warnings: the run goes past the model's trained context.
	Warnings []string `json:"warnings"`
	// DecodeWeightBytes is the bytes of weight matrices one decoded token
	// multiplied by (kernels.WeightBytesStreamed), DecodeWeightGBs the rate
	// they streamed at (DecodeWeightBytes · decode_tok_s / 1e9); both 0
	// without --gen.
	DecodeWeightBytes int64   `json:"decode_weight_bytes_per_token"`
	DecodeWeightGBs   float64 `json:"decode_weight_gb_s"`
	// Repetitions is -r/--repetitions; with more than one, PrefillTokS and
	// DecodeTokS are the runs' mean and the *Sd fields their sample
	// standard deviation (0 for one run), as llama-bench's avg_ts and
	// stddev_ts.
	Repetitions int     `json:"repetitions"`
	PrefillSd   float64 `json:"prefill_tok_s_sd"`
	DecodeSd    float64 `json:"decode_tok_s_sd"`
	// ReadBandwidthGBs is the machine's read bandwidth as the kernels see
	// it (kernels.ReadBandwidth over readBandwidthBytes, the same
	// threads); 0 with --bandwidth=false.
	ReadBandwidthGBs float64 `json:"read_bandwidth_gb_s"`
}

// readBandwidthBytes is the matrix bench streams to measure the read
// bandwidth: well above any CPU's last-level cache.
const readBandwidthBytes = 512 << 20

// readBandwidthSize is readBandwidthBytes for the help texts.
var readBandwidthSize = fmt.Sprintf("%d MiB", readBandwidthBytes>>20)

// benchTokens is a fixed token sequence spread over the vocabulary.
func benchTokens(n, vocab, salt int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = (i*7919 + salt*104729 + 13) % vocab
	}
	return out
}

// benchRun prefills prompt tokens and decodes gen more, returning both
// durations and the weight bytes the decode streamed.
func benchRun(m *model.Model, prompt, gen, salt int, meter *progress.Meter) (prefill, decode time.Duration, streamed int64, err error) {
	cfg := m.Config()
	toks := benchTokens(prompt, cfg.Vocab, salt)
	s := m.NewSession()
	t0 := time.Now()
	var logits []float32
	switch {
	case cfg.EncoderOnly:
		_, err = m.Forward(model.Input{Tokens: toks}, nil)
		return time.Since(t0), 0, 0, err
	case cfg.EncoderDecoder:
		if err = s.Encode(toks); err != nil {
			return 0, 0, 0, err
		}
		logits, err = s.Step([]int{cfg.DecoderStart})
	default:
		logits, err = s.Step(toks)
	}
	if err != nil {
		return 0, 0, 0, err
	}
	prefill = time.Since(t0)
	meter.Add(int64(prompt))
	b0 := kernels.WeightBytesStreamed()
	t0 = time.Now()
	for i := 0; i < gen; i++ {
		meter.Add(1)
		next := 0
		for j, v := range logits {
			if v > logits[next] {
				next = j
			}
		}
		if logits, err = s.Step([]int{next}); err != nil {
			return 0, 0, 0, err
		}
	}
	return prefill, time.Since(t0), kernels.WeightBytesStreamed() - b0, nil
}

func runBench(a *app, opts *benchOptions) error {
	if opts.prompt < 1 || opts.gen < 0 || opts.reps < 1 {
		return fmt.Errorf("bench: --prompt and --repetitions must be ≥ 1 and --gen ≥ 0")
	}
	t0 := time.Now()
	m, err := model.Load(opts.path, model.LoadOptions{Threads: opts.threads, MatchLlamaCpp: opts.matchLlamaCpp, Progress: a.progressOut(opts.progress)})
	if err != nil {
		return err
	}
	cfg := m.Config()
	warnings, err := checkLength(a, "bench", m, opts.prompt+opts.gen+1)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.err, "loaded %s (%s) in %.1fs\n", opts.path, cfg.Arch, time.Since(t0).Seconds())
	// Warm-up (excluded), as llama-bench's: the whole prompt once and one
	// decoded token, so that the pools reach the measured run's sizes and a
	// mixture's experts have all been used once (a short warm-up routes to a
	// few of them; on a Llama-4-Scout-shaped file the first full prefill ran
	// at half the rate of the next ones).
	if _, _, _, err := benchRun(m, opts.prompt, min(opts.gen, 1), 1, nil); err != nil {
		return err
	}
	// Progress (tokens done) prints at most every progress.Every: no
	// measurable cost against a token's time.
	meter := progress.New(a.progressOut(opts.progress), "bench", int64(opts.reps*(opts.prompt+opts.gen)), progress.Items, "tokens")
	var pp, tg []float64
	var streamed int64
	for range opts.reps {
		prefill, decode, s, err := benchRun(m, opts.prompt, opts.gen, 0, meter)
		if err != nil {
			meter.Finish()
			return err
		}
		pp = append(pp, float64(opts.prompt)/prefill.Seconds())
		if opts.gen > 0 && decode > 0 {
			tg = append(tg, float64(opts.gen)/decode.Seconds())
		}
		streamed = s
	}
	meter.Finish()
	res := benchJSON{Threads: kernels.Threads(), Prompt: opts.prompt, Gen: opts.gen, Arch: cfg.Arch, MatchLlamaCpp: opts.matchLlamaCpp, Warnings: warnings,
		Repetitions: opts.reps}
	res.PrefillTokS, res.PrefillSd = meanSd(pp)
	if len(tg) > 0 {
		res.DecodeTokS, res.DecodeSd = meanSd(tg)
		res.DecodeWeightBytes = streamed / int64(opts.gen)
		res.DecodeWeightGBs = float64(res.DecodeWeightBytes) * res.DecodeTokS / 1e9
	}
	if opts.bandwidth {
		res.ReadBandwidthGBs = kernels.ReadBandwidth(readBandwidthBytes, 5) / 1e9
	}
	if opts.json {
		return output.JSONLine(a.out, res)
	}
	sd := func(v float64) string {
		if opts.reps < 2 {
			return ""
		}
		return fmt.Sprintf(" ± %.2f", v)
	}
	fmt.Fprintf(a.out, "threads %d: prefill %d tokens %.2f%s tok/s, decode %d tokens %.2f%s tok/s\n",
		res.Threads, opts.prompt, res.PrefillTokS, sd(res.PrefillSd), opts.gen, res.DecodeTokS, sd(res.DecodeSd))
	if res.DecodeWeightBytes > 0 {
		fmt.Fprintf(a.out, "decode streams %.3f GB of weights a token: %.1f GB/s", float64(res.DecodeWeightBytes)/1e9, res.DecodeWeightGBs)
		if res.ReadBandwidthGBs > 0 {
			fmt.Fprintf(a.out, ", %.0f%% of the %.1f GB/s read bandwidth", 100*res.DecodeWeightGBs/res.ReadBandwidthGBs, res.ReadBandwidthGBs)
		}
		fmt.Fprintln(a.out)
	}
	return nil
}

// meanSd returns the mean of v and its sample standard deviation (0 for
// fewer than two values), as llama-bench computes avg_ts and stddev_ts.
func meanSd(v []float64) (mean, sd float64) {
	switch len(v) {
	case 0:
		return 0, 0
	case 1:
		return v[0], 0
	}
	return stat.MeanStdDev(v, nil)
}
