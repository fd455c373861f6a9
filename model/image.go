package model

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tfconv/tfconv/tokenizer"
	"github.com/tfconv/tfconv/vision"
)

// MediaMarker is llama.cpp mtmd's marker of an image in a prompt's text
// (mtmd_default_marker). A prompt may hold it or the image placeholder's
// own text (Gemma 3's "<start_of_image>", what transformers' processor
// looks for).
const MediaMarker = "<__media__>"

// ImagePrompt is a prompt holding one image, for a text model beside its
// vision encoder.
type ImagePrompt struct {
	// Tokens hold the image placeholder (VisionConfig.BOI) once, as the
	// processor's input leaves it before expansion; or, when Tokens is nil,
	// Text holds the placeholder's text or MediaMarker once.
	Tokens []int
	Text   string
	Image  *vision.Image
	// Audio is the clip for an audio encoder (Vision.IsAudio), in place
	// of Image; the placeholder is the processor's audio token
	// (Qwen2-Audio's <|AUDIO|>) or MediaMarker.
	Audio *vision.Audio
	// Method is whose preprocessing and prompt expansion to reproduce:
	// vision.Transformers (the processor's "\n\n<start_of_image>" + soft
	// tokens + "<end_of_image>\n\n", the whole text tokenized at once) or
	// vision.Mtmd (<start_of_image> + the image + <end_of_image>, the text
	// around it tokenized piece by piece, as mtmd_tokenize does).
	Method vision.Method
	// TowerStates asks for the tower's hidden states in ImageRun.States.
	TowerStates bool
	// Like, when set, is a run of the same prompt by another model: its
	// tokens and image positions are used as they are, and Tokens and Text
	// are not read (verify gives two models one input, tokenized by the
	// reference).
	Like *ImageRun
}

// ImageRun is a prompt with its image encoded: the Input to give Forward,
// and what it is made of.
type ImageRun struct {
	Input    Input
	Pixels   []float32 // the preprocessed tile [3][S][S] (audio: the log-mel windows)
	Features []float32 // the image features [Tokens][d_model]
	First    int       // the first soft token's position
	Last     int       // the last (tokens of the text model's own may lie between: Pixtral's [IMG_BREAK])
	Count    int       // soft tokens (VisionConfig.Tokens)
	// Rows are, per token, the feature row its embedding is (−1: the
	// token's own).
	Rows []int
	// States are the tower's hidden states when ImagePrompt.TowerStates
	// asked for them: the embeddings, then after each layer, each
	// [rows][VisionConfig.DModel] (see Vision.Encode).
	States [][]float32
}

// ImageInput preprocesses and encodes p's image with v and builds the
// prompt around it as p.Method's reference does (the projector type's
// encoder says how: Gemma 3's soft tokens, …): the Input to give Forward,
// whose image positions take the image features as their embeddings
// (unscaled).
func (m *Model) ImageInput(v *Vision, p ImagePrompt) (*ImageRun, error) {
	c, vc := m.Config(), v.Config()
	if vc.TextDModel != c.DModel {
		return nil, fmt.Errorf("model: the vision encoder %s projects to width %d, the text model %s has %d", v.Path, vc.TextDModel, m.Path, c.DModel)
	}
	if c.EncoderDecoder || c.EncoderOnly {
		return nil, fmt.Errorf("model: %s: images go into decoder-only models", c.Arch)
	}
	var prep *Prepared
	var err error
	switch {
	case v.IsAudio():
		if p.Image != nil || p.Audio == nil {
			return nil, fmt.Errorf("model: %s is an audio encoder: give it audio, not an image", v.Path)
		}
		prep, err = v.PrepareAudio(p.Audio, p.Method)
	case p.Image == nil:
		return nil, errors.New("model: no image")
	default:
		prep, err = v.Prepare(p.Image, p.Method)
	}
	if err != nil {
		return nil, err
	}
	var span *imageSpan
	if p.Like != nil {
		span = &imageSpan{Tokens: append([]int(nil), p.Like.Input.Tokens...), Rows: p.Like.Rows, Bidirectional: p.Like.Input.Groups != nil}
		if len(span.Rows) != len(span.Tokens) {
			return nil, errors.New("model: ImagePrompt.Like has no image rows")
		}
	} else if span, err = v.enc.prompt(m, p, prep); err != nil {
		return nil, err
	}
	var states *[][]float32
	if p.TowerStates {
		states = new([][]float32)
	}
	feat, err := v.EncodePrepared(prep, states)
	if err != nil {
		return nil, err
	}
	d := c.DModel
	if len(feat) != prep.Rows*d {
		return nil, fmt.Errorf("model: %s: the encoder gave %d values for %d feature rows of width %d", v.Path, len(feat), prep.Rows, d)
	}
	in := Input{Tokens: span.Tokens, Embeds: make([][]float32, len(span.Tokens)), Positions: span.Positions}
	if span.Bidirectional {
		in.Groups = make([]int, len(span.Tokens))
		for i := range in.Groups {
			in.Groups[i] = -1
		}
	}
	first, last, used := -1, -1, 0
	for i, r := range span.Rows {
		if r < 0 {
			continue
		}
		if r >= prep.Rows {
			return nil, fmt.Errorf("model: %s: the prompt takes feature row %d of %d", v.Path, r, prep.Rows)
		}
		if first < 0 {
			first = i
		}
		last = i
		used++
		in.Embeds[i] = feat[r*d : (r+1)*d]
		for l, ds := range prep.Deepstack {
			if in.Deepstack == nil {
				in.Deepstack = make([][][]float32, len(prep.Deepstack))
			}
			if in.Deepstack[l] == nil {
				in.Deepstack[l] = make([][]float32, len(span.Tokens))
			}
			in.Deepstack[l][i] = ds[r*d : (r+1)*d]
		}
		if in.Groups != nil {
			in.Groups[i] = 0
		}
		if in.Tokens[i] >= c.Vocab || in.Tokens[i] < 0 {
			// transformers looks the placeholder up as id 0 when the
			// image token lies past the vocabulary; its row is replaced.
			in.Tokens[i] = 0
		}
	}
	if used != prep.Rows {
		return nil, fmt.Errorf("model: %s: the prompt holds %d of the image's %d feature rows", v.Path, used, prep.Rows)
	}
	run := &ImageRun{Input: in, Pixels: prep.Pixels, Features: feat, First: first, Last: last, Count: prep.Rows, Rows: span.Rows}
	if states != nil {
		run.States = *states
	}
	return run, nil
}

// splicePlaceholder replaces the one placeholder id in tokens (named name
// in messages) by seq.
func splicePlaceholder(tokens []int, placeholder int, name string, seq []int) ([]int, error) {
	at := -1
	for i, t := range tokens {
		if t == placeholder {
			if at >= 0 {
				return nil, fmt.Errorf("model: the tokens hold the image placeholder %d twice (at %d and %d); one image runs", placeholder, at, i)
			}
			at = i
		}
	}
	if at < 0 {
		return nil, fmt.Errorf("model: the tokens do not hold the image placeholder %d (%s)", placeholder, name)
	}
	return append(append(append([]int(nil), tokens[:at]...), seq...), tokens[at+1:]...), nil
}

// vocabIDs looks the texts up in the text model's vocabulary: the tokens
// an image's expansion is spelled with.
func vocabIDs(m *Model, texts ...string) (map[string]int, error) {
	t := m.Tokenizer()
	if t == nil {
		return nil, fmt.Errorf("model: %s carries no tokenizer: the image's tokens cannot be spelled", m.Path)
	}
	ids := make(map[string]int, len(texts))
	for _, s := range texts {
		id, ok := t.ID(s)
		if !ok {
			return nil, fmt.Errorf("model: %s: the vocabulary has no %s", m.Path, s)
		}
		ids[s] = id
	}
	return ids, nil
}

// spliceExpansion puts exp in place of the prompt's one image placeholder
// and returns the tokens and where exp starts in them. With p.Tokens the
// placeholder is the id placeholder (named name). With p.Text it is the
// text name or MediaMarker: transformers' processors expand it in the text
// and tokenize the whole (Transformers), mtmd tokenizes the text before
// it (with the special tokens) and after it apart (Mtmd).
func spliceExpansion(m *Model, p ImagePrompt, placeholder int, name string, exp []int) ([]int, int, error) {
	if p.Tokens != nil {
		at := slices.Index(p.Tokens, placeholder)
		tokens, err := splicePlaceholder(p.Tokens, placeholder, name, exp)
		return tokens, at, err
	}
	t := m.Tokenizer()
	if t == nil {
		return nil, 0, fmt.Errorf("model: %s carries no tokenizer (give the tokens)", m.Path)
	}
	before, after, err := cutMarker(p.Text, name)
	if err != nil {
		return nil, 0, err
	}
	if p.Method == vision.Transformers {
		whole, err := t.Encode(before+name+after, tokenizer.EncodeOptions{AddSpecial: true, ParseSpecial: true})
		if err != nil {
			return nil, 0, err
		}
		if n := strings.Count(before+after, name); n > 0 || slices.Index(whole, placeholder) < 0 {
			return nil, 0, fmt.Errorf("model: %s: %s does not tokenize as the one placeholder %d", m.Path, name, placeholder)
		}
		at := slices.Index(whole, placeholder)
		tokens, err := splicePlaceholder(whole, placeholder, name, exp)
		return tokens, at, err
	}
	head, err := t.Encode(before, tokenizer.EncodeOptions{AddSpecial: true, ParseSpecial: true})
	if err != nil {
		return nil, 0, err
	}
	tail, err := t.Encode(after, tokenizer.EncodeOptions{ParseSpecial: true})
	if err != nil {
		return nil, 0, err
	}
	return append(append(head, exp...), tail...), len(head), nil
}

// featureRows numbers the tokens equal to id in tokens[at:at+n] as the
// feature rows 0, 1, …; every other token keeps its own embedding (−1).
func featureRows(tokens []int, at, n, id int) []int {
	rows := make([]int, len(tokens))
	next := 0
	for i := range rows {
		rows[i] = -1
		if i >= at && i < at+n && tokens[i] == id {
			rows[i] = next
			next++
		}
	}
	return rows
}

// cutMarker splits a prompt's text at its one image marker: MediaMarker
// when the text holds it, else placeholder (the processor's text).
func cutMarker(text, placeholder string) (before, after string, err error) {
	marker := placeholder
	if strings.Contains(text, MediaMarker) {
		marker = MediaMarker
	}
	if c := strings.Count(text, marker); c != 1 {
		return "", "", fmt.Errorf("model: the prompt holds %s %d times; it marks the one image", marker, c)
	}
	before, after, _ = strings.Cut(text, marker)
	return before, after, nil
}

// rowsAfter marks n feature rows 0..n−1 on the n tokens from first.
func rowsAfter(length, first, n int) []int {
	rows := make([]int, length)
	for i := range rows {
		rows[i] = -1
	}
	for j := 0; j < n; j++ {
		rows[first+j] = j
	}
	return rows
}

// prompt is Gemma 3's: the placeholder <start_of_image> becomes BOI, the
// soft tokens and EOI (with "\n\n" around them in transformers'
// processor), and the image's tokens attend to each other both ways. Both
// references do that: transformers v4.57.6 ors a same-image-group mask
// (from token_type_ids) into the causal and the sliding-window masks at
// prefill, and llama.cpp d32676d7 decodes the image chunk with causal
// attention off (mtmd_decode_use_non_causal). They part only for an image
// longer than the sliding window, where llama.cpp's window still hides
// image tokens further back and transformers' group does not; Input.Groups
// follows transformers (a group overrides the window). Gemma 3's 256
// tokens per image sit well inside its 1024-token window, and the
// fixtures' 4 inside their window of 4.
func (g *gemma3Vision) prompt(m *Model, p ImagePrompt, pr *Prepared) (*imageSpan, error) {
	ids, err := m.imageTokens(g.v)
	if err != nil {
		return nil, err
	}
	hfStyle := p.Method == vision.Transformers
	n := pr.Rows
	var tokens []int
	if p.Tokens != nil {
		seq, err := m.imageSequence(ids, n, hfStyle)
		if err != nil {
			return nil, err
		}
		if tokens, err = splicePlaceholder(p.Tokens, ids.boi, ids.boiText, seq); err != nil {
			return nil, err
		}
	} else if tokens, err = m.imageText(ids, n, p.Text, hfStyle); err != nil {
		return nil, err
	}
	first := -1
	for i, t := range tokens {
		if t == ids.soft && i > 0 && tokens[i-1] == ids.boi {
			first = i
			break
		}
	}
	if first < 0 || first+n > len(tokens) {
		return nil, errors.New("model: the expanded prompt lost the image's tokens")
	}
	return &imageSpan{Tokens: tokens, Rows: rowsAfter(len(tokens), first, n), Bidirectional: true}, nil
}

// imageIDs are the text model's image tokens and the texts that name them.
type imageIDs struct {
	boi, eoi, soft             int
	boiText, eoiText, softText string
}

// imageTokens finds the image tokens: config.json's ids for a Hugging Face
// folder, else the text model's vocabulary ("<start_of_image>",
// "<end_of_image>", "<image_soft_token>", Gemma 3's pieces; the soft token
// may be absent from a GGUF's vocabulary: llama.cpp feeds embeddings
// without ids, and 0 stands in).
func (m *Model) imageTokens(v *Vision) (imageIDs, error) {
	vc := v.Config()
	ids := imageIDs{boi: vc.BOI, eoi: vc.EOI, soft: vc.Image,
		boiText: "<start_of_image>", eoiText: "<end_of_image>", softText: "<image_soft_token>"}
	t := m.Tokenizer()
	look := func(id *int, piece string, need bool) error {
		if *id >= 0 {
			return nil
		}
		if t != nil {
			if x, ok := t.ID(piece); ok {
				*id = x
				return nil
			}
		}
		if need {
			return fmt.Errorf("model: %s: the vocabulary has no %s and the vision encoder does not give its id", m.Path, piece)
		}
		*id = 0
		return nil
	}
	if err := look(&ids.boi, ids.boiText, true); err != nil {
		return ids, err
	}
	if err := look(&ids.eoi, ids.eoiText, true); err != nil {
		return ids, err
	}
	if err := look(&ids.soft, ids.softText, false); err != nil {
		return ids, err
	}
	if t != nil && vc.BOI >= 0 {
		if p := t.Piece(ids.boi); p != "" {
			ids.boiText = p
		}
		if p := t.Piece(ids.eoi); p != "" {
			ids.eoiText = p
		}
		if p := t.Piece(ids.soft); p != "" {
			ids.softText = p
		}
	}
	return ids, nil
}

// imageSequence is what the placeholder id becomes: the processor's
// "\n\n" + BOI + n soft + EOI + "\n\n" (the newlines by the text model's
// tokenizer), or mtmd's BOI + n + EOI.
func (m *Model) imageSequence(ids imageIDs, n int, hfStyle bool) ([]int, error) {
	seq := []int{ids.boi}
	for range n {
		seq = append(seq, ids.soft)
	}
	seq = append(seq, ids.eoi)
	if !hfStyle {
		return seq, nil
	}
	t := m.Tokenizer()
	if t == nil {
		return nil, fmt.Errorf("model: %s carries no tokenizer: the processor's \"\\n\\n\" around the image cannot be tokenized", m.Path)
	}
	nl, err := m.afterSpecial(ids, "\n\n")
	if err != nil {
		return nil, err
	}
	out := append(append([]int(nil), nl...), seq...)
	return append(out, nl...), nil
}

// imageText tokenizes a prompt's text around its one image marker (the
// placeholder's text, or MediaMarker).
func (m *Model) imageText(ids imageIDs, n int, text string, hfStyle bool) ([]int, error) {
	t := m.Tokenizer()
	if t == nil {
		return nil, fmt.Errorf("model: %s carries no tokenizer (give the tokens)", m.Path)
	}
	before, after, err := cutMarker(text, ids.boiText)
	if err != nil {
		return nil, err
	}
	if hfStyle {
		// Gemma3Processor: the placeholder becomes "\n\n" + BOI + soft
		// tokens + EOI + "\n\n" in the text, which the tokenizer splits at
		// the special tokens: the text before them (with BOS and the
		// SentencePiece prefix), then the text after EOI.
		head, err := t.Encode(before+"\n\n", tokenizer.EncodeOptions{AddSpecial: true, ParseSpecial: true})
		if err != nil {
			return nil, err
		}
		tail, err := m.afterSpecial(ids, "\n\n"+after)
		if err != nil {
			return nil, err
		}
		seq, _ := m.imageSequence(ids, n, false)
		return append(append(head, seq...), tail...), nil
	}
	// mtmd_tokenize: each text piece alone, the special tokens (BOS) only
	// on the first.
	head, err := t.Encode(before, tokenizer.EncodeOptions{AddSpecial: true, ParseSpecial: true})
	if err != nil {
		return nil, err
	}
	tail, err := t.Encode(after, tokenizer.EncodeOptions{ParseSpecial: true})
	if err != nil {
		return nil, err
	}
	seq, _ := m.imageSequence(ids, n, false)
	return append(append(head, seq...), tail...), nil
}

// afterSpecial tokenizes text as the tokenizer does where it follows a
// special token (EOI) in a longer text: with or without the space prefix
// there, as the tokenizer's source says (transformers' legacy false puts it
// at the text's start only; llama.cpp after every special token).
func (m *Model) afterSpecial(ids imageIDs, text string) ([]int, error) {
	t := m.Tokenizer()
	toks, err := t.Encode(ids.eoiText+text, tokenizer.EncodeOptions{ParseSpecial: true})
	if err != nil {
		return nil, err
	}
	if len(toks) == 0 || toks[0] != ids.eoi {
		return nil, fmt.Errorf("model: %s: %s does not tokenize as one special token", m.Path, ids.eoiText)
	}
	return toks[1:], nil
}
