package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tfconv/tfconv/eval"
	"github.com/tfconv/tfconv/internal/output"
	"github.com/tfconv/tfconv/verify"
	"github.com/tfconv/tfconv/vision"
)

type verifyOptions struct {
	progress      bool
	image         string
	mmproj        string
	refMmproj     string
	preprocess    string
	ref, cand     string
	tokens        string
	decoderTokens string
	prompt        string
	promptFile    string
	ctx           int
	chunks        int
	topK          int
	json          bool
	report        string
	attnLayer     int
	attnHead      int
	saveBaseline  string
	baseline      string
	maxKLD        float64
	minTop1       float64
	layerNMSE     float64
	pair          string
	threads       int
	force         bool
	positions     bool
}

func newCmdVerify(a *app) *cobra.Command {
	opts := &verifyOptions{}
	cmd := &cobra.Command{
		Use:   "verify REF CAND | verify MODEL --save-baseline FILE | verify MODEL --baseline FILE",
		Short: "Prove two models compute the same thing, find the block where they depart",
		Long: `Verify runs two models (any format, any precision) on the same inputs and
compares what they compute, with llama-perplexity --kl-divergence's statistics in
one command: per position and in summary the max abs and RMS logit difference,
cosine similarity, KL divergence of CAND from REF (mean, median, p90, p95, p99,
p99.9, max; log-softmax in float64), top-1 agreement with its binomial standard
error, top-k overlap, Δp of the reference's top token and, where the inputs give
next-token targets, the perplexity of each model and their ratio. The hidden
states after every block are compared too (cosine, NMSE, max abs) and the first
block whose error jumps is named.

Inputs: --tokens 1,2,3, --prompt "text" (tokenized by REF's tokenizer), or
--prompt-file FILE, scored like 'llama-perplexity -c CTX': BOS first, chunks of
--ctx tokens each starting with BOS, the second half of each chunk compared
(per-layer comparison and attention maps from the first chunk). With none of
them, a built-in paragraph (prose with a little French, German and Spanish,
numbers and code) is compared, and the output says so. Standard errors need
more than 10 positions (as llama-perplexity's); with fewer they are "n/a".
--positions and the HTML report show each token's piece beside its id.

Baselines for CI: 'verify MODEL --save-baseline golden.json --prompt …' stores
the inputs, the top-k log-probabilities per position and the hidden states of the
last 16 positions; 'verify MODEL --baseline golden.json' compares MODEL with it
(KLD over the top-k tokens plus one bin for the rest, a lower bound of the full
KLD).

Thresholds (exit 1 when one is crossed): the defaults are named by precision
pair, the coarser weight type of the two models:
  pair   max mean KLD  min top-1  max layer NMSE
  f32    1e-9          0.99       1e-10   (f32↔f32: the same numbers again)
  f16    1e-5          0.98       1e-5
  bf16   2e-4          0.95       2e-4
  q8_0   2e-3          0.90       2e-3    (Q8_0, Q8_K, I8, F8)
  q4     0.25          0.40       0.3     (4.5 bits: Q4_0, Q4_K, IQ4_NL)
Every type below 8 bits has limits of its own, derived from its bits per
weight through q4's and q8_0's (the KLD and NMSE limits log-linearly, top-1
linearly; at most 3 nats, at least 0.05, NMSE at most 1): q6_k 0.021 / 0.66 /
0.023, q5_k 0.075 / 0.53 / 0.087, q3_k 0.90 / 0.27 / 1, q2_k 2.4 / 0.17 / 1,
iq2_xxs and iq1_s 3 / 0.10 and 0.05 / 1; the pair is the coarsest type's.
--pair NAME picks a row or a type (--pair iq2_xxs); --max-kld, --min-top1 and --layer-nmse override one
limit. A block departs when its NMSE exceeds the layer limit, or when it
multiplies the previous block's NMSE by 10 or more while above 1% of the limit;
first_divergent_layer is the first such block (null when none).

--report FILE writes a self-contained HTML page with SVG plots: KLD per
position, error per layer, and the attention map of --attn-layer/--attn-head for
both models side by side.

Images: --image FILE compares two vision-language models on a prompt holding
the image (the placeholder, e.g. <start_of_image>, or <__media__> once in
--prompt or --tokens; without one, the image then the built-in text). A Hugging
Face folder encodes it with its own vision tower; a GGUF text model takes
llama.cpp's mmproj: --mmproj for CAND, --ref-mmproj for REF. Both sides use one
preprocessing (--preprocess transformers|llamacpp; default REF's own). The
reference tokenizes and expands the prompt, and the candidate runs the same
tokens. The report adds the image: pixels, the tower's hidden states (patch
embeddings, then after each block; the first departing state is named) and the
image features; the precision pair counts the encoders' weights too.

Exit codes: 0 within the thresholds, 1 a threshold crossed, 2 input error.`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ref = args[0]
			if len(args) == 2 {
				opts.cand = args[1]
			}
			return runVerify(a, cmd, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.tokens, "tokens", "", "input token ids, comma-separated")
	f.StringVar(&opts.decoderTokens, "decoder-tokens", "", "decoder token ids (encoder-decoder models; default: the decoder start token)")
	f.StringVar(&opts.prompt, "prompt", "", "input text, tokenized with the reference's tokenizer")
	f.StringVarP(&opts.promptFile, "prompt-file", "f", "", "text file scored like llama-perplexity (chunks of --ctx tokens)")
	f.IntVarP(&opts.ctx, "ctx", "c", eval.DefaultPerplexityCtx, "chunk size for --prompt-file (context)")
	f.IntVar(&opts.chunks, "chunks", 0, "compare at most this many chunks of --prompt-file (0: all)")
	f.IntVar(&opts.topK, "topk", verify.DefaultTopK, "k of the top-k overlap and of --save-baseline")
	f.BoolVar(&opts.json, "json", false, "print the report as JSON")
	addProgressFlag(cmd, &opts.progress)
	f.StringVar(&opts.report, "report", "", "write an HTML report with plots to FILE")
	f.IntVar(&opts.attnLayer, "attn-layer", 0, "block whose attention map the HTML report shows")
	f.IntVar(&opts.attnHead, "attn-head", 0, "head whose attention map the HTML report shows")
	f.StringVar(&opts.image, "image", "", "compare on a prompt holding this image (PNG, JPEG, GIF)")
	f.StringVar(&opts.mmproj, "mmproj", "", "CAND's vision encoder (llama.cpp's mmproj GGUF) when CAND is a GGUF text model")
	f.StringVar(&opts.refMmproj, "ref-mmproj", "", "REF's vision encoder (mmproj GGUF) when REF is a GGUF text model")
	f.StringVar(&opts.preprocess, "preprocess", "", "image preprocessing for both: transformers or llamacpp (default: REF's own)")
	f.StringVar(&opts.saveBaseline, "save-baseline", "", "run MODEL and store a baseline in FILE")
	f.StringVar(&opts.baseline, "baseline", "", "compare MODEL with the baseline in FILE")
	f.Float64Var(&opts.maxKLD, "max-kld", 0, "maximum mean KLD (default: the precision pair's)")
	f.Float64Var(&opts.minTop1, "min-top1", 0, "minimum top-1 agreement (default: the precision pair's)")
	f.Float64Var(&opts.layerNMSE, "layer-nmse", 0, "maximum per-block hidden-state NMSE (default: the precision pair's)")
	f.StringVar(&opts.pair, "pair", "", "use the default thresholds of this precision pair (f32|f16|bf16|q8_0|q4) or weight type (q6_k, iq2_xxs, …)")
	f.IntVarP(&opts.threads, "threads", "t", 0, "kernel threads (0: all CPUs)")
	f.BoolVar(&opts.force, "force", false, "replace existing --report / --save-baseline files")
	f.BoolVar(&opts.positions, "positions", false, "print the per-position table")
	addTokenFlag(cmd)
	return cmd
}

func runVerify(a *app, cmd *cobra.Command, opts *verifyOptions) error {
	modes := 0
	for _, s := range []string{opts.cand, opts.saveBaseline, opts.baseline} {
		if s != "" {
			modes++
		}
	}
	if modes != 1 {
		return fmt.Errorf("verify: give either REF CAND, or MODEL with --save-baseline or --baseline")
	}
	vo := verify.Options{TopK: opts.topK, Ctx: opts.ctx, MaxChunks: opts.chunks, AttnLayer: opts.attnLayer, AttnHead: opts.attnHead}
	if opts.report == "" {
		vo.AttnLayer = -1
	}
	nIn := 0
	if opts.tokens != "" {
		ids, err := parseIDs(opts.tokens)
		if err != nil {
			return fmt.Errorf("verify: --tokens: %w", err)
		}
		vo.Tokens = ids
		nIn++
	}
	if opts.decoderTokens != "" {
		ids, err := parseIDs(opts.decoderTokens)
		if err != nil {
			return fmt.Errorf("verify: --decoder-tokens: %w", err)
		}
		vo.DecoderTokens = ids
	}
	if opts.prompt != "" {
		vo.Prompt = opts.prompt
		nIn++
	}
	if opts.promptFile != "" {
		b, err := os.ReadFile(opts.promptFile)
		if err != nil {
			return fmt.Errorf("verify: %w", err)
		}
		vo.Text = string(b)
		nIn++
	}
	if nIn > 1 {
		return fmt.Errorf("verify: give only one of --tokens, --prompt and --prompt-file")
	}
	if opts.baseline == "" && nIn == 0 {
		fmt.Fprintf(a.err, "verify: no --tokens, --prompt or --prompt-file: comparing on tfconv's built-in text (%d bytes of prose, a little French, German and Spanish, numbers and code)\n", len(strings.TrimSpace(verify.DefaultText)))
	}
	if opts.baseline != "" && nIn > 0 {
		return fmt.Errorf("verify: --baseline runs the baseline's own inputs; drop --tokens/--prompt/--prompt-file")
	}
	if opts.saveBaseline != "" && opts.promptFile != "" {
		return fmt.Errorf("verify: --save-baseline takes --tokens or --prompt, not --prompt-file")
	}
	th, adjust, err := verifyThresholds(cmd, opts)
	if err != nil {
		return err
	}
	vo.Thresholds, vo.Adjust = th, adjust
	vo.Progress = a.progressOut(opts.progress)

	fo := verify.FileOptions{Options: vo, Threads: opts.threads, Report: opts.report, Force: opts.force}
	if opts.saveBaseline != "" {
		b, err := verify.SaveBaseline(opts.ref, opts.saveBaseline, fo)
		if err != nil {
			return err
		}
		fmt.Fprintf(a.err, "verify: baseline of %s on %d tokens (%d positions, %d layers) written to %s\n",
			opts.ref, len(b.Tokens), len(b.Positions), b.Layers, opts.saveBaseline)
		return nil
	}
	var rep *verify.Report
	if opts.image != "" {
		rep, err = verifyImage(opts, fo)
	} else if opts.mmproj != "" || opts.refMmproj != "" || opts.preprocess != "" {
		return errors.New("verify: --mmproj, --ref-mmproj and --preprocess go with --image")
	} else if opts.baseline != "" {
		rep, err = verify.FilesBaseline(opts.baseline, opts.ref, fo)
	} else {
		rep, err = verify.Files(opts.ref, opts.cand, fo)
	}
	if err != nil {
		return err
	}
	if opts.json {
		if err := output.JSON(a.out, rep); err != nil {
			return err
		}
	} else if err := verifyPrint(a.out, rep, opts.positions); err != nil {
		return err
	}
	if !rep.Pass {
		return fmt.Errorf("%w: %s", errFound, strings.Join(rep.Failures, "; "))
	}
	return nil
}

// verifyThresholds resolves --pair (nil: the pair the weight types choose,
// which verify takes from the loaded models) and checks the single-limit
// overrides, which it returns as a change to apply on top of the pair (nil
// when none is given).
func verifyThresholds(cmd *cobra.Command, opts *verifyOptions) (*verify.Thresholds, func(*verify.Thresholds), error) {
	set := func(name string) bool { return cmd.Flags().Changed(name) }
	var named *verify.Thresholds
	if opts.pair != "" {
		t, err := verify.NamedThresholds(opts.pair)
		if err != nil {
			return nil, nil, err
		}
		named = &t
	}
	if set("max-kld") && opts.maxKLD < 0 {
		return nil, nil, errors.New("verify: --max-kld must be ≥ 0")
	}
	if set("min-top1") && (opts.minTop1 < 0 || opts.minTop1 > 1) {
		return nil, nil, errors.New("verify: --min-top1 must be within [0, 1]")
	}
	if set("layer-nmse") && opts.layerNMSE < 0 {
		return nil, nil, errors.New("verify: --layer-nmse must be ≥ 0")
	}
	if !set("max-kld") && !set("min-top1") && !set("layer-nmse") {
		return named, nil, nil
	}
	return named, func(th *verify.Thresholds) {
		if set("max-kld") {
			th.MaxKLD, th.Pair = opts.maxKLD, "custom"
		}
		if set("min-top1") {
			th.MinTop1, th.Pair = opts.minTop1, "custom"
		}
		if set("layer-nmse") {
			th.LayerNMSE, th.Pair = opts.layerNMSE, "custom"
		}
	}, nil
}

// tokenCell is a token id with its text quoted beside it, as tokenize
// prints pieces (`446 "▁The"`); the id alone without a text, the text alone
// for id -1.
func tokenCell(id int, text string) string {
	switch {
	case id < 0 && text == "":
		return "-"
	case id < 0:
		return strconv.Quote(text)
	case text == "":
		return strconv.Itoa(id)
	}
	return strconv.Itoa(id) + " " + strconv.Quote(text)
}

// verifyPrint writes the human report.
func verifyPrint(w io.Writer, r *verify.Report, positions bool) error {
	ref := r.Ref
	if r.Baseline {
		ref = "baseline of " + ref
	}
	fmt.Fprintf(w, "reference: %s (%s)\ncandidate: %s (%s)\n", ref, strings.Join(r.RefTypes, ","), r.Cand, strings.Join(r.CandTypes, ","))
	if r.Chunks > 0 {
		fmt.Fprintf(w, "inputs: %d chunks of %d tokens, %d positions scored\n", r.Chunks, r.Ctx, r.Summary.Positions)
	} else {
		fmt.Fprintf(w, "inputs: %d tokens, %d positions\n", len(r.Tokens), r.Summary.Positions)
	}
	if r.DefaultPrompt {
		fmt.Fprintf(w, "input: tfconv's built-in text (no --tokens, --prompt or --prompt-file given): %q\n", r.Prompt)
	}
	fmt.Fprintln(w)
	if n := r.Summary.Positions; n > 0 {
		t := output.NewTable("statistic", "value")
		t.Row("max |Δlogit|", fmt.Sprintf("%.6g", r.MaxAbs))
		t.Row("RMS Δlogit", fmt.Sprintf("%.6g", r.RMS))
		t.Row("cosine (mean / min)", fmt.Sprintf("%.8f / %.8f", r.CosineMean, r.CosineMin))
		t.Row("mean KLD", verify.PlusMinus(r.KLD.Mean, r.KLD.MeanErr, n, "%.6g", "%.3g"))
		t.Row("KLD median / p90 / p95", fmt.Sprintf("%.6g / %.6g / %.6g", r.KLD.Median, r.KLD.P90, r.KLD.P95))
		t.Row("KLD p99 / p99.9 / max", fmt.Sprintf("%.6g / %.6g / %.6g", r.KLD.P99, r.KLD.P999, r.KLD.Max))
		t.Row("same top token", verify.PlusMinus(100*r.Top1, 100*r.Top1Err, n, "%.3f", "%.3f")+" %")
		t.Row(fmt.Sprintf("top-%d overlap", r.TopK), fmt.Sprintf("%.3f %%", 100*r.TopKOverlap))
		t.Row("Δp of ref top token (mean / RMS)", fmt.Sprintf("%.4f / %.4f %%", 100*r.DeltaP.Mean, 100*r.DeltaPRMS))
		if p := r.PPL; p != nil {
			t.Row("PPL ref", verify.PlusMinus(p.Ref, p.RefErr, p.Count, "%.4f", "%.4f"))
			t.Row("PPL cand", verify.PlusMinus(p.Cand, p.CandErr, p.Count, "%.4f", "%.4f"))
			t.Row("PPL(cand)/PPL(ref)", verify.PlusMinus(p.Ratio, p.Ratio*p.LnRatioErr, p.Count, "%.6f", "%.6f"))
		}
		if err := t.Render(w); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	if im := r.Image; im != nil {
		fmt.Fprintf(w, "image %s (%s preprocessing, %s projector): %d feature rows at positions %d..%d; pixels max |Δ| %.3g\n",
			im.File, im.Preprocess, im.Projector, im.Rows, im.First, im.First+im.Rows-1, im.PixelsMaxAbs)
		fmt.Fprintf(w, "encoders: %s | %s\n", im.RefEncoder, im.CandEncoder)
		it := output.NewTable("tower state", "cosine", "NMSE", "max abs", "departs")
		for _, l := range im.Tower {
			d := ""
			if l.Departs {
				d = "yes"
			}
			name := fmt.Sprintf("after block %d", l.Layer-1)
			switch {
			case l.Layer == 0:
				name = "embeddings"
			case l.Layer > im.Blocks:
				name = "after the final norm"
			}
			it.Row(name, fmt.Sprintf("%.8f", l.Cosine), fmt.Sprintf("%.3g", l.NMSE), fmt.Sprintf("%.3g", l.MaxAbs), d)
		}
		f := im.Features
		it.Row("image features", fmt.Sprintf("%.8f", f.Cosine), fmt.Sprintf("%.3g", f.NMSE), fmt.Sprintf("%.3g", f.MaxAbs), "")
		if err := it.Render(w); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	if len(r.Layers) > 0 {
		// The kind column appears where the layers are of several kinds
		// or of one that is not attention (the recurrent families).
		kinds := slices.ContainsFunc(r.Layers, func(l verify.Layer) bool {
			return l.Kind != "" && (l.Kind != r.Layers[0].Kind || !strings.HasSuffix(l.Kind, "attention"))
		})
		cols := []string{"layer", "cosine", "NMSE", "max abs", "departs"}
		if kinds {
			cols = slices.Insert(cols, 1, "kind")
		}
		lt := output.NewTable(cols...)
		for _, l := range r.Layers {
			d := ""
			if l.Departs {
				d = "yes"
			}
			row := []any{l.Layer, fmt.Sprintf("%.8f", l.Cosine), fmt.Sprintf("%.3e", l.NMSE), fmt.Sprintf("%.4g", l.MaxAbs), d}
			if kinds {
				row = slices.Insert(row, 1, any(l.Kind))
			}
			lt.Row(row...)
		}
		if err := lt.Render(w); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	if positions && len(r.Positions) > 0 {
		pt := output.NewTable("pos", "token", "max abs", "KLD", "ref top", "cand top", "top-k overlap", "Δp")
		for _, p := range r.Positions {
			pt.Row(p.Pos, tokenCell(-1, p.TokenText), fmt.Sprintf("%.4g", p.MaxAbs), fmt.Sprintf("%.4g", p.KLD),
				tokenCell(p.RefTop, p.RefTopText), tokenCell(p.CandTop, p.CandTopText),
				fmt.Sprintf("%.2f", p.TopKOverlap), fmt.Sprintf("%+.4f", p.DeltaP))
		}
		if err := pt.Render(w); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	if r.FirstDivergentLayer != nil {
		fmt.Fprintf(w, "first divergent layer: %d\n", *r.FirstDivergentLayer)
	} else {
		fmt.Fprintln(w, "first divergent layer: none")
	}
	th := r.Thresholds
	fmt.Fprintf(w, "thresholds (%s): mean KLD ≤ %g, top-1 ≥ %g, layer NMSE ≤ %g\n", th.Pair, th.MaxKLD, th.MinTop1, th.LayerNMSE)
	if r.Pass {
		fmt.Fprintln(w, "result: PASS")
	} else {
		fmt.Fprintf(w, "result: FAIL (%s)\n", strings.Join(r.Failures, "; "))
	}
	return nil
}

// verifyImage runs verify REF CAND --image FILE.
func verifyImage(opts *verifyOptions, fo verify.FileOptions) (*verify.Report, error) {
	if opts.cand == "" {
		return nil, errors.New("verify: --image compares two models: give REF CAND (baselines hold no image)")
	}
	if opts.promptFile != "" {
		return nil, errors.New("verify: --image takes --tokens or --prompt, not --prompt-file")
	}
	im, err := vision.ReadFile(opts.image)
	if err != nil {
		return nil, fmt.Errorf("verify: --image: %w", err)
	}
	img := verify.ImageOptions{Image: im, File: opts.image}
	if opts.preprocess != "" {
		m, err := vision.ParseMethod(opts.preprocess)
		if err != nil {
			return nil, fmt.Errorf("verify: --preprocess: %w", err)
		}
		img.Method = &m
	}
	return verify.FilesImage(opts.ref, opts.cand, opts.refMmproj, opts.mmproj, img, fo)
}
