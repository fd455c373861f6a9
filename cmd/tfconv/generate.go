package main

import (
	"fmt"
	"github.com/tfconv/tfconv/internal/output"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tfconv/tfconv/model"
)

type generateOptions struct {
	path          string
	tokens        string
	prompt        string
	maxNew        int
	minNew        int
	beams         int
	lengthPenalty float64
	earlyStopping bool
	temperature   float64
	topK          int
	topP          float64
	seed          uint64
	noEOS         bool
	threads       int
	json          bool
	matchLlamaCpp bool // model.LoadOptions.MatchLlamaCpp (--match-llamacpp)
	progress      bool // the load's progress line (model.LoadOptions.Progress)
}

func newCmdGenerate(a *app) *cobra.Command {
	opts := &generateOptions{}
	cmd := &cobra.Command{
		Use:   "generate MODEL (--prompt TEXT | --tokens 1,2,3)",
		Short: "Generate tokens: greedy, beam search or seeded sampling",
		Long: `Generate continues a prompt (decoder-only models) or translates it
(encoder-decoder models: the encoder reads the prompt, decoding starts from the
decoder start token) with the KV cache. Greedy by default; --beams N is beam
search with transformers' semantics (--length-penalty, --early-stopping);
--temperature > 0 samples (with --top-k, --top-p, --seed).`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.path = args[0]
			return runGenerate(a, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.tokens, "tokens", "", "comma-separated prompt token ids")
	f.StringVar(&opts.prompt, "prompt", "", "prompt text, encoded with the checkpoint's tokenizer")
	f.IntVar(&opts.maxNew, "max-new", 32, "tokens to generate at most")
	f.IntVar(&opts.minNew, "min-new", 0, "tokens to generate before EOS is allowed")
	f.IntVar(&opts.beams, "beams", 1, "beam width (1 = no beam search)")
	f.Float64Var(&opts.lengthPenalty, "length-penalty", 1.0, "beam search: score = sum of log-probabilities / length^penalty")
	f.BoolVar(&opts.earlyStopping, "early-stopping", false, "beam search: stop once --beams hypotheses are finished")
	f.Float64Var(&opts.temperature, "temperature", 0, "sampling temperature (0 = greedy)")
	f.IntVar(&opts.topK, "top-k", 0, "sampling: keep the K most likely tokens (0 = all)")
	f.Float64Var(&opts.topP, "top-p", 1, "sampling: keep the smallest set with this probability mass")
	f.Uint64Var(&opts.seed, "seed", 0, "sampling seed")
	f.BoolVar(&opts.noEOS, "no-eos", false, "never stop at the end-of-sequence token")
	f.IntVar(&opts.threads, "threads", 0, "kernel threads (default: all CPUs)")
	f.BoolVar(&opts.json, "json", false, "print JSON")
	addMatchLlamaCppFlag(cmd, &opts.matchLlamaCpp)
	addProgressFlag(cmd, &opts.progress)
	return cmd
}

// generateJSON is the JSON output of generate; fields are only ever added.
type generateJSON struct {
	Prompt []int   `json:"prompt"`
	Tokens []int   `json:"tokens"` // the whole sequence, as transformers returns it
	New    []int   `json:"new"`
	Text   string  `json:"text,omitempty"`
	Score  float64 `json:"score"`
}

func runGenerate(a *app, opts *generateOptions) error {
	if opts.maxNew < 0 || opts.beams < 1 || opts.temperature < 0 || opts.topK < 0 || opts.topP <= 0 || opts.topP > 1 {
		return fmt.Errorf("generate: --max-new ≥ 0, --beams ≥ 1, --temperature ≥ 0, --top-k ≥ 0 and 0 < --top-p ≤ 1")
	}
	m, err := model.Load(opts.path, model.LoadOptions{Threads: opts.threads, MatchLlamaCpp: opts.matchLlamaCpp, Progress: a.progressOut(opts.progress)})
	if err != nil {
		return err
	}
	prompt, err := modelInput(m, opts.tokens, opts.prompt)
	if err != nil {
		return err
	}
	if !m.Config().EncoderDecoder {
		if _, err := checkLength(a, "generate", m, len(prompt)+opts.maxNew); err != nil {
			return err
		}
	}
	g, err := m.Generate(prompt, model.GenerateOptions{
		MaxNewTokens: opts.maxNew, MinNewTokens: opts.minNew,
		NumBeams: opts.beams, LengthPenalty: opts.lengthPenalty, EarlyStopping: opts.earlyStopping,
		Temperature: opts.temperature, TopK: opts.topK, TopP: opts.topP, Seed: opts.seed, NoEOS: opts.noEOS,
	})
	if err != nil {
		return err
	}
	start := len(prompt)
	if m.Config().EncoderDecoder {
		start = 1
	}
	res := generateJSON{Prompt: prompt, Tokens: g.Tokens, New: g.Tokens[start:], Score: g.Score}
	if t := m.Tokenizer(); t != nil {
		if s, err := t.Decode(res.New); err == nil {
			res.Text = s
		}
	}
	if opts.json {
		return output.JSONLine(a.out, res)
	}
	fmt.Fprintf(a.out, "new tokens: %s\n", strings.Trim(fmt.Sprint(res.New), "[]"))
	if res.Text != "" {
		fmt.Fprintf(a.out, "text: %s\n", res.Text)
	}
	fmt.Fprintf(a.out, "score: %.6f\n", res.Score)
	return nil
}
