package model

// The image (and audio) encoders beside a text model. Vision is what the
// runtime holds; each projector type (clip.projector_type, arch's
// Projector.Type) brings its own encoder behind it: how the checkpoint
// states the tower's shape, its weights, its preprocessing, the tower and
// projector, and what the processor's placeholder becomes in the prompt.
// Adding a projector type is one file with one entry in encoders:
//
//	gemma3            siglip.go          SigLIP ViT + avg-pool + RMSNorm + projection
//	idefics3          idefics3vision.go  SigLIP ViT per tile + pixel shuffle + linear (SmolVLM)
//	internvl          internvlvision.go  InternViT per tile (class token, layer scale) + pixel shuffle + LN/GELU MLP
//	llama4            llama4vision.go    ViT per tile (class token, 2-D RoPE) + pixel shuffle + GELU MLP + linear
//	mlp               llavavision.go     CLIP ViT + 2-layer GELU MLP (LLaVA-1.5; LLaVA-NeXT's any-res tiles)
//	pixtral           pixtralvision.go   Pixtral ViT (2-D RoPE) + RMSNorm + patch merger + MLP
//	qwen2.5vl_merger  qwenvision.go      windowed 2-D RoPE ViT + 2×2 merger MLP
//	qwen3vl_merger    qwenvision.go      2-D RoPE ViT with learned positions + mergers, deepstack
//	qwen2a            qwen2audio.go      Whisper encoder + 2× avg-pool + LayerNorm + linear (audio)
//
// The shared pieces — vitBlock (a pre-norm transformer layer), patch
// unfolding, the loader — are used by every tower that has them, never
// copied.

import (
	"encoding/json"
	"fmt"
	"maps"
	"sort"
	"strings"

	spec "github.com/tfconv/tfconv/arch"
	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/internal/pyjson"
	"github.com/tfconv/tfconv/kernels"
	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/tensor"
	"github.com/tfconv/tfconv/vision"
)

// VisionConfig is an image encoder's shape. Fields a projector type does
// not use stay zero.
type VisionConfig struct {
	Projector  string // clip.projector_type ("gemma3")
	ImageSize  int    // S: the square tile the tower reads
	PatchSize  int    // p
	DModel     int    // d: the tower's width
	Layers     int
	Heads      int
	FFN        int
	Eps        float32 // the tower's norms' (and the projector's, where it has one)
	Activation string  // the MLP's ("gelu_tanh"; "gelu_ggml" with MatchLlamaCpp)
	Pool       int     // k: Gemma 3's average pool's kernel and stride
	Tokens     int     // feature rows of one fixed-size tile (0 when it depends on the image)
	TextDModel int     // d_text: the projection's output width
	Mean, Std  [3]float32

	// The text model's image tokens: the placeholder the prompt holds
	// (BOI, <start_of_image>), the end (EOI) and the soft token the
	// processor repeats (Image; −1 when the checkpoint does not say, as a
	// GGUF pair does not: llama.cpp feeds the embeddings without ids).
	BOI, EOI, Image int
}

// Vision is a loaded image encoder. It is safe for concurrent use.
type Vision struct {
	cfg  VisionConfig
	enc  encoder
	Path string // as given to LoadVision
	proj *spec.Projector
	// GGUF tells an mmproj GGUF (llama.cpp's names and keys) from a
	// Hugging Face folder.
	GGUF bool
	// matchLlamaCpp is LoadOptions.MatchLlamaCpp.
	matchLlamaCpp bool
	// Tensors are the encoder's tensors as the checkpoint holds them (a
	// Hugging Face folder's vision tower and projector, not its text
	// model).
	Tensors []tensor.Info
}

// An encoder is one projector type's tower and projector.
type encoder interface {
	// load reads the weights; the loader records the first error.
	load(l *loader)
	// prepare preprocesses an image as method m's reference does.
	prepare(img *vision.Image, m vision.Method) (*Prepared, error)
	// encode computes the features [Rows][TextDModel] of p. states, when
	// not nil, receives the tower's hidden states as transformers'
	// output_hidden_states gives them (embeddings, then each layer's).
	encode(p *Prepared, states *[][]float32) ([]float32, error)
	// prompt builds the whole prompt around p's image: the processor's
	// expansion of the placeholder (Transformers) or mtmd's image chunk
	// (Mtmd).
	prompt(m *Model, ip ImagePrompt, p *Prepared) (*imageSpan, error)
}

// An audioEncoder is an encoder whose input is sound, not an image
// (clip.has_audio_encoder): its prepare refuses images, and
// prepareAudio makes the Prepared from the samples.
type audioEncoder interface {
	encoder
	// prepareAudio preprocesses a clip as method m's reference does.
	prepareAudio(a *vision.Audio, m vision.Method) (*Prepared, error)
}

// Prepared is an image preprocessed for a tower, or a clip for an audio
// encoder.
type Prepared struct {
	// Pixels holds the tiles back to back, each channel-major [3][H][W]
	// as pixel_values holds it; for audio, the log-mel windows back to
	// back, each [n_mel][frames] as input_features holds it.
	Pixels []float32
	// Tiles are each tile's height and width (audio: each window's n_mel
	// and frames).
	Tiles [][2]int
	// Rows is the number of feature rows encode gives.
	Rows int
	// Grid is the projector type's own layout of the image (e.g. tiles
	// down and across), for its prompt.
	Grid []int
	// Deepstack, filled by encode where the tower has them (Qwen3-VL),
	// are the features [Rows][TextDModel] its intermediate layers give
	// the first text layers, one per text layer from the first.
	Deepstack [][]float32
}

// imageSpan is a prompt with its image: per token, the feature row its
// embedding is (−1: the token's own).
type imageSpan struct {
	Tokens []int
	Rows   []int
	// Bidirectional: the image's rows attend to each other both ways
	// (Gemma 3).
	Bidirectional bool
	// Positions are the tokens' M-RoPE positions (Input.Positions; nil:
	// 0, 1, 2, …).
	Positions [][4]int
}

// encoders are the projector types that run, by clip.projector_type.
// fromHF reads config.json (top) and the folder's preprocessor files,
// fromGGUF an mmproj's clip.* keys; both set v.cfg.
var encoders = map[string]struct {
	fromHF   func(v *Vision, c *checkpoint.Checkpoint, top spec.Config) (encoder, error)
	fromGGUF func(v *Vision, md tensor.Metadata) (encoder, error)
}{
	"gemma3":           {gemma3FromHF, gemma3FromGGUF},
	"idefics3":         {idefics3FromHF, idefics3FromGGUF},
	"internvl":         {internVLFromHF, internVLFromGGUF},
	"mlp":              {llavaFromHF, llavaFromGGUF},
	"pixtral":          {pixtralFromHF, pixtralFromGGUF},
	"qwen2.5vl_merger": {qwenFromHF, qwenFromGGUF},
	"qwen3vl_merger":   {qwenFromHF, qwenFromGGUF},
	"qwen2a":           {qwen2AudioFromHF, qwen2AudioFromGGUF},
	"llama4":           {llama4FromHF, llama4FromGGUF},
}

// runnable lists the projector types that run, for messages.
func runnable() string {
	var names []string
	for n := range encoders {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// Config returns the encoder's shape.
func (v *Vision) Config() VisionConfig { return v.cfg }

// Preprocess returns the fixed-size image preprocessing of method m for
// this tower (its tile size and normalization).
func (v *Vision) Preprocess(m vision.Method) vision.Preprocess {
	return vision.Preprocess{Size: v.cfg.ImageSize, Mean: v.cfg.Mean, Std: v.cfg.Std, Method: m}
}

// Prepare preprocesses img as method m's reference does for this tower.
func (v *Vision) Prepare(img *vision.Image, m vision.Method) (*Prepared, error) {
	if img == nil {
		return nil, fmt.Errorf("model: %s: no image", v.Path)
	}
	return v.enc.prepare(img, m)
}

// IsAudio reports whether the encoder takes sound (PrepareAudio), not
// images.
func (v *Vision) IsAudio() bool {
	_, ok := v.enc.(audioEncoder)
	return ok
}

// PrepareAudio preprocesses a clip as method m's reference does for this
// audio encoder (the log-mel windows).
func (v *Vision) PrepareAudio(a *vision.Audio, m vision.Method) (*Prepared, error) {
	ae, ok := v.enc.(audioEncoder)
	if !ok {
		return nil, fmt.Errorf("model: %s: the %s encoder takes images, not audio", v.Path, v.proj.Type)
	}
	if a == nil || len(a.Samples) == 0 {
		return nil, fmt.Errorf("model: %s: no audio", v.Path)
	}
	return ae.prepareAudio(a, m)
}

// EncodePrepared runs the tower and projector over p; see Encode.
func (v *Vision) EncodePrepared(p *Prepared, states *[][]float32) ([]float32, error) {
	return v.enc.encode(p, states)
}

// Encode runs the tower and projector over one preprocessed ImageSize
// tile (pixels [3][S][S], as Preprocess.Pixels makes it) and returns the
// image features [Tokens][TextDModel]. states, when not nil, receives the
// tower's hidden states as transformers' output_hidden_states gives them.
func (v *Vision) Encode(pixels []float32, states *[][]float32) ([]float32, error) {
	S := v.cfg.ImageSize
	if len(pixels) != 3*S*S {
		return nil, fmt.Errorf("model: vision: %d pixel values, the tower reads 3×%d×%d", len(pixels), S, S)
	}
	return v.enc.encode(&Prepared{Pixels: pixels, Tiles: [][2]int{{S, S}}, Rows: v.cfg.Tokens}, states)
}

// DefaultMethod is the preprocessing of the checkpoint's own framework:
// llama.cpp mtmd's for an mmproj GGUF, transformers' for a Hugging Face
// folder.
func (v *Vision) DefaultMethod() vision.Method {
	if v.GGUF {
		return vision.Mtmd
	}
	return vision.Transformers
}

// maxVisionDim caps every size a config or GGUF states before it sizes an
// allocation.
const maxVisionDim = 1 << 16

// LoadVision loads the image encoder of a Hugging Face folder (its
// vision tower and projector, by the class's arch.Projector) or of an
// mmproj GGUF written by llama.cpp's converter (--mmproj).
func LoadVision(path string, opts LoadOptions) (*Vision, error) {
	if opts.Threads > 0 {
		kernels.SetThreads(opts.Threads)
	}
	c, err := checkpoint.Open(path)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	l := &loader{c: c}
	v := &Vision{Path: path, matchLlamaCpp: opts.MatchLlamaCpp}
	if c.Format == checkpoint.GGUF {
		v.GGUF = true
		md := c.Metadata
		if a, _ := md.Str("general.architecture"); a != spec.MmprojArch {
			return nil, tensor.Unsupported("model: %s: general.architecture %q: not an mmproj GGUF (clip)", path, a)
		}
		pt, _ := md.Str("clip.projector_type")
		p, ok := spec.ProjectorByType(pt)
		kind, runs := encoders[pt]
		if !ok || !runs {
			return nil, tensor.Unsupported("model: %s: clip.projector_type %q: tfconv runs %s", path, pt, runnable())
		}
		v.proj = p
		v.enc, err = kind.fromGGUF(v, md)
	} else {
		raw, rerr := c.ReadAux("config.json")
		if rerr != nil {
			return nil, fmt.Errorf("model: %s: config.json: %w", c.Path, rerr)
		}
		var top spec.Config
		if err := decodeJSON(raw, &top); err != nil {
			return nil, fmt.Errorf("model: %s: config.json: %w", c.Path, err)
		}
		p, ok := spec.ProjectorFor(top)
		if !ok {
			return nil, tensor.Unsupported("model: %s: config.json's class %v has no projector in arch's table", c.Path, top["architectures"])
		}
		kind, runs := encoders[p.Type]
		if !runs {
			return nil, tensor.Unsupported("model: %s: the %s projector does not run in tfconv (%s do)", c.Path, p.Type, runnable())
		}
		v.proj = p
		v.enc, err = kind.fromHF(v, c, top)
	}
	if err != nil {
		return nil, err
	}
	v.enc.load(l)
	if l.err != nil {
		return nil, l.err
	}
	v.Tensors = l.loaded
	if opts.MatchLlamaCpp {
		for _, m := range l.mats {
			m.RoundActivations = true
		}
	}
	return v, nil
}

// name is the tensor of role (the mmproj name without suffix, as the
// projector's record states it) in layer bid, with suffix (".weight",
// ".bias"), in the checkpoint's naming: the first of the record's names
// the checkpoint holds.
func (v *Vision) name(l *loader, role string, bid int, suffix string) string {
	names := v.proj.Tower.TensorName(spec.Role(role), bid, !v.GGUF, suffix)
	for _, n := range names {
		if l.has(n) {
			return n
		}
	}
	if len(names) == 0 {
		l.fail(fmt.Errorf("model: %s: the %s projector's record has no tensor %s", v.Path, v.proj.Type, role))
		return role
	}
	return names[0] // missing: the loader says so
}

// plusOne reports whether role's Hugging Face weight w is used as 1 + w
// (arch.LayoutNormPlusOne; the mmproj holds 1 + w).
func (v *Vision) plusOne(role string) bool {
	t, ok := v.proj.Tower.Tensor(role)
	return ok && !v.GGUF && t.Layout == spec.LayoutNormPlusOne
}

// threeFloats reads a JSON list of three numbers (a bare number is
// repeated, as transformers does).
func threeFloats(dst *[3]float32, x any) error {
	if x == nil {
		return nil
	}
	if list, ok := x.([]any); ok {
		if len(list) != 3 {
			return fmt.Errorf("%d values, want 3", len(list))
		}
		for i, e := range list {
			f, ok := spec.Config{"v": e}.Float("v")
			if !ok {
				return fmt.Errorf("value %d is not a number", i)
			}
			dst[i] = float32(f)
		}
		return nil
	}
	f, ok := spec.Config{"v": x}.Float("v")
	if !ok {
		return fmt.Errorf("not a number or a list")
	}
	*dst = [3]float32{float32(f), float32(f), float32(f)}
	return nil
}

// decodeJSON reads a transformers JSON file (numbers kept as json.Number).
func decodeJSON(b []byte, dst *spec.Config) error {
	d := json.NewDecoder(strings.NewReader(string(pyjson.Standard(b))))
	d.UseNumber()
	return d.Decode(dst)
}

// ggufMeanStd reads clip.vision.image_mean and image_std.
func ggufMeanStd(path string, md tensor.Metadata, cfg *VisionConfig) error {
	for key, dst := range map[string]*[3]float32{"clip.vision.image_mean": &cfg.Mean, "clip.vision.image_std": &cfg.Std} {
		val, ok := md.Get(key)
		a, isArr := val.Array()
		f, isF := a.Data.([]float32)
		if !ok || !isArr || !isF || len(f) < 3 {
			return fmt.Errorf("model: %s: GGUF key %s missing or not 3 float32s", path, key)
		}
		copy(dst[:], f)
	}
	return nil
}

// ggufInts reads required positive clip.* integers.
func ggufInts(path string, md tensor.Metadata, keys map[string]*int) error {
	for key, dst := range keys {
		n, ok := md.Int(key)
		if !ok || n <= 0 || n > maxVisionDim {
			return fmt.Errorf("model: %s: GGUF key %s missing or out of range", path, key)
		}
		*dst = int(n)
	}
	return nil
}

// shuffleTokens checks the sizes of a tower whose patches are pixel-shuffled
// by scale before the projector (each in (0, maxVisionDim]; the image a
// whole number of patches, the patches of scale × scale blocks, the width
// of heads) and sets c.Tokens, the rows a tile gives.
func shuffleTokens(path string, c *VisionConfig, scale int) error {
	for _, x := range []struct {
		name string
		n    int
	}{{"image_size", c.ImageSize}, {"patch_size", c.PatchSize}, {"hidden_size", c.DModel}, {"layers", c.Layers},
		{"heads", c.Heads}, {"intermediate_size", c.FFN}, {"scale factor", scale}, {"projection width", c.TextDModel}} {
		if x.n <= 0 || x.n > maxVisionDim {
			return fmt.Errorf("model: %s: vision %s %d out of range", path, x.name, x.n)
		}
	}
	side := c.ImageSize / c.PatchSize
	if c.ImageSize%c.PatchSize != 0 || c.DModel%c.Heads != 0 || side%scale != 0 {
		return fmt.Errorf("model: %s: vision image_size %d not a multiple of patch_size %d × scale factor %d, or hidden_size %d of heads %d",
			path, c.ImageSize, c.PatchSize, scale, c.DModel, c.Heads)
	}
	c.Tokens = (side / scale) * (side / scale)
	return nil
}

// clipTower reads an mmproj GGUF's tower keys into cfg, as clip.cpp names
// them: the patch size, width, depth, heads and FFN width every tower has,
// more (a projector's own, each required, as ggufInts), and the norm
// epsilon when the file has it (eps, the projector's default, otherwise),
// which must be a number in (0, 1).
func clipTower(path string, md tensor.Metadata, cfg *VisionConfig, eps float32, more map[string]*int) error {
	keys := map[string]*int{
		"clip.vision.patch_size": &cfg.PatchSize, "clip.vision.embedding_length": &cfg.DModel,
		"clip.vision.block_count": &cfg.Layers, "clip.vision.attention.head_count": &cfg.Heads,
		"clip.vision.feed_forward_length": &cfg.FFN,
	}
	maps.Copy(keys, more)
	if err := ggufInts(path, md, keys); err != nil {
		return err
	}
	cfg.Eps = eps
	if x, ok := md.Get("clip.vision.attention.layer_norm_epsilon"); ok {
		f, ok := x.Float()
		if !ok || !(f > 0 && f < 1) {
			return fmt.Errorf("model: %s: GGUF key clip.vision.attention.layer_norm_epsilon is not a number in (0, 1)", path)
		}
		cfg.Eps = float32(f)
	}
	return nil
}

// vitBlock is one pre-norm transformer layer of a vision tower:
//
//	x'  = x + O·Attn(Q·N₁(x), K·N₁(x), V·N₁(x))
//	x″  = x' + Down·act(Up·N₂(x'))                  (Gate.W nil)
//	x″  = x' + Down·(act(Gate·N₂(x')) ⊙ Up·N₂(x'))  (a gated MLP: Qwen-VL, Pixtral)
//
// N₁, N₂ are LayerNorm or RMSNorm (norm.RMS). Where LS1, LS2 are set
// (layer scale: InternViT's ls1, ls2), each branch's output is multiplied
// by them channel by channel before it is added. vitAttn says which rows see
// which and how queries and keys are rotated.
type vitBlock struct {
	LN1, LN2   norm
	Q, K, V, O linear    // [d][d]
	Gate       linear    // [F][d], W nil without
	Up, Down   linear    // [F][d], [d][F]
	LS1, LS2   []float32 // [d], nil without
	// AttnNorm, when set, normalizes the attention branch's output before
	// it is added (clip.cpp's build_vit applies an mmproj's attn_post_norm
	// so, after LS1).
	AttnNorm *norm
}

// scaleRows multiplies each of x's rows by s channel by channel (nil: x
// is left alone).
func scaleRows(x, s []float32) {
	if s == nil {
		return
	}
	for r := 0; r+len(s) <= len(x); r += len(s) {
		kernels.Mul(x[r:r+len(s)], s)
	}
}

// vitAttn is a tower's attention pattern for one forward.
type vitAttn struct {
	// Rope, when set, rotates the queries and keys [n][d] in place (the
	// 2-D RoPE of Qwen-VL's and Pixtral's towers).
	Rope func(q, k []float32, n int)
	// Segments are the lengths of consecutive runs of rows that attend
	// only within their run (Qwen2.5-VL's windows, one image among
	// several); nil: all n rows attend to all.
	Segments []int
}

// vitScratch is one forward's buffers for n rows.
type vitScratch struct {
	h, q, k, v, att, o, up, gate []float32
}

func newVitScratch(n, d, F int) *vitScratch {
	return &vitScratch{h: make([]float32, n*d), q: make([]float32, n*d), k: make([]float32, n*d),
		v: make([]float32, n*d), att: make([]float32, n*d), o: make([]float32, n*d), up: make([]float32, n*F)}
}

// forward applies the block to x [n][d] in place: heads H, activation act.
func (b *vitBlock) forward(x []float32, n, d, H int, act string, a vitAttn, s *vitScratch) error {
	D := d / H
	b.LN1.apply(s.h, x, n, d)
	b.Q.apply(s.q, s.h, n)
	b.K.apply(s.k, s.h, n)
	b.V.apply(s.v, s.h, n)
	if a.Rope != nil {
		a.Rope(s.q, s.k, n)
	}
	p := kernels.AttentionParams{Heads: H, KVHeads: H, HeadDim: D, Scale: invSqrt(D)}
	if a.Segments == nil {
		kernels.Attention(s.att, s.q, s.k, s.v, n, n, p)
	} else {
		at := 0
		for _, m := range a.Segments {
			if m < 0 || at+m > n {
				return fmt.Errorf("model: vision: attention segments overrun %d rows", n)
			}
			r := s.att[at*d : (at+m)*d]
			kernels.Attention(r, s.q[at*d:(at+m)*d], s.k[at*d:(at+m)*d], s.v[at*d:(at+m)*d], m, m, p)
			at += m
		}
		if at != n {
			return fmt.Errorf("model: vision: attention segments cover %d of %d rows", at, n)
		}
	}
	b.O.apply(s.o, s.att, n)
	scaleRows(s.o[:n*d], b.LS1)
	if b.AttnNorm != nil {
		b.AttnNorm.apply(s.o, s.o, n, d)
	}
	kernels.Add(x, s.o)
	b.LN2.apply(s.h, x, n, d)
	b.Up.apply(s.up, s.h, n)
	if b.Gate.W != nil {
		if len(s.gate) != len(s.up) {
			s.gate = make([]float32, len(s.up))
		}
		b.Gate.apply(s.gate, s.h, n)
		if err := activate(s.gate, act); err != nil {
			return err
		}
		kernels.Mul(s.up, s.gate)
	} else if err := activate(s.up, act); err != nil {
		return err
	}
	b.Down.apply(s.o, s.up, n)
	scaleRows(s.o[:n*d], b.LS2)
	kernels.Add(x, s.o)
	return nil
}

// loadVitBlock reads layer i's vitBlock by the record's roles
// (v.blk.{bid}.ln1, attn_q, …, ffn_down; ffn_gate where the record has
// it; q, k and v cut from one fused tensor where the checkpoint keeps them
// so), LayerNorms with eps (a caller sets RMS for RMSNorms).
func (v *Vision) loadVitBlock(l *loader, i, d, F int, eps float32) vitBlock {
	return v.loadBlock(l, "v", i, d, F, eps)
}

// loadBlock is loadVitBlock for the roles under prefix: "v" (a vision
// tower's v.blk.{bid}.*) or "a" (an audio encoder's a.blk.{bid}.*).
// Biases are optional (Whisper's k_proj has none).
func (v *Vision) loadBlock(l *loader, prefix string, i, d, F int, eps float32) vitBlock {
	return v.loadBlockFFN(l, prefix, i, d, F, eps, "ffn_up", "ffn_down")
}

// loadVitBlockFFN is loadVitBlock with the MLP's two roles named (up,
// down: full roles, v.blk.{bid}.…): llama.cpp's legacy LLaVA writer names
// fc1 ffn_down and fc2 ffn_up.
func (v *Vision) loadVitBlockFFN(l *loader, i, d, F int, eps float32, up, down string) vitBlock {
	const pre = "v.blk.{bid}."
	return v.loadBlockFFN(l, "v", i, d, F, eps, strings.TrimPrefix(up, pre), strings.TrimPrefix(down, pre))
}

// loadBlockFFN reads block i under prefix with the MLP roles up and down
// (relative to prefix.blk.{bid}.).
func (v *Vision) loadBlockFFN(l *loader, prefix string, i, d, F int, eps float32, up, down string) vitBlock {
	role := func(r string) string { return prefix + ".blk.{bid}." + r }
	layerNorm := func(r string) norm {
		return norm{W: l.vector(v.name(l, role(r), i, ".weight"), d), B: l.optVector(v.name(l, role(r), i, ".bias"), d), Eps: eps}
	}
	lin := func(r string, out, in int) linear {
		return linear{W: l.matrix(v.name(l, role(r), i, ".weight"), out, in), B: l.optVector(v.name(l, role(r), i, ".bias"), out)}
	}
	// The second norm: ln2, or attn_post_norm where the record names it
	// so and has no ln2 (llama.cpp's converter writes Llama 4's
	// post_attention_layernorm under that name).
	ln2 := "ln2"
	if _, ok := v.proj.Tower.Tensor(role(ln2)); !ok {
		if _, ok := v.proj.Tower.Tensor(role("attn_post_norm")); ok {
			ln2 = "attn_post_norm"
		}
	}
	b := vitBlock{
		LN1: layerNorm("ln1"), LN2: layerNorm(ln2),
		O:  lin("attn_out", d, d),
		Up: lin(up, F, d), Down: lin(down, d, F),
	}
	if _, ok := v.proj.Tower.Tensor(role("ffn_gate")); ok {
		b.Gate = lin("ffn_gate", F, d)
	}
	if _, ok := v.proj.Tower.Tensor(role("ls1")); ok {
		b.LS1 = l.vector(v.name(l, role("ls1"), i, ".weight"), d)
		b.LS2 = l.vector(v.name(l, role("ls2"), i, ".weight"), d)
	}
	// One fused q, k, v tensor [3d][d]: the mmproj's attn_qkv, or the
	// Hugging Face qkv the converter cuts into attn_q, attn_k, attn_v (an
	// attn_q entry of the record with a Split, where the checkpoint holds
	// it: InternVL's original layout beside its separate q, k, v).
	wname, bname := "", ""
	if _, ok := v.proj.Tower.Tensor(role("attn_qkv")); ok {
		wname, bname = v.name(l, role("attn_qkv"), i, ".weight"), v.name(l, role("attn_qkv"), i, ".bias")
	} else if t, ok := v.proj.Tower.Tensor(role("attn_q")); ok && t.Split != nil && !v.GGUF {
		wname, bname = v.name(l, role("attn_q"), i, ".weight"), v.name(l, role("attn_q"), i, ".bias")
	} else if !v.GGUF {
		for _, t := range v.proj.Tower.Tensors {
			if t.GGUF != role("attn_q") || t.Split == nil {
				continue
			}
			for _, p := range t.HF {
				if n := spec.ExpandPart(p, i, 0); wname == "" && l.has(n+".weight") {
					wname, bname = n+".weight", n+".bias"
				}
			}
		}
	}
	if wname == "" {
		b.Q, b.K, b.V = lin("attn_q", d, d), lin("attn_k", d, d), lin("attn_v", d, d)
		return b
	}
	// Each part keeps the tensor's dtype: its rows are a third of the
	// bytes (row-major, whole rows per part, any block type).
	t, raw := l.read(wname)
	bias := l.optVector(bname, 3*d)
	if t == nil {
		return b
	}
	if !shapeIs(t.Shape, 3*d, d) || t.DType == tensor.I8 || len(raw)%3 != 0 {
		l.fail(fmt.Errorf("model: %s: tensor %q has shape %v (%v), want [%d %d]", t.File, wname, t.Shape, t.DType, 3*d, d))
		return b
	}
	per := len(raw) / 3
	for j, p := range [3]*linear{&b.Q, &b.K, &b.V} {
		m, err := kernels.NewMatrix(t.DType, d, d, raw[j*per:(j+1)*per], nil)
		if err != nil {
			l.fail(fmt.Errorf("model: %s: tensor %q: %w", t.File, wname, err))
			return b
		}
		l.mats = append(l.mats, m)
		p.W = m
		if bias != nil {
			p.B = bias[j*d : (j+1)*d]
		}
	}
	return b
}

// unfoldPatches lays the p×p patches of a [3][H][W] tile out as rows
// [(H/p)·(W/p)][3·p·p] in (channel, y, x) order, row-major over the patch
// grid: a stride-p convolution becomes a matrix product over them.
func unfoldPatches(pixels []float32, H, W, p int) []float32 {
	gh, gw := H/p, W/p
	out := make([]float32, gh*gw*3*p*p)
	for py := 0; py < gh; py++ {
		for px := 0; px < gw; px++ {
			row := out[(py*gw+px)*3*p*p:]
			for ch := 0; ch < 3; ch++ {
				for y := 0; y < p; y++ {
					copy(row[(ch*p+y)*p:(ch*p+y+1)*p], pixels[ch*H*W+(py*p+y)*W+px*p:][:p])
				}
			}
		}
	}
	return out
}

// pixelShuffle joins each s×s block of a side×side grid of rows x (width
// d) into one row u of s²·d, the blocks row by row: row (Y, X) is the
// block of patches at (Y·s, X·s), row by row, each patch's d values in
// turn (Idefics3's connector, InternVL's pixel_shuffle).
func pixelShuffle(u, x []float32, side, s, d int) {
	out := side / s
	for Y := 0; Y < out; Y++ {
		for X := 0; X < out; X++ {
			dst := u[(Y*out+X)*s*s*d:]
			for a := 0; a < s; a++ {
				for b := 0; b < s; b++ {
					copy(dst[(a*s+b)*d:(a*s+b+1)*d], x[((Y*s+a)*side+X*s+b)*d:][:d])
				}
			}
		}
	}
}

// patchF16 is the patch kernel [rows][cols] as llama.cpp multiplies it:
// ggml_conv_2d unfolds the image with im2col into binary16 and multiplies
// it as the F16 operand, so both the patches and the kernel are rounded to
// binary16, whatever the kernel's type (MatchLlamaCpp).
func (v *Vision) patchF16(l *loader, kernel []float32, rows, cols int) *kernels.Matrix {
	b := make([]byte, 2*rows*cols)
	quant.EncodeF16Bytes(b, kernel)
	h, err := kernels.NewMatrix(tensor.F16, rows, cols, b, nil)
	if err != nil {
		l.fail(fmt.Errorf("model: %s: v.patch_embd: %w", v.Path, err))
		return nil
	}
	l.mats = append(l.mats, h)
	return h
}

// configInt is one integer an encoder reads from config.json: the first
// of keys in cfg, def when none is there (the class's default); need
// refuses a missing one instead. A value outside lo..hi is refused.
type configInt struct {
	dst    *int
	keys   []string
	cfg    spec.Config
	def    int64
	lo, hi int64
	need   bool
}

// dimInt is a size (1 to maxVisionDim), def when absent.
func dimInt(dst *int, cfg spec.Config, def int64, keys ...string) configInt {
	return configInt{dst: dst, keys: keys, cfg: cfg, def: def, lo: 1, hi: maxVisionDim}
}

// idInt is a token id (0 to 2³¹−1), def when absent.
func idInt(dst *int, cfg spec.Config, def int64, keys ...string) configInt {
	return configInt{dst: dst, keys: keys, cfg: cfg, def: def, lo: 0, hi: 1<<31 - 1}
}

// required is x with no default: a missing key is refused.
func (x configInt) required() configInt { x.need = true; return x }

// readConfigInts reads xs from config.json (the checkpoint at path).
func readConfigInts(path string, xs ...configInt) error {
	for _, x := range xs {
		n, ok := x.cfg.Int(x.keys...)
		if !ok && x.need {
			return fmt.Errorf("model: %s: config.json has no %s", path, x.keys[0])
		}
		if !ok {
			n = x.def
		}
		if n < x.lo || n > x.hi {
			return fmt.Errorf("model: %s: config.json: %s = %d out of range", path, x.keys[0], n)
		}
		*x.dst = int(n)
	}
	return nil
}
