package model

// Llama 4's image encoder (Llama4ForConditionalGeneration: transformers'
// Llama4VisionModel and Llama4MultiModalProjector). The image becomes rows
// × cols tiles and, when there is more than one, a global tile
// (vision.Llama4), each S×S with patch p, n = (S/p)² patches of width d,
// pixel shuffle factor s = 1/pixel_shuffle_ratio:
//
//	x₀      = [W_patch · patch_i(P); cls] + pos                       [n+1][d]  (the class token last)
//	x₀      = LN_pre(x₀)
//	x_L     = L pre-norm blocks (LayerNorm, biased attention with 2-D RoPE, GELU MLP)
//	v       = LN_post(x_L) without the class token                    [S/p][S/p][d]
//	u[Y][X] = concat over (a, b) in s×s of v[Y·s+a][X·s+b]            [(S/p/s)²][s²·d]  (pixel shuffle)
//	o       = GELU(W₂ · GELU(W₁ · u))                                 (the vision adapter, no biases)
//	feature = W_proj · o                                              [(S/p/s)²][d_text]
//
// The RoPE rotates each head's adjacent pairs (j = 0 … D/2−1) of patch
// (x, y) by (x+1)·f_j for the first D/4 pairs and (y+1)·f_(j−D/4) for the
// rest, f_k = θ^(−4k/D); the class token is not rotated
// (Llama4VisionRotaryEmbedding). Every LayerNorm is nn.LayerNorm's default
// eps 1e-5 in transformers. Each tile's features take its run of <|patch|>
// tokens in the prompt, in the tiles' order (the global tile last).
//
// An mmproj GGUF (llama.cpp's converter) holds the same weights; tfconv
// runs it as above (post_attention_layernorm, which the converter writes
// as attn_post_norm, is the MLP's pre-norm). llama.cpp's mtmd (d32676d7,
// clip_graph_llama4 over build_vit) computes something else from that
// file, and LoadOptions.MatchLlamaCpp reproduces it: attn_post_norm
// normalizes the attention branch's output before the residual (its
// weight, not its bias), the MLP's input is a LayerNorm without weight or
// bias, both GELUs are ggml's (the tanh form from its binary16 table), and
// the pixel shuffle's rows come out column by column (X·(S/p/s) + Y: its
// graph leaves out the second permute). mtmd's preprocessing (vision.Mtmd)
// slices the image llava-uhd's way (vision.Llama4.MtmdTiles) and its prompt
// is <|image_start|>, every tile's rows back to back (the overview last),
// <|image_end|>, with no separators and no <|image|>.

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

// llama4VisionEps is every LayerNorm's eps in transformers'
// Llama4VisionModel: nn.LayerNorm's default (vision_config.norm_eps is not
// passed to them).
const llama4VisionEps = 1e-5

// llama4Vision is the llama4 projector type's encoder.
type llama4Vision struct {
	v     *Vision
	pre   vision.Llama4
	scale int     // s: the pixel shuffle's factor
	theta float64 // the 2-D RoPE's base
	inner int     // the adapter's fc1 output width (projector_input_dim)
	out   int     // the adapter's fc2 width (projector_output_dim)
	w     struct {
		Patch         *kernels.Matrix // [d][3·p·p]
		Cls           []float32       // [d]
		Pos           []float32       // [n+1][d]
		Pre, Post     norm            // [d]
		Blocks        []vitBlock
		Fc1, Fc2, Prj linear // [inner][s²·d], [out][out], [d_text][out]
	}
	cos, sin []float32 // [n][D/2]: the RoPE's per patch and pair
	// mtmd: run llama.cpp mtmd's graph of an mmproj GGUF (MatchLlamaCpp).
	mtmd bool
}

// llama4FromHF reads config.json's vision_config and the processor file.
func llama4FromHF(v *Vision, c *checkpoint.Checkpoint, top spec.Config) (encoder, error) {
	vc, ok := top.Map(v.proj.Encoder)
	if !ok {
		return nil, fmt.Errorf("model: %s: config.json has no %s", c.Path, v.proj.Encoder)
	}
	text, _ := top.Map("text_config")
	cfg := VisionConfig{Projector: "llama4", BOI: -1, EOI: -1, Image: -1, Eps: llama4VisionEps, Activation: "gelu"}
	e := &llama4Vision{v: v}
	var visionOut int
	if err := readConfigInts(c.Path,
		dimInt(&cfg.ImageSize, vc, 448, "image_size"), dimInt(&cfg.PatchSize, vc, 14, "patch_size"),
		dimInt(&cfg.DModel, vc, 768, "hidden_size"), dimInt(&cfg.Layers, vc, 34, "num_hidden_layers"),
		dimInt(&cfg.Heads, vc, 16, "num_attention_heads"), dimInt(&cfg.FFN, vc, 5632, "intermediate_size"),
		dimInt(&e.inner, vc, 4096, "projector_input_dim"), dimInt(&e.out, vc, 4096, "projector_output_dim"),
		dimInt(&visionOut, vc, 7680, "vision_output_dim"),
		dimInt(&cfg.TextDModel, text, 5120, "hidden_size"), idInt(&cfg.Image, top, 200092, "image_token_index"),
	); err != nil {
		return nil, err
	}
	if visionOut != e.out {
		return nil, tensor.Unsupported("model: %s: config.json: vision_output_dim %d is not projector_output_dim %d", c.Path, visionOut, e.out)
	}
	for key, want := range map[string]string{"hidden_act": "gelu", "vision_feature_select_strategy": "default"} {
		if s, ok := vc.Str(key); ok && s != want {
			return nil, tensor.Unsupported("model: %s: config.json: vision_config.%s %q (tfconv runs %s)", c.Path, key, s, want)
		}
	}
	if n, ok := vc.Int("num_channels"); ok && n != 3 {
		return nil, tensor.Unsupported("model: %s: vision_config.num_channels %d (only RGB towers run)", c.Path, n)
	}
	if b, _ := vc["multi_modal_projector_bias"].(bool); b {
		return nil, tensor.Unsupported("model: %s: config.json: multi_modal_projector_bias true (transformers' projector has none)", c.Path)
	}
	r, ok := vc.Float("pixel_shuffle_ratio")
	if !ok {
		r = 0.5
	}
	if r <= 0 || r > 1 || math.Abs(1/r-math.Round(1/r)) > 1e-9 {
		return nil, tensor.Unsupported("model: %s: config.json: pixel_shuffle_ratio %g is not 1/k", c.Path, r)
	}
	e.scale = int(math.Round(1 / r))
	e.theta = 10000
	if th, ok := vc.Float("rope_theta"); ok {
		e.theta = th
	}
	e.pre = vision.Llama4{Tile: cfg.ImageSize, MaxPatches: 16, Mean: [3]float32{0.5, 0.5, 0.5}, Std: [3]float32{0.5, 0.5, 0.5}}
	raw, err := c.ReadAux("preprocessor_config.json")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("model: %s: %w", c.Path, err)
	}
	if err == nil {
		var p spec.Config
		if err := decodeJSON(raw, &p); err != nil {
			return nil, fmt.Errorf("model: %s: preprocessor_config.json: %w", c.Path, err)
		}
		if err := e.preprocessor(p, cfg.ImageSize); err != nil {
			return nil, fmt.Errorf("model: %s: preprocessor_config.json: %w", c.Path, err)
		}
	}
	cfg.Mean, cfg.Std = e.pre.Mean, e.pre.Std
	if err := e.derive(c.Path, &cfg); err != nil {
		return nil, err
	}
	v.cfg = cfg
	return e, nil
}

// preprocessor reads Llama4ImageProcessorFast's file; what tfconv does
// not reproduce is refused.
func (e *llama4Vision) preprocessor(p spec.Config, S int) error {
	if typ, _ := p.Str("image_processor_type"); typ != "" && typ != "Llama4ImageProcessorFast" {
		return tensor.Unsupported("image_processor_type %q (tfconv reproduces Llama4ImageProcessorFast)", typ)
	}
	for _, key := range []string{"do_resize", "do_rescale", "do_normalize"} {
		if b, ok := p[key].(bool); ok && !b {
			return tensor.Unsupported("%s false is not run by tfconv", key)
		}
	}
	if f, ok := p.Float("rescale_factor"); ok && math.Abs(f-1.0/255) > 1e-12 {
		return tensor.Unsupported("rescale_factor %g (tfconv rescales by 1/255)", f)
	}
	if n, ok := p.Int("resample"); ok && n != 2 {
		return tensor.Unsupported("resample %d (tfconv resizes Llama 4 images with bilinear, 2)", n)
	}
	if m, ok := p.Map("size"); ok {
		h, _ := m.Int("height")
		w, _ := m.Int("width")
		if h != int64(S) || w != int64(S) {
			return tensor.Unsupported("size %d×%d is not the tower's image_size %d", w, h, S)
		}
	}
	if n, ok := p.Int("max_patches"); ok {
		if n < 1 || n > 1024 {
			return fmt.Errorf("max_patches %d out of range", n)
		}
		e.pre.MaxPatches = int(n)
	}
	if b, _ := p["resize_to_max_canvas"].(bool); b {
		// transformers v4.57.6's fast processor stops on it (an unbound
		// target_size_without_distortion): no reference to reproduce.
		return tensor.Unsupported("resize_to_max_canvas true (transformers v4.57.6's Llama4ImageProcessorFast fails on it; tfconv runs false)")
	}
	for key, dst := range map[string]*[3]float32{"image_mean": &e.pre.Mean, "image_std": &e.pre.Std} {
		if err := threeFloats(dst, p[key]); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
	}
	return nil
}

// derive checks the sizes, sets the rows a tile gives and the RoPE's
// table.
func (e *llama4Vision) derive(path string, c *VisionConfig) error {
	if err := shuffleTokens(path, c, e.scale); err != nil {
		return err
	}
	side := c.ImageSize / c.PatchSize
	if (c.DModel/c.Heads)%4 != 0 || e.scale > maxVisionDim/c.DModel || e.scale*e.scale*c.DModel != c.FFN {
		return fmt.Errorf("model: %s: vision head width %d/%d not a multiple of 4, or %d² × hidden_size %d not intermediate_size %d (the adapter's input)",
			path, c.DModel, c.Heads, e.scale, c.DModel, c.FFN)
	}
	e.pre.Tile = c.ImageSize
	// Llama4VisionRotaryEmbedding: per patch (x, y), pair j rotates by
	// (x+1)·f_j (j < D/4) or (y+1)·f_(j−D/4), f_k = 1/θ^(2k/(D/2)), in
	// float32 as torch builds the table.
	D := c.DModel / c.Heads
	half, q := D/2, D/4
	n := side * side
	e.cos, e.sin = make([]float32, n*half), make([]float32, n*half)
	for i := 0; i < n; i++ {
		x, y := i%side, i/side
		for j := 0; j < half; j++ {
			pos, k := x+1, j
			if j >= q {
				pos, k = y+1, j-q
			}
			f := float32(1) / float32(math.Pow(e.theta, float64(float32(2*k)/float32(half))))
			a := float64(float32(pos) * f)
			e.cos[i*half+j], e.sin[i*half+j] = float32(math.Cos(a)), float32(math.Sin(a))
		}
	}
	return nil
}

// llama4FromGGUF reads an mmproj GGUF's clip.* keys. The adapter's widths
// come from its tensors (load).
func llama4FromGGUF(v *Vision, md tensor.Metadata) (encoder, error) {
	cfg := VisionConfig{Projector: "llama4", BOI: -1, EOI: -1, Image: -1}
	e := &llama4Vision{v: v, mtmd: v.matchLlamaCpp}
	if err := clipTower(v.Path, md, &cfg, llama4VisionEps, map[string]*int{"clip.vision.image_size": &cfg.ImageSize,
		"clip.vision.projection_dim": &cfg.TextDModel, "clip.vision.projector.scale_factor": &e.scale,
	}); err != nil {
		return nil, err
	}
	// clip.cpp: use_gelu → GELU (ggml's), use_silu → SiLU, neither →
	// quick GELU; the tower's is GELU.
	if g, ok := md.Get("clip.use_gelu"); !ok {
		return nil, tensor.Unsupported("model: %s: no clip.use_gelu: llama.cpp would run the llama4 tower's MLP with quick GELU, not its GELU", v.Path)
	} else if b, _ := g.BoolValue(); !b {
		return nil, tensor.Unsupported("model: %s: clip.use_gelu false (the llama4 tower's MLP is GELU)", v.Path)
	}
	cfg.Activation = "gelu"
	if err := ggufMeanStd(v.Path, md, &cfg); err != nil {
		return nil, err
	}
	// clip.cpp's llama4 RoPE base.
	e.theta = 10000
	// transformers' preprocessing of the GGUF (vision.Transformers): the
	// published processor's max_patches, which the mmproj does not keep.
	e.pre = vision.Llama4{Tile: cfg.ImageSize, MaxPatches: 16, Mean: cfg.Mean, Std: cfg.Std}
	if err := e.derive(v.Path, &cfg); err != nil {
		return nil, err
	}
	v.cfg = cfg
	return e, nil
}

func (e *llama4Vision) load(l *loader) {
	v, w := e.v, &e.w
	c := &v.cfg
	d, p := c.DModel, c.PatchSize
	n := (c.ImageSize / p) * (c.ImageSize / p)
	w.Patch = l.matrix(v.name(l, "v.patch_embd", 0, ".weight"), d, 3*p*p)
	w.Cls = l.vector(v.name(l, "v.class_embd", 0, ""), d)
	w.Pos = l.vector(v.name(l, "v.position_embd", 0, ".weight"), (n+1)*d)
	ln := func(role string) norm {
		return norm{W: l.vector(v.name(l, role, 0, ".weight"), d), B: l.vector(v.name(l, role, 0, ".bias"), d), Eps: c.Eps}
	}
	w.Pre, w.Post = ln("v.pre_ln"), ln("v.post_ln")
	w.Blocks = make([]vitBlock, c.Layers)
	for i := range w.Blocks {
		w.Blocks[i] = v.loadVitBlock(l, i, d, c.FFN, c.Eps)
		if e.mtmd {
			// build_vit: attn_post_norm's weight after the attention (its
			// bias unread), no ln2: a LayerNorm without weight or bias.
			b := &w.Blocks[i]
			b.AttnNorm = &norm{W: b.LN2.W, Eps: c.Eps}
			b.LN2 = norm{W: ones(d), Eps: c.Eps}
		}
	}
	if e.mtmd {
		c.Activation = "gelu_ggml"
	}
	lin := func(role string, out, in int) linear {
		return linear{W: l.matrix(v.name(l, role, 0, ".weight"), out, in)}
	}
	if v.GGUF {
		// The adapter's widths (config.json's projector_input_dim and
		// projector_output_dim) are its tensors' rows.
		e.inner, e.out = l.rowsOf(v.name(l, "mm.model.mlp.1", 0, ".weight")), l.rowsOf(v.name(l, "mm.model.mlp.2", 0, ".weight"))
		if e.inner <= 0 || e.inner > maxVisionDim || e.out <= 0 || e.out > maxVisionDim {
			l.fail(fmt.Errorf("model: %s: the llama4 adapter's tensors mm.model.mlp.1 and mm.model.mlp.2 are missing or not 2-D", v.Path))
			return
		}
	}
	w.Fc1 = lin("mm.model.mlp.1", e.inner, e.scale*e.scale*d)
	w.Fc2 = lin("mm.model.mlp.2", e.out, e.out)
	w.Prj = lin("mm.model.fc", c.TextDModel, e.out)
}

// prepare tiles the image as Llama4ImageProcessorFast does
// (Transformers) or as mtmd slices it (Mtmd); Grid is rows, cols (mtmd:
// 0, 0 for an image left whole).
func (e *llama4Vision) prepare(img *vision.Image, m vision.Method) (*Prepared, error) {
	S := e.v.cfg.ImageSize
	var tiles [][]float32
	var rows, cols int
	var err error
	if m == vision.Mtmd {
		var imgs []*vision.Image
		imgs, rows, cols, err = e.pre.MtmdTiles(img)
		for _, t := range imgs {
			tiles = append(tiles, vision.Normalize(t, e.pre.Mean, e.pre.Std, vision.Mtmd))
		}
	} else {
		tiles, rows, cols, err = e.pre.Tiles(img)
	}
	if err != nil {
		return nil, fmt.Errorf("model: %s: %w", e.v.Path, err)
	}
	pr := &Prepared{Grid: []int{rows, cols}, Rows: len(tiles) * e.v.cfg.Tokens}
	for _, t := range tiles {
		pr.Pixels = append(pr.Pixels, t...)
		pr.Tiles = append(pr.Tiles, [2]int{S, S})
	}
	return pr, nil
}

// rope rotates q and k [n+1][d] (the class token last, not rotated).
func (e *llama4Vision) rope(q, k []float32, rows int) {
	c := &e.v.cfg
	d, H := c.DModel, c.Heads
	D := d / H
	half := D / 2
	for i := 0; i < rows-1; i++ {
		cs, sn := e.cos[i*half:(i+1)*half], e.sin[i*half:(i+1)*half]
		for _, x := range [2][]float32{q, k} {
			for h := 0; h < H; h++ {
				r := x[i*d+h*D : i*d+(h+1)*D]
				for j := 0; j < half; j++ {
					a, b := r[2*j], r[2*j+1]
					r[2*j], r[2*j+1] = a*cs[j]-b*sn[j], a*sn[j]+b*cs[j]
				}
			}
		}
	}
}

// encode runs the tower, adapter and projector over each tile in turn.
// states receives the first tile's hidden states (after layernorm_pre,
// then each layer's; the class token last).
func (e *llama4Vision) encode(pr *Prepared, states *[][]float32) ([]float32, error) {
	c, w := &e.v.cfg, &e.w
	S, p, d, s := c.ImageSize, c.PatchSize, c.DModel, e.scale
	if len(pr.Pixels) != len(pr.Tiles)*3*S*S {
		return nil, fmt.Errorf("model: vision: the llama4 tower reads 3×%d×%d tiles", S, S)
	}
	side := S / p
	n := side * side
	T := (side / s) * (side / s)
	sd := s * s * d
	feat := make([]float32, 0, len(pr.Tiles)*T*c.TextDModel)
	x := make([]float32, (n+1)*d)
	u := make([]float32, T*sd)
	h1 := make([]float32, T*e.inner)
	h2 := make([]float32, T*e.out)
	f := make([]float32, T*c.TextDModel)
	sc := newVitScratch(n+1, d, c.FFN)
	attn := vitAttn{Rope: e.rope}
	for ti, hw := range pr.Tiles {
		if hw != [2]int{S, S} {
			return nil, fmt.Errorf("model: vision: tile %d is %d×%d, the llama4 tower reads %d×%d", ti, hw[1], hw[0], S, S)
		}
		record := func() {
			if states != nil && ti == 0 {
				*states = append(*states, append([]float32(nil), x...))
			}
		}
		embed := linear{W: w.Patch}
		embed.apply(x[:n*d], unfoldPatches(pr.Pixels[ti*3*S*S:(ti+1)*3*S*S], S, S, p), n)
		copy(x[n*d:], w.Cls)
		kernels.Add(x, w.Pos)
		w.Pre.apply(x, x, n+1, d)
		record()
		for i := range w.Blocks {
			if err := w.Blocks[i].forward(x, n+1, d, c.Heads, c.Activation, attn, sc); err != nil {
				return nil, err
			}
			record()
		}
		w.Post.apply(x, x, n, d)
		pixelShuffle(u, x[:n*d], side, s, d)
		if e.mtmd {
			transposeRows(u, side/s, sd)
		}
		w.Fc1.apply(h1, u, T)
		if err := activate(h1, c.Activation); err != nil {
			return nil, err
		}
		w.Fc2.apply(h2, h1, T)
		if err := activate(h2, c.Activation); err != nil {
			return nil, err
		}
		w.Prj.apply(f, h2, T)
		feat = append(feat, f...)
	}
	return feat, nil
}

// transposeRows reorders the g×g rows of u (width w) from row by row to
// column by column: row (Y, X) moves to X·g + Y.
func transposeRows(u []float32, g, w int) {
	t := make([]float32, g*g*w)
	for Y := 0; Y < g; Y++ {
		for X := 0; X < g; X++ {
			copy(t[(X*g+Y)*w:(X*g+Y+1)*w], u[(Y*g+X)*w:])
		}
	}
	copy(u, t)
}

// ones is n ones: the weight of a LayerNorm that has none.
func ones(n int) []float32 {
	w := make([]float32, n)
	for i := range w {
		w[i] = 1
	}
	return w
}

// prompt expands the placeholder <|image|> as Llama4Processor does:
// <|image_start|>, when there is more than one tile each tile's <|patch|>
// tokens (Tokens a tile) with <|tile_x_separator|> between the tiles of a
// row and <|tile_y_separator|> after each row, then <|image|> and the
// global tile's <|patch|> tokens, <|image_end|>. The features take the
// <|patch|> tokens in order.
func (e *llama4Vision) prompt(m *Model, p ImagePrompt, pr *Prepared) (*imageSpan, error) {
	const placeholder = "<|image|>"
	ids, err := vocabIDs(m, "<|image_start|>", "<|image_end|>", "<|tile_x_separator|>", "<|tile_y_separator|>", placeholder, "<|patch|>")
	if err != nil {
		return nil, err
	}
	patch := e.v.cfg.Image
	if patch < 0 {
		patch = ids["<|patch|>"]
	}
	if len(pr.Grid) != 2 {
		return nil, fmt.Errorf("model: vision: llama4: the prepared image has no tile grid")
	}
	rows, cols, T := pr.Grid[0], pr.Grid[1], e.v.cfg.Tokens
	var exp []int
	if p.Method == vision.Mtmd {
		// mtmd's chunks: img_beg, the slices and the overview with no
		// text between them, img_end.
		if pr.Rows <= 0 || pr.Rows%T != 0 {
			return nil, fmt.Errorf("model: vision: llama4: %d feature rows are not whole tiles of %d", pr.Rows, T)
		}
		exp = append(exp, ids["<|image_start|>"])
		for range pr.Rows {
			exp = append(exp, patch)
		}
		exp = append(exp, ids["<|image_end|>"])
		tokens, at, err := spliceExpansion(m, p, ids[placeholder], placeholder, exp)
		if err != nil {
			return nil, err
		}
		return &imageSpan{Tokens: tokens, Rows: featureRows(tokens, at, len(exp), patch)}, nil
	}
	tiles := rows*cols + 1
	if rows*cols == 1 {
		tiles = 1
	}
	if tiles*T != pr.Rows {
		return nil, fmt.Errorf("model: vision: llama4: %d feature rows for %d tiles of %d", pr.Rows, tiles, T)
	}
	patches := func() {
		for range T {
			exp = append(exp, patch)
		}
	}
	exp = append(exp, ids["<|image_start|>"])
	if rows*cols > 1 {
		for y := 0; y < rows; y++ {
			for x := 0; x < cols; x++ {
				patches()
				if x < cols-1 {
					exp = append(exp, ids["<|tile_x_separator|>"])
				}
			}
			exp = append(exp, ids["<|tile_y_separator|>"])
		}
	}
	exp = append(exp, ids[placeholder])
	patches()
	exp = append(exp, ids["<|image_end|>"])

	tokens, at, err := spliceExpansion(m, p, ids[placeholder], placeholder, exp)
	if err != nil {
		return nil, err
	}
	return &imageSpan{Tokens: tokens, Rows: featureRows(tokens, at, len(exp), patch)}, nil
}
