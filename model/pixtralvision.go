package model

// Mistral 3.1's image encoder: a Pixtral vision tower and Mistral 3's
// projector (transformers' PixtralVisionModel and
// Mistral3MultiModalProjector; llama.cpp's clip_graph_pixtral with
// PROJECTOR_TYPE_PIXTRAL). The image keeps its aspect ratio: for pixels P
// [3][h][w] with patch p there are n = (h/p)·(w/p) patches of width d,
// patch i at row r_i, column c_i of the grid:
//
//	x₀[i]   = RMSNorm(W_patch · patch_i(P))                   (the stride-p conv, no bias; ln_pre)
//	x'      = x + Attn(RoPE₂(Q·N₁(x)), RoPE₂(K·N₁(x)), V·N₁(x))
//	x″      = x' + Down·(act(Gate·N₂(x')) ⊙ Up·N₂(x'))        (N₁, N₂ RMSNorm)
//	u       = RMSNorm(x_L) ⊙ w_in                             [n][d]
//	v[t]    = W_merge · (u of the m×m patches of token t)     [(h/p/m)·(w/p/m)][d]
//	feature = W₂ · gelu(W₁ · v)                               [tokens][d_text]
//
// RoPE₂ rotates the first half of each head's rotation pairs by the
// patch's row and the second half by its column, with the even and the
// odd frequencies θ^(−2k/D) of a head of width D respectively. The m×m
// patches of a token are concatenated channel-major (channel, then row
// and column within the block: torch's unfold). In the prompt the image's
// tokens run row by row, an [IMG_BREAK] after each row but the last,
// which has [IMG_END].

import (
	"errors"
	"fmt"
	"io/fs"
	"math"

	spec "github.com/tfconv/tfconv/arch"
	"github.com/tfconv/tfconv/checkpoint"
	"github.com/tfconv/tfconv/kernels"
	"github.com/tfconv/tfconv/tensor"
	"github.com/tfconv/tfconv/tokenizer"
	"github.com/tfconv/tfconv/vision"
)

// mtmd's bounds of a pixtral image in merged tokens (clip.cpp:
// set_limit_image_tokens(8, 1024)); its area in pixels is that times
// (patch·merge)².
const (
	pixtralMinTokens = 8
	pixtralMaxTokens = 1024
)

// pixtralBreakTensor is mtmd's [IMG_BREAK] embedding in a pixtral mmproj
// (clip-impl.h's TN_TOK_IMG_BREAK): llama.cpp's converter means to copy
// the text model's row into it, but d32676d7 drops it for transformers'
// checkpoints (testdata/vision/tools/gen_mtmd_pixtral.py says why). GGUF
// only; when absent the text model's own [IMG_BREAK] token stands in (the
// same row).
const pixtralBreakTensor = "v.token_embd.img_break"

// pixtralVision is the pixtral projector type's encoder.
type pixtralVision struct {
	v *Vision
	// merge is spatial_merge_size (m); 1 without a patch merger.
	merge int
	// longest is transformers' size.longest_edge.
	longest int
	theta   float64 // the tower's RoPE base
	// projEps is the projector's RMSNorm's (text_config.rms_norm_eps in
	// transformers, the tower's eps in llama.cpp); projAct its GELU.
	projEps float32
	projAct string
	// layers are the tower layers whose output the projector reads
	// (vision_feature_layer).
	layers int
	// texts are the processor's image, break and end tokens.
	imgText, breakText, endText string
	w                           pixtralWeights
}

// pixtralWeights are the tower's and projector's tensors.
type pixtralWeights struct {
	Patch  *kernels.Matrix // [d][3·p·p], the conv kernel flattened (c, y, x)
	Pre    norm            // ln_pre, RMSNorm [d]
	Blocks []vitBlock
	In     norm            // the projector's RMSNorm [d]; W nil without a merger
	Merger *kernels.Matrix // [d][m²·d], nil when m = 1
	Up     linear          // linear_1 (mm.1) [d_text][d]
	Down   linear          // linear_2 (mm.2) [d_text][d_text]
	Break  []float32       // [d_text], the mmproj's [IMG_BREAK] row, nil without
}

// pixtralFromHF reads config.json (vision_config, spatial_merge_size,
// image_token_index, text_config), preprocessor_config.json and
// processor_config.json.
func pixtralFromHF(v *Vision, c *checkpoint.Checkpoint, top spec.Config) (encoder, error) {
	vc, ok := top.Map(v.proj.Encoder)
	if !ok {
		return nil, fmt.Errorf("model: %s: config.json has no %s", c.Path, v.proj.Encoder)
	}
	text, ok := top.Map("text_config")
	if !ok {
		return nil, fmt.Errorf("model: %s: config.json has no text_config", c.Path)
	}
	cfg := VisionConfig{Projector: "pixtral", Image: -1, BOI: -1, EOI: -1}
	g := &pixtralVision{v: v, imgText: "[IMG]", breakText: "[IMG_BREAK]", endText: "[IMG_END]"}
	var merge int
	// PixtralVisionConfig's, Mistral3Config's and MistralConfig's defaults;
	// the image token may be 0 or −1 (an id the checkpoint leaves out).
	image := idInt(&cfg.Image, top, 10, "image_token_index")
	image.lo = -1
	if err := readConfigInts(c.Path,
		dimInt(&cfg.ImageSize, vc, 1024, "image_size"), dimInt(&cfg.PatchSize, vc, 16, "patch_size"),
		dimInt(&cfg.DModel, vc, 1024, "hidden_size"), dimInt(&cfg.Layers, vc, 24, "num_hidden_layers"),
		dimInt(&cfg.Heads, vc, 16, "num_attention_heads"), dimInt(&cfg.FFN, vc, 4096, "intermediate_size"),
		dimInt(&merge, top, 2, "spatial_merge_size"), image, dimInt(&cfg.TextDModel, text, 4096, "hidden_size")); err != nil {
		return nil, err
	}
	cfg.BOI = cfg.Image // the placeholder is [IMG] itself
	if D, ok := vc.Int("head_dim"); ok && cfg.Heads > 0 && D != int64(cfg.DModel/cfg.Heads) {
		// PixtralAttention splits hidden_size by the heads whatever head_dim says.
		return nil, tensor.Unsupported("model: %s: vision_config.head_dim %d is not hidden_size/num_attention_heads", c.Path, D)
	}
	if n, ok := vc.Int("num_channels"); ok && n != 3 {
		return nil, tensor.Unsupported("model: %s: vision_config.num_channels %d (only RGB towers run)", c.Path, n)
	}
	// modeling_pixtral's RMSNorms take 1e-5 whatever the config says.
	cfg.Eps = 1e-5
	act, _ := vc["hidden_act"].(string)
	if act == "" {
		act = "gelu"
	}
	var err error
	if cfg.Activation, err = hfActivation(act); err != nil {
		return nil, err
	}
	pact, _ := top["projector_hidden_act"].(string)
	if pact == "" {
		pact = "gelu"
	}
	if g.projAct, err = hfActivation(pact); err != nil {
		return nil, err
	}
	g.theta = 10000
	if th, ok := vc.Float("rope_theta"); ok {
		g.theta = th
	}
	eps, ok := text.Float("rms_norm_eps")
	if !ok {
		eps = 1e-6
	}
	g.projEps = float32(eps)
	g.layers = cfg.Layers
	if fl, present := top["vision_feature_layer"]; present {
		n, ok := top.Int("vision_feature_layer")
		if !ok {
			return nil, tensor.Unsupported("model: %s: config.json: vision_feature_layer %v (a list of layers is not run)", c.Path, fl)
		}
		// hidden_states[n]: the embeddings are 0, layer i is i+1.
		if n < 0 {
			n += int64(cfg.Layers) + 1
		}
		if n < 1 || n > int64(cfg.Layers) {
			return nil, tensor.Unsupported("model: %s: config.json: vision_feature_layer %v of %d layers", c.Path, fl, cfg.Layers)
		}
		g.layers = int(n)
	}
	cfg.Mean = [3]float32{0.48145466, 0.4578275, 0.40821073} // PixtralImageProcessor's defaults (CLIP's)
	cfg.Std = [3]float32{0.26862954, 0.26130258, 0.27577711}
	g.longest = 1024
	pre, err := c.ReadAux("preprocessor_config.json")
	switch {
	case err == nil:
		var p spec.Config
		if err := decodeJSON(pre, &p); err != nil {
			return nil, fmt.Errorf("model: %s: preprocessor_config.json: %w", c.Path, err)
		}
		for key, dst := range map[string]*[3]float32{"image_mean": &cfg.Mean, "image_std": &cfg.Std} {
			if err := threeFloats(dst, p[key]); err != nil {
				return nil, fmt.Errorf("model: %s: preprocessor_config.json: %s: %w", c.Path, key, err)
			}
		}
		if sz, ok := p.Map("size"); ok {
			n, ok := sz.Int("longest_edge")
			if !ok || n <= 0 || n > maxVisionDim {
				return nil, tensor.Unsupported("model: %s: preprocessor_config.json: size %v (tfconv runs longest_edge)", c.Path, p["size"])
			}
			g.longest = int(n)
		}
		if r, ok := p.Int("resample"); ok && r != 3 {
			return nil, tensor.Unsupported("model: %s: preprocessor_config.json: resample %d (tfconv runs 3, bicubic)", c.Path, r)
		}
		for _, key := range []string{"do_resize", "do_rescale", "do_normalize"} {
			if b, ok := p[key].(bool); ok && !b {
				return nil, tensor.Unsupported("model: %s: preprocessor_config.json: %s false", c.Path, key)
			}
		}
		if f, ok := p.Float("rescale_factor"); ok && math.Abs(f-1.0/255) > 1e-12 {
			return nil, tensor.Unsupported("model: %s: preprocessor_config.json: rescale_factor %g (tfconv runs 1/255)", c.Path, f)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("model: %s: %w", c.Path, err)
	}
	if raw, err := c.ReadAux("processor_config.json"); err == nil {
		var p spec.Config
		if err := decodeJSON(raw, &p); err != nil {
			return nil, fmt.Errorf("model: %s: processor_config.json: %w", c.Path, err)
		}
		for key, dst := range map[string]*string{"image_token": &g.imgText, "image_break_token": &g.breakText, "image_end_token": &g.endText} {
			if s, ok := p[key].(string); ok && s != "" {
				*dst = s
			}
		}
		if n, ok := p.Int("spatial_merge_size"); ok && n != int64(merge) {
			return nil, fmt.Errorf("model: %s: processor_config.json: spatial_merge_size %d, config.json %d", c.Path, n, merge)
		}
		if n, ok := p.Int("patch_size"); ok && n != int64(cfg.PatchSize) {
			return nil, fmt.Errorf("model: %s: processor_config.json: patch_size %d, vision_config %d", c.Path, n, cfg.PatchSize)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("model: %s: %w", c.Path, err)
	}
	g.merge = merge
	if err := g.check(c.Path, &cfg); err != nil {
		return nil, err
	}
	v.cfg = cfg
	return g, nil
}

// pixtralFromGGUF reads an mmproj GGUF's clip.* keys (llama.cpp's clip.cpp
// fixes the RoPE base at 10000 and the projection's GELU).
func pixtralFromGGUF(v *Vision, md tensor.Metadata) (encoder, error) {
	cfg := VisionConfig{Projector: "pixtral", Image: -1, BOI: -1, EOI: -1}
	if err := clipTower(v.Path, md, &cfg, 1e-5, map[string]*int{"clip.vision.image_size": &cfg.ImageSize,
		"clip.vision.projection_dim": &cfg.TextDModel}); err != nil {
		return nil, err
	}
	g := &pixtralVision{v: v, merge: 1, theta: 10000, layers: cfg.Layers, imgText: "[IMG]", breakText: "[IMG_BREAK]", endText: "[IMG_END]"}
	if n, ok := md.Int("clip.vision.spatial_merge_size"); ok {
		if n <= 0 || n > maxVisionDim {
			return nil, fmt.Errorf("model: %s: GGUF key clip.vision.spatial_merge_size = %d", v.Path, n)
		}
		g.merge = int(n)
	}
	g.projEps = cfg.Eps // clip_graph's eps, the tower's
	g.projAct = "gelu_tanh"
	// clip.cpp: use_gelu → ggml's GELU (the tanh form), else use_silu →
	// SiLU, else quick GELU (which no pixtral checkpoint states).
	flag := func(key string) bool {
		b, ok := md.Get(key)
		on, _ := b.BoolValue()
		return ok && on
	}
	switch {
	case flag("clip.use_gelu"):
		cfg.Activation = "gelu_tanh"
	case flag("clip.use_silu"):
		cfg.Activation = "silu"
	default:
		return nil, tensor.Unsupported("model: %s: neither clip.use_gelu nor clip.use_silu: llama.cpp would run the pixtral tower's MLP with quick GELU, which tfconv does not", v.Path)
	}
	if err := ggufMeanStd(v.Path, md, &cfg); err != nil {
		return nil, err
	}
	g.longest = cfg.ImageSize // transformers' longest_edge is the tower's image_size in Mistral's configs
	if err := g.check(v.Path, &cfg); err != nil {
		return nil, err
	}
	v.cfg = cfg
	return g, nil
}

// check bounds the sizes before any allocation.
func (g *pixtralVision) check(path string, c *VisionConfig) error {
	for _, x := range []struct {
		name string
		n    int
	}{{"image_size", c.ImageSize}, {"patch_size", c.PatchSize}, {"hidden_size", c.DModel}, {"layers", c.Layers},
		{"heads", c.Heads}, {"intermediate_size", c.FFN}, {"text hidden_size", c.TextDModel}, {"spatial_merge_size", g.merge}} {
		if x.n <= 0 || x.n > maxVisionDim {
			return fmt.Errorf("model: %s: vision %s %d out of range", path, x.name, x.n)
		}
	}
	if c.DModel%c.Heads != 0 || (c.DModel/c.Heads)%4 != 0 {
		return fmt.Errorf("model: %s: vision hidden_size %d over %d heads: the 2-D RoPE needs a head width divisible by 4", path, c.DModel, c.Heads)
	}
	if g.merge*g.merge*c.DModel > maxVisionDim*16 {
		return fmt.Errorf("model: %s: spatial_merge_size %d too large", path, g.merge)
	}
	return nil
}

func (g *pixtralVision) load(l *loader) {
	v, w := g.v, &g.w
	c := &v.cfg
	d, p, F, m := c.DModel, c.PatchSize, c.FFN, g.merge
	kernel := l.shaped(v.name(l, "v.patch_embd", 0, ".weight"), tensor.Shape{int64(d), 3, int64(p), int64(p)})
	if kernel != nil {
		if v.matchLlamaCpp {
			w.Patch = v.patchF16(l, kernel, d, 3*p*p)
		} else {
			w.Patch = kernels.F32Matrix(d, 3*p*p, kernel)
			l.mats = append(l.mats, w.Patch)
		}
	}
	if v.matchLlamaCpp && c.Activation == "gelu_tanh" {
		c.Activation = "gelu_ggml"
	}
	if v.matchLlamaCpp && g.projAct == "gelu_tanh" {
		g.projAct = "gelu_ggml"
	}
	w.Pre = norm{W: l.vector(v.name(l, "v.pre_ln", 0, ".weight"), d), Eps: c.Eps, RMS: true}
	w.Blocks = make([]vitBlock, g.layers)
	for i := range w.Blocks {
		b := v.loadVitBlock(l, i, d, F, c.Eps)
		b.LN1.RMS, b.LN2.RMS = true, true
		b.Gate = linear{W: l.matrix(v.name(l, "v.blk.{bid}.ffn_gate", i, ".weight"), F, d), B: l.optVector(v.name(l, "v.blk.{bid}.ffn_gate", i, ".bias"), F)}
		w.Blocks[i] = b
	}
	if merger := v.name(l, "mm.patch_merger", 0, ".weight"); m > 1 || l.has(merger) {
		w.In = norm{W: l.vector(v.name(l, "mm.input_norm", 0, ".weight"), d), Eps: g.projEps, RMS: true}
		w.Merger = l.matrix(merger, d, m*m*d)
	}
	T := c.TextDModel
	w.Up = linear{W: l.matrix(v.name(l, "mm.1", 0, ".weight"), T, d), B: l.optVector(v.name(l, "mm.1", 0, ".bias"), T)}
	w.Down = linear{W: l.matrix(v.name(l, "mm.2", 0, ".weight"), T, T), B: l.optVector(v.name(l, "mm.2", 0, ".bias"), T)}
	if v.GGUF && l.has(pixtralBreakTensor) {
		w.Break = l.vector(pixtralBreakTensor, T)
	}
}

// prepare resizes the image as method m's reference does (no tiles). Grid
// is the merged tokens down and across, and 1 when the image's rows carry
// the mmproj's [IMG_BREAK] row between them as mtmd's image chunk does.
func (g *pixtralVision) prepare(img *vision.Image, m vision.Method) (*Prepared, error) {
	c := &g.v.cfg
	u := c.PatchSize * g.merge
	pp := vision.Pixtral{Unit: u, LongestEdge: g.longest, MinPixels: pixtralMinTokens * u * u,
		MaxPixels: pixtralMaxTokens * u * u, Mean: c.Mean, Std: c.Std, Method: m}
	px, w, h, err := pp.Pixels(img)
	if err != nil {
		return nil, fmt.Errorf("model: %s: %w", g.v.Path, err)
	}
	gh, gw := h/u, w/u
	inter := 0
	rows := gh * gw
	if m == vision.Mtmd && g.w.Break != nil {
		inter = 1
		rows += gh - 1
	}
	return &Prepared{Pixels: px, Tiles: [][2]int{{h, w}}, Rows: rows, Grid: []int{gh, gw, inter}}, nil
}

// encode runs the tower and projector over the one image.
func (g *pixtralVision) encode(pr *Prepared, states *[][]float32) ([]float32, error) {
	c, w := &g.v.cfg, &g.w
	p, d, m := c.PatchSize, c.DModel, g.merge
	if len(pr.Tiles) != 1 || len(pr.Grid) != 3 {
		return nil, errors.New("model: vision: the pixtral tower reads one image")
	}
	h, wd := pr.Tiles[0][0], pr.Tiles[0][1]
	if h <= 0 || wd <= 0 || h%(p*m) != 0 || wd%(p*m) != 0 || h > 1<<15 || wd > 1<<15 || len(pr.Pixels) != 3*h*wd {
		return nil, fmt.Errorf("model: vision: a %d×%d image (%d values) is not in whole %d-pixel tokens", wd, h, len(pr.Pixels), p*m)
	}
	ph, pw := h/p, wd/p
	n := ph * pw
	x := make([]float32, n*d)
	kernels.MatMul(x, unfoldPatches(pr.Pixels, h, wd, p), n, w.Patch)
	w.Pre.apply(x, x, n, d)
	record := func() {
		if states != nil {
			*states = append(*states, append([]float32(nil), x...))
		}
	}
	record()
	sc := newVitScratch(n, d, c.FFN)
	att := vitAttn{Rope: g.rope(ph, pw, d/c.Heads, c.Heads)}
	for i := range w.Blocks {
		if err := w.Blocks[i].forward(x, n, d, c.Heads, c.Activation, att, sc); err != nil {
			return nil, err
		}
		record()
	}
	gh, gw := ph/m, pw/m
	T := gh * gw
	v := x
	if w.Merger != nil {
		u := make([]float32, n*d)
		w.In.apply(u, x, n, d)
		// Each token's m×m patches, channel-major: (channel, row, column).
		blocks := make([]float32, T*m*m*d)
		for ty := 0; ty < gh; ty++ {
			for tx := 0; tx < gw; tx++ {
				dst := blocks[(ty*gw+tx)*m*m*d:]
				for ky := 0; ky < m; ky++ {
					for kx := 0; kx < m; kx++ {
						src := u[((ty*m+ky)*pw+tx*m+kx)*d:]
						for ch := 0; ch < d; ch++ {
							dst[ch*m*m+ky*m+kx] = src[ch]
						}
					}
				}
			}
		}
		v = make([]float32, T*d)
		kernels.MatMul(v, blocks, T, w.Merger)
	}
	dt := c.TextDModel
	hid := make([]float32, T*dt)
	w.Up.apply(hid, v, T)
	if err := activate(hid, g.projAct); err != nil {
		return nil, err
	}
	feat := make([]float32, T*dt)
	w.Down.apply(feat, hid, T)
	if pr.Grid[2] == 0 {
		return feat, nil
	}
	if w.Break == nil {
		return nil, errors.New("model: vision: the mmproj has no [IMG_BREAK] row")
	}
	// mtmd's image chunk: each row of tokens, then [IMG_BREAK] but after the last.
	out := make([]float32, 0, (T+gh-1)*dt)
	for ty := 0; ty < gh; ty++ {
		out = append(out, feat[ty*gw*dt:(ty+1)*gw*dt]...)
		if ty < gh-1 {
			out = append(out, w.Break...)
		}
	}
	return out, nil
}

// rope is the tower's 2-D RoPE over a ph×pw patch grid for heads of
// width D. transformers rotates dimension j with j + D/2 (rotate_half),
// the first D/4 pairs by the row with the even frequencies, the next D/4
// by the column with the odd ones; llama.cpp's converter permutes Q's and
// K's rows so that those pairs sit side by side (2j, 2j+1) and ggml rotates
// each half of the head with its own positions (build_rope_2d).
func (g *pixtralVision) rope(ph, pw, D, H int) func(q, k []float32, n int) {
	half, quarter := D/2, D/4
	cos := make([]float32, ph*pw*half)
	sin := make([]float32, ph*pw*half)
	for r := 0; r < ph; r++ {
		for col := 0; col < pw; col++ {
			cs, sn := cos[(r*pw+col)*half:][:half], sin[(r*pw+col)*half:][:half]
			if g.v.GGUF {
				// ggml_rope_ext over D/2 dimensions: θ = pos·s^i with
				// s = base^(−2/(D/2)) multiplied up in float32; the column
				// half scaled by base^(−2/D).
				s := float32(math.Pow(g.theta, float64(float32(-2)/float32(half))))
				odd := float32(math.Pow(g.theta, float64(float32(-2)/float32(D))))
				th, tw := float32(r), float32(col)
				for i := 0; i < quarter; i++ {
					a, b := th, odd*tw
					cs[i], sn[i] = float32(math.Cos(float64(a))), float32(math.Sin(float64(a)))
					cs[quarter+i], sn[quarter+i] = float32(math.Cos(float64(b))), float32(math.Sin(float64(b)))
					th *= s
					tw *= s
				}
				continue
			}
			// PixtralRotaryEmbedding: inv_freq[k] = 1/θ^(2k/D) in float32.
			for i := 0; i < half; i++ {
				k, pos := 2*(i%quarter), r
				if i >= quarter {
					k, pos = k+1, col
				}
				f := 1 / float32(math.Pow(g.theta, float64(float32(2*k)/float32(D))))
				a := float32(float32(pos) * f)
				cs[i], sn[i] = float32(math.Cos(float64(a))), float32(math.Sin(float64(a)))
			}
		}
	}
	gguf := g.v.GGUF
	rot := func(x []float32, n int) {
		for t := 0; t < n; t++ {
			cs, sn := cos[t*half:][:half], sin[t*half:][:half]
			for hd := 0; hd < H; hd++ {
				row := x[(t*H+hd)*D:][:D]
				for i := 0; i < half; i++ {
					a, b := 2*i, 2*i+1
					if !gguf {
						a, b = i, i+half
					}
					x0, x1 := row[a], row[b]
					row[a] = float32(x0*cs[i]) - float32(x1*sn[i])
					row[b] = float32(x0*sn[i]) + float32(x1*cs[i])
				}
			}
		}
	}
	return func(q, k []float32, n int) {
		rot(q, n)
		rot(k, n)
	}
}

// prompt expands the placeholder [IMG] to the image's rows: [IMG] per
// token, [IMG_BREAK] after each row, [IMG_END] for the last row's
// (PixtralProcessor's expansion, the whole text then tokenized with the
// special tokens split out). mtmd gives the same sequence: its image chunk
// holds the rows with the mmproj's [IMG_BREAK] row between them, then
// "[IMG_END]" opens the text after the image; with an mmproj without that
// row the text model's [IMG_BREAK] token (the same embedding) stands in.
func (g *pixtralVision) prompt(m *Model, p ImagePrompt, pr *Prepared) (*imageSpan, error) {
	t := m.Tokenizer()
	img := g.v.cfg.Image
	id := func(piece string) (int, error) {
		if t != nil {
			if x, ok := t.ID(piece); ok {
				return x, nil
			}
		}
		return 0, fmt.Errorf("model: %s: the vocabulary has no %s", m.Path, piece)
	}
	var err error
	if img < 0 {
		if img, err = id(g.imgText); err != nil {
			return nil, err
		}
	}
	brk, err := id(g.breakText)
	if err != nil {
		return nil, err
	}
	end, err := id(g.endText)
	if err != nil {
		return nil, err
	}
	gh, gw, inter := pr.Grid[0], pr.Grid[1], pr.Grid[2] == 1
	var seq, rows []int
	r := 0
	for ty := 0; ty < gh; ty++ {
		for tx := 0; tx < gw; tx++ {
			seq, rows = append(seq, img), append(rows, r)
			r++
		}
		switch {
		case ty == gh-1:
			seq, rows = append(seq, end), append(rows, -1)
		case inter:
			seq, rows = append(seq, brk), append(rows, r)
			r++
		default:
			seq, rows = append(seq, brk), append(rows, -1)
		}
	}
	var head, tail []int
	if p.Tokens != nil {
		at := -1
		for i, x := range p.Tokens {
			if x == img {
				at = i
				break
			}
		}
		if _, err := splicePlaceholder(p.Tokens, img, g.imgText, nil); err != nil {
			return nil, err
		}
		head, tail = p.Tokens[:at], p.Tokens[at+1:]
	} else {
		if t == nil {
			return nil, fmt.Errorf("model: %s carries no tokenizer (give the tokens)", m.Path)
		}
		before, after, err := cutMarker(p.Text, g.imgText)
		if err != nil {
			return nil, err
		}
		if head, err = t.Encode(before, tokenizer.EncodeOptions{AddSpecial: true, ParseSpecial: true}); err != nil {
			return nil, err
		}
		if tail, err = t.Encode(after, tokenizer.EncodeOptions{ParseSpecial: true}); err != nil {
			return nil, err
		}
	}
	span := &imageSpan{Tokens: append(append(append([]int(nil), head...), seq...), tail...)}
	span.Rows = make([]int, len(span.Tokens))
	for i := range span.Rows {
		span.Rows[i] = -1
	}
	copy(span.Rows[len(head):], rows)
	return span, nil
}
