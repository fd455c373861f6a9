package main

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tfconv/tfconv/internal/output"
	"github.com/tfconv/tfconv/model"
	"github.com/tfconv/tfconv/tokenizer"
)

type generateOptions struct {
	path          string
	tokens        string
	prompt        string
	promptFile    string
	maxNew        int
	minNew        int
	beams         int
	lengthPenalty float64
	earlyStopping bool
	temperature   float64
	topK          int
	topP          float64
	seed          uint64
	seedSet       bool // --seed was given
	chat          bool
	system        string
	noEOS         bool
	threads       int
	json          bool
	matchLlamaCpp bool // model.LoadOptions.MatchLlamaCpp (--match-llamacpp)
	progress      bool // the load's progress line (model.LoadOptions.Progress)
}

func newCmdGenerate(a *app) *cobra.Command {
	opts := &generateOptions{}
	cmd := &cobra.Command{
		Use:   "generate MODEL (--prompt TEXT | -f FILE [--chat [--system TEXT]] | --tokens 1,2,3)",
		Short: "Generate tokens: greedy, beam search or seeded sampling",
		Long: `Generate continues a prompt (decoder-only models) or translates it
(encoder-decoder models: the encoder reads the prompt, decoding starts from the
decoder start token) with the KV cache. Greedy by default; --beams N is beam
search with transformers' semantics (--length-penalty, --early-stopping);
--temperature > 0 samples (with --top-k, --top-p, --seed); without --seed a
random seed is drawn and printed on stderr (and in --json), so that
--seed N repeats the run. The text is printed as it is generated, whole
characters at a time.

--chat applies the model's chat template (tokenizer_config.json's
chat_template or chat_template.jinja beside it, tokenizer.chat_template in a
GGUF) as transformers' apply_chat_template renders it with
add_generation_prompt=True: --prompt is the user's message and --system TEXT
a system message before it.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.path = args[0]
			opts.seedSet = cmd.Flags().Changed("seed")
			return runGenerate(a, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.tokens, "tokens", "", "comma-separated prompt token ids")
	f.StringVar(&opts.prompt, "prompt", "", "prompt text, encoded with the checkpoint's tokenizer")
	f.StringVarP(&opts.promptFile, "file", "f", "", "read the --prompt text from this file (llama.cpp's -f)")
	f.IntVar(&opts.maxNew, "max-new", 32, "tokens to generate at most")
	f.IntVar(&opts.minNew, "min-new", 0, "tokens to generate before EOS is allowed")
	f.IntVar(&opts.beams, "beams", 1, "beam width (1 = no beam search)")
	f.Float64Var(&opts.lengthPenalty, "length-penalty", 1.0, "beam search: score = sum of log-probabilities / length^penalty")
	f.BoolVar(&opts.earlyStopping, "early-stopping", false, "beam search: stop once --beams hypotheses are finished")
	f.Float64Var(&opts.temperature, "temperature", 0, "sampling temperature (0 = greedy)")
	f.IntVar(&opts.topK, "top-k", 0, "sampling: keep the K most likely tokens (0 = all)")
	f.Float64Var(&opts.topP, "top-p", 1, "sampling: keep the smallest set with this probability mass")
	f.Uint64Var(&opts.seed, "seed", 0, "sampling seed (default: a random one, printed)")
	f.BoolVar(&opts.chat, "chat", false, "apply the model's chat template to --prompt (a user message)")
	f.StringVar(&opts.system, "system", "", "with --chat: a system message before the user's")
	f.BoolVar(&opts.noEOS, "no-eos", false, "never stop at the end-of-sequence token")
	f.IntVarP(&opts.threads, "threads", "t", 0, "kernel threads (default: all CPUs)")
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
	// Seed is the sampling seed (given or drawn), present when sampling.
	Seed *uint64 `json:"seed,omitempty"`
	// ChatPrompt is the text --chat rendered, which Prompt encodes.
	ChatPrompt string `json:"chat_prompt,omitempty"`
}

func runGenerate(a *app, opts *generateOptions) error {
	if opts.maxNew < 0 || opts.beams < 1 || opts.temperature < 0 || opts.topK < 0 || opts.topP <= 0 || opts.topP > 1 {
		return fmt.Errorf("generate: --max-new ≥ 0, --beams ≥ 1, --temperature ≥ 0, --top-k ≥ 0 and 0 < --top-p ≤ 1")
	}
	if err := promptFromFile("generate", &opts.prompt, opts.promptFile); err != nil {
		return err
	}
	if opts.chat && (opts.prompt == "" || opts.tokens != "") {
		return errors.New("generate: --chat needs --prompt or -f (the user's message)")
	}
	if opts.system != "" && !opts.chat {
		return errors.New("generate: --system needs --chat")
	}
	m, err := model.Load(opts.path, model.LoadOptions{Threads: opts.threads, MatchLlamaCpp: opts.matchLlamaCpp, Progress: a.progressOut(opts.progress)})
	if err != nil {
		return err
	}
	var prompt []int
	var chatPrompt string
	tok := m.Tokenizer()
	if opts.chat {
		if tok == nil {
			return errors.New("generate: --chat: the checkpoint carries no tokenizer")
		}
		var msgs []tokenizer.Message
		if opts.system != "" {
			msgs = append(msgs, tokenizer.Message{Role: "system", Content: opts.system})
		}
		msgs = append(msgs, tokenizer.Message{Role: "user", Content: opts.prompt})
		if chatPrompt, prompt, err = tok.ApplyChatTemplate(msgs, tokenizer.ChatOptions{AddGenerationPrompt: true}); err != nil {
			return fmt.Errorf("generate: --chat: %s: %w", opts.path, err)
		}
	} else if prompt, err = modelInput(m, opts.tokens, opts.prompt); err != nil {
		return err
	}
	if !m.Config().EncoderDecoder {
		if _, err := checkLength(a, "generate", m, len(prompt)+opts.maxNew); err != nil {
			return err
		}
	}
	var seed *uint64
	if opts.temperature > 0 {
		if !opts.seedSet {
			// 32 bits, as llama.cpp draws its seeds: short to type, and
			// exact in every JSON reader (jq's numbers are doubles).
			opts.seed = uint64(rand.Uint32())
			fmt.Fprintf(a.err, "tfconv: sampling with seed %d (--seed %d repeats this run)\n", opts.seed, opts.seed)
		}
		seed = &opts.seed
	}
	// Without --json the text is printed as it is generated.
	var stream *tokenizer.Stream
	if !opts.json && tok != nil {
		stream = tok.NewStream()
		fmt.Fprint(a.out, "text: ")
	}
	onToken := func(id int) error {
		piece, err := stream.Add(id)
		if err == nil && piece != "" {
			err = writeFlush(a.out, piece)
		}
		return err
	}
	if stream == nil {
		onToken = nil
	}
	g, err := m.Generate(prompt, model.GenerateOptions{
		MaxNewTokens: opts.maxNew, MinNewTokens: opts.minNew,
		NumBeams: opts.beams, LengthPenalty: opts.lengthPenalty, EarlyStopping: opts.earlyStopping,
		Temperature: opts.temperature, TopK: opts.topK, TopP: opts.topP, Seed: opts.seed, NoEOS: opts.noEOS,
		OnToken: onToken,
	})
	if stream != nil {
		rest, _ := stream.Flush()
		fmt.Fprintln(a.out, rest)
	}
	if err != nil {
		return err
	}
	start := len(prompt)
	if m.Config().EncoderDecoder {
		start = 1
	}
	res := generateJSON{Prompt: prompt, Tokens: g.Tokens, New: g.Tokens[start:], Score: g.Score, Seed: seed, ChatPrompt: chatPrompt}
	if tok != nil {
		if s, err := tok.Decode(res.New); err == nil {
			res.Text = s
		}
	}
	if opts.json {
		return output.JSONLine(a.out, res)
	}
	fmt.Fprintf(a.out, "new tokens: %s\n", strings.Trim(fmt.Sprint(res.New), "[]"))
	fmt.Fprintf(a.out, "score: %.6f\n", res.Score)
	return nil
}

// writeFlush writes s and flushes w if it buffers, so that streamed text
// shows at once.
func writeFlush(w io.Writer, s string) error {
	if _, err := io.WriteString(w, s); err != nil {
		return err
	}
	if f, ok := w.(interface{ Flush() error }); ok {
		return f.Flush()
	}
	return nil
}
