package model

// Gemma 3's image encoder: a SigLIP vision tower and Gemma 3's
// multi-modal projector (transformers' SiglipVisionModel and
// Gemma3MultiModalProjector; llama.cpp's clip_graph_siglip with
// PROJECTOR_TYPE_GEMMA3). For pixels P [3][S][S] with patch p, n = (S/p)²
// patches of width d:
//
//	x₀[i]   = W_patch · patch_i(P) + b_patch + pos[i]        (the stride-p conv)
//	x'      = x + Attn(LN₁(x))                               (every patch sees every patch)
//	x″      = x' + fc₂(gelu_tanh(fc₁(LN₂(x'))))
//	v       = LN_post(x_L)                                   [n][d]
//	u       = AvgPool_k(v as a [d][S/p][S/p] grid)           [(S/p/k)²][d]
//	feature = (RMSNorm(u) ⊙ (1 + w_soft)) · W_proj           [mm_tokens][d_text]
//
// The features replace the embeddings of the image's soft tokens unscaled
// (the text model's √d multiplies token embeddings only, in transformers'
// Gemma3TextScaledWordEmbedding and in llama.cpp's gemma3 graph, which
// scales only when the batch holds tokens).

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"strings"

	spec "github.com/tfconv/tfconv/arch"
	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/internal/pyjson"
	"github.com/tfconv/tfconv/kernels"
	"github.com/tfconv/tfconv/quant"
	"github.com/tfconv/tfconv/tensor"
	"github.com/tfconv/tfconv/vision"
)

// VisionConfig is an image encoder's shape.
type VisionConfig struct {
	Projector  string // clip.projector_type ("gemma3")
	ImageSize  int    // S: the square tile the tower reads
	PatchSize  int    // p
	DModel     int    // d: the tower's width
	Layers     int
	Heads      int
	FFN        int
	Eps        float32 // the LayerNorms' and the projector's RMSNorm's
	Activation string  // the MLP's ("gelu_tanh"; "gelu_ggml" with MatchLlamaCpp)
	Pool       int     // k: the average pool's kernel and stride
	Tokens     int     // soft tokens per image, (S/p/k)²
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
	w    visionWeights
	Path string // as given to LoadVision
	proj *spec.Projector
	// GGUF tells an mmproj GGUF (llama.cpp's names and keys) from a
	// Hugging Face folder.
	GGUF bool
}

// visionWeights are the tower's and projector's tensors.
type visionWeights struct {
	Patch   *kernels.Matrix // [d][3·p·p], the conv kernel flattened (c, y, x)
	kernel  []float32       // Patch's values as loaded
	PatchB  []float32       // [d]
	Pos     []float32       // [n][d]
	Blocks  []visionBlock
	Post    norm
	Soft    norm            // RMSNorm with (1 + w) folded in, [d]
	Project *kernels.Matrix // [d_text][d] (Hugging Face keeps its transpose)
}

type visionBlock struct {
	LN1, LN2   norm
	Q, K, V, O linear // [d][d]
	Up, Down   linear // fc1 [F][d], fc2 [d][F]
}

// Config returns the encoder's shape.
func (v *Vision) Config() VisionConfig { return v.cfg }

// Preprocess returns the image preprocessing of method m for this tower
// (its tile size and normalization).
func (v *Vision) Preprocess(m vision.Method) vision.Preprocess {
	return vision.Preprocess{Size: v.cfg.ImageSize, Mean: v.cfg.Mean, Std: v.cfg.Std, Method: m}
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

// LoadVision loads the image encoder of a Hugging Face folder
// (Gemma3ForConditionalGeneration: vision_tower. and multi_modal_projector.)
// or of an mmproj GGUF written by llama.cpp's converter (--mmproj).
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
	v := &Vision{Path: path}
	if c.Format == checkpoint.GGUF {
		v.GGUF = true
		err = v.configGGUF(c.Metadata)
	} else {
		err = v.configHF(c)
	}
	if err != nil {
		return nil, err
	}
	v.load(l)
	if l.err != nil {
		return nil, l.err
	}
	if opts.MatchLlamaCpp {
		// ggml_conv_2d unfolds the image with im2col into binary16 and
		// multiplies it as the F16 operand: both the patches and the kernel
		// are rounded to binary16, whatever the kernel's type.
		k := v.w.Patch
		b := make([]byte, 2*k.Rows*k.Cols)
		quant.EncodeF16Bytes(b, v.w.kernel)
		h, err := kernels.NewMatrix(tensor.F16, k.Rows, k.Cols, b, nil)
		if err != nil {
			return nil, fmt.Errorf("model: %s: v.patch_embd: %w", path, err)
		}
		v.w.Patch = h
		for _, m := range append(l.mats, h) {
			m.RoundActivations = true
		}
		v.cfg.Activation = "gelu_ggml"
	}
	return v, nil
}

// configHF reads the encoder's shape from config.json (vision_config, the
// token ids, mm_tokens_per_image) and preprocessor_config.json (mean, std).
func (v *Vision) configHF(c *checkpoint.Checkpoint) error {
	raw, err := c.ReadAux("config.json")
	if err != nil {
		return fmt.Errorf("model: %s: config.json: %w", c.Path, err)
	}
	var top spec.Config
	if err := decodeJSON(raw, &top); err != nil {
		return fmt.Errorf("model: %s: config.json: %w", c.Path, err)
	}
	p, ok := spec.ProjectorFor(top)
	if !ok {
		return tensor.Unsupported("model: %s: config.json's class %v has no projector in arch's table", c.Path, top["architectures"])
	}
	if p.Type != "gemma3" {
		return tensor.Unsupported("model: %s: the %s projector does not run in tfconv (gemma3 does)", c.Path, p.Type)
	}
	v.proj = p
	vc, ok := top.Map(p.Encoder)
	if !ok {
		return fmt.Errorf("model: %s: config.json has no %s", c.Path, p.Encoder)
	}
	cfg := VisionConfig{Projector: "gemma3", Image: -1, BOI: -1, EOI: -1}
	ints := []struct {
		dst  *int
		keys []string
		cfg  spec.Config
		def  int64
	}{
		{&cfg.ImageSize, []string{"image_size"}, vc, 224},
		{&cfg.PatchSize, []string{"patch_size"}, vc, 16},
		{&cfg.DModel, []string{"hidden_size"}, vc, 768},
		{&cfg.Layers, []string{"num_hidden_layers"}, vc, 12},
		{&cfg.Heads, []string{"num_attention_heads"}, vc, 12},
		{&cfg.FFN, []string{"intermediate_size"}, vc, 3072},
		{&cfg.Tokens, []string{"mm_tokens_per_image"}, top, 256},
		{&cfg.Image, []string{"image_token_index", "image_token_id"}, top, 262144},
		{&cfg.BOI, []string{"boi_token_index"}, top, 255999},
		{&cfg.EOI, []string{"eoi_token_index"}, top, 256000},
	}
	for _, x := range ints {
		n, ok := x.cfg.Int(x.keys...)
		if !ok {
			n = x.def // SiglipVisionConfig's and Gemma3Config's defaults
		}
		if n < 0 || n > 1<<31-1 {
			return fmt.Errorf("model: %s: config.json: %s = %d", c.Path, x.keys[0], n)
		}
		*x.dst = int(n)
	}
	text, ok := top.Map("text_config")
	if !ok {
		return fmt.Errorf("model: %s: config.json has no text_config", c.Path)
	}
	d, ok := text.Int("hidden_size")
	if !ok || d <= 0 || d > maxVisionDim {
		return fmt.Errorf("model: %s: config.json: text_config.hidden_size missing or out of range", c.Path)
	}
	cfg.TextDModel = int(d)
	eps, ok := vc.Float("layer_norm_eps")
	if !ok {
		eps = 1e-6
	}
	cfg.Eps = float32(eps)
	act, _ := vc["hidden_act"].(string)
	if act == "" {
		act = "gelu_pytorch_tanh"
	}
	if cfg.Activation, err = hfActivation(act); err != nil {
		return err
	}
	if n, ok := vc.Int("num_channels"); ok && n != 3 {
		return tensor.Unsupported("model: %s: vision_config.num_channels %d (only RGB towers run)", c.Path, n)
	}
	cfg.Mean, cfg.Std = [3]float32{0.5, 0.5, 0.5}, [3]float32{0.5, 0.5, 0.5}
	if pre, err := c.ReadAux("preprocessor_config.json"); err == nil {
		var p spec.Config
		if err := decodeJSON(pre, &p); err != nil {
			return fmt.Errorf("model: %s: preprocessor_config.json: %w", c.Path, err)
		}
		for key, dst := range map[string]*[3]float32{"image_mean": &cfg.Mean, "image_std": &cfg.Std} {
			if err := threeFloats(dst, p[key]); err != nil {
				return fmt.Errorf("model: %s: preprocessor_config.json: %s: %w", c.Path, key, err)
			}
		}
		if sz, ok := p.Map("size"); ok {
			h, _ := sz.Int("height")
			w, _ := sz.Int("width")
			if h != int64(cfg.ImageSize) || w != int64(cfg.ImageSize) {
				return tensor.Unsupported("model: %s: preprocessor_config.json resizes to %d×%d, the tower reads %d×%d", c.Path, w, h, cfg.ImageSize, cfg.ImageSize)
			}
		}
		if pas, _ := p["do_pan_and_scan"].(bool); pas {
			return tensor.Unsupported("model: %s: preprocessor_config.json: do_pan_and_scan (crops) is not run by tfconv", c.Path)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("model: %s: %w", c.Path, err)
	}
	if err := cfg.derive(c.Path); err != nil {
		return err
	}
	v.cfg = cfg
	return nil
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

// derive checks the sizes and computes the pool from the token count.
func (c *VisionConfig) derive(path string) error {
	for _, x := range []struct {
		name string
		n    int
	}{{"image_size", c.ImageSize}, {"patch_size", c.PatchSize}, {"hidden_size", c.DModel}, {"layers", c.Layers},
		{"heads", c.Heads}, {"intermediate_size", c.FFN}, {"tokens per image", c.Tokens}} {
		if x.n <= 0 || x.n > maxVisionDim {
			return fmt.Errorf("model: %s: vision %s %d out of range", path, x.name, x.n)
		}
	}
	if c.ImageSize%c.PatchSize != 0 || c.DModel%c.Heads != 0 {
		return fmt.Errorf("model: %s: vision image_size %d not a multiple of patch_size %d, or hidden_size %d of heads %d",
			path, c.ImageSize, c.PatchSize, c.DModel, c.Heads)
	}
	side := c.ImageSize / c.PatchSize
	if c.Pool == 0 {
		per := int(math.Sqrt(float64(c.Tokens)))
		if per*per != c.Tokens || side%per != 0 {
			return fmt.Errorf("model: %s: %d tokens per image do not pool a %d×%d patch grid", path, c.Tokens, side, side)
		}
		c.Pool = side / per
	}
	if c.Pool <= 0 || side%c.Pool != 0 {
		return fmt.Errorf("model: %s: pool %d does not divide the %d×%d patch grid", path, c.Pool, side, side)
	}
	c.Tokens = (side / c.Pool) * (side / c.Pool)
	return nil
}

// configGGUF reads an mmproj GGUF's clip.* keys.
func (v *Vision) configGGUF(md tensor.Metadata) error {
	if a, _ := md.Str("general.architecture"); a != spec.MmprojArch {
		return tensor.Unsupported("model: %s: general.architecture %q: not an mmproj GGUF (clip)", v.Path, a)
	}
	pt, _ := md.Str("clip.projector_type")
	p, ok := spec.ProjectorByType(pt)
	if !ok || pt != "gemma3" {
		return tensor.Unsupported("model: %s: clip.projector_type %q: tfconv runs the gemma3 projector", v.Path, pt)
	}
	v.proj = p
	cfg := VisionConfig{Projector: pt, Image: -1, BOI: -1, EOI: -1, Pool: 4}
	for key, dst := range map[string]*int{
		"clip.vision.image_size": &cfg.ImageSize, "clip.vision.patch_size": &cfg.PatchSize,
		"clip.vision.embedding_length": &cfg.DModel, "clip.vision.block_count": &cfg.Layers,
		"clip.vision.attention.head_count": &cfg.Heads, "clip.vision.feed_forward_length": &cfg.FFN,
		"clip.vision.projection_dim": &cfg.TextDModel,
	} {
		n, ok := md.Int(key)
		if !ok || n <= 0 || n > maxVisionDim {
			return fmt.Errorf("model: %s: GGUF key %s missing or out of range", v.Path, key)
		}
		*dst = int(n)
	}
	if n, ok := md.Int("clip.vision.projector.scale_factor"); ok {
		if n <= 0 || n > maxVisionDim {
			return fmt.Errorf("model: %s: GGUF key clip.vision.projector.scale_factor = %d", v.Path, n)
		}
		cfg.Pool = int(n) // llama.cpp's default 4 otherwise (clip.cpp)
	}
	cfg.Eps = 1e-6
	if e, ok := md.Get("clip.vision.attention.layer_norm_epsilon"); ok {
		f, _ := e.Float()
		cfg.Eps = float32(f)
	}
	cfg.Activation = "gelu_tanh" // clip.use_gelu: ggml_gelu, the tanh form
	if g, ok := md.Get("clip.use_gelu"); ok {
		if b, _ := g.BoolValue(); !b {
			return tensor.Unsupported("model: %s: clip.use_gelu false (the gemma3 tower's MLP is GELU)", v.Path)
		}
	}
	for key, dst := range map[string]*[3]float32{"clip.vision.image_mean": &cfg.Mean, "clip.vision.image_std": &cfg.Std} {
		val, ok := md.Get(key)
		a, isArr := val.Array()
		f, isF := a.Data.([]float32)
		if !ok || !isArr || !isF || len(f) < 3 {
			return fmt.Errorf("model: %s: GGUF key %s missing or not 3 float32s", v.Path, key)
		}
		copy(dst[:], f)
	}
	side := cfg.ImageSize / max(cfg.PatchSize, 1)
	cfg.Tokens = (side / max(cfg.Pool, 1)) * (side / max(cfg.Pool, 1))
	if err := cfg.derive(v.Path); err != nil {
		return err
	}
	v.cfg = cfg
	return nil
}

// name is the tensor of role (the mmproj name without suffix, as the
// projector's record arch.Gemma3Vision states it) in layer bid, with
// suffix (".weight", ".bias"), in the checkpoint's naming: the first of
// the record's names the checkpoint holds.
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

func (v *Vision) load(l *loader) {
	c, w := &v.cfg, &v.w
	d, p, F := c.DModel, c.PatchSize, c.FFN
	n := (c.ImageSize / p) * (c.ImageSize / p)
	kernel := l.shaped(v.name(l, "v.patch_embd", 0, ".weight"), tensor.Shape{int64(d), 3, int64(p), int64(p)})
	if kernel != nil {
		w.Patch, w.kernel = kernels.F32Matrix(d, 3*p*p, kernel), kernel
		l.mats = append(l.mats, w.Patch)
	}
	w.PatchB = l.vector(v.name(l, "v.patch_embd", 0, ".bias"), d)
	w.Pos = l.shaped(v.name(l, "v.position_embd", 0, ".weight"), tensor.Shape{int64(n), int64(d)})
	layerNorm := func(role string, bid int) norm {
		return norm{W: l.vector(v.name(l, role, bid, ".weight"), d), B: l.vector(v.name(l, role, bid, ".bias"), d), Eps: c.Eps}
	}
	lin := func(role string, bid, out, in int) linear {
		return linear{W: l.matrix(v.name(l, role, bid, ".weight"), out, in), B: l.vector(v.name(l, role, bid, ".bias"), out)}
	}
	w.Blocks = make([]visionBlock, c.Layers)
	for i := range w.Blocks {
		b := &w.Blocks[i]
		b.LN1, b.LN2 = layerNorm("v.blk.{bid}.ln1", i), layerNorm("v.blk.{bid}.ln2", i)
		b.Q, b.K = lin("v.blk.{bid}.attn_q", i, d, d), lin("v.blk.{bid}.attn_k", i, d, d)
		b.V, b.O = lin("v.blk.{bid}.attn_v", i, d, d), lin("v.blk.{bid}.attn_out", i, d, d)
		b.Up, b.Down = lin("v.blk.{bid}.ffn_up", i, F, d), lin("v.blk.{bid}.ffn_down", i, d, F)
	}
	w.Post = layerNorm("v.post_ln", 0)
	soft := l.vector(v.name(l, "mm.soft_emb_norm", 0, ".weight"), d)
	if v.plusOne("mm.soft_emb_norm") {
		// Gemma3RMSNorm scales by (1 + w) in float32.
		for i := range soft {
			soft[i] += 1
		}
	}
	w.Soft = norm{W: soft, Eps: c.Eps, RMS: true}
	// Both forms keep [d][d_text] (x·W); the kernels want [out][in].
	w.Project = l.matrixT(v.name(l, "mm.input_projection", 0, ".weight"), c.TextDModel, d)
}

// Encode runs the tower and projector over one preprocessed tile
// (pixels [3][S][S], as Preprocess.Pixels makes it) and returns the image
// features [Tokens][TextDModel]. states, when not nil, receives the tower's
// hidden states: the embeddings, then after each layer ([n][d] each), then
// after post_layernorm, as transformers' output_hidden_states and
// last_hidden_state give them.
func (v *Vision) Encode(pixels []float32, states *[][]float32) ([]float32, error) {
	c, w := &v.cfg, &v.w
	S, p, d := c.ImageSize, c.PatchSize, c.DModel
	if len(pixels) != 3*S*S {
		return nil, fmt.Errorf("model: vision: %d pixel values, the tower reads 3×%d×%d", len(pixels), S, S)
	}
	side := S / p
	n := side * side
	// The stride-p convolution as a matrix product over the patches.
	patches := make([]float32, n*3*p*p)
	for py := 0; py < side; py++ {
		for px := 0; px < side; px++ {
			row := patches[(py*side+px)*3*p*p:]
			for ch := 0; ch < 3; ch++ {
				for y := 0; y < p; y++ {
					copy(row[(ch*p+y)*p:(ch*p+y+1)*p], pixels[ch*S*S+(py*p+y)*S+px*p:][:p])
				}
			}
		}
	}
	x := make([]float32, n*d)
	embed := linear{W: w.Patch, B: w.PatchB}
	embed.apply(x, patches, n)
	kernels.Add(x, w.Pos)
	record := func() {
		if states != nil {
			*states = append(*states, append([]float32(nil), x...))
		}
	}
	record()
	H := c.Heads
	D := d / H
	h := make([]float32, n*d)
	q, k, vv, att := make([]float32, n*d), make([]float32, n*d), make([]float32, n*d), make([]float32, n*d)
	o := make([]float32, n*d)
	up := make([]float32, n*c.FFN)
	for i := range w.Blocks {
		b := &w.Blocks[i]
		b.LN1.apply(h, x, n, d)
		b.Q.apply(q, h, n)
		b.K.apply(k, h, n)
		b.V.apply(vv, h, n)
		kernels.Attention(att, q, k, vv, n, n, kernels.AttentionParams{Heads: H, KVHeads: H, HeadDim: D, Scale: invSqrt(D)})
		b.O.apply(o, att, n)
		kernels.Add(x, o)
		b.LN2.apply(h, x, n, d)
		b.Up.apply(up, h, n)
		if err := activate(up, c.Activation); err != nil {
			return nil, err
		}
		b.Down.apply(o, up, n)
		kernels.Add(x, o)
		record()
	}
	w.Post.apply(x, x, n, d)
	record()
	// Average pool k×k of the [d][side][side] grid: the sum in float32,
	// rows of the window then columns, divided by k² (torch's AvgPool2d
	// and ggml_pool_2d alike).
	k2, out := c.Pool, side/c.Pool
	T := out * out
	u := make([]float32, T*d)
	for oy := 0; oy < out; oy++ {
		for ox := 0; ox < out; ox++ {
			dst := u[(oy*out+ox)*d : (oy*out+ox+1)*d]
			for ch := 0; ch < d; ch++ {
				var s float32
				for y := 0; y < k2; y++ {
					for xx := 0; xx < k2; xx++ {
						s += x[((oy*k2+y)*side+ox*k2+xx)*d+ch]
					}
				}
				dst[ch] = s / float32(k2*k2)
			}
		}
	}
	w.Soft.apply(u, u, T, d)
	feat := make([]float32, T*c.TextDModel)
	kernels.MatMul(feat, u, T, w.Project)
	return feat, nil
}
