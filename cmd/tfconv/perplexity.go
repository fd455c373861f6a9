package main

import (
	"fmt"
	"os"

	"github.com/tfconv/tfconv/eval"
	"github.com/tfconv/tfconv/internal/progress"

	"github.com/spf13/cobra"

	"github.com/tfconv/tfconv/internal/output"
	"github.com/tfconv/tfconv/model"
	"github.com/tfconv/tfconv/verify"
)

type perplexityOptions struct {
	progress bool
	model    string
	file     string
	ctx      int
	chunks   int
	threads  int
	// matchLlamaCpp: model.LoadOptions.MatchLlamaCpp (--match-llamacpp).
	matchLlamaCpp bool
	json          bool
}

func newCmdPerplexity(a *app) *cobra.Command {
	opts := &perplexityOptions{}
	cmd := &cobra.Command{
		Use:   "perplexity MODEL --file TEXT",
		Short: "Perplexity over a text, computed the way llama-perplexity does",
		Long: `Perplexity scores a text the way 'llama-perplexity -f TEXT -c CTX' does: the
text is tokenized once with BOS first, cut into chunks of --ctx tokens (at least
two chunks; the tail is dropped), the first token of each chunk replaced by BOS,
each chunk run from an empty cache, and only the second half of each chunk
scored (positions ctx/2 … ctx−2 predicting the next token). PPL = exp(mean
negative log-likelihood), with its standard error as llama-perplexity prints it.
--chunks N stops after N chunks (the running values equal llama-perplexity's
[N] figures).`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.model = args[0]
			return runPerplexity(a, opts)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&opts.file, "file", "f", "", "text file to score (required)")
	f.IntVarP(&opts.ctx, "ctx", "c", eval.DefaultPerplexityCtx, "tokens per chunk (context)")
	f.IntVar(&opts.chunks, "chunks", 0, "score at most this many chunks (0: all)")
	f.IntVarP(&opts.threads, "threads", "t", 0, "kernel threads (0: all CPUs)")
	addMatchLlamaCppFlag(cmd, &opts.matchLlamaCpp)
	f.BoolVar(&opts.json, "json", false, "print the result as JSON")
	addProgressFlag(cmd, &opts.progress)
	return cmd
}

func runPerplexity(a *app, opts *perplexityOptions) error {
	if opts.file == "" {
		return fmt.Errorf("perplexity: --file is required")
	}
	text, err := os.ReadFile(opts.file)
	if err != nil {
		return fmt.Errorf("perplexity: %w", err)
	}
	m, err := model.Load(opts.model, model.LoadOptions{Threads: opts.threads, MatchLlamaCpp: opts.matchLlamaCpp, Progress: a.progressOut(opts.progress)})
	if err != nil {
		return err
	}
	warnings, err := checkLength(a, "perplexity", m, opts.ctx)
	if err != nil {
		return err
	}
	meter := progress.New(a.progressOut(opts.progress), "perplexity", 0, progress.Items, "chunks")
	res, err := verify.ModelPerplexity(m, string(text), opts.ctx, opts.chunks, func(done, total int) { meter.Set(int64(done), int64(total)) })
	meter.Finish()
	if err != nil {
		return err
	}
	if opts.json {
		return output.JSON(a.out, struct {
			Model string `json:"model"`
			File  string `json:"file"`
			*eval.PerplexityResult
			Warnings []string `json:"warnings"`
		}{opts.model, opts.file, res, warnings})
	}
	fmt.Fprintf(a.out, "%s: %d chunks of %d tokens, %d tokens scored\nPPL = %.4f +/- %.5f\n",
		opts.model, res.Chunks, res.Ctx, res.Tokens, res.PPL, res.PPLErr)
	return nil
}
