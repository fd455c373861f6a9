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
	"errors"
	"fmt"
	"io/fs"
	"math"

	spec "github.com/tfconv/tfconv/arch"
	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/kernels"
	"github.com/tfconv/tfconv/tensor"
	"github.com/tfconv/tfconv/vision"
)

// gemma3Vision is the gemma3 projector type's encoder.
type gemma3Vision struct {
	v *Vision
	w visionWeights
}

// visionWeights are the tower's and projector's tensors.
type visionWeights struct {
	Patch   *kernels.Matrix // [d][3·p·p], the conv kernel flattened (c, y, x)
	PatchB  []float32       // [d]
	Pos     []float32       // [n][d]
	Blocks  []vitBlock
	Post    norm
	Soft    norm            // RMSNorm with (1 + w) folded in, [d]
	Project *kernels.Matrix // [d_text][d] (Hugging Face keeps its transpose)
}

// gemma3FromHF reads the encoder's shape from config.json (vision_config,
// the token ids, mm_tokens_per_image) and preprocessor_config.json (mean,
// std).
func gemma3FromHF(v *Vision, c *checkpoint.Checkpoint, top spec.Config) (encoder, error) {
	if err := v.gemma3ConfigHF(c, top); err != nil {
		return nil, err
	}
	return &gemma3Vision{v: v}, nil
}

func (v *Vision) gemma3ConfigHF(c *checkpoint.Checkpoint, top spec.Config) error {
	var err error
	p := v.proj
	vc, ok := top.Map(p.Encoder)
	if !ok {
		return fmt.Errorf("model: %s: config.json has no %s", c.Path, p.Encoder)
	}
	cfg := VisionConfig{Projector: "gemma3", Image: -1, BOI: -1, EOI: -1}
	// SiglipVisionConfig's and Gemma3Config's defaults.
	if err := readConfigInts(c.Path,
		dimInt(&cfg.ImageSize, vc, 224, "image_size"), dimInt(&cfg.PatchSize, vc, 16, "patch_size"),
		dimInt(&cfg.DModel, vc, 768, "hidden_size"), dimInt(&cfg.Layers, vc, 12, "num_hidden_layers"),
		dimInt(&cfg.Heads, vc, 12, "num_attention_heads"), dimInt(&cfg.FFN, vc, 3072, "intermediate_size"),
		dimInt(&cfg.Tokens, top, 256, "mm_tokens_per_image"),
		idInt(&cfg.Image, top, 262144, "image_token_index", "image_token_id"),
		idInt(&cfg.BOI, top, 255999, "boi_token_index"), idInt(&cfg.EOI, top, 256000, "eoi_token_index")); err != nil {
		return err
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
		// Gemma3MultiModalProjector: tokens_per_side = int(√T), kernel =
		// patches_per_image // tokens_per_side, both floored; the pool
		// (torch's AvgPool2d, ggml_pool_2d) drops a remainder.
		per := int(math.Sqrt(float64(c.Tokens)))
		if per < 1 || per > side {
			return fmt.Errorf("model: %s: %d tokens per image do not pool a %d×%d patch grid", path, c.Tokens, side, side)
		}
		c.Pool = side / per
	}
	if c.Pool <= 0 || c.Pool > side {
		return fmt.Errorf("model: %s: pool %d does not fit the %d×%d patch grid", path, c.Pool, side, side)
	}
	c.Tokens = (side / c.Pool) * (side / c.Pool)
	return nil
}

// gemma3FromGGUF reads an mmproj GGUF's clip.* keys.
func gemma3FromGGUF(v *Vision, md tensor.Metadata) (encoder, error) {
	if err := v.gemma3ConfigGGUF(md); err != nil {
		return nil, err
	}
	return &gemma3Vision{v: v}, nil
}

func (v *Vision) gemma3ConfigGGUF(md tensor.Metadata) error {
	cfg := VisionConfig{Projector: "gemma3", Image: -1, BOI: -1, EOI: -1, Pool: 4}
	if err := clipTower(v.Path, md, &cfg, 1e-6, map[string]*int{"clip.vision.image_size": &cfg.ImageSize,
		"clip.vision.projection_dim": &cfg.TextDModel}); err != nil {
		return err
	}
	if n, ok := md.Int("clip.vision.projector.scale_factor"); ok {
		if n <= 0 || n > maxVisionDim {
			return fmt.Errorf("model: %s: GGUF key clip.vision.projector.scale_factor = %d", v.Path, n)
		}
		cfg.Pool = int(n) // llama.cpp's default 4 otherwise (clip.cpp)
	}
	cfg.Activation = "gelu_tanh" // clip.use_gelu: ggml_gelu, the tanh form
	if g, ok := md.Get("clip.use_gelu"); ok {
		if b, _ := g.BoolValue(); !b {
			return tensor.Unsupported("model: %s: clip.use_gelu false (the gemma3 tower's MLP is GELU)", v.Path)
		}
	}
	if err := ggufMeanStd(v.Path, md, &cfg); err != nil {
		return err
	}
	side := cfg.ImageSize / max(cfg.PatchSize, 1)
	cfg.Tokens = (side / max(cfg.Pool, 1)) * (side / max(cfg.Pool, 1))
	if err := cfg.derive(v.Path); err != nil {
		return err
	}
	v.cfg = cfg
	return nil
}

func (g *gemma3Vision) load(l *loader) {
	v, w := g.v, &g.w
	c := &v.cfg
	d, p, F := c.DModel, c.PatchSize, c.FFN
	n := (c.ImageSize / p) * (c.ImageSize / p)
	kernel := l.shaped(v.name(l, "v.patch_embd", 0, ".weight"), tensor.Shape{int64(d), 3, int64(p), int64(p)})
	if kernel != nil {
		if v.matchLlamaCpp {
			w.Patch = v.patchF16(l, kernel, d, 3*p*p)
		} else {
			w.Patch = kernels.F32Matrix(d, 3*p*p, kernel)
			l.mats = append(l.mats, w.Patch)
		}
	}
	if v.matchLlamaCpp {
		c.Activation = "gelu_ggml"
	}
	w.PatchB = l.vector(v.name(l, "v.patch_embd", 0, ".bias"), d)
	w.Pos = l.shaped(v.name(l, "v.position_embd", 0, ".weight"), tensor.Shape{int64(n), int64(d)})
	w.Blocks = make([]vitBlock, c.Layers)
	for i := range w.Blocks {
		w.Blocks[i] = v.loadVitBlock(l, i, d, F, c.Eps)
	}
	w.Post = norm{W: l.vector(v.name(l, "v.post_ln", 0, ".weight"), d), B: l.vector(v.name(l, "v.post_ln", 0, ".bias"), d), Eps: c.Eps}
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

// prepare makes the one fixed-size tile.
func (g *gemma3Vision) prepare(img *vision.Image, m vision.Method) (*Prepared, error) {
	S := g.v.cfg.ImageSize
	return &Prepared{Pixels: g.v.Preprocess(m).Pixels(img), Tiles: [][2]int{{S, S}}, Rows: g.v.cfg.Tokens}, nil
}

// encode runs the tower and projector over the tile.
func (g *gemma3Vision) encode(pr *Prepared, states *[][]float32) ([]float32, error) {
	c, w := &g.v.cfg, &g.w
	S, p, d := c.ImageSize, c.PatchSize, c.DModel
	if len(pr.Tiles) != 1 || pr.Tiles[0] != [2]int{S, S} || len(pr.Pixels) != 3*S*S {
		return nil, fmt.Errorf("model: vision: the gemma3 tower reads one 3×%d×%d tile", S, S)
	}
	side := S / p
	n := side * side
	patches := unfoldPatches(pr.Pixels, S, S, p)
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
	sc := newVitScratch(n, d, c.FFN)
	for i := range w.Blocks {
		if err := w.Blocks[i].forward(x, n, d, c.Heads, c.Activation, vitAttn{}, sc); err != nil {
			return nil, err
		}
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
