package model

// InternVL's image encoder (InternVLForConditionalGeneration: transformers'
// InternVLVisionModel and InternVLMultiModalProjector; the original
// InternVLChatModel's InternViT and mlp1; llama.cpp's clip_graph_internvl).
// The image becomes cols × rows tiles and, when there is more than one, a
// thumbnail (vision.InternVL), each S×S with patch p, n = (S/p)² patches
// of width d, scale factor s = 1/downsample_ratio:
//
//	x₀      = [cls; W_patch · patch_i(P) + b_patch] + pos              [1+n][d]
//	x_L     = L pre-norm blocks (LayerNorm, GELU MLP, layer scale ls1, ls2)
//	v       = x_L without the class token                              [S/p][S/p][d]
//	u[Y][X] = concat over (a, b) in s×s of v[Y·s+a][X·s+b]             [(S/p/s)²][s²·d]  (pixel shuffle)
//	feature = W₃ · GELU(W₁ · LN(u) + b₁) + b₃                          [(S/p/s)²][d_text]
//
// The projector's LayerNorm has PyTorch's default eps 1e-5. Each tile's
// features take its run of <IMG_CONTEXT> tokens in the prompt, in the
// tiles' order (the thumbnail last), between <img> and </img>.
//
// llama.cpp's graph appends the class token after the patches and adds the
// position table in order, so patch i takes row i and the class token the
// last row: an mmproj GGUF runs so, as mtmd runs it.

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

// internVLProjEps is the projector LayerNorm's eps: nn.LayerNorm's default,
// which transformers and llama.cpp both use.
const internVLProjEps = 1e-5

// internVLVision is the internvl projector type's encoder.
type internVLVision struct {
	v     *Vision
	pre   vision.InternVL
	fast  bool // transformers' fast processor (torch resize); else PIL bicubic (the remote code's)
	scale int  // s: the pixel shuffle's factor
	w     struct {
		Patch   *kernels.Matrix // [d][3·p·p]
		PatchB  []float32       // [d]
		Cls     []float32       // [d]
		Pos     []float32       // [1+n][d]
		Blocks  []vitBlock
		ProjLN  norm   // [s²·d]
		Proj1   linear // [d_text][s²·d]
		Proj3   linear // [d_text][d_text]
		ProjAct string
	}
}

// internVLFromHF reads either layout's config.json: transformers'
// (vision_config with [height, width] pairs, downsample_ratio,
// image_token_id, text_config) or the original's (vision_config of
// intern_vit_6b, llm_config, min/max_dynamic_patch), and the processor
// files of the first.
func internVLFromHF(v *Vision, c *checkpoint.Checkpoint, top spec.Config) (encoder, error) {
	vc, ok := top.Map(v.proj.Encoder)
	if !ok {
		return nil, fmt.Errorf("model: %s: config.json has no %s", c.Path, v.proj.Encoder)
	}
	cfg := VisionConfig{Projector: "internvl", BOI: -1, EOI: -1, Image: -1}
	e := &internVLVision{v: v}
	side := func(key string, def int64) (int, error) {
		n, ok := vc.Int(key)
		if !ok {
			pair, isList, err := vc.Ints(key)
			switch {
			case err != nil:
				return 0, fmt.Errorf("model: %s: config.json: vision_config.%s: %w", c.Path, key, err)
			case !isList:
				n = def
			case len(pair) != 2 || pair[0] != pair[1]:
				return 0, tensor.Unsupported("model: %s: config.json: vision_config.%s %v: tfconv runs square tiles", c.Path, key, pair)
			default:
				n = pair[0]
			}
		}
		if n <= 0 || n > maxVisionDim {
			return 0, fmt.Errorf("model: %s: config.json: vision_config.%s = %d", c.Path, key, n)
		}
		return int(n), nil
	}
	var err error
	if cfg.ImageSize, err = side("image_size", 448); err != nil {
		return nil, err
	}
	if cfg.PatchSize, err = side("patch_size", 14); err != nil {
		return nil, err
	}
	for _, x := range []struct {
		dst *int
		key string
		def int64
	}{{&cfg.DModel, "hidden_size", 1024}, {&cfg.Layers, "num_hidden_layers", 24}, {&cfg.Heads, "num_attention_heads", 16},
		{&cfg.FFN, "intermediate_size", 4096}} {
		n, ok := vc.Int(x.key)
		if !ok {
			n = x.def
		}
		if n <= 0 || n > maxVisionDim {
			return nil, fmt.Errorf("model: %s: config.json: vision_config.%s = %d", c.Path, x.key, n)
		}
		*x.dst = int(n)
	}
	eps, ok := vc.Float("layer_norm_eps")
	if !ok {
		eps = 1e-6
	}
	cfg.Eps = float32(eps)
	act, _ := vc["hidden_act"].(string)
	if act == "" {
		act = "gelu"
	}
	if cfg.Activation, err = hfActivation(act); err != nil {
		return nil, err
	}
	// What the tower's config may say that tfconv does not run.
	if nt, _ := vc.Str("norm_type"); nt != "" && nt != "layer_norm" {
		return nil, tensor.Unsupported("model: %s: config.json: vision_config.norm_type %q (tfconv runs layer_norm towers)", c.Path, nt)
	}
	for _, key := range []string{"use_qk_norm", "qk_normalization"} {
		if b, _ := vc[key].(bool); b {
			return nil, tensor.Unsupported("model: %s: config.json: vision_config.%s true (tfconv runs towers without q/k norms)", c.Path, key)
		}
	}
	if b, ok := vc["use_mean_pooling"].(bool); ok && !b {
		return nil, tensor.Unsupported("model: %s: config.json: vision_config.use_mean_pooling false (a final LayerNorm tfconv does not run)", c.Path)
	}
	if n, ok := vc.Int("num_channels"); ok && n != 3 {
		return nil, tensor.Unsupported("model: %s: vision_config.num_channels %d (only RGB towers run)", c.Path, n)
	}
	for _, key := range []string{"vision_feature_layer", "select_layer"} {
		if n, ok := top.Int(key); ok && n != -1 {
			return nil, tensor.Unsupported("model: %s: config.json: %s %d (tfconv takes the last layer's output)", c.Path, key, n)
		}
	}
	if s, _ := top.Str("vision_feature_select_strategy"); s != "" && s != "default" {
		return nil, tensor.Unsupported("model: %s: config.json: vision_feature_select_strategy %q (tfconv drops the class token: default)", c.Path, s)
	}
	if s, _ := top.Str("ps_version"); s != "" && s != "v2" {
		return nil, tensor.Unsupported("model: %s: config.json: ps_version %q (tfconv runs the v2 pixel shuffle)", c.Path, s)
	}
	r, ok := top.Float("downsample_ratio")
	if !ok {
		r = 0.5
	}
	if r <= 0 || r > 1 || math.Abs(1/r-math.Round(1/r)) > 1e-9 {
		return nil, tensor.Unsupported("model: %s: config.json: downsample_ratio %g is not 1/k", c.Path, r)
	}
	e.scale = int(math.Round(1 / r))
	e.w.ProjAct = "gelu"
	if a, _ := top.Str("projector_hidden_act"); a != "" {
		if e.w.ProjAct, err = hfActivation(a); err != nil {
			return nil, err
		}
	}
	text, ok := top.Map("text_config")
	if !ok {
		text, _ = top.Map("llm_config")
	}
	d, ok := text.Int("hidden_size")
	if !ok || d <= 0 || d > maxVisionDim {
		return nil, fmt.Errorf("model: %s: config.json: the text model's hidden_size missing or out of range", c.Path)
	}
	cfg.TextDModel = int(d)
	if n, ok := top.Int("image_token_id"); ok && n >= 0 && n < 1<<31 {
		cfg.Image = int(n)
	}
	// The tiling: GotOcr2ImageProcessor(Fast)'s defaults, the original
	// layout's min/max_dynamic_patch (its own load_image: Pillow's bicubic).
	e.pre = vision.InternVL{Tile: cfg.ImageSize, MinTiles: 1, MaxTiles: 12,
		Mean: [3]float32{0.485, 0.456, 0.406}, Std: [3]float32{0.229, 0.224, 0.225}}
	if n, ok := top.Int("min_dynamic_patch"); ok {
		e.pre.MinTiles = int(n)
	}
	if n, ok := top.Int("max_dynamic_patch"); ok {
		e.pre.MaxTiles = int(n)
	}
	if b, ok := top["dynamic_image_size"].(bool); ok && !b {
		e.pre.MaxTiles = 1
	}
	if b, ok := top["use_thumbnail"].(bool); ok && !b {
		return nil, tensor.Unsupported("model: %s: config.json: use_thumbnail false (tfconv adds the thumbnail, as InternVL 2.5 and 3 do)", c.Path)
	}
	seqLen := int64(-1)
	pre, err := c.ReadAux("preprocessor_config.json")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("model: %s: %w", c.Path, err)
	}
	if err == nil {
		var p spec.Config
		if err := decodeJSON(pre, &p); err != nil {
			return nil, fmt.Errorf("model: %s: preprocessor_config.json: %w", c.Path, err)
		}
		if err := e.preprocessor(p, cfg.ImageSize); err != nil {
			return nil, fmt.Errorf("model: %s: preprocessor_config.json: %w", c.Path, err)
		}
	}
	if raw, err := c.ReadAux("processor_config.json"); err == nil {
		var p spec.Config
		if err := decodeJSON(raw, &p); err != nil {
			return nil, fmt.Errorf("model: %s: processor_config.json: %w", c.Path, err)
		}
		if n, ok := p.Int("image_seq_length"); ok {
			seqLen = n
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("model: %s: %w", c.Path, err)
	}
	cfg.Mean, cfg.Std = e.pre.Mean, e.pre.Std
	if err := e.derive(c.Path, &cfg); err != nil {
		return nil, err
	}
	if seqLen >= 0 && int64(cfg.Tokens) != seqLen {
		return nil, fmt.Errorf("model: %s: processor_config.json: image_seq_length %d, the tower gives %d rows a tile", c.Path, seqLen, cfg.Tokens)
	}
	v.cfg = cfg
	return e, nil
}

// preprocessor reads the image processor's file: GotOcr2ImageProcessorFast
// (or the slow GotOcr2ImageProcessor) of the Hugging Face layout, or the
// CLIPFeatureExtractor-form file of the original, of which, as its own
// load_image, only the mean and std count. What tfconv does not reproduce
// is refused.
func (e *internVLVision) preprocessor(p spec.Config, S int) error {
	typ, _ := p.Str("image_processor_type")
	switch typ {
	case "GotOcr2ImageProcessorFast":
		e.fast = true
	case "GotOcr2ImageProcessor", "":
	default:
		if fe, _ := p.Str("feature_extractor_type"); typ != "" || fe == "" {
			return tensor.Unsupported("image_processor_type %q (tfconv reproduces GotOcr2ImageProcessor(Fast))", typ)
		}
	}
	if typ != "" {
		for _, key := range []string{"do_resize", "do_rescale", "do_normalize"} {
			if b, ok := p[key].(bool); ok && !b {
				return tensor.Unsupported("%s false is not run by tfconv", key)
			}
		}
		if b, ok := p["do_center_crop"].(bool); ok && b {
			return tensor.Unsupported("do_center_crop true is not run by tfconv")
		}
		if f, ok := p.Float("rescale_factor"); ok && math.Abs(f-1.0/255) > 1e-12 {
			return tensor.Unsupported("rescale_factor %g (tfconv rescales by 1/255)", f)
		}
		if n, ok := p.Int("resample"); ok && n != 3 {
			return tensor.Unsupported("resample %d (tfconv resizes InternVL tiles with bicubic, 3)", n)
		}
		if m, ok := p.Map("size"); ok {
			h, _ := m.Int("height")
			w, _ := m.Int("width")
			if h != int64(S) || w != int64(S) {
				return tensor.Unsupported("size %d×%d is not the tower's image_size %d", w, h, S)
			}
		}
		if n, ok := p.Int("min_patches"); ok {
			e.pre.MinTiles = int(n)
		}
		if n, ok := p.Int("max_patches"); ok {
			e.pre.MaxTiles = int(n)
		}
	}
	for key, dst := range map[string]*[3]float32{"image_mean": &e.pre.Mean, "image_std": &e.pre.Std} {
		if err := threeFloats(dst, p[key]); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
	}
	return nil
}

// derive checks the sizes and sets the rows a tile gives.
func (e *internVLVision) derive(path string, c *VisionConfig) error {
	if err := shuffleTokens(path, c, e.scale); err != nil {
		return err
	}
	e.pre.Tile = c.ImageSize
	return nil
}

// internVLFromGGUF reads an mmproj GGUF's clip.* keys.
func internVLFromGGUF(v *Vision, md tensor.Metadata) (encoder, error) {
	cfg := VisionConfig{Projector: "internvl", Image: -1, BOI: -1, EOI: -1}
	e := &internVLVision{v: v}
	if err := clipTower(v.Path, md, &cfg, 1e-6, map[string]*int{"clip.vision.image_size": &cfg.ImageSize,
		"clip.vision.projection_dim": &cfg.TextDModel, "clip.vision.projector.scale_factor": &e.scale,
	}); err != nil {
		return nil, err
	}
	// clip.cpp's defaults when the keys are absent.
	e.pre.MinTiles, e.pre.MaxTiles = 1, 12
	for key, dst := range map[string]*int{"clip.vision.preproc_min_tiles": &e.pre.MinTiles, "clip.vision.preproc_max_tiles": &e.pre.MaxTiles} {
		if n, ok := md.Int(key); ok {
			if n <= 0 || n > maxVisionDim {
				return nil, fmt.Errorf("model: %s: GGUF key %s = %d", v.Path, key, n)
			}
			*dst = int(n)
		}
	}
	cfg.Activation = "gelu"
	if g, ok := md.Get("clip.use_silu"); ok {
		if b, _ := g.BoolValue(); b {
			cfg.Activation = "silu"
		}
	}
	e.w.ProjAct = "gelu"
	if err := ggufMeanStd(v.Path, md, &cfg); err != nil {
		return nil, err
	}
	e.pre.Mean, e.pre.Std = cfg.Mean, cfg.Std
	if cfg.DModel == 3200 && cfg.Layers == 45 {
		// clip_graph_internvl runs InternViT-6B's RMSNorm tower for this
		// one shape.
		return nil, tensor.Unsupported("model: %s: InternViT-6B (RMSNorm) towers do not run in tfconv", v.Path)
	}
	if err := e.derive(v.Path, &cfg); err != nil {
		return nil, err
	}
	v.cfg = cfg
	return e, nil
}

func (e *internVLVision) load(l *loader) {
	v, w := e.v, &e.w
	c := &v.cfg
	d, p := c.DModel, c.PatchSize
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
	if v.matchLlamaCpp && c.Activation == "gelu" {
		c.Activation = "gelu_ggml"
	}
	w.PatchB = l.vector(v.name(l, "v.patch_embd", 0, ".bias"), d)
	w.Cls = l.vector(v.name(l, "v.class_embd", 0, ""), d)
	w.Pos = l.vector(v.name(l, "v.position_embd", 0, ".weight"), (n+1)*d)
	w.Blocks = make([]vitBlock, c.Layers)
	for i := range w.Blocks {
		w.Blocks[i] = v.loadVitBlock(l, i, d, c.FFN, c.Eps)
	}
	sd := e.scale * e.scale * d
	w.ProjLN = norm{W: l.vector(v.name(l, "mm.model.mlp.0", 0, ".weight"), sd), B: l.vector(v.name(l, "mm.model.mlp.0", 0, ".bias"), sd), Eps: internVLProjEps}
	w.Proj1 = linear{W: l.matrix(v.name(l, "mm.model.mlp.1", 0, ".weight"), c.TextDModel, sd), B: l.vector(v.name(l, "mm.model.mlp.1", 0, ".bias"), c.TextDModel)}
	w.Proj3 = linear{W: l.matrix(v.name(l, "mm.model.mlp.3", 0, ".weight"), c.TextDModel, c.TextDModel), B: l.vector(v.name(l, "mm.model.mlp.3", 0, ".bias"), c.TextDModel)}
	if v.matchLlamaCpp && w.ProjAct == "gelu" {
		w.ProjAct = "gelu_ggml"
	}
}

// prepare cuts the image into tiles and the thumbnail (Transformers) or
// as mtmd slices it (Mtmd); Grid is rows, cols (mtmd: 0, 0 for an image
// left whole).
func (e *internVLVision) prepare(img *vision.Image, m vision.Method) (*Prepared, error) {
	tiles, cols, rows, err := e.pre.Tiles(img, e.fast)
	if m == vision.Mtmd {
		tiles, cols, rows, err = e.pre.MtmdTiles(img)
	}
	if err != nil {
		return nil, fmt.Errorf("model: %s: %w", e.v.Path, err)
	}
	pr := &Prepared{Grid: []int{rows, cols}, Rows: len(tiles) * e.v.cfg.Tokens}
	for _, t := range tiles {
		if e.fast && m == vision.Transformers {
			pr.Pixels = append(pr.Pixels, vision.NormalizeFast(t, e.pre.Mean, e.pre.Std)...)
		} else {
			// The original's load_image: ToTensor (u/255 in float32),
			// Normalize; mtmd's from_u8 and normalize likewise.
			pr.Pixels = append(pr.Pixels, vision.Normalize(t, e.pre.Mean, e.pre.Std, vision.Mtmd)...)
		}
		pr.Tiles = append(pr.Tiles, [2]int{t.H, t.W})
	}
	return pr, nil
}

// encode runs the tower and projector over each tile in turn. states
// receives the first tile's hidden states (the class token first).
func (e *internVLVision) encode(pr *Prepared, states *[][]float32) ([]float32, error) {
	c, w := &e.v.cfg, &e.w
	S, p, d, s := c.ImageSize, c.PatchSize, c.DModel, e.scale
	if len(pr.Pixels) != len(pr.Tiles)*3*S*S {
		return nil, fmt.Errorf("model: vision: the internvl tower reads 3×%d×%d tiles", S, S)
	}
	side := S / p
	n := side * side
	T := (side / s) * (side / s)
	sd := s * s * d
	feat := make([]float32, 0, len(pr.Tiles)*T*c.TextDModel)
	x := make([]float32, (n+1)*d)
	u := make([]float32, T*sd)
	h := make([]float32, T*c.TextDModel)
	f := make([]float32, T*c.TextDModel)
	sc := newVitScratch(n+1, d, c.FFN)
	// The class token's row of x and where the patches start: first in
	// transformers, last in llama.cpp's graph (its position row too).
	cls, patches := 0, d
	if e.v.GGUF {
		cls, patches = n*d, 0
	}
	for ti, hw := range pr.Tiles {
		if hw != [2]int{S, S} {
			return nil, fmt.Errorf("model: vision: tile %d is %d×%d, the internvl tower reads %d×%d", ti, hw[1], hw[0], S, S)
		}
		record := func() {
			if states != nil && ti == 0 {
				*states = append(*states, append([]float32(nil), x...))
			}
		}
		embed := linear{W: w.Patch, B: w.PatchB}
		embed.apply(x[patches:patches+n*d], unfoldPatches(pr.Pixels[ti*3*S*S:(ti+1)*3*S*S], S, S, p), n)
		copy(x[cls:cls+d], w.Cls)
		kernels.Add(x, w.Pos)
		record()
		for i := range w.Blocks {
			if err := w.Blocks[i].forward(x, n+1, d, c.Heads, c.Activation, vitAttn{}, sc); err != nil {
				return nil, err
			}
			record()
		}
		pixelShuffle(u, x[patches:patches+n*d], side, s, d)
		w.ProjLN.apply(u, u, T, sd)
		w.Proj1.apply(h, u, T)
		if err := activate(h, w.ProjAct); err != nil {
			return nil, err
		}
		w.Proj3.apply(f, h, T)
		feat = append(feat, f...)
	}
	return feat, nil
}

// prompt expands the placeholder as InternVLProcessor does: <img>, the
// tiles' <IMG_CONTEXT> tokens (Tokens per tile), </img>. mtmd's chunks
// for internvl (img_beg "<img>", the slices then the overview with no
// markers between, img_end "</img>") are the same ids.
func (e *internVLVision) prompt(m *Model, p ImagePrompt, pr *Prepared) (*imageSpan, error) {
	const ctxTok = "<IMG_CONTEXT>"
	ids, err := vocabIDs(m, "<img>", "</img>", ctxTok)
	if err != nil {
		return nil, err
	}
	imgID := e.v.cfg.Image
	if imgID < 0 {
		imgID = ids[ctxTok]
	}
	exp := make([]int, 0, pr.Rows+2)
	exp = append(exp, ids["<img>"])
	for range pr.Rows {
		exp = append(exp, imgID)
	}
	exp = append(exp, ids["</img>"])
	tokens, at, err := spliceExpansion(m, p, imgID, ctxTok, exp)
	if err != nil {
		return nil, err
	}
	return &imageSpan{Tokens: tokens, Rows: featureRows(tokens, at, len(exp), imgID)}, nil
}
