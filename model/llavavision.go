package model

// LLaVA-1.5's image encoder (LlavaForConditionalGeneration: transformers'
// CLIPVisionModel and LlavaMultiModalProjector; llama.cpp's
// clip_graph_llava with PROJECTOR_TYPE_MLP over the legacy mmproj). For
// one S×S tile with patch p, n = (S/p)² patches of width d:
//
//	x₀      = [cls; W_patch · patch_i(P)] + pos           [n+1][d]  (no patch bias)
//	x₀'     = LN_pre(x₀)
//	x_k     = k pre-norm blocks (LayerNorm, quick-GELU MLP)
//	feature = W₂ · gelu(W₁ · x_k[1:] + b₁) + b₂          [n][d_text]  ("default": the class token dropped)
//
// k is vision_feature_layer as transformers indexes hidden_states (−2:
// all layers but the last). llama.cpp d32676d7 computes two things
// otherwise on the legacy mmproj, and the GGUF form follows it, the
// reference it is compared with: its graph runs block_count − 1 layers of
// the block_count the legacy writer kept (one fewer than transformers),
// and it appends the class token after the patches (ggml_concat), with
// position rows 0..n in that order, then takes rows 1..n — the patches
// but the first, and the class token.
//
// LLaVA-NeXT (the same tower and projector, image_grid_pinpoints): the
// image is tiled (vision.AnyRes) and every tile encoded so; transformers
// packs the features — the whole image's rows, then the tiles' feature
// map cut to the image (unpad_image) with image_newline after each row —
// while mtmd feeds each tile's rows as a chunk of its own, the tiles row
// by row and the whole image last, with no newline.

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"strconv"

	spec "github.com/tfconv/tfconv/arch"
	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/kernels"
	"github.com/tfconv/tfconv/tensor"
	"github.com/tfconv/tfconv/vision"
)

// llavaVision is the mlp projector type's encoder (LLaVA-1.5).
type llavaVision struct {
	v    *Vision
	pre  vision.CLIP // Method set per call
	run  int         // k: the layers run
	mtmd bool        // llama.cpp's graph (the GGUF form)
	// anyres is LLaVA-NeXT's tiling (nil Pinpoints: LLaVA-1.5's one tile).
	anyres vision.AnyRes
	w      struct {
		Class   []float32       // [d]
		Patch   *kernels.Matrix // [d][3·p·p]
		Pos     []float32       // [n+1][d]
		Pre     norm
		Blocks  []vitBlock
		P1, P2  linear    // [d_text][d], [d_text][d_text]
		Project string    // the projector's activation
		Newline []float32 // [d_text]: LLaVA-NeXT's image_newline
	}
}

// llavaFromHF reads vision_config, vision_feature_layer, the select
// strategy, image_token_index and text_config.hidden_size from
// config.json and the CLIP processor's sizes.
func llavaFromHF(v *Vision, c *checkpoint.Checkpoint, top spec.Config) (encoder, error) {
	vc, ok := top.Map(v.proj.Encoder)
	if !ok {
		return nil, fmt.Errorf("model: %s: config.json has no %s", c.Path, v.proj.Encoder)
	}
	cfg := VisionConfig{Projector: "mlp", BOI: -1, EOI: -1}
	e := &llavaVision{v: v}
	feature := int64(-2)
	// CLIPVisionConfig's and LlavaConfig's defaults.
	if err := readConfigInts(c.Path,
		dimInt(&cfg.ImageSize, vc, 224, "image_size"), dimInt(&cfg.PatchSize, vc, 32, "patch_size"),
		dimInt(&cfg.DModel, vc, 768, "hidden_size"), dimInt(&cfg.Layers, vc, 12, "num_hidden_layers"),
		dimInt(&cfg.Heads, vc, 12, "num_attention_heads"), dimInt(&cfg.FFN, vc, 3072, "intermediate_size"),
		idInt(&cfg.Image, top, 32000, "image_token_index")); err != nil {
		return nil, err
	}
	if f, ok := top["vision_feature_layer"]; ok {
		n, isInt := top.Int("vision_feature_layer")
		if !isInt {
			return nil, tensor.Unsupported("model: %s: config.json: vision_feature_layer %v (a list of layers does not run in tfconv)", c.Path, f)
		}
		feature = n
	}
	if s, ok := top.Str("vision_feature_select_strategy"); ok && s != "default" {
		return nil, tensor.Unsupported("model: %s: config.json: vision_feature_select_strategy %q (tfconv runs \"default\")", c.Path, s)
	}
	if a, ok := top.Str("projector_hidden_act"); ok && a != "gelu" {
		return nil, tensor.Unsupported("model: %s: config.json: projector_hidden_act %q (tfconv runs gelu)", c.Path, a)
	}
	if feature < 0 {
		feature += int64(cfg.Layers) + 1
	}
	if feature < 0 || feature > int64(cfg.Layers) {
		return nil, fmt.Errorf("model: %s: config.json: vision_feature_layer out of the tower's %d layers", c.Path, cfg.Layers)
	}
	e.run = int(feature)
	text, _ := top.Map("text_config")
	d, ok := text.Int("hidden_size")
	if !ok || d <= 0 || d > maxVisionDim {
		return nil, fmt.Errorf("model: %s: config.json: text_config.hidden_size missing or out of range", c.Path)
	}
	cfg.TextDModel = int(d)
	eps, ok := vc.Float("layer_norm_eps")
	if !ok {
		eps = 1e-5
	}
	cfg.Eps = float32(eps)
	act, _ := vc["hidden_act"].(string)
	if act == "" {
		act = "quick_gelu"
	}
	var err error
	if cfg.Activation, err = hfActivation(act); err != nil {
		return nil, err
	}
	if n, ok := vc.Int("num_channels"); ok && n != 3 {
		return nil, tensor.Unsupported("model: %s: vision_config.num_channels %d (only RGB towers run)", c.Path, n)
	}
	// CLIPImageProcessor's defaults.
	e.pre = vision.CLIP{Shortest: 224, Crop: 224, Filter: vision.PILBicubic, Pad: [3]uint8{122, 116, 104}}
	cfg.Mean = [3]float32{0.48145466, 0.4578275, 0.40821073}
	cfg.Std = [3]float32{0.26862954, 0.26130258, 0.27577711}
	pre, err := c.ReadAux("preprocessor_config.json")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("model: %s: %w", c.Path, err)
	}
	if err == nil {
		var p spec.Config
		if err := decodeJSON(pre, &p); err != nil {
			return nil, fmt.Errorf("model: %s: preprocessor_config.json: %w", c.Path, err)
		}
		if err := clipPreprocessor(&e.pre, &cfg, p); err != nil {
			return nil, fmt.Errorf("model: %s: preprocessor_config.json: %w", c.Path, err)
		}
	}
	if pp, ok := top["image_grid_pinpoints"]; ok {
		list, _ := pp.([]any)
		for _, x := range list {
			pair, _ := x.([]any)
			if len(pair) != 2 {
				return nil, fmt.Errorf("model: %s: config.json: image_grid_pinpoints entry %v is not [height, width]", c.Path, x)
			}
			hw := spec.Config{"h": pair[0], "w": pair[1]}
			h, okh := hw.Int("h")
			w, okw := hw.Int("w")
			if !okh || !okw || h <= 0 || w <= 0 || h > 1<<14 || w > 1<<14 {
				return nil, fmt.Errorf("model: %s: config.json: image_grid_pinpoints entry %v", c.Path, x)
			}
			e.anyres.Pinpoints = append(e.anyres.Pinpoints, [2]int{int(h), int(w)})
		}
		if len(e.anyres.Pinpoints) == 0 {
			return nil, fmt.Errorf("model: %s: config.json: image_grid_pinpoints is empty", c.Path)
		}
		e.anyres.Tile, e.anyres.Filter, e.anyres.Method = cfg.ImageSize, e.pre.Filter, vision.Transformers
	}
	if e.pre.Crop != cfg.ImageSize {
		return nil, tensor.Unsupported("model: %s: preprocessor_config.json: crop size %d is not the tower's image_size %d", c.Path, e.pre.Crop, cfg.ImageSize)
	}
	if err := e.derive(c.Path, &cfg); err != nil {
		return nil, err
	}
	v.cfg = cfg
	return e, nil
}

// clipPreprocessor reads CLIPImageProcessor's settings; what tfconv does
// not reproduce is refused.
func clipPreprocessor(p *vision.CLIP, cfg *VisionConfig, c spec.Config) error {
	for _, key := range []string{"do_resize", "do_center_crop", "do_rescale", "do_normalize"} {
		if b, ok := c[key].(bool); ok && !b {
			return tensor.Unsupported("%s false is not run by tfconv", key)
		}
	}
	if f, ok := c.Float("rescale_factor"); ok && math.Abs(f-1.0/255) > 1e-12 {
		return tensor.Unsupported("rescale_factor %g (tfconv rescales by 1/255)", f)
	}
	if n, ok := c.Int("resample"); ok {
		f, err := vision.ParsePILFilter(n)
		if err != nil {
			return err
		}
		p.Filter = f
	}
	if sz, ok := c.Map("size"); ok {
		n, ok := sz.Int("shortest_edge")
		if !ok || n <= 0 || n > 1<<14 {
			return tensor.Unsupported("size: a shortest_edge is what tfconv reads")
		}
		p.Shortest = int(n)
	}
	if cs, ok := c.Map("crop_size"); ok {
		h, _ := cs.Int("height")
		w, _ := cs.Int("width")
		if h != w || h <= 0 || h > 1<<14 {
			return tensor.Unsupported("crop_size %d×%d: tfconv crops squares", w, h)
		}
		p.Crop = int(h)
	}
	if p.Shortest < p.Crop {
		return tensor.Unsupported("size.shortest_edge %d under the crop %d (the processor pads; tfconv does not)", p.Shortest, p.Crop)
	}
	for key, dst := range map[string]*[3]float32{"image_mean": &cfg.Mean, "image_std": &cfg.Std} {
		if err := threeFloats(dst, c[key]); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
	}
	return nil
}

func (e *llavaVision) derive(path string, c *VisionConfig) error {
	width := c.TextDModel
	if e.mtmd {
		width = 1 // read from mm.2 at load
	}
	for _, x := range []struct {
		name string
		n    int
	}{{"image_size", c.ImageSize}, {"patch_size", c.PatchSize}, {"hidden_size", c.DModel}, {"layers", c.Layers},
		{"heads", c.Heads}, {"intermediate_size", c.FFN}, {"projection width", width}} {
		if x.n <= 0 || x.n > maxVisionDim {
			return fmt.Errorf("model: %s: vision %s %d out of range", path, x.name, x.n)
		}
	}
	if c.ImageSize%c.PatchSize != 0 || c.DModel%c.Heads != 0 {
		return fmt.Errorf("model: %s: vision image_size %d not a multiple of patch_size %d, or hidden_size %d of heads %d",
			path, c.ImageSize, c.PatchSize, c.DModel, c.Heads)
	}
	side := c.ImageSize / c.PatchSize
	c.Tokens = side * side
	e.pre.Crop = c.ImageSize
	return nil
}

// llavaFromGGUF reads a legacy LLaVA mmproj's clip.* keys.
func llavaFromGGUF(v *Vision, md tensor.Metadata) (encoder, error) {
	cfg := VisionConfig{Projector: "mlp", Image: -1, BOI: -1, EOI: -1}
	e := &llavaVision{v: v, mtmd: true}
	if err := clipTower(v.Path, md, &cfg, 1e-5, map[string]*int{"clip.vision.image_size": &cfg.ImageSize}); err != nil {
		return nil, err
	}
	if pp, ok := md.Get("clip.vision.image_grid_pinpoints"); ok {
		// mtmd reads the list as (width, height) pairs.
		var ns []int64
		a, _ := pp.Array()
		switch x := a.Data.(type) {
		case []int32:
			for _, n := range x {
				ns = append(ns, int64(n))
			}
		case []uint32:
			for _, n := range x {
				ns = append(ns, int64(n))
			}
		case []int64:
			ns = x
		}
		if len(ns) == 0 || len(ns)%2 != 0 || len(ns) > 1<<10 {
			return nil, fmt.Errorf("model: %s: GGUF key clip.vision.image_grid_pinpoints is not a list of (width, height) pairs", v.Path)
		}
		for i := 0; i < len(ns); i += 2 {
			if ns[i] <= 0 || ns[i+1] <= 0 || ns[i] > 1<<14 || ns[i+1] > 1<<14 {
				return nil, fmt.Errorf("model: %s: GGUF key clip.vision.image_grid_pinpoints: %d×%d", v.Path, ns[i], ns[i+1])
			}
			e.anyres.Pinpoints = append(e.anyres.Pinpoints, [2]int{int(ns[i+1]), int(ns[i])})
		}
		e.anyres.Method = vision.Mtmd
	}
	if _, ok := md.Get("clip.vision.feature_layer"); ok {
		return nil, tensor.Unsupported("model: %s: clip.vision.feature_layer (stacked feature layers) does not run in tfconv", v.Path)
	}
	if b, ok := md.Get("clip.has_llava_projector"); ok {
		if x, _ := b.BoolValue(); !x {
			return nil, tensor.Unsupported("model: %s: clip.has_llava_projector false", v.Path)
		}
	}
	// clip_graph_llava runs the layers but the last of those kept.
	e.run = cfg.Layers - 1
	cfg.Activation = "quick_gelu"
	if g, ok := md.Get("clip.use_gelu"); ok {
		if b, _ := g.BoolValue(); b {
			cfg.Activation = "gelu"
		}
	}
	if err := ggufMeanStd(v.Path, md, &cfg); err != nil {
		return nil, err
	}
	// clip.cpp: LLaVA's letterbox pads with {122, 116, 104}; the refined
	// fixed-size path resizes bicubic.
	e.pre = vision.CLIP{Shortest: cfg.ImageSize, Filter: vision.PILBicubic, Pad: [3]uint8{122, 116, 104}}
	if err := e.derive(v.Path, &cfg); err != nil {
		return nil, err
	}
	e.anyres.Tile = cfg.ImageSize
	v.cfg = cfg // TextDModel: from mm.2 at load
	return e, nil
}

func (e *llavaVision) load(l *loader) {
	v, w := e.v, &e.w
	c := &v.cfg
	d, p := c.DModel, c.PatchSize
	n := (c.ImageSize / p) * (c.ImageSize / p)
	if e.mtmd {
		// The projection's width is mm.2's rows (clip_n_mmproj_embd).
		c.TextDModel = l.rowsOf(v.name(l, "mm.2", 0, ".weight"))
		if c.TextDModel <= 0 || c.TextDModel > maxVisionDim {
			l.fail(fmt.Errorf("model: %s: mm.2.weight missing or not a matrix", v.Path))
			return
		}
	}
	w.Class = l.vector(v.name(l, "v.class_embd", 0, ""), d)
	kernel := l.shaped(v.name(l, "v.patch_embd", 0, ".weight"), tensor.Shape{int64(d), 3, int64(p), int64(p)})
	if kernel != nil {
		if v.matchLlamaCpp {
			w.Patch = v.patchF16(l, kernel, d, 3*p*p)
		} else {
			w.Patch = kernels.F32Matrix(d, 3*p*p, kernel)
			l.mats = append(l.mats, w.Patch)
		}
	}
	w.Pos = l.shaped(v.name(l, "v.position_embd", 0, ".weight"), tensor.Shape{int64(n + 1), int64(d)})
	w.Pre = norm{W: l.vector(v.name(l, "v.pre_ln", 0, ".weight"), d), B: l.vector(v.name(l, "v.pre_ln", 0, ".bias"), d), Eps: c.Eps}
	w.Blocks = make([]vitBlock, e.run)
	for i := range w.Blocks {
		// The record's names: fc1 is ffn_down, fc2 ffn_up (the legacy writer's).
		w.Blocks[i] = v.loadVitBlockFFN(l, i, d, c.FFN, c.Eps, "v.blk.{bid}.ffn_down", "v.blk.{bid}.ffn_up")
	}
	lin := func(role string, out, in int) linear {
		return linear{W: l.matrix(v.name(l, role, 0, ".weight"), out, in), B: l.vector(v.name(l, role, 0, ".bias"), out)}
	}
	if e.anyres.Pinpoints != nil && !e.mtmd {
		// (mtmd's llava-uhd chunks use no newline.)
		w.Newline = l.vector(v.name(l, "model.image_newline", 0, ""), c.TextDModel)
	}
	w.P1 = lin("mm.0", c.TextDModel, d)
	w.P2 = lin("mm.2", c.TextDModel, c.TextDModel)
	w.Project = "gelu"
	if v.matchLlamaCpp {
		w.Project = "gelu_ggml"
		if c.Activation == "gelu" {
			c.Activation = "gelu_ggml"
		}
	}
}

// prepare makes the one tile, or LLaVA-NeXT's whole image and tiles
// (Grid: rows, cols, the image's height and width).
func (e *llavaVision) prepare(img *vision.Image, m vision.Method) (*Prepared, error) {
	c := &e.v.cfg
	if e.anyres.Pinpoints != nil {
		// Each form with its own reference's tiling and packing.
		if want := map[bool]vision.Method{false: vision.Transformers, true: vision.Mtmd}[e.mtmd]; m != want {
			return nil, tensor.Unsupported("model: %s: LLaVA-NeXT's %s form runs with %s's preprocessing only", e.v.Path,
				map[bool]string{false: "Hugging Face", true: "GGUF"}[e.mtmd], want)
		}
		tiles, rows, cols, err := e.anyres.Tiles(img)
		if err != nil {
			return nil, fmt.Errorf("model: %s: %w", e.v.Path, err)
		}
		pr := &Prepared{Grid: []int{rows, cols, img.H, img.W}}
		for _, t := range tiles {
			pr.Pixels = append(pr.Pixels, vision.Normalize(t, c.Mean, c.Std, m)...)
			pr.Tiles = append(pr.Tiles, [2]int{t.H, t.W})
		}
		if e.mtmd {
			pr.Rows = len(tiles) * c.Tokens // one chunk per tile, as encoded
			return pr, nil
		}
		r0, r1, c0, c1 := e.unpadded(pr.Grid)
		pr.Rows = c.Tokens + (r1-r0)*(c1-c0+1)
		return pr, nil
	}
	p := e.pre
	p.Method = m
	t, err := p.Tile(img)
	if err != nil {
		return nil, fmt.Errorf("model: %s: %w", e.v.Path, err)
	}
	return &Prepared{Pixels: vision.Normalize(t, c.Mean, c.Std, m), Tiles: [][2]int{{t.H, t.W}}, Rows: c.Tokens}, nil
}

// unpadded is the part of LLaVA-NeXT's feature map (rows × cols tiles of
// side patches each) that holds the image, as transformers' unpad_image
// cuts it: rows r0..r1 and columns c0..c1 of the map.
func (e *llavaVision) unpadded(grid []int) (r0, r1, c0, c1 int) {
	side := e.v.cfg.ImageSize / e.v.cfg.PatchSize
	ch, cw := grid[0]*side, grid[1]*side
	oh, ow := float64(grid[2]), float64(grid[3])
	round7 := func(x float64) int {
		f, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'f', 7, 64), 64)
		return int(f)
	}
	r0, r1, c0, c1 = 0, ch, 0, cw
	if ow/oh > float64(cw)/float64(ch) {
		nh := round7(oh * (float64(cw) / ow))
		pad := (ch - nh) / 2
		r0, r1 = pad, ch-pad
	} else {
		nw := round7(ow * (float64(ch) / oh))
		pad := (cw - nw) / 2
		c0, c1 = pad, cw-pad
	}
	return r0, r1, c0, c1
}

// encode runs the tower and projector over each tile; LLaVA-NeXT's are
// then packed: the whole image's rows, then the tiles' feature map cut to
// the image (unpadded), row by row, each row ended by image_newline.
func (e *llavaVision) encode(pr *Prepared, states *[][]float32) ([]float32, error) {
	c, w := &e.v.cfg, &e.w
	S, p, d, D := c.ImageSize, c.PatchSize, c.DModel, c.TextDModel
	if len(pr.Tiles) == 0 || len(pr.Pixels) != len(pr.Tiles)*3*S*S {
		return nil, fmt.Errorf("model: vision: the LLaVA tower reads 3×%d×%d tiles", S, S)
	}
	side := S / p
	n := side * side
	N := n + 1
	x := make([]float32, N*d)
	h := make([]float32, n*D)
	all := make([]float32, 0, len(pr.Tiles)*n*D)
	sc := newVitScratch(N, d, c.FFN)
	for ti, hw := range pr.Tiles {
		if hw != [2]int{S, S} {
			return nil, fmt.Errorf("model: vision: tile %d is %d×%d, the LLaVA tower reads %d×%d", ti, hw[1], hw[0], S, S)
		}
		patches := unfoldPatches(pr.Pixels[ti*3*S*S:(ti+1)*3*S*S], S, S, p)
		// transformers: the class token first; llama.cpp: last.
		cls, first := 0, 1
		if e.mtmd {
			cls, first = n, 0
		}
		kernels.MatMul(x[first*d:(first+n)*d], patches, n, w.Patch)
		copy(x[cls*d:(cls+1)*d], w.Class)
		kernels.Add(x, w.Pos)
		w.Pre.apply(x, x, N, d)
		record := func() {
			if states != nil && ti == 0 {
				*states = append(*states, append([]float32(nil), x...))
			}
		}
		record()
		for i := range w.Blocks {
			if err := w.Blocks[i].forward(x, N, d, c.Heads, c.Activation, vitAttn{}, sc); err != nil {
				return nil, err
			}
			record()
		}
		// The "default" strategy's rows: 1..n (transformers' patches; in
		// llama.cpp's order the patches but the first, then the class
		// token).
		w.P1.apply(h, x[d:N*d], n)
		if err := activate(h, w.Project); err != nil {
			return nil, err
		}
		f := make([]float32, n*D)
		w.P2.apply(f, h, n)
		all = append(all, f...)
	}
	if e.anyres.Pinpoints == nil || e.mtmd {
		return all, nil
	}
	if len(pr.Grid) != 4 || len(pr.Tiles) != 1+pr.Grid[0]*pr.Grid[1] {
		return nil, fmt.Errorf("model: vision: LLaVA-NeXT's tiles do not match their grid %v", pr.Grid)
	}
	cols := pr.Grid[1]
	feat := append(make([]float32, 0, pr.Rows*D), all[:n*D]...)
	r0, r1, c0, c1 := e.unpadded(pr.Grid)
	for y := r0; y < r1; y++ {
		ty, py := y/side, y%side
		for xx := c0; xx < c1; xx++ {
			tx, px := xx/side, xx%side
			t := 1 + ty*cols + tx
			feat = append(feat, all[(t*n+py*side+px)*D:][:D]...)
		}
		feat = append(feat, w.Newline...)
	}
	return feat, nil
}

// prompt expands the placeholder as LlavaProcessor does: <image> repeated
// once per feature row, the text tokenized whole; mtmd puts the image's
// embeddings alone where the marker was, the text around it tokenized
// piece by piece (BOS on the first). The two give the same ids.
func (e *llavaVision) prompt(m *Model, p ImagePrompt, pr *Prepared) (*imageSpan, error) {
	t := m.Tokenizer()
	imgID := e.v.cfg.Image
	if imgID < 0 {
		if t != nil {
			if id, ok := t.ID("<image>"); ok {
				imgID = id
			}
		}
		if imgID < 0 {
			imgID = 0 // llama.cpp feeds the embeddings without ids
		}
	}
	seq := make([]int, pr.Rows)
	for i := range seq {
		seq[i] = imgID
	}
	// With the text, transformers' method tokenizes the whole prompt (the
	// processor's legacy-false SentencePiece then puts no space before the
	// text after <image>), mtmd's each piece apart (llama.cpp's space
	// prefix on the piece after the image).
	tokens, at, err := spliceExpansion(m, p, imgID, "<image>", seq)
	if err != nil {
		return nil, err
	}
	return &imageSpan{Tokens: tokens, Rows: rowsAfter(len(tokens), at, pr.Rows)}, nil
}
