package model

// Qwen2-Audio's audio encoder: a Whisper encoder, Qwen2-Audio's average
// pool and its projector (transformers' Qwen2AudioEncoder and
// Qwen2AudioMultiModalProjector; llama.cpp's clip_graph_whisper_enc with
// PROJECTOR_TYPE_QWEN2A). For a log-mel window M [n_mel][T] (T = 3000
// frames, 30 s) of which the first F frames are attended, n = ⌊(F−1)/2⌋+1
// positions of width d:
//
//	c₁[t]   = gelu(W₁ ⋆ M[:, t−1..t+1] + b₁)            (conv1: kernel 3, padding 1)
//	x₀[j]   = gelu(W₂ ⋆ c₁[2j−1..2j+1] + b₂) + pos[j]  (conv2: kernel 3, stride 2, padding 1)
//	x'      = x + O·Attn(Q·LN₁(x), K·LN₁(x), V·LN₁(x))  (K has no bias; the n positions see each other)
//	x″      = x' + fc₂(gelu(fc₁(LN₂(x'))))
//	u[i]    = (x_L[2i] + x_L[2i+1]) / 2                 (AvgPool1d(2, 2): ⌊n/2⌋ rows)
//	feature = W_fc · LN_post(u) + b_fc                  [⌊n/2⌋][d_text]
//
// transformers runs all 1500 positions with the keys past n masked, which
// leaves the first n rows what n positions alone give; the processor's
// <|AUDIO|> count is ⌊(n−2)/2⌋+1 of them. mtmd attends over the whole
// window (F = T: 750 rows per 30 s window, each window encoded alone).

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	spec "github.com/tfconv/tfconv/arch"
	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/kernels"
	"github.com/tfconv/tfconv/tensor"
	"github.com/tfconv/tfconv/tokenizer"
	"github.com/tfconv/tfconv/vision"
)

// qwen2Audio is the qwen2a projector type's encoder.
type qwen2Audio struct {
	v         *Vision
	nMel      int // the log-mel bins conv1 reads
	positions int // max_source_positions: the window's frames / 2
	// conv1, conv2 are the convolutions as matrices over unfolded
	// windows: W [d][in·3], (channel, tap) order as the kernels [d][in][3]
	// are stored.
	conv1, conv2 linear
	pos          []float32 // [positions][d]
	blocks       []vitBlock
	post         norm
	proj         linear // [d_text][d]
}

// Qwen2-Audio's token texts (Qwen2AudioProcessor's audio_token,
// audio_bos_token, audio_eos_token; mtmd's aud_beg and aud_end).
const (
	qwen2AudioToken = "<|AUDIO|>"
	qwen2AudioBOS   = "<|audio_bos|>"
	qwen2AudioEOS   = "<|audio_eos|>"
)

// whisperMelBins, whisperRate, whisperHop and whisperFFT are the feature
// extractor's settings mtmd hard-codes for every Whisper encoder
// (clip.cpp) and a Qwen2-Audio preprocessor_config.json states.
const (
	whisperRate = 16000
	whisperHop  = 160
	whisperFFT  = 400
)

// qwen2AudioFromHF reads config.json's audio_config, audio_token_index and
// text_config.hidden_size, and checks preprocessor_config.json states the
// Whisper front end tfconv computes.
func qwen2AudioFromHF(v *Vision, c *checkpoint.Checkpoint, top spec.Config) (encoder, error) {
	ac, ok := top.Map(v.proj.Encoder)
	if !ok {
		return nil, fmt.Errorf("model: %s: config.json has no %s", c.Path, v.proj.Encoder)
	}
	cfg := VisionConfig{Projector: "qwen2a", Image: -1, BOI: -1, EOI: -1, Activation: "gelu", Eps: 1e-5}
	q := &qwen2Audio{v: v}
	// Qwen2AudioEncoderConfig's and Qwen2AudioConfig's defaults.
	if err := readConfigInts(c.Path,
		dimInt(&cfg.DModel, ac, 1280, "d_model"), dimInt(&cfg.Layers, ac, 32, "encoder_layers", "num_hidden_layers"),
		dimInt(&cfg.Heads, ac, 20, "encoder_attention_heads", "num_attention_heads"),
		dimInt(&cfg.FFN, ac, 5120, "encoder_ffn_dim"), dimInt(&q.nMel, ac, 128, "num_mel_bins"),
		dimInt(&q.positions, ac, 1500, "max_source_positions"),
		idInt(&cfg.Image, top, 151646, "audio_token_index", "audio_token_id")); err != nil {
		return nil, err
	}
	if act, _ := ac["activation_function"].(string); act != "" && act != "gelu" {
		return nil, tensor.Unsupported("model: %s: config.json: audio_config.activation_function %q (Qwen2-Audio's encoder is GELU)", c.Path, act)
	}
	text, ok := top.Map("text_config")
	if !ok {
		return nil, fmt.Errorf("model: %s: config.json has no text_config", c.Path)
	}
	d, ok := text.Int("hidden_size")
	if !ok || d <= 0 || d > maxVisionDim {
		return nil, fmt.Errorf("model: %s: config.json: text_config.hidden_size missing or out of range", c.Path)
	}
	cfg.TextDModel = int(d)
	if pre, err := c.ReadAux("preprocessor_config.json"); err == nil {
		var p spec.Config
		if err := decodeJSON(pre, &p); err != nil {
			return nil, fmt.Errorf("model: %s: preprocessor_config.json: %w", c.Path, err)
		}
		for _, k := range []struct {
			key  string
			want int
		}{{"feature_size", q.nMel}, {"sampling_rate", whisperRate}, {"hop_length", whisperHop}, {"n_fft", whisperFFT},
			{"n_samples", vision.WhisperSamples}, {"nb_max_frames", vision.WhisperFrames}} {
			if n, ok := p.Int(k.key); ok && n != int64(k.want) {
				return nil, tensor.Unsupported("model: %s: preprocessor_config.json: %s = %d (tfconv's Whisper front end has %d)", c.Path, k.key, n, k.want)
			}
		}
		if dither, ok := p.Float("dither"); ok && dither != 0 {
			return nil, tensor.Unsupported("model: %s: preprocessor_config.json: dither %g (random noise is not reproduced)", c.Path, dither)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("model: %s: %w", c.Path, err)
	}
	if err := q.check(c.Path, &cfg); err != nil {
		return nil, err
	}
	v.cfg = cfg
	return q, nil
}

// qwen2AudioFromGGUF reads an mmproj GGUF's clip.audio.* keys; the window
// length is the position table's (a.position_embd), read at load.
func qwen2AudioFromGGUF(v *Vision, md tensor.Metadata) (encoder, error) {
	cfg := VisionConfig{Projector: "qwen2a", Image: -1, BOI: -1, EOI: -1, Activation: "gelu", Eps: 1e-5}
	q := &qwen2Audio{v: v}
	if err := ggufInts(v.Path, md, map[string]*int{
		"clip.audio.embedding_length": &cfg.DModel, "clip.audio.block_count": &cfg.Layers,
		"clip.audio.attention.head_count": &cfg.Heads, "clip.audio.feed_forward_length": &cfg.FFN,
		"clip.audio.projection_dim": &cfg.TextDModel, "clip.audio.num_mel_bins": &q.nMel,
	}); err != nil {
		return nil, err
	}
	if e, ok := md.Get("clip.audio.attention.layer_norm_epsilon"); ok {
		f, _ := e.Float()
		cfg.Eps = float32(f)
	}
	if n, ok := md.Int("clip.audio.projector.stack_factor"); ok && n > 1 {
		return nil, tensor.Unsupported("model: %s: clip.audio.projector.stack_factor %d (qwen2a stacks no frames)", v.Path, n)
	}
	q.positions = vision.WhisperFrames / 2
	if err := q.check(v.Path, &cfg); err != nil {
		return nil, err
	}
	v.cfg = cfg
	return q, nil
}

// check refuses sizes the forward cannot take.
func (q *qwen2Audio) check(path string, c *VisionConfig) error {
	if c.DModel%c.Heads != 0 {
		return fmt.Errorf("model: %s: audio d_model %d not a multiple of %d heads", path, c.DModel, c.Heads)
	}
	if q.positions*2 != vision.WhisperFrames {
		return tensor.Unsupported("model: %s: audio encoder of %d positions: tfconv feeds Whisper's %d-frame window (%d positions)",
			path, q.positions, vision.WhisperFrames, vision.WhisperFrames/2)
	}
	for _, x := range []int{c.DModel, c.Layers, c.Heads, c.FFN, c.TextDModel, q.nMel} {
		if x <= 0 || x > maxVisionDim {
			return fmt.Errorf("model: %s: audio encoder size %d out of range", path, x)
		}
	}
	return nil
}

func (q *qwen2Audio) load(l *loader) {
	v := q.v
	c := &v.cfg
	d := c.DModel
	conv := func(role string, in int) linear {
		kernel := l.shaped(v.name(l, role, 0, ".weight"), tensor.Shape{int64(d), int64(in), 3})
		b := l.vector(v.name(l, role, 0, ".bias"), d) // [d] or the GGUF's [d][1]
		if kernel == nil {
			return linear{}
		}
		if v.matchLlamaCpp {
			// ggml_conv_1d_ph unfolds the input with im2col into binary16
			// and multiplies it with the F16 kernel.
			return linear{W: v.patchF16(l, kernel, d, in*3), B: b}
		}
		m := kernels.F32Matrix(d, in*3, kernel)
		l.mats = append(l.mats, m)
		return linear{W: m, B: b}
	}
	q.conv1 = conv("a.conv1d.1", q.nMel)
	q.conv2 = conv("a.conv1d.2", d)
	q.pos = l.shaped(v.name(l, "a.position_embd", 0, ".weight"), tensor.Shape{int64(q.positions), int64(d)})
	q.blocks = make([]vitBlock, c.Layers)
	for i := range q.blocks {
		q.blocks[i] = v.loadBlock(l, "a", i, d, c.FFN, c.Eps)
	}
	q.post = norm{W: l.vector(v.name(l, "a.post_ln", 0, ".weight"), d), B: l.vector(v.name(l, "a.post_ln", 0, ".bias"), d), Eps: c.Eps}
	q.proj = linear{W: l.matrix(v.name(l, "mm.a.fc", 0, ".weight"), c.TextDModel, d), B: l.vector(v.name(l, "mm.a.fc", 0, ".bias"), c.TextDModel)}
}

// prepare refuses images: the encoder hears.
func (q *qwen2Audio) prepare(*vision.Image, vision.Method) (*Prepared, error) {
	return nil, fmt.Errorf("model: %s: the qwen2a encoder takes audio (a WAV file), not an image", q.v.Path)
}

// prepareAudio makes the log-mel windows (vision.Qwen2AudioInput): Pixels
// the windows back to back, Tiles each {n_mel, frames}, Grid each
// window's attended frames F, Rows the features they give.
func (q *qwen2Audio) prepareAudio(a *vision.Audio, m vision.Method) (*Prepared, error) {
	mels, frames, err := vision.Qwen2AudioInput(a, q.nMel, m)
	if err != nil {
		return nil, fmt.Errorf("model: %s: %w", q.v.Path, err)
	}
	p := &Prepared{Grid: frames}
	for i, mel := range mels {
		if frames[i] < 3 {
			return nil, fmt.Errorf("model: %s: %d samples are too short for the encoder (at least %d)", q.v.Path, len(a.Samples), 2*whisperHop+1)
		}
		p.Pixels = append(p.Pixels, mel.Data...)
		p.Tiles = append(p.Tiles, [2]int{mel.NMel, mel.Frames})
		p.Rows += qwen2AudioTokens(frames[i])
	}
	return p, nil
}

// qwen2AudioPositions is the encoder positions of F attended frames
// (conv2's stride 2), qwen2AudioTokens the features the pool leaves
// (transformers' _get_feat_extract_output_lengths: ⌊(n−2)/2⌋+1 = ⌊n/2⌋
// for n ≥ 2, which F ≥ 3 gives).
func qwen2AudioPositions(frames int) int { return (frames-1)/2 + 1 }
func qwen2AudioTokens(frames int) int    { return qwen2AudioPositions(frames) / 2 }

// encode runs the encoder over each window and concatenates the features.
func (q *qwen2Audio) encode(p *Prepared, states *[][]float32) ([]float32, error) {
	c := &q.v.cfg
	if len(p.Grid) != len(p.Tiles) {
		return nil, fmt.Errorf("model: audio: %d windows, %d frame counts", len(p.Tiles), len(p.Grid))
	}
	var out []float32
	at := 0
	for i, t := range p.Tiles {
		nMel, T := t[0], t[1]
		if nMel != q.nMel || T != 2*q.positions || at+nMel*T > len(p.Pixels) {
			return nil, fmt.Errorf("model: audio: window %d is %d×%d, the encoder reads %d×%d", i, nMel, T, q.nMel, 2*q.positions)
		}
		F := p.Grid[i]
		if F < 3 || F > T {
			return nil, fmt.Errorf("model: audio: window %d attends %d of %d frames", i, F, T)
		}
		var st *[][]float32
		if i == 0 {
			st = states
		}
		feat, err := q.window(p.Pixels[at:at+nMel*T], T, F, st)
		if err != nil {
			return nil, err
		}
		out = append(out, feat...)
		at += nMel * T
	}
	if len(out) != p.Rows*c.TextDModel {
		return nil, fmt.Errorf("model: audio: %d feature values for %d rows", len(out), p.Rows)
	}
	return out, nil
}

// window encodes one log-mel window mel [n_mel][T] attending its first F
// frames.
func (q *qwen2Audio) window(mel []float32, T, F int, states *[][]float32) ([]float32, error) {
	c := &q.v.cfg
	d, nMel := c.DModel, q.nMel
	n := qwen2AudioPositions(F)
	// conv1 at frames 0 … 2n (those conv2's n outputs read), within T.
	n1 := min(2*n+1, T)
	cols := make([]float32, n1*nMel*3)
	for t := range n1 {
		row := cols[t*nMel*3:]
		for ch := range nMel {
			for k := range 3 {
				if f := t + k - 1; f >= 0 && f < T {
					row[ch*3+k] = mel[ch*T+f]
				}
			}
		}
	}
	c1 := make([]float32, n1*d)
	q.conv1.apply(c1, cols, n1)
	if err := activate(c1, "gelu"); err != nil {
		return nil, err
	}
	cols = make([]float32, n*d*3)
	for j := range n {
		row := cols[j*d*3:]
		for k := range 3 {
			if f := 2*j + k - 1; f >= 0 && f < n1 {
				for ch := range d {
					row[ch*3+k] = c1[f*d+ch]
				}
			}
		}
	}
	x := make([]float32, n*d)
	q.conv2.apply(x, cols, n)
	if err := activate(x, "gelu"); err != nil {
		return nil, err
	}
	kernels.Add(x, q.pos[:n*d])
	record := func(s []float32) {
		if states != nil {
			*states = append(*states, append([]float32(nil), s...))
		}
	}
	record(x)
	sc := newVitScratch(n, d, c.FFN)
	for i := range q.blocks {
		if err := q.blocks[i].forward(x, n, d, c.Heads, c.Activation, vitAttn{}, sc); err != nil {
			return nil, err
		}
		record(x)
	}
	m := n / 2
	u := make([]float32, m*d)
	for i := range m {
		for ch := range d {
			u[i*d+ch] = (x[2*i*d+ch] + x[(2*i+1)*d+ch]) / 2
		}
	}
	q.post.apply(u, u, m, d)
	record(u)
	feat := make([]float32, m*c.TextDModel)
	q.proj.apply(feat, u, m)
	return feat, nil
}

// prompt is Qwen2AudioProcessor's expansion (Transformers) or mtmd's audio
// chunk (Mtmd) of the prompt's one audio placeholder. The placeholder is
// <|AUDIO|> (in the tokens or the text) or, in the text, MediaMarker:
// <|AUDIO|> becomes n × <|AUDIO|>, wrapped in <|audio_bos|> …
// <|audio_eos|> unless one of them already stands beside it (the
// processor's rule); MediaMarker always takes the wrapping (mtmd adds
// aud_beg and aud_end around every clip). The text around it is
// tokenized piece by piece, as mtmd_tokenize does and as the byte-level
// BPE's split at special tokens makes transformers' whole-text
// tokenization do.
func (q *qwen2Audio) prompt(m *Model, p ImagePrompt, pr *Prepared) (*imageSpan, error) {
	t := m.Tokenizer()
	look := func(id int, piece string) (int, error) {
		if id >= 0 {
			return id, nil
		}
		if t != nil {
			if x, ok := t.ID(piece); ok {
				return x, nil
			}
		}
		return -1, fmt.Errorf("model: %s: the vocabulary has no %s", m.Path, piece)
	}
	audio, err := look(q.v.cfg.Image, qwen2AudioToken)
	if err != nil {
		return nil, err
	}
	bos, err := look(-1, qwen2AudioBOS)
	if err != nil {
		return nil, err
	}
	eos, err := look(-1, qwen2AudioEOS)
	if err != nil {
		return nil, err
	}
	n := pr.Rows
	seq := func(wrap bool) []int {
		s := make([]int, 0, n+2)
		if wrap {
			s = append(s, bos)
		}
		for range n {
			s = append(s, audio)
		}
		if wrap {
			s = append(s, eos)
		}
		return s
	}
	var head, body, tail []int
	if p.Tokens != nil {
		at := -1
		for i, id := range p.Tokens {
			if id == audio {
				if at >= 0 {
					return nil, fmt.Errorf("model: the tokens hold the audio placeholder %d twice (at %d and %d); one clip runs", audio, at, i)
				}
				at = i
			}
		}
		if at < 0 {
			return nil, fmt.Errorf("model: the tokens do not hold the audio placeholder %d (%s)", audio, qwen2AudioToken)
		}
		wrap := !(at > 0 && p.Tokens[at-1] == bos) && !(at+1 < len(p.Tokens) && p.Tokens[at+1] == eos)
		head, body, tail = p.Tokens[:at], seq(wrap), p.Tokens[at+1:]
	} else {
		if t == nil {
			return nil, fmt.Errorf("model: %s carries no tokenizer (give the tokens)", m.Path)
		}
		before, after, err := cutMarker(p.Text, qwen2AudioToken)
		if err != nil {
			return nil, err
		}
		wrap := strings.Contains(p.Text, MediaMarker) ||
			!strings.HasSuffix(before, qwen2AudioBOS) && !strings.HasPrefix(after, qwen2AudioEOS)
		if head, err = t.Encode(before, tokenizer.EncodeOptions{AddSpecial: true, ParseSpecial: true}); err != nil {
			return nil, err
		}
		if tail, err = t.Encode(after, tokenizer.EncodeOptions{ParseSpecial: true}); err != nil {
			return nil, err
		}
		body = seq(wrap)
	}
	tokens := append(append(append([]int(nil), head...), body...), tail...)
	first := len(head)
	if len(body) > n {
		first++
	}
	return &imageSpan{Tokens: tokens, Rows: rowsAfter(len(tokens), first, n)}, nil
}
