package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/internal/output"
	"github.com/tfconv/tfconv/sniff"
	"github.com/tfconv/tfconv/tensor"
	"github.com/tfconv/tfconv/tokenizer"
)

// tokenizeOptions are the flags and arguments of tfconv tokenize.
type tokenizeOptions struct {
	model        string
	text         string
	ids          string
	json         bool
	noSpecial    bool
	parseSpecial bool
}

func newCmdTokenize(a *app) *cobra.Command {
	opts := &tokenizeOptions{}
	cmd := &cobra.Command{
		Use:   "tokenize MODEL [TEXT]",
		Short: "Encode text to token ids with a model's tokenizer, or decode ids",
		Long: `tokenize encodes TEXT with the tokenizer of MODEL and prints each token id
with its piece. MODEL is a checkpoint (HF directory, GGUF, native file) or a
tokenizer file (tokenizer.json, tokenizer.model, vocab.json, vocab.txt).

Special tokens (BOS, or CLS ... SEP for BERT) are added the way the
tokenizer's own configuration says; --no-special turns that off. With --ids,
the comma-separated ids are decoded to text instead.`,
		Example: `  tfconv tokenize model.gguf "Hello world"
  tfconv tokenize ./llama-hf --json "Hello world"
  tfconv tokenize tokenizer.json --ids 1,15043,3186`,
		Args: func(c *cobra.Command, args []string) error {
			if c.Flags().Changed("ids") {
				return exactArgs(1)(c, args)
			}
			return exactArgs(2)(c, args)
		},
		RunE: func(c *cobra.Command, args []string) error {
			opts.model = args[0]
			if len(args) > 1 {
				opts.text = args[1]
			}
			return runTokenize(a, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.ids, "ids", "", "decode these comma-separated token ids instead of encoding text")
	f.BoolVar(&opts.json, "json", false, `print {"ids":[…],"pieces":[…]} (with --ids: {"ids":[…],"text":"…"})`)
	f.BoolVar(&opts.noSpecial, "no-special", false, "do not add BOS/EOS/CLS/SEP tokens")
	f.BoolVar(&opts.parseSpecial, "parse-special", false, `match special-token text such as "<s>" in TEXT`)
	return cmd
}

func runTokenize(a *app, opts *tokenizeOptions) error {
	tok, err := openTokenizer(opts.model)
	if err != nil {
		return err
	}
	if opts.ids != "" {
		ids, err := parseIDs(opts.ids)
		if err != nil {
			return err
		}
		text, err := tok.Decode(ids)
		if err != nil {
			return err
		}
		if opts.json {
			return output.JSON(a.out, struct {
				IDs  []int  `json:"ids"`
				Text string `json:"text"`
			}{ids, text})
		}
		_, err = fmt.Fprintln(a.out, text)
		return err
	}
	ids, err := tok.Encode(opts.text, tokenizer.EncodeOptions{AddSpecial: !opts.noSpecial, ParseSpecial: opts.parseSpecial})
	if err != nil {
		return err
	}
	pieces := make([]string, len(ids))
	for i, id := range ids {
		pieces[i] = tok.Piece(id)
	}
	if opts.json {
		return output.JSON(a.out, struct {
			IDs    []int    `json:"ids"`
			Pieces []string `json:"pieces"`
		}{ids, pieces})
	}
	tab := output.NewTable("ID", "PIECE")
	for i, id := range ids {
		tab.Row(id, strconv.Quote(pieces[i]))
	}
	return tab.Render(a.out)
}

// parseIDs reads "1,2,3".
func parseIDs(s string) ([]int, error) {
	var ids []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		id, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("tokenize: --ids: %q is not a token id", f)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// openTokenizer resolves MODEL: tokenizer files, GGUF files and HF
// directories go to tokenizer.LoadFile, anything else (a native .tfn
// checkpoint, a URL) to loadTokenizer.
func openTokenizer(path string) (*tokenizer.Tokenizer, error) {
	if checkpoint.IsRemote(path) {
		return loadTokenizer(path) // a GGUF's header, or the side files beside a safetensors file
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return tokenizer.LoadFile(path)
	}
	base := filepath.Base(path)
	switch strings.ToLower(filepath.Ext(base)) {
	case ".gguf":
		// An HTML page or an empty file saved as .gguf says so.
		if _, err := sniff.File(path); err != nil {
			return nil, err
		}
		return tokenizer.LoadFile(path)
	case ".model", ".json", ".txt", ".tiktoken":
		return tokenizer.LoadFile(path) // .tiktoken: Hunyuan's hy.tiktoken
	}
	return loadTokenizer(path)
}

// loadTokenizer loads the tokenizer of any other checkpoint tfconv opens (a
// native .tfn file, a .safetensors file with side files beside it): from its
// GGUF metadata or its Hugging Face side files.
func loadTokenizer(path string) (*tokenizer.Tokenizer, error) {
	c, err := checkpoint.Open(path)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return tokenizer.FromSource(checkpointSource{c})
}

// checkpointSource presents a checkpoint as a tokenizer.Source.
type checkpointSource struct{ c *checkpoint.Checkpoint }

func (s checkpointSource) Metadata() tensor.Metadata { return s.c.Metadata }

func (s checkpointSource) ReadAux(name string) ([]byte, error) { return s.c.ReadAux(name) }
