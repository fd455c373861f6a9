package model

// SmolVLM's image encoder (Idefics3ForConditionalGeneration:
// transformers' Idefics3VisionTransformer and Idefics3Connector; llama.cpp's
// clip_graph_siglip with PROJECTOR_TYPE_IDEFICS3). The image becomes
// rows × cols tiles and the whole image (vision.Idefics3), each S×S with
// patch p, n = (S/p)² patches of width d, scale factor s:
//
//	x₀[i]   = W_patch · patch_i(P) + b_patch + pos[i]
//	x_L     = L pre-norm blocks (LayerNorm, GELU-tanh MLP), all patches to all
//	v       = LN_post(x_L)                                     [S/p][S/p][d]
//	u[Y][X] = concat over (a, b) in s×s of v[Y·s+a][X·s+b]      [(S/p/s)²][s²·d]  (pixel shuffle)
//	feature = W_fc · u                                          [(S/p/s)²][d_text]
//
// Each tile's features take its run of <image> tokens in the prompt, in
// the tiles' order (the whole image last).

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"strings"

	spec "github.com/tfconv/tfconv/arch"
	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/kernels"
	"github.com/tfconv/tfconv/tensor"
	"github.com/tfconv/tfconv/tokenizer"
	"github.com/tfconv/tfconv/vision"
)

// idefics3Vision is the idefics3 projector type's encoder.
type idefics3Vision struct {
	v     *Vision
	pre   vision.Idefics3 // Method set per call
	scale int             // s: the pixel shuffle's factor
	w     struct {
		Patch  *kernels.Matrix // [d][3·p·p]
		PatchB []float32       // [d]
		Pos    []float32       // [n][d]
		Blocks []vitBlock
		Post   norm
		FC     *kernels.Matrix // [d_text][s²·d]
	}
	// pos is each patch's row of Pos (nil: patch i takes row i).
	pos []int
}

// idefics3Positions are the position-embedding rows transformers v4.57.6
// gives the patches of a whole tile of side × side patches
// (Idefics3VisionEmbeddings): coordinate i/side·(1 − 1e-6) in float32,
// bucketized against the boundaries 1/side, 2/side, … (right=True) — so
// patch i of a row takes row i − 1 (i ≥ 1) of the table, the last row
// unused. llama.cpp's graph takes row i for patch i.
func idefics3Positions(side int) []int {
	bounds := make([]float32, 0, side)
	step := 1 / float64(side)
	for k := 0; ; k++ {
		b := step + float64(k)*step
		if b >= 1 {
			break
		}
		bounds = append(bounds, float32(b))
	}
	bucket := make([]int, side)
	for i := range bucket {
		f := float32(float32(i)/float32(side)) * float32(1-1e-6)
		for _, b := range bounds {
			if b <= f {
				bucket[i]++
			}
		}
	}
	pos := make([]int, side*side)
	for h := 0; h < side; h++ {
		for w := 0; w < side; w++ {
			pos[h*side+w] = bucket[h]*side + bucket[w]
		}
	}
	return pos
}

// idefics3FromHF reads vision_config, scale_factor, image_token_id and
// text_config.hidden_size from config.json, the processor's sizes from
// preprocessor_config.json and image_seq_len from processor_config.json.
func idefics3FromHF(v *Vision, c *checkpoint.Checkpoint, top spec.Config) (encoder, error) {
	vc, ok := top.Map(v.proj.Encoder)
	if !ok {
		return nil, fmt.Errorf("model: %s: config.json has no %s", c.Path, v.proj.Encoder)
	}
	cfg := VisionConfig{Projector: "idefics3", BOI: -1, EOI: -1}
	e := &idefics3Vision{v: v}
	// Idefics3VisionConfig's and Idefics3Config's defaults.
	if err := readConfigInts(c.Path,
		dimInt(&cfg.ImageSize, vc, 224, "image_size"), dimInt(&cfg.PatchSize, vc, 32, "patch_size"),
		dimInt(&cfg.DModel, vc, 1152, "hidden_size"), dimInt(&cfg.Layers, vc, 12, "num_hidden_layers"),
		dimInt(&cfg.Heads, vc, 16, "num_attention_heads"), dimInt(&cfg.FFN, vc, 3072, "intermediate_size"),
		dimInt(&e.scale, top, 2, "scale_factor"), idInt(&cfg.Image, top, 128257, "image_token_id")); err != nil {
		return nil, err
	}
	text, _ := top.Map("text_config")
	d, ok := text.Int("hidden_size")
	if !ok || d <= 0 || d > maxVisionDim {
		return nil, fmt.Errorf("model: %s: config.json: text_config.hidden_size missing or out of range", c.Path)
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
	var err error
	if cfg.Activation, err = hfActivation(act); err != nil {
		return nil, err
	}
	if n, ok := vc.Int("num_channels"); ok && n != 3 {
		return nil, tensor.Unsupported("model: %s: vision_config.num_channels %d (only RGB towers run)", c.Path, n)
	}
	// Idefics3ImageProcessor's defaults.
	e.pre = vision.Idefics3{LongestEdge: 4 * 364, Tile: 364, Split: true, Filter: vision.PILLanczos,
		Mean: [3]float32{0.5, 0.5, 0.5}, Std: [3]float32{0.5, 0.5, 0.5}}
	seqLen := int64(169)
	pre, err := c.ReadAux("preprocessor_config.json")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("model: %s: %w", c.Path, err)
	}
	if err == nil {
		var p spec.Config
		if err := decodeJSON(pre, &p); err != nil {
			return nil, fmt.Errorf("model: %s: preprocessor_config.json: %w", c.Path, err)
		}
		if err := idefics3Preprocessor(&e.pre, p); err != nil {
			return nil, fmt.Errorf("model: %s: preprocessor_config.json: %w", c.Path, err)
		}
	}
	if raw, err := c.ReadAux("processor_config.json"); err == nil {
		var p spec.Config
		if err := decodeJSON(raw, &p); err != nil {
			return nil, fmt.Errorf("model: %s: processor_config.json: %w", c.Path, err)
		}
		if n, ok := p.Int("image_seq_len"); ok {
			seqLen = n
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("model: %s: %w", c.Path, err)
	}
	cfg.Mean, cfg.Std = e.pre.Mean, e.pre.Std
	if e.pre.Tile != cfg.ImageSize {
		return nil, tensor.Unsupported("model: %s: preprocessor_config.json: max_image_size.longest_edge %d is not the tower's image_size %d (tfconv runs whole tiles)", c.Path, e.pre.Tile, cfg.ImageSize)
	}
	if err := e.derive(c.Path, &cfg); err != nil {
		return nil, err
	}
	if int64(cfg.Tokens) != seqLen {
		return nil, fmt.Errorf("model: %s: processor_config.json: image_seq_len %d, the tower gives %d rows a tile", c.Path, seqLen, cfg.Tokens)
	}
	v.cfg = cfg
	return e, nil
}

// idefics3Preprocessor reads Idefics3ImageProcessor's settings into p;
// what tfconv does not reproduce is refused.
func idefics3Preprocessor(p *vision.Idefics3, c spec.Config) error {
	for _, key := range []string{"do_resize", "do_rescale", "do_normalize"} {
		if b, ok := c[key].(bool); ok && !b {
			return tensor.Unsupported("%s false is not run by tfconv", key)
		}
	}
	if f, ok := c.Float("rescale_factor"); ok && math.Abs(f-1.0/255) > 1e-12 {
		return tensor.Unsupported("rescale_factor %g (tfconv rescales by 1/255)", f)
	}
	if b, ok := c["do_image_splitting"].(bool); ok {
		p.Split = b
	}
	if n, ok := c.Int("resample"); ok {
		f, err := vision.ParsePILFilter(n)
		if err != nil {
			return err
		}
		p.Filter = f
	}
	for _, x := range []struct {
		obj string
		dst *int
	}{{"size", &p.LongestEdge}, {"max_image_size", &p.Tile}} {
		m, ok := c.Map(x.obj)
		if !ok {
			continue
		}
		n, ok := m.Int("longest_edge")
		if !ok || n <= 0 || n > 4096 {
			return tensor.Unsupported("%s: a longest_edge of 1 to 4096 is what tfconv reads", x.obj)
		}
		*x.dst = int(n)
	}
	for key, dst := range map[string]*[3]float32{"image_mean": &p.Mean, "image_std": &p.Std} {
		if err := threeFloats(dst, c[key]); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
	}
	return nil
}

// derive checks the sizes and sets the rows a tile gives.
func (e *idefics3Vision) derive(path string, c *VisionConfig) error {
	if err := shuffleTokens(path, c, e.scale); err != nil {
		return err
	}
	e.pre.Tile = c.ImageSize
	e.pre.Mean, e.pre.Std = c.Mean, c.Std
	return nil
}

// idefics3FromGGUF reads an mmproj GGUF's clip.* keys.
func idefics3FromGGUF(v *Vision, md tensor.Metadata) (encoder, error) {
	cfg := VisionConfig{Projector: "idefics3", Image: -1, BOI: -1, EOI: -1}
	e := &idefics3Vision{v: v}
	if err := clipTower(v.Path, md, &cfg, 1e-6, map[string]*int{"clip.vision.image_size": &cfg.ImageSize,
		"clip.vision.projection_dim": &cfg.TextDModel, "clip.vision.projector.scale_factor": &e.scale,
	}); err != nil {
		return nil, err
	}
	// mtmd reads clip.vision.preproc_image_size when present; without it
	// the image is not sliced (the whole image alone).
	if n, ok := md.Int("clip.vision.preproc_image_size"); ok {
		if n <= 0 || n > 4096 {
			return nil, fmt.Errorf("model: %s: GGUF key clip.vision.preproc_image_size = %d", v.Path, n)
		}
		e.pre.LongestEdge = int(n)
	}
	cfg.Activation = "gelu_tanh"
	if g, ok := md.Get("clip.use_gelu"); ok {
		if b, _ := g.BoolValue(); !b {
			return nil, tensor.Unsupported("model: %s: clip.use_gelu false (the idefics3 tower's MLP is GELU)", v.Path)
		}
	}
	if err := ggufMeanStd(v.Path, md, &cfg); err != nil {
		return nil, err
	}
	e.pre.Split = true
	if err := e.derive(v.Path, &cfg); err != nil {
		return nil, err
	}
	v.cfg = cfg
	return e, nil
}

func (e *idefics3Vision) load(l *loader) {
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
	if v.matchLlamaCpp {
		c.Activation = "gelu_ggml"
	}
	w.PatchB = l.vector(v.name(l, "v.patch_embd", 0, ".bias"), d)
	w.Pos = l.shaped(v.name(l, "v.position_embd", 0, ".weight"), tensor.Shape{int64(n), int64(d)})
	w.Blocks = make([]vitBlock, c.Layers)
	for i := range w.Blocks {
		w.Blocks[i] = v.loadVitBlock(l, i, d, c.FFN, c.Eps)
	}
	w.Post = norm{W: l.vector(v.name(l, "v.post_ln", 0, ".weight"), d), B: l.vector(v.name(l, "v.post_ln", 0, ".bias"), d), Eps: c.Eps}
	if !v.GGUF {
		e.pos = idefics3Positions(c.ImageSize / p)
	}
	w.FC = l.matrix(v.name(l, "mm.model.fc", 0, ".weight"), c.TextDModel, e.scale*e.scale*d)
}

// prepare cuts the image into tiles and the whole image; Grid is rows,
// cols.
func (e *idefics3Vision) prepare(img *vision.Image, m vision.Method) (*Prepared, error) {
	p := e.pre
	p.Method = m
	tiles, rows, cols, err := p.Tiles(img)
	if err != nil {
		return nil, fmt.Errorf("model: %s: %w", e.v.Path, err)
	}
	pr := &Prepared{Grid: []int{rows, cols}, Rows: len(tiles) * e.v.cfg.Tokens}
	for _, t := range tiles {
		pr.Pixels = append(pr.Pixels, vision.Normalize(t, p.Mean, p.Std, m)...)
		pr.Tiles = append(pr.Tiles, [2]int{t.H, t.W})
	}
	return pr, nil
}

// encode runs the tower and connector over each tile in turn. states
// receives the first tile's hidden states.
func (e *idefics3Vision) encode(pr *Prepared, states *[][]float32) ([]float32, error) {
	c, w := &e.v.cfg, &e.w
	S, p, d, s := c.ImageSize, c.PatchSize, c.DModel, e.scale
	if len(pr.Pixels) != len(pr.Tiles)*3*S*S {
		return nil, fmt.Errorf("model: vision: the idefics3 tower reads 3×%d×%d tiles", S, S)
	}
	side := S / p
	n := side * side
	out := side / s
	T := out * out
	feat := make([]float32, 0, len(pr.Tiles)*T*c.TextDModel)
	x := make([]float32, n*d)
	u := make([]float32, T*s*s*d)
	f := make([]float32, T*c.TextDModel)
	sc := newVitScratch(n, d, c.FFN)
	for ti, hw := range pr.Tiles {
		if hw != [2]int{S, S} {
			return nil, fmt.Errorf("model: vision: tile %d is %d×%d, the idefics3 tower reads %d×%d", ti, hw[1], hw[0], S, S)
		}
		record := func() {
			if states != nil && ti == 0 {
				*states = append(*states, append([]float32(nil), x...))
			}
		}
		patches := unfoldPatches(pr.Pixels[ti*3*S*S:(ti+1)*3*S*S], S, S, p)
		embed := linear{W: w.Patch, B: w.PatchB}
		embed.apply(x, patches, n)
		if e.pos == nil {
			kernels.Add(x, w.Pos)
		} else {
			for i, r := range e.pos {
				kernels.Add(x[i*d:(i+1)*d], w.Pos[r*d:(r+1)*d])
			}
		}
		record()
		for i := range w.Blocks {
			if err := w.Blocks[i].forward(x, n, d, c.Heads, c.Activation, vitAttn{}, sc); err != nil {
				return nil, err
			}
			record()
		}
		w.Post.apply(x, x, n, d)
		record()
		pixelShuffle(u, x, side, s, d)
		kernels.MatMul(f, u, T, w.FC)
		feat = append(feat, f...)
	}
	return feat, nil
}

// idefics3Expansion is what the processor (and mtmd) put in the <image>
// placeholder's place for a rows × cols grid of tiles of n tokens each:
// per tile <fake_token_around_image><row_r_col_c> and n <image>, "\n"
// after each row, then "\n<fake_token_around_image><global-img>", n
// <image> and <fake_token_around_image> for the whole image (without the
// "\n" when the image is not split; mtmd puts "\n\n" before the whole
// image always).
func idefics3Expansion(rows, cols, n int, mtmd bool) string {
	const fake, img, global = "<fake_token_around_image>", "<image>", "<global-img>"
	var b strings.Builder
	for r := 1; r <= rows; r++ {
		for c := 1; c <= cols; c++ {
			fmt.Fprintf(&b, "%s<row_%d_col_%d>%s", fake, r, c, strings.Repeat(img, n))
		}
		b.WriteString("\n")
	}
	if rows > 0 || cols > 0 {
		b.WriteString("\n")
	} else if mtmd {
		b.WriteString("\n\n")
	}
	b.WriteString(fake + global + strings.Repeat(img, n) + fake)
	return b.String()
}

// prompt expands the placeholder as Idefics3Processor does. mtmd's
// chunks for idefics3 (mtmd.cpp: the slices with "<fake_token_around_image>
// <row_r_col_c>" before each, "\n" between rows, then "\n\n",
// <fake_token_around_image><global-img>, the whole image and
// <fake_token_around_image>) are the same ids, the text around the image
// tokenized on its own (BOS, where the vocabulary adds one, on the text
// before it).
func (e *idefics3Vision) prompt(m *Model, p ImagePrompt, pr *Prepared) (*imageSpan, error) {
	t := m.Tokenizer()
	if t == nil {
		return nil, fmt.Errorf("model: %s carries no tokenizer: the image's tokens cannot be spelled", m.Path)
	}
	imgID := e.v.cfg.Image
	if imgID < 0 {
		id, ok := t.ID("<image>")
		if !ok {
			return nil, fmt.Errorf("model: %s: the vocabulary has no <image>", m.Path)
		}
		imgID = id
	}
	if len(pr.Grid) != 2 {
		return nil, errors.New("model: idefics3: the prepared image has no grid")
	}
	exp, err := t.Encode(idefics3Expansion(pr.Grid[0], pr.Grid[1], e.v.cfg.Tokens, p.Method == vision.Mtmd), tokenizer.EncodeOptions{ParseSpecial: true})
	if err != nil {
		return nil, err
	}
	tokens, at, err := spliceExpansion(m, p, imgID, "<image>", exp)
	if err != nil {
		return nil, err
	}
	rows := featureRows(tokens, at, len(exp), imgID)
	next := 0
	for _, r := range rows {
		if r >= 0 {
			next++
		}
	}
	if next != pr.Rows {
		return nil, fmt.Errorf("model: %s: the expanded prompt holds %d <image> tokens for %d feature rows", m.Path, next, pr.Rows)
	}
	return &imageSpan{Tokens: tokens, Rows: rows}, nil
}
