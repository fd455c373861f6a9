package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tfconv/tfconv/internal/atomicfile"
	"github.com/tfconv/tfconv/model"
	"github.com/tfconv/tfconv/tokenizer"
)

// runTopK is how many tokens the human summary of run shows per position.
const runTopK = 5

type modelRunOptions struct {
	path          string
	tokens        string
	prompt        string
	decoderTokens string
	threads       int
	out           string
	force         bool
	json          bool
}

func newCmdRun(a *app) *cobra.Command {
	opts := &modelRunOptions{}
	cmd := &cobra.Command{
		Use:   "run MODEL (--tokens 1,2,3 | --prompt TEXT)",
		Short: "Run a checkpoint on one sequence and print its logits (or hidden state)",
		Long: `Run loads a checkpoint (Hugging Face directory, GGUF or native file) into the
reference transformer, runs one sequence and prints the top-5 tokens of every
position. --json prints {"tokens":[…],"logits":[[…]…]} ("hidden" for
encoder-only models) on stdout; --out writes that JSON to a file instead.
Encoder-decoder models take the decoder input with --decoder-tokens (default:
the decoder start token alone).`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.path = args[0]
			return runModelRun(a, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.tokens, "tokens", "", "comma-separated token ids")
	f.StringVar(&opts.prompt, "prompt", "", "text, encoded with the checkpoint's tokenizer")
	f.StringVar(&opts.decoderTokens, "decoder-tokens", "", "comma-separated decoder token ids (encoder-decoder models)")
	f.IntVar(&opts.threads, "threads", 0, "kernel threads (default: all CPUs)")
	f.StringVar(&opts.out, "out", "", "write the JSON result to this file")
	f.BoolVar(&opts.force, "force", false, "replace an existing --out file")
	f.BoolVar(&opts.json, "json", false, "print the JSON result on stdout")
	return cmd
}

// runJSON is the JSON output of run; fields are only ever added.
type runJSON struct {
	Tokens        []int       `json:"tokens"`
	DecoderTokens []int       `json:"decoder_tokens,omitempty"`
	Logits        [][]float32 `json:"logits,omitempty"`
	Hidden        [][]float32 `json:"hidden,omitempty"`
}

// parseTokenList parses "1,2,3".
func parseTokenList(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		v, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("token list %q: %q is not an integer", s, f)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("token list %q is empty", s)
	}
	return out, nil
}

// modelInput turns --tokens or --prompt into token ids.
func modelInput(m *model.Model, tokens, prompt string) ([]int, error) {
	switch {
	case tokens != "" && prompt != "":
		return nil, errors.New("give --tokens or --prompt, not both")
	case tokens != "":
		return parseTokenList(tokens)
	case prompt != "":
		t := m.Tokenizer()
		if t == nil {
			return nil, errors.New("--prompt: the checkpoint carries no tokenizer (use --tokens)")
		}
		return t.Encode(prompt, tokenizer.EncodeOptions{AddSpecial: true})
	}
	return nil, errors.New("give --tokens or --prompt")
}

// pieceName is a token id and, with a tokenizer, its text.
func pieceName(t *tokenizer.Tokenizer, id int) string {
	if t == nil {
		return strconv.Itoa(id)
	}
	return fmt.Sprintf("%d %q", id, t.Piece(id))
}

func runModelRun(a *app, opts *modelRunOptions) error {
	m, err := model.Load(opts.path, model.LoadOptions{Threads: opts.threads})
	if err != nil {
		return err
	}
	toks, err := modelInput(m, opts.tokens, opts.prompt)
	if err != nil {
		return err
	}
	in := model.Input{Tokens: toks}
	cfg := m.Config()
	if opts.decoderTokens != "" {
		if !cfg.EncoderDecoder {
			return fmt.Errorf("--decoder-tokens: %s is not an encoder-decoder model", cfg.Arch)
		}
		if in.DecoderTokens, err = parseTokenList(opts.decoderTokens); err != nil {
			return err
		}
	} else if cfg.EncoderDecoder {
		in.DecoderTokens = []int{cfg.DecoderStart}
	}
	out, err := m.Forward(in, nil)
	if err != nil {
		return err
	}
	res := runJSON{Tokens: toks, DecoderTokens: in.DecoderTokens, Logits: out.Logits}
	if out.Logits == nil {
		res.Hidden = out.Hidden
	}
	if opts.out != "" {
		f, err := atomicfile.Create(opts.out, opts.force, opts.path)
		if err != nil {
			return err
		}
		defer f.Abort()
		if err := json.NewEncoder(f).Encode(res); err != nil {
			return err
		}
		if err := f.Commit(); err != nil {
			return err
		}
		fmt.Fprintf(a.err, "wrote %s\n", opts.out)
	}
	if opts.json {
		return json.NewEncoder(a.out).Encode(res)
	}
	runSummary(a.out, m, in, out)
	return nil
}

// runSummary prints the top tokens of every position (or the hidden state's
// norm for encoder-only models).
func runSummary(w io.Writer, m *model.Model, in model.Input, out *model.Output) {
	cfg := m.Config()
	tok := m.Tokenizer()
	fmt.Fprintf(w, "%s: %s, %d layers, d_model %d, vocab %d\n", cfg.Arch, cfg.Naming, cfg.Layers, cfg.DModel, cfg.Vocab)
	inputs := in.Tokens
	if cfg.EncoderDecoder {
		inputs = in.DecoderTokens
	}
	if out.Logits == nil {
		for i, h := range out.Hidden {
			var ss float64
			for _, v := range h {
				ss += float64(v) * float64(v)
			}
			fmt.Fprintf(w, "%4d %-20s |h| %.4f  h[0:4] %v\n", i, pieceName(tok, inputs[i]), math.Sqrt(ss), h[:min(4, len(h))])
		}
		return
	}
	for i, l := range out.Logits {
		idx := make([]int, len(l))
		for j := range idx {
			idx[j] = j
		}
		sort.SliceStable(idx, func(a, b int) bool { return l[idx[a]] > l[idx[b]] })
		var parts []string
		for _, j := range idx[:min(runTopK, len(idx))] {
			parts = append(parts, fmt.Sprintf("%s %.4f", pieceName(tok, j), l[j]))
		}
		fmt.Fprintf(w, "%4d %-20s → %s\n", i, pieceName(tok, inputs[i]), strings.Join(parts, ", "))
	}
}
