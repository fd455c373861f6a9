package model

// Qwen2.5-VL's image encoder (transformers' Qwen2_5_VisionTransformer-
// PretrainedModel; llama.cpp's clip graph for PROJECTOR_TYPE_QWEN25VL). The
// processor resizes the image to gh×gw patches of p pixels (both multiples
// of the merge m) and lays the patches out in merge order: the m×m patches
// of one merged unit are consecutive. For n = gh·gw patches of width d:
//
//	x₀[i]   = W_patch · patch_i                 (the Conv3d over T equal frames)
//	x₀      = x₀ with its units in window order  (windows of w×w units)
//	x'      = x + Attn(RMS₁(x), RoPE₂(row, col))  (within each window, or all in full blocks)
//	x″      = x' + Down·(SiLU(Gate·RMS₂(x')) ⊙ Up·RMS₂(x'))
//	u       = RMS_q(x_L) as [n/m²][m²·d]          (a unit's patches side by side)
//	feature = mm₂ · GELU(mm₀ · u + b₀) + b₂       [n/m²][d_text], back in image order
//
// RoPE₂ rotates each head's first half by the patch's row and its second
// half by its column (neox pairs, θ 10000 over d/heads/2 dimensions).

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

// qwenVision is the qwen2.5vl_merger projector type's encoder.
type qwenVision struct {
	v *Vision
	// merge (m), temporal frames per patch (T), window side in pixels;
	// full[i]: block i attends over the whole image.
	merge, temporal, window int
	full                    []bool
	minPixels, maxPixels    int
	// fast: the folder names transformers' fast image processor
	// (Qwen2VLImageProcessorFast: torch's resize; vision.QwenVL.Fast).
	fast bool

	// v3: Qwen3-VL's tower (qwen3vl_merger): LayerNorms, a plain MLP,
	// learned positions interpolated to the grid, no windows, deepstack.
	v3 bool

	patch   *kernels.Matrix // [d][3·T·p·p], the Conv3d kernel flattened (c, t, y, x)
	patchB  []float32       // [d], Qwen3-VL's; nil without
	pos     []float32       // [side²][d], Qwen3-VL's learned positions
	posSide int
	blocks  []vitBlock
	merger  qwenMerger
	// deep are the vision layers whose output a deepstack merger takes
	// (Qwen3-VL's deepstack_visual_indexes), deepMerge those mergers.
	deep      []int
	deepMerge []qwenMerger
}

// qwenMerger maps m² neighbouring patches to one text-width row:
// fc2(GELU(fc1(u))) for u the m² patches side by side, normed before
// (Norm over d, the main mergers) or after they are put side by side
// (PostShuffle: over m²·d, Qwen3-VL's deepstack mergers).
type qwenMerger struct {
	Norm        norm
	PostShuffle bool
	FC1, FC2    linear // [m²d][m²d], [d_text][m²d]
}

// apply merges x [n][d] into [n/m²][d_text].
func (g *qwenMerger) apply(x []float32, n, d, m2, dText int, gelu string) ([]float32, error) {
	units := n / m2
	u := make([]float32, n*d)
	if g.PostShuffle {
		g.Norm.apply(u, x, units, m2*d)
	} else {
		g.Norm.apply(u, x, n, d)
	}
	h := make([]float32, units*m2*d)
	g.FC1.apply(h, u, units)
	if err := activate(h, gelu); err != nil {
		return nil, err
	}
	out := make([]float32, units*dText)
	g.FC2.apply(out, h, units)
	return out, nil
}

// qwenVisionTheta is the tower's rotary base (Qwen2_5_VisionRotaryEmbedding's
// default; llama.cpp's clip graph uses the same).
const qwenVisionTheta = 10000

func qwenFromHF(v *Vision, c *checkpoint.Checkpoint, top spec.Config) (encoder, error) {
	vc, ok := top.Map(v.proj.Encoder)
	if !ok {
		return nil, fmt.Errorf("model: %s: config.json has no %s", c.Path, v.proj.Encoder)
	}
	q := &qwenVision{v: v, v3: v.proj.Type == "qwen3vl_merger"}
	cfg := VisionConfig{Projector: v.proj.Type}
	patchDef, actDef := int64(14), "silu"
	if q.v3 {
		patchDef, actDef = 16, "gelu_pytorch_tanh"
	}
	if err := readConfigInts(c.Path,
		dimInt(&cfg.PatchSize, vc, patchDef, "patch_size"), dimInt(&cfg.DModel, vc, 0, "hidden_size").required(),
		dimInt(&cfg.Layers, vc, 0, "depth").required(), dimInt(&cfg.Heads, vc, 0, "num_heads").required(),
		dimInt(&cfg.FFN, vc, 0, "intermediate_size").required(),
		dimInt(&cfg.TextDModel, vc, 0, "out_hidden_size").required(),
		dimInt(&q.merge, vc, 2, "spatial_merge_size"), dimInt(&q.temporal, vc, 2, "temporal_patch_size"),
		dimInt(&q.window, vc, 112, "window_size"), idInt(&cfg.Image, top, 0, "image_token_id").required(),
		idInt(&cfg.BOI, top, 0, "vision_start_token_id").required(),
		idInt(&cfg.EOI, top, 0, "vision_end_token_id").required()); err != nil {
		return nil, err
	}
	if n, ok := vc.Int("in_channels"); ok && n != 3 {
		return nil, tensor.Unsupported("model: %s: vision_config.in_channels %d (only RGB towers run)", c.Path, n)
	}
	act, _ := vc["hidden_act"].(string)
	if act == "" {
		act = actDef
	}
	var err error
	if cfg.Activation, err = hfActivation(act); err != nil {
		return nil, err
	}
	cfg.Eps = 1e-6 // Qwen2RMSNorm / LayerNorm(…, eps=1e-6) throughout the tower and mergers
	if q.v3 {
		if err := q.qwen3HF(c.Path, vc, &cfg); err != nil {
			return nil, err
		}
	}
	idx, _, err := vc.Ints("fullatt_block_indexes")
	if err != nil {
		return nil, fmt.Errorf("model: %s: config.json: fullatt_block_indexes: %w", c.Path, err)
	}
	q.full = make([]bool, cfg.Layers)
	if q.v3 {
		idx = nil
		for i := range q.full {
			q.full[i] = true
		}
	}
	for _, i := range idx {
		if i < 0 || int(i) >= cfg.Layers {
			return nil, fmt.Errorf("model: %s: config.json: fullatt_block_indexes holds %d of %d blocks", c.Path, i, cfg.Layers)
		}
		q.full[i] = true
	}
	// Qwen2VLImageProcessor's defaults, then preprocessor_config.json.
	cfg.Mean = [3]float32{0.48145466, 0.4578275, 0.40821073}
	cfg.Std = [3]float32{0.26862954, 0.26130258, 0.27577711}
	q.minPixels, q.maxPixels = 56*56, 28*28*1280
	pre, err := c.ReadAux("preprocessor_config.json")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("model: %s: %w", c.Path, err)
	}
	if err == nil {
		var p spec.Config
		if err := decodeJSON(pre, &p); err != nil {
			return nil, fmt.Errorf("model: %s: preprocessor_config.json: %w", c.Path, err)
		}
		for key, dst := range map[string]*[3]float32{"image_mean": &cfg.Mean, "image_std": &cfg.Std} {
			if err := threeFloats(dst, p[key]); err != nil {
				return nil, fmt.Errorf("model: %s: preprocessor_config.json: %s: %w", c.Path, key, err)
			}
		}
		for key, dst := range map[string]*int{"min_pixels": &q.minPixels, "max_pixels": &q.maxPixels} {
			if n, ok := p.Int(key); ok {
				if n <= 0 || n > 1<<40 {
					return nil, fmt.Errorf("model: %s: preprocessor_config.json: %s = %d", c.Path, key, n)
				}
				*dst = int(n)
			}
		}
		if sz, ok := p.Map("size"); ok {
			// transformers ≥ 4.50 states min/max pixels as size's
			// shortest_edge / longest_edge; min_pixels/max_pixels win.
			if n, ok := sz.Int("shortest_edge"); ok && p["min_pixels"] == nil && n > 0 && n <= 1<<40 {
				q.minPixels = int(n)
			}
			if n, ok := sz.Int("longest_edge"); ok && p["max_pixels"] == nil && n > 0 && n <= 1<<40 {
				q.maxPixels = int(n)
			}
		}
		for key, want := range map[string]int{"patch_size": cfg.PatchSize, "merge_size": q.merge, "temporal_patch_size": q.temporal} {
			if n, ok := p.Int(key); ok && int(n) != want {
				return nil, tensor.Unsupported("model: %s: preprocessor_config.json %s %d, the tower's is %d", c.Path, key, n, want)
			}
		}
		t, _ := p["image_processor_type"].(string)
		q.fast = strings.HasSuffix(t, "Fast")
		if r, ok := p.Int("resample"); ok && r != 3 {
			return nil, tensor.Unsupported("model: %s: preprocessor_config.json resample %d (tfconv runs Qwen-VL's BICUBIC, 3)", c.Path, r)
		}
	}
	if err := q.check(c.Path, &cfg); err != nil {
		return nil, err
	}
	v.cfg = cfg
	return q, nil
}

func qwenFromGGUF(v *Vision, md tensor.Metadata) (encoder, error) {
	q := &qwenVision{v: v, merge: 2, temporal: 2, window: 112, v3: v.proj.Type == "qwen3vl_merger"}
	cfg := VisionConfig{Projector: v.proj.Type, Image: -1, BOI: -1, EOI: -1, Activation: "silu"}
	if q.v3 {
		cfg.Activation = "gelu_tanh" // clip.use_gelu: ggml_gelu
	}
	if err := clipTower(v.Path, md, &cfg, 1e-6, map[string]*int{"clip.vision.projection_dim": &cfg.TextDModel}); err != nil {
		return nil, err
	}
	if _, ok := md.Get("clip.vision.spatial_merge_size"); ok {
		if err := ggufInts(v.Path, md, map[string]*int{"clip.vision.spatial_merge_size": &q.merge}); err != nil {
			return nil, err
		}
	}
	q.full = make([]bool, cfg.Layers)
	if q.v3 {
		if err := q.qwen3GGUF(md, &cfg); err != nil {
			return nil, err
		}
	} else {
		pattern := 0
		if err := ggufInts(v.Path, md, map[string]*int{"clip.vision.n_wa_pattern": &pattern}); err != nil {
			return nil, err
		}
		for i := range q.full {
			q.full[i] = (i+1)%pattern == 0 // clip.cpp's rule
		}
	}
	if err := ggufMeanStd(v.Path, md, &cfg); err != nil {
		return nil, err
	}
	// mtmd's token limits for Qwen-VL (clip.cpp set_limit_image_tokens(8,
	// 4096)), in pixels of merged units.
	unit := cfg.PatchSize * q.merge
	q.minPixels, q.maxPixels = 8*unit*unit, 4096*unit*unit
	for key, dst := range map[string]*int{"clip.vision.image_min_pixels": &q.minPixels, "clip.vision.image_max_pixels": &q.maxPixels} {
		if n, ok := md.Int(key); ok && n > 0 && n <= 1<<40 {
			*dst = int(n)
		}
	}
	if err := q.check(v.Path, &cfg); err != nil {
		return nil, err
	}
	v.cfg = cfg
	return q, nil
}

// check checks the sizes the forward relies on.
func (q *qwenVision) check(path string, cfg *VisionConfig) error {
	for _, x := range []struct {
		name string
		n    int
	}{{"patch_size", cfg.PatchSize}, {"hidden_size", cfg.DModel}, {"depth", cfg.Layers}, {"heads", cfg.Heads},
		{"intermediate_size", cfg.FFN}, {"out_hidden_size", cfg.TextDModel}, {"spatial_merge_size", q.merge},
		{"temporal_patch_size", q.temporal}, {"window_size", q.window}} {
		if x.n <= 0 || x.n > maxVisionDim {
			return fmt.Errorf("model: %s: vision %s %d out of range", path, x.name, x.n)
		}
	}
	if cfg.DModel%cfg.Heads != 0 || (cfg.DModel/cfg.Heads)%4 != 0 {
		return fmt.Errorf("model: %s: vision hidden_size %d over %d heads: the 2-D RoPE needs a head width divisible by 4", path, cfg.DModel, cfg.Heads)
	}
	if q.merge > 16 || q.temporal > 16 || q.minPixels > q.maxPixels {
		return fmt.Errorf("model: %s: vision merge %d, temporal patch %d, pixels %d..%d", path, q.merge, q.temporal, q.minPixels, q.maxPixels)
	}
	return nil
}

func (q *qwenVision) load(l *loader) {
	v := q.v
	c := &v.cfg
	d, p, T, m2 := c.DModel, c.PatchSize, q.temporal, q.merge*q.merge
	if v.GGUF {
		// The converter keeps the Conv3d's frames as two Conv2d kernels
		// [d][3][p][p] (the second named v.patch_embd.weight.1).
		if T != 2 {
			l.fail(fmt.Errorf("model: %s: the mmproj keeps 2 frames of the patch kernel, the tower reads %d", v.Path, T))
			return
		}
		k0 := l.shaped(v.name(l, "v.patch_embd", 0, ".weight"), tensor.Shape{int64(d), 3, int64(p), int64(p)})
		k1 := l.shaped(v.name(l, "v.patch_embd.weight.1", 0, ""), tensor.Shape{int64(d), 3, int64(p), int64(p)})
		if k0 != nil && k1 != nil {
			w := make([]float32, d*3*T*p*p)
			for o := 0; o < d; o++ {
				for ch := 0; ch < 3; ch++ {
					for t, k := range [][]float32{k0, k1} {
						copy(w[((o*3+ch)*T+t)*p*p:][:p*p], k[(o*3+ch)*p*p:][:p*p])
					}
				}
			}
			q.setPatch(l, w)
		}
	} else if w := l.shaped(v.name(l, "v.patch_embd", 0, ".weight"), tensor.Shape{int64(d), 3, int64(T), int64(p), int64(p)}); w != nil {
		q.setPatch(l, w)
	}
	q.blocks = make([]vitBlock, c.Layers)
	for i := range q.blocks {
		q.blocks[i] = v.loadVitBlock(l, i, d, c.FFN, c.Eps)
		q.blocks[i].LN1.RMS, q.blocks[i].LN2.RMS = !q.v3, !q.v3
	}
	lin := func(role string, bid, out, in int) linear {
		return linear{W: l.matrix(v.name(l, role, bid, ".weight"), out, in), B: l.optVector(v.name(l, role, bid, ".bias"), out)}
	}
	q.merger = qwenMerger{
		Norm: norm{W: l.vector(v.name(l, "v.post_ln", 0, ".weight"), d), B: l.optVector(v.name(l, "v.post_ln", 0, ".bias"), d), Eps: c.Eps, RMS: !q.v3},
		FC1:  lin("mm.0", 0, m2*d, m2*d), FC2: lin("mm.2", 0, c.TextDModel, m2*d),
	}
	if !q.v3 {
		return
	}
	q.patchB = l.vector(v.name(l, "v.patch_embd", 0, ".bias"), d)
	q.pos = l.shaped(v.name(l, "v.position_embd", 0, ".weight"), tensor.Shape{int64(q.posSide * q.posSide), int64(d)})
	q.deepMerge = make([]qwenMerger, len(q.deep))
	for j, layer := range q.deep {
		bid := layer // the mmproj numbers them by vision layer, the HF list by place
		if !v.GGUF {
			bid = j
		}
		q.deepMerge[j] = qwenMerger{
			Norm: norm{W: l.vector(v.name(l, "v.deepstack.{bid}.norm", bid, ".weight"), m2*d),
				B: l.vector(v.name(l, "v.deepstack.{bid}.norm", bid, ".bias"), m2*d), Eps: c.Eps},
			PostShuffle: true,
			FC1:         lin("v.deepstack.{bid}.fc1", bid, m2*d, m2*d), FC2: lin("v.deepstack.{bid}.fc2", bid, c.TextDModel, m2*d),
		}
	}
}

// setPatch keeps the patch kernel [d][3·T·p·p]: in binary16 with
// MatchLlamaCpp, as ggml_conv_2d multiplies it (its im2col is F16 for any
// kernel but BF16, and the kernel is rounded to the patches' type).
func (q *qwenVision) setPatch(l *loader, w []float32) {
	c := &q.v.cfg
	rows, cols := c.DModel, 3*q.temporal*c.PatchSize*c.PatchSize
	if q.v.matchLlamaCpp {
		q.patch = q.v.patchF16(l, w, rows, cols)
		return
	}
	q.patch = kernels.F32Matrix(rows, cols, w)
	l.mats = append(l.mats, q.patch)
}

// prepare resizes and patches the image (vision.QwenVL); Grid is the patch
// grid's height and width.
func (q *qwenVision) prepare(img *vision.Image, m vision.Method) (*Prepared, error) {
	c := &q.v.cfg
	pix, gh, gw, err := q.preprocess(m).Patches(img)
	if err != nil {
		return nil, err
	}
	return &Prepared{Pixels: pix, Tiles: [][2]int{{gh * c.PatchSize, gw * c.PatchSize}},
		Rows: gh * gw / (q.merge * q.merge), Grid: []int{gh, gw}}, nil
}

// preprocess is method m's preprocessing for this tower.
func (q *qwenVision) preprocess(m vision.Method) vision.QwenVL {
	c := &q.v.cfg
	return vision.QwenVL{Patch: c.PatchSize, Merge: q.merge, Temporal: q.temporal, MinPixels: q.minPixels,
		MaxPixels: q.maxPixels, Mean: c.Mean, Std: c.Std, Method: m, Fast: q.fast}
}

// windows returns the merged units in window order (windows row by row,
// units row by row within each, the last row and column of windows
// partial) and each window's patch count: get_window_index's order and
// cu_window_seqlens, and clip.cpp's window index alike.
func (q *qwenVision) windows(gh, gw int) (order, lens []int) {
	m := q.merge
	if q.v3 {
		for u := 0; u < gh*gw/(m*m); u++ {
			order = append(order, u)
		}
		return order, []int{gh * gw}
	}
	ws := q.window / m / q.v.cfg.PatchSize // units along a window's side
	if ws <= 0 {
		ws = 1
	}
	uh, uw := gh/m, gw/m
	for wy := 0; wy < uh; wy += ws {
		for wx := 0; wx < uw; wx += ws {
			n := 0
			for y := wy; y < min(wy+ws, uh); y++ {
				for x := wx; x < min(wx+ws, uw); x++ {
					order = append(order, y*uw+x)
					n++
				}
			}
			lens = append(lens, n*m*m)
		}
	}
	return order, lens
}

// rope returns the 2-D rotary tables of the patches in the given unit
// order: per patch, cos and sin of its D/2 pair angles (row·f for the first
// D/4 pairs, column·f for the rest).
func (q *qwenVision) rope(order []int, gw, D int) (cos, sin []float32) {
	m := q.merge
	inv := kernels.RoPEInvFreq(qwenVisionTheta, D/2) // D/4 frequencies
	// ggml_rope_multi's vision mode (MatchLlamaCpp) steps each section's
	// angle by θ^(−4/D) in float32 from the position itself.
	step := float32(math.Pow(qwenVisionTheta, -4/float64(D)))
	half := D / 2
	uw := gw / m
	cos = make([]float32, len(order)*m*m*half)
	sin = make([]float32, len(cos))
	r := 0
	for _, u := range order {
		uy, ux := u/uw, u%uw
		for j := 0; j < m*m; j++ {
			row, col := uy*m+j/m, ux*m+j%m
			for i := 0; i < half; i++ {
				pos := row
				f := inv[i%len(inv)]
				if i >= len(inv) {
					pos = col
				}
				a := float32(pos) * f
				if q.v.matchLlamaCpp {
					a = float32(pos)
					for range i % len(inv) {
						a *= step
					}
				}
				cos[r*half+i] = float32(math.Cos(float64(a)))
				sin[r*half+i] = float32(math.Sin(float64(a)))
			}
			r++
		}
	}
	return cos, sin
}

// rotate applies the tables to x [n][H·D] in place (neox pairs i, i+D/2).
func rotate(x []float32, n, H, D int, cos, sin []float32) {
	half := D / 2
	for r := 0; r < n; r++ {
		cs, sn := cos[r*half:(r+1)*half], sin[r*half:(r+1)*half]
		for h := 0; h < H; h++ {
			v := x[(r*H+h)*D : (r*H+h+1)*D]
			for i := 0; i < half; i++ {
				x0, x1 := v[i], v[i+half]
				v[i] = x0*cs[i] - x1*sn[i]
				v[i+half] = x1*cs[i] + x0*sn[i]
			}
		}
	}
}

// encode runs the tower and merger over the image's patches.
func (q *qwenVision) encode(pr *Prepared, states *[][]float32) ([]float32, error) {
	c := &q.v.cfg
	d, H, m2 := c.DModel, c.Heads, q.merge*q.merge
	row := 3 * q.temporal * c.PatchSize * c.PatchSize
	if len(pr.Grid) != 2 || pr.Grid[0]%q.merge != 0 || pr.Grid[1]%q.merge != 0 || pr.Grid[0] <= 0 || pr.Grid[1] <= 0 {
		return nil, fmt.Errorf("model: vision: the %s tower reads a patch grid of whole %d×%d units, not %v", c.Projector, q.merge, q.merge, pr.Grid)
	}
	gh, gw := pr.Grid[0], pr.Grid[1]
	n := gh * gw
	if len(pr.Pixels) != n*row {
		return nil, fmt.Errorf("model: vision: %d pixel values for %d patches of %d", len(pr.Pixels), n, row)
	}
	x := make([]float32, n*d)
	kernels.MatMul(x, pr.Pixels, n, q.patch)
	act := c.Activation
	if q.v.matchLlamaCpp && act == "gelu_tanh" {
		act = "gelu_ggml" // ggml_gelu's binary16 table
	}
	if q.v3 {
		for i := 0; i < n; i++ {
			kernels.Add(x[i*d:(i+1)*d], q.patchB)
		}
		q.addPositions(x, gh, gw)
	}
	order, lens := q.windows(gh, gw)
	win := make([]float32, n*d)
	for j, u := range order {
		copy(win[j*m2*d:(j+1)*m2*d], x[u*m2*d:(u+1)*m2*d])
	}
	x = win
	cos, sin := q.rope(order, gw, d/H)
	attn := func(full bool) vitAttn {
		a := vitAttn{Rope: func(qq, kk []float32, n int) {
			rotate(qq, n, H, d/H, cos, sin)
			rotate(kk, n, H, d/H, cos, sin)
		}}
		if !full {
			a.Segments = lens
		}
		return a
	}
	record := func() {
		if states != nil {
			*states = append(*states, append([]float32(nil), x...))
		}
	}
	record()
	gelu := "gelu" // the mergers' nn.GELU(); ggml_gelu's table with MatchLlamaCpp
	if q.v.matchLlamaCpp {
		gelu = "gelu_ggml"
	}
	D := c.TextDModel
	// unorder puts merged rows back in image order.
	unorder := func(merged []float32) []float32 {
		feat := make([]float32, len(merged))
		for j, u := range order {
			copy(feat[u*D:(u+1)*D], merged[j*D:(j+1)*D])
		}
		return feat
	}
	pr.Deepstack = nil
	sc := newVitScratch(n, d, c.FFN)
	for i := range q.blocks {
		if err := q.blocks[i].forward(x, n, d, H, act, attn(q.full[i]), sc); err != nil {
			return nil, err
		}
		record()
		for j, layer := range q.deep {
			if layer != i {
				continue
			}
			ds, err := q.deepMerge[j].apply(x, n, d, m2, D, gelu)
			if err != nil {
				return nil, err
			}
			pr.Deepstack = append(pr.Deepstack, unorder(ds))
		}
	}
	merged, err := q.merger.apply(x, n, d, m2, D, gelu)
	if err != nil {
		return nil, err
	}
	return unorder(merged), nil
}

// prompt expands the placeholder as the processor does (<|image_pad|> once
// → Rows times, between the <|vision_start|> and <|vision_end|> the prompt
// already holds) or builds mtmd's chunk (<|vision_start|>, the image,
// <|vision_end|>), and gives the M-RoPE positions of every token
// (get_rope_index): text (t, t, t), the image's units (s, s+row, s+col)
// after s, the next text at s + max(rows, cols).
func (q *qwenVision) prompt(m *Model, p ImagePrompt, pr *Prepared) (*imageSpan, error) {
	ids, err := m.qwenImageTokens(q.v)
	if err != nil {
		return nil, err
	}
	n := pr.Rows
	var tokens []int
	first := -1
	switch {
	case p.Tokens != nil:
		seq := make([]int, n)
		for i := range seq {
			seq[i] = ids.soft
		}
		if tokens, err = splicePlaceholder(p.Tokens, ids.soft, ids.softText, seq); err != nil {
			return nil, err
		}
		for i, t := range p.Tokens {
			if t == ids.soft {
				first = i
			}
		}
	default:
		t := m.Tokenizer()
		if t == nil {
			return nil, fmt.Errorf("model: %s carries no tokenizer (give the tokens)", m.Path)
		}
		marker := ids.softText
		if p.Method == vision.Mtmd {
			marker = MediaMarker
		}
		before, after, err := cutMarker(p.Text, marker)
		if err != nil {
			return nil, err
		}
		enc := func(s string) ([]int, error) {
			return t.Encode(s, tokenizer.EncodeOptions{ParseSpecial: true})
		}
		head, err := enc(before)
		if err != nil {
			return nil, err
		}
		tail, err := enc(after)
		if err != nil {
			return nil, err
		}
		if p.Method == vision.Mtmd {
			head = append(head, ids.boi)
			tail = append([]int{ids.eoi}, tail...)
		}
		first = len(head)
		tokens = append(head, make([]int, n)...)
		for i := 0; i < n; i++ {
			tokens[first+i] = ids.soft
		}
		tokens = append(tokens, tail...)
	}
	if first < 0 {
		return nil, errors.New("model: the expanded prompt lost the image's tokens")
	}
	span := &imageSpan{Tokens: tokens, Rows: rowsAfter(len(tokens), first, n)}
	uh, uw := pr.Grid[0]/q.merge, pr.Grid[1]/q.merge
	span.Positions = make([][4]int, len(tokens))
	for i := 0; i < first; i++ {
		span.Positions[i] = [4]int{i, i, i, i}
	}
	s := first
	extra := s // transformers: the pairs outside the sections take time
	if p.Method == vision.Mtmd {
		extra = 0 // mtmd's image positions leave the extra stream at 0
	}
	for j := 0; j < n; j++ {
		span.Positions[first+j] = [4]int{s, s + j/uw, s + j%uw, extra}
	}
	next := s + max(uh, uw)
	for i := first + n; i < len(tokens); i++ {
		pos := next + i - first - n
		span.Positions[i] = [4]int{pos, pos, pos, pos}
	}
	return span, nil
}

// qwenImageTokens finds the Qwen-VL image tokens: config.json's ids for a
// Hugging Face folder, else the text model's vocabulary.
func (m *Model) qwenImageTokens(v *Vision) (imageIDs, error) {
	vc := v.Config()
	ids := imageIDs{boi: vc.BOI, eoi: vc.EOI, soft: vc.Image,
		boiText: "<|vision_start|>", eoiText: "<|vision_end|>", softText: "<|image_pad|>"}
	t := m.Tokenizer()
	for _, x := range []struct {
		id    *int
		piece string
	}{{&ids.boi, ids.boiText}, {&ids.eoi, ids.eoiText}, {&ids.soft, ids.softText}} {
		if *x.id >= 0 {
			continue
		}
		if t != nil {
			if id, ok := t.ID(x.piece); ok {
				*x.id = id
				continue
			}
		}
		return ids, fmt.Errorf("model: %s: the vocabulary has no %s and the vision encoder does not give its id", m.Path, x.piece)
	}
	return ids, nil
}

// qwen3HF reads Qwen3-VL's vision_config keys: the learned position grid
// (num_position_embeddings, a square) and the deepstack layers.
func (q *qwenVision) qwen3HF(path string, vc spec.Config, cfg *VisionConfig) error {
	n, ok := vc.Int("num_position_embeddings")
	if !ok {
		n = 2304 // Qwen3VLVisionConfig's default
	}
	side := int(math.Sqrt(float64(n)))
	if n <= 0 || n > maxVisionDim*16 || int64(side*side) != n {
		return fmt.Errorf("model: %s: config.json: num_position_embeddings %d is not a square grid", path, n)
	}
	q.posSide = side
	idx, _, err := vc.Ints("deepstack_visual_indexes")
	if err != nil {
		return fmt.Errorf("model: %s: config.json: deepstack_visual_indexes: %w", path, err)
	}
	for _, i := range idx {
		if i < 0 || int(i) >= cfg.Layers {
			return fmt.Errorf("model: %s: config.json: deepstack_visual_indexes holds %d of %d blocks", path, i, cfg.Layers)
		}
		q.deep = append(q.deep, int(i))
	}
	return nil
}

// qwen3GGUF reads the mmproj's Qwen3-VL keys: the position grid's side
// (clip.vision.image_size / patch_size) and clip.vision.is_deepstack_layers.
func (q *qwenVision) qwen3GGUF(md tensor.Metadata, cfg *VisionConfig) error {
	size := 0
	if err := ggufInts(q.v.Path, md, map[string]*int{"clip.vision.image_size": &size}); err != nil {
		return err
	}
	q.posSide = size / cfg.PatchSize
	if q.posSide <= 0 || q.posSide > 1024 {
		return fmt.Errorf("model: %s: clip.vision.image_size %d over patch %d gives no position grid", q.v.Path, size, cfg.PatchSize)
	}
	val, ok := md.Get("clip.vision.is_deepstack_layers")
	if !ok {
		return nil
	}
	a, _ := val.Array()
	flags, isBool := a.Data.([]bool)
	if !isBool || len(flags) != cfg.Layers {
		return fmt.Errorf("model: %s: GGUF key clip.vision.is_deepstack_layers is not %d booleans", q.v.Path, cfg.Layers)
	}
	for i, f := range flags {
		if f {
			q.deep = append(q.deep, i)
		}
	}
	return nil
}

// addPositions adds Qwen3-VL's learned positions to x [gh·gw][d] (patches
// in merge order): the side×side table bilinearly interpolated to the
// gh×gw grid as fast_pos_embed_interpolate computes it in float32 — the
// sample points linspace(0, side−1, g), the four neighbours' rows weighted
// (1−dh)(1−dw), (1−dh)dw, dh(1−dw), dh·dw and summed in that order.
func (q *qwenVision) addPositions(x []float32, gh, gw int) {
	d, m, side := q.v.cfg.DModel, q.merge, q.posSide
	hi, hf := linspaceIdx(side, gh)
	wi, wf := linspaceIdx(side, gw)
	if q.v.matchLlamaCpp {
		hi, hf = ggmlAlignCorners(side, gh)
		wi, wf = ggmlAlignCorners(side, gw)
	}
	row := make([]float32, d)
	uw := gw / m
	for py := 0; py < gh; py++ {
		for px := 0; px < gw; px++ {
			h0, w0 := hi[py], wi[px]
			h1, w1 := min(h0+1, side-1), min(w0+1, side-1)
			dh, dw := hf[py], wf[px]
			wts := [4]float32{(1 - dh) * (1 - dw), (1 - dh) * dw, dh * (1 - dw), dh * dw}
			idx := [4]int{h0*side + w0, h0*side + w1, h1*side + w0, h1*side + w1}
			for k := range row {
				var s float32
				for j := 0; j < 4; j++ {
					s += float32(q.pos[idx[j]*d+k] * wts[j])
				}
				row[k] = s
			}
			// the patch's place in merge order
			u := (py/m)*uw + px/m
			r := u*m*m + (py%m)*m + px%m
			kernels.Add(x[r*d:(r+1)*d], row)
		}
	}
}

// linspaceIdx is torch.linspace(0, side−1, n) in float32 (its two-sided
// form: start + step·i for the first half, end − step·(n−1−i) after), each
// point's integer part and fraction.
func linspaceIdx(side, n int) ([]int, []float32) {
	idx, frac := make([]int, n), make([]float32, n)
	end := float32(side - 1)
	var step float32
	if n > 1 {
		step = end / float32(n-1)
	}
	for i := 0; i < n; i++ {
		var v float32
		if i < n/2 {
			v = float32(step * float32(i))
		} else {
			v = end - float32(step*float32(n-1-i))
		}
		idx[i] = int(v)
		frac[i] = v - float32(idx[i])
	}
	return idx, frac
}

// ggmlAlignCorners is ggml_interpolate's bilinear align-corners sampling
// of side points at n (clip.cpp's resize_position_embeddings for
// Qwen3-VL): point i at i / ((n−1)/(side−1)) in float32, its floor and
// fraction (n = side: the points themselves).
func ggmlAlignCorners(side, n int) ([]int, []float32) {
	idx, frac := make([]int, n), make([]float32, n)
	sf := float32(n) / float32(side)
	if n > 1 && side > 1 {
		sf = float32(n-1) / float32(side-1)
	}
	for i := 0; i < n; i++ {
		y := float32(i) / sf
		y0 := int(math.Floor(float64(y)))
		y0 = max(0, min(y0, side-1))
		idx[i] = y0
		frac[i] = max(0, min(y-float32(y0), 1))
	}
	return idx, frac
}
