package main

import (
	"errors"
	"fmt"
	"github.com/tfconv/tfconv/internal/output"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tfconv/tfconv/internal/atomicfile"
	"github.com/tfconv/tfconv/model"
	"github.com/tfconv/tfconv/tokenizer"
	"github.com/tfconv/tfconv/vision"
)

// runTopK is how many tokens the human summary of run shows per position.
const runTopK = 5

type modelRunOptions struct {
	path          string
	tokens        string
	prompt        string
	promptFile    string
	decoderTokens string
	mask          string
	decoderMask   string
	tokenTypes    string
	image         string // --image: a PNG/JPEG/GIF for the vision encoder (a WAV file: audio)
	audio         string // --audio: a WAV file for the audio encoder (llama-mtmd-cli's --audio)
	mmproj        string // --mmproj: the encoder of a GGUF text model
	preprocess    string // --preprocess: llamacpp or transformers (default: the checkpoint's framework)
	threads       int
	matchLlamaCpp bool // model.LoadOptions.MatchLlamaCpp (--match-llamacpp)
	progress      bool // the load's progress line (model.LoadOptions.Progress)
	out           string
	force         bool
	json          bool
}

func newCmdRun(a *app) *cobra.Command {
	opts := &modelRunOptions{}
	cmd := &cobra.Command{
		Use:   "run MODEL (--tokens 1,2,3 | --prompt TEXT | -f FILE)",
		Short: "Run a checkpoint on one sequence and print its logits (or hidden state)",
		Long: `Run loads a checkpoint (Hugging Face directory, GGUF or native file) into the
reference transformer, runs one sequence and prints the top-5 tokens of every
position. --json prints {"tokens":[…],"logits":[[…]…]} ("hidden" for
encoder-only models) on stdout; --out writes that JSON to a file instead.
Encoder-decoder models take the decoder input with --decoder-tokens (default:
the decoder start token alone).

Padding is given as transformers' attention_mask: --mask 1,1,1,0,0 has one
0 or 1 per input token, 0 marking padding that no position attends to (the
padded positions are still computed and printed). For encoder-decoder models
--mask covers the encoder input (its self-attention and the decoder's
cross-attention) and --decoder-mask the decoder input. Position ids stay
0..n-1 whatever the mask, as transformers' forward pass keeps them; ALiBi
models (BLOOM) count positions over unpadded tokens, as transformers does.
--token-types 0,0,1,1 gives BERT's token_type_ids (segment ids), one per
input token, each below the model's type_vocab_size (default: all 0).

--image FILE runs a vision-language checkpoint on a prompt with one image
(Gemma 3, Qwen2.5-VL, Qwen3-VL, SmolVLM/SmolVLM2, LLaVA-1.5, LLaVA-NeXT,
Mistral 3.1, InternVL 3, Llama 4 from its Hugging Face folder): the Hugging
Face folder holds the encoder; a text GGUF takes llama.cpp's mmproj GGUF with
--mmproj, as llama-mtmd-cli does. The prompt marks the image once with the
processor's placeholder (--tokens its id, --prompt its text:
<start_of_image>, <|image_pad|>, <image>, [IMG], <IMG_CONTEXT>, <|image|> …) or mtmd's "<__media__>"; tfconv expands it as the
processor (or mtmd) does: soft tokens, tiles, row breaks. --preprocess
chooses whose image preprocessing and prompt expansion to reproduce:
transformers (default for a Hugging Face folder) or llamacpp (default with
--mmproj: mtmd's). --json adds "image": the expanded prompt's image span and
statistics of the features.

--audio FILE.wav (llama-mtmd-cli's flag; --image takes a WAV file too, told
apart by its content) runs an audio-language checkpoint (Qwen2-Audio) on a
prompt with one clip: the prompt marks it once with <|AUDIO|> (the
processor's placeholder, wrapped in <|audio_bos|> … <|audio_eos|> unless
they stand beside it) or mtmd's "<__media__>". transformers (default for a
Hugging Face folder) attends over the clip's frames of its one 30 s window,
llamacpp (default with --mmproj) over every whole window, as mtmd does.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.path = args[0]
			return runModelRun(a, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.tokens, "tokens", "", "comma-separated token ids")
	f.StringVar(&opts.prompt, "prompt", "", "text, encoded with the checkpoint's tokenizer")
	f.StringVarP(&opts.promptFile, "file", "f", "", "read the --prompt text from this file (llama.cpp's -f)")
	f.StringVar(&opts.decoderTokens, "decoder-tokens", "", "comma-separated decoder token ids (encoder-decoder models)")
	f.StringVar(&opts.mask, "mask", "", "attention mask: one 1 (token) or 0 (padding) per input token, comma-separated")
	f.StringVar(&opts.decoderMask, "decoder-mask", "", "decoder attention mask, one 1 or 0 per decoder token (encoder-decoder models)")
	f.StringVar(&opts.tokenTypes, "token-types", "", "BERT token type (segment) ids, one per input token, comma-separated")
	f.StringVar(&opts.image, "image", "", "an image (PNG, JPEG, GIF; or a WAV file for audio) for a multimodal model's prompt")
	f.StringVar(&opts.audio, "audio", "", "a WAV file for an audio-language model's prompt (Qwen2-Audio)")
	f.StringVar(&opts.mmproj, "mmproj", "", "llama.cpp's mmproj GGUF: the vision or audio encoder of a GGUF text model (with --image or --audio)")
	f.StringVar(&opts.preprocess, "preprocess", "", "image preprocessing: transformers or llamacpp (default: the checkpoint's framework)")
	f.IntVarP(&opts.threads, "threads", "t", 0, "kernel threads (default: all CPUs)")
	addMatchLlamaCppFlag(cmd, &opts.matchLlamaCpp)
	addProgressFlag(cmd, &opts.progress)
	f.StringVarP(&opts.out, "out", "o", "", "write the JSON result to this file")
	f.BoolVar(&opts.force, "force", false, "replace an existing --out file")
	f.BoolVar(&opts.json, "json", false, "print the JSON result on stdout")
	return cmd
}

// runJSON is the JSON output of run; fields are only ever added.
type runJSON struct {
	Tokens        []int       `json:"tokens"`
	DecoderTokens []int       `json:"decoder_tokens,omitempty"`
	Mask          []int       `json:"mask,omitempty"`
	DecoderMask   []int       `json:"decoder_mask,omitempty"`
	TokenTypes    []int       `json:"token_types,omitempty"`
	Logits        [][]float32 `json:"logits,omitempty"`
	Hidden        [][]float32 `json:"hidden,omitempty"`
	Image         *imageJSON  `json:"image,omitempty"`
}

// imageJSON describes the image of run --image; fields are only ever added.
type imageJSON struct {
	File       string  `json:"file"`
	Preprocess string  `json:"preprocess"` // "transformers" or "llamacpp"
	Encoder    string  `json:"encoder"`    // where the vision encoder came from
	First      int     `json:"first"`      // the first soft token's position
	Last       int     `json:"last"`       // the last soft token's position
	Tokens     int     `json:"tokens"`     // soft tokens
	Width      int     `json:"width"`      // the features' width (the text model's)
	Mean       float64 `json:"mean"`       // statistics of the image features
	Std        float64 `json:"std"`
	Min        float32 `json:"min"`
	Max        float32 `json:"max"`
	Audio      bool    `json:"audio,omitempty"` // the file was sound (--audio, or a WAV file to --image)
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

// parseMask parses a 0/1 list given with flag ("--mask") for n tokens.
func parseMask(flag, s string, n int, of string) ([]bool, []int, error) {
	v, err := parseIntList(flag, s)
	if err != nil {
		return nil, nil, err
	}
	if len(v) != n {
		return nil, nil, fmt.Errorf("%s has %d values for %d %s", flag, len(v), n, of)
	}
	mask := make([]bool, len(v))
	for i, x := range v {
		if x != 0 && x != 1 {
			return nil, nil, fmt.Errorf("%s: value %d at index %d is not 0 or 1", flag, x, i)
		}
		mask[i] = x == 1
	}
	return mask, v, nil
}

// parseIntList is parseTokenList with the flag's name in its errors.
func parseIntList(flag, s string) ([]int, error) {
	v, err := parseTokenList(s)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	return v, nil
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

// promptFromFile reads --file (llama.cpp's -f, a file holding the prompt)
// into *prompt, without one trailing newline, as llama.cpp reads it;
// giving both is an error.
func promptFromFile(cmd string, prompt *string, file string) error {
	if file == "" {
		return nil
	}
	if *prompt != "" {
		return fmt.Errorf("%s: give --prompt or --file, not both", cmd)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("%s: --file: %w", cmd, err)
	}
	if len(b) == 0 {
		return fmt.Errorf("%s: --file %s is empty", cmd, file)
	}
	*prompt = strings.TrimSuffix(string(b), "\n")
	return nil
}

// pieceName is a token id and, with a tokenizer, its text.
func pieceName(t *tokenizer.Tokenizer, id int) string {
	if t == nil {
		return strconv.Itoa(id)
	}
	return fmt.Sprintf("%d %q", id, t.Piece(id))
}

func runModelRun(a *app, opts *modelRunOptions) error {
	if err := promptFromFile("run", &opts.prompt, opts.promptFile); err != nil {
		return err
	}
	m, err := model.Load(opts.path, model.LoadOptions{Threads: opts.threads, MatchLlamaCpp: opts.matchLlamaCpp, Progress: a.progressOut(opts.progress)})
	if err != nil {
		return err
	}
	var in model.Input
	var img *imageJSON
	if opts.image != "" || opts.audio != "" {
		if in, img, err = imageRunInput(m, opts); err != nil {
			return err
		}
	} else {
		if opts.mmproj != "" || opts.preprocess != "" {
			return errors.New("--mmproj and --preprocess go with --image or --audio")
		}
		if in.Tokens, err = modelInput(m, opts.tokens, opts.prompt); err != nil {
			return err
		}
	}
	toks := in.Tokens
	if _, err := checkLength(a, "run", m, len(toks)); err != nil {
		return err
	}
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
	res := runJSON{Tokens: toks, DecoderTokens: in.DecoderTokens, Image: img}
	if img != nil && (opts.mask != "" || opts.tokenTypes != "") {
		return errors.New("--mask and --token-types do not go with --image or --audio")
	}
	if opts.mask != "" {
		if in.Mask, res.Mask, err = parseMask("--mask", opts.mask, len(toks), "tokens"); err != nil {
			return err
		}
	}
	if opts.decoderMask != "" {
		if !cfg.EncoderDecoder {
			return fmt.Errorf("--decoder-mask: %s is not an encoder-decoder model", cfg.Arch)
		}
		if in.DecoderMask, res.DecoderMask, err = parseMask("--decoder-mask", opts.decoderMask, len(in.DecoderTokens), "decoder tokens"); err != nil {
			return err
		}
	}
	if opts.tokenTypes != "" {
		if cfg.TypeVocab == 0 {
			return fmt.Errorf("--token-types: %s has no token types", cfg.Arch)
		}
		if in.TokenTypes, err = parseIntList("--token-types", opts.tokenTypes); err != nil {
			return err
		}
		if len(in.TokenTypes) != len(toks) {
			return fmt.Errorf("--token-types has %d values for %d tokens", len(in.TokenTypes), len(toks))
		}
		for i, t := range in.TokenTypes {
			if t < 0 || t >= cfg.TypeVocab {
				return fmt.Errorf("--token-types: type %d at index %d is outside 0..%d (type_vocab_size %d)", t, i, cfg.TypeVocab-1, cfg.TypeVocab)
			}
		}
		res.TokenTypes = in.TokenTypes
	}
	out, err := m.Forward(in, nil)
	if err != nil {
		return err
	}
	res.Logits = out.Logits
	if out.Logits == nil {
		res.Hidden = out.Hidden
	}
	if opts.out != "" {
		f, err := atomicfile.Create(opts.out, opts.force, opts.path)
		if err != nil {
			return err
		}
		defer f.Abort()
		if err := output.JSONLine(f, res); err != nil {
			return err
		}
		if err := f.Commit(); err != nil {
			return err
		}
		fmt.Fprintf(a.err, "wrote %s\n", opts.out)
	}
	if opts.json {
		return output.JSONLine(a.out, res)
	}
	if img != nil && img.Audio {
		fmt.Fprintf(a.out, "audio %s (%s preprocessing): %d audio tokens at positions %d..%d, features mean %.4g std %.4g\n",
			img.File, img.Preprocess, img.Tokens, img.First, img.Last, img.Mean, img.Std)
	} else if img != nil {
		fmt.Fprintf(a.out, "image %s (%s preprocessing): %d soft tokens at positions %d..%d, features mean %.4g std %.4g\n",
			img.File, img.Preprocess, img.Tokens, img.First, img.Last, img.Mean, img.Std)
	}
	runSummary(a.out, m, in, out)
	return nil
}

// imageRunInput loads the vision or audio encoder (the HF folder's, or
// --mmproj's) and builds the prompt with the image or clip
// (model.Model.ImageInput).
func imageRunInput(m *model.Model, opts *modelRunOptions) (model.Input, *imageJSON, error) {
	flag, file := "--image", opts.image
	if opts.audio != "" {
		if opts.image != "" {
			return model.Input{}, nil, errors.New("give --image or --audio, not both (one image or clip runs)")
		}
		flag, file = "--audio", opts.audio
	}
	src := opts.mmproj
	if src == "" {
		if isGGUFModel(m) {
			return model.Input{}, nil, fmt.Errorf("%s: %s is a GGUF text model: give its encoder with --mmproj (llama.cpp's mmproj GGUF)", flag, opts.path)
		}
		src = opts.path
	}
	v, err := model.LoadVision(src, model.LoadOptions{Threads: opts.threads, MatchLlamaCpp: opts.matchLlamaCpp})
	if err != nil {
		return model.Input{}, nil, err
	}
	method := v.DefaultMethod()
	if opts.preprocess != "" {
		if method, err = vision.ParseMethod(opts.preprocess); err != nil {
			return model.Input{}, nil, fmt.Errorf("--preprocess: %w", err)
		}
	}
	p := model.ImagePrompt{Method: method}
	if opts.audio != "" {
		p.Audio, err = vision.OpenWAV(file)
	} else {
		p.Image, p.Audio, err = vision.ReadMedia(file)
	}
	if err != nil {
		return model.Input{}, nil, fmt.Errorf("%s: %w", flag, err)
	}
	switch {
	case opts.tokens != "" && opts.prompt != "":
		return model.Input{}, nil, errors.New("give --tokens or --prompt, not both")
	case opts.tokens != "":
		if p.Tokens, err = parseTokenList(opts.tokens); err != nil {
			return model.Input{}, nil, err
		}
	case opts.prompt != "":
		p.Text = opts.prompt
	default:
		return model.Input{}, nil, errors.New("give --tokens or --prompt (holding the image or audio placeholder once)")
	}
	run, err := m.ImageInput(v, p)
	if err != nil {
		return model.Input{}, nil, err
	}
	j := &imageJSON{File: file, Audio: p.Audio != nil, Preprocess: method.String(), Encoder: src, First: run.First, Last: run.Last, Tokens: run.Count,
		Width: len(run.Features) / max(run.Count, 1), Min: float32(math.Inf(1)), Max: float32(math.Inf(-1))}
	var sum, ss float64
	for _, x := range run.Features {
		sum += float64(x)
		ss += float64(x) * float64(x)
		j.Min, j.Max = min(j.Min, x), max(j.Max, x)
	}
	if n := float64(len(run.Features)); n > 0 {
		j.Mean = sum / n
		j.Std = math.Sqrt(max(ss/n-j.Mean*j.Mean, 0))
	}
	return run.Input, j, nil
}

// isGGUFModel reports whether m was loaded from a GGUF file.
func isGGUFModel(m *model.Model) bool { return m.Config().Naming == "gguf" }

// runSummary prints the top tokens of every position (or the hidden state's
// norm for encoder-only models).
func runSummary(w io.Writer, m *model.Model, in model.Input, out *model.Output) {
	cfg := m.Config()
	tok := m.Tokenizer()
	fmt.Fprintf(w, "%s: %s, %d layers, d_model %d, vocab %d\n", cfg.Arch, cfg.Naming, cfg.Layers, cfg.DModel, cfg.Vocab)
	inputs, mask := in.Tokens, in.Mask
	if cfg.EncoderDecoder {
		inputs, mask = in.DecoderTokens, in.DecoderMask
	}
	// name is a position's token, marked when it is padding.
	name := func(i int) string {
		s := pieceName(tok, inputs[i])
		if mask != nil && !mask[i] {
			s += " (pad)"
		}
		return s
	}
	if out.Logits == nil {
		for i, h := range out.Hidden {
			var ss float64
			for _, v := range h {
				ss += float64(v) * float64(v)
			}
			fmt.Fprintf(w, "%4d %-20s |h| %.4f  h[0:4] %v\n", i, name(i), math.Sqrt(ss), h[:min(4, len(h))])
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
		fmt.Fprintf(w, "%4d %-20s → %s\n", i, name(i), strings.Join(parts, ", "))
	}
}

// checkLength applies model.CheckLength to n positions: an error stops the
// command (exit 2); a warning goes to stderr and is returned for --json.
func checkLength(a *app, cmd string, m *model.Model, n int) ([]string, error) {
	w, err := m.CheckLength(n)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cmd, err)
	}
	if w == "" {
		return []string{}, nil
	}
	fmt.Fprintf(a.err, "tfconv: warning: %s: %s\n", cmd, w)
	return []string{w}, nil
}
