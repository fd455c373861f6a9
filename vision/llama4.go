package vision

import (
	"fmt"
	"math"
)

// Llama4 is Llama 4's tiling as transformers' Llama4ImageProcessorFast
// does it. The canvases are every rows × cols grid of Tile×Tile tiles
// with rows·cols ≤ MaxPatches (find_supported_resolutions, in its order:
// tile counts from MaxPatches down, grouped by aspect ratio in the order
// each ratio first appears); the canvas is the one with the smallest
// scale ≥ 1 that fits the image without distortion (the largest with
// MaxCanvas), else the largest scale below 1, ties to the smallest area
// (get_best_fit). The image is resized keeping its aspect ratio to fit
// the canvas, never upscaled past Tile unless MaxCanvas (torch's
// antialiased bilinear: ResizeTorchFloat), padded with black on the right and
// bottom, rescaled and normalized in bfloat16, and cut into tiles row by
// row; when there is more than one, the whole image resized to one tile
// (the global tile) follows.
type Llama4 struct {
	Tile       int // size.height = size.width: the tower's image_size
	MaxPatches int // max_patches
	MaxCanvas  bool
	Mean, Std  [3]float32
}

// llama4MaxPatches caps max_patches (a config value) before it sizes a
// loop or an allocation.
const llama4MaxPatches = 1024

// Canvases returns the supported canvases (rows, cols in tiles) in
// find_supported_resolutions' order.
func (p Llama4) Canvases() ([][2]int, error) {
	if p.MaxPatches < 1 || p.MaxPatches > llama4MaxPatches || p.Tile <= 0 || p.Tile > idefics3MaxSide {
		return nil, fmt.Errorf("vision: llama4: max_patches %d of %d pixels", p.MaxPatches, p.Tile)
	}
	var ratios []float64
	byRatio := map[float64][][2]int{}
	for n := p.MaxPatches; n >= 1; n-- {
		for f := 1; f <= n; f++ {
			if n%f != 0 {
				continue
			}
			r := float64(f) / float64(n/f)
			if _, ok := byRatio[r]; !ok {
				ratios = append(ratios, r)
			}
			byRatio[r] = append(byRatio[r], [2]int{f, n / f})
		}
	}
	var out [][2]int
	for _, r := range ratios {
		out = append(out, byRatio[r]...)
	}
	return out, nil
}

// Grid returns the canvas (rows, cols in tiles) for an image of h × w
// pixels: get_best_fit, its scales in float32 as torch computes them.
func (p Llama4) Grid(h, w int) (rows, cols int, err error) {
	cs, err := p.Canvases()
	if err != nil {
		return 0, 0, err
	}
	if h <= 0 || w <= 0 {
		return 0, 0, fmt.Errorf("vision: llama4: empty image")
	}
	scales := make([]float32, len(cs))
	for i, c := range cs {
		sh := float32(c[0]*p.Tile) / float32(h)
		sw := float32(c[1]*p.Tile) / float32(w)
		scales[i] = sh
		if sh > sw {
			scales[i] = sw
		}
	}
	var sel float32
	up := false
	for _, s := range scales {
		if s >= 1 && (!up || (p.MaxCanvas && s > sel) || (!p.MaxCanvas && s < sel)) {
			sel, up = s, true
		}
	}
	if !up {
		for i, s := range scales {
			if i == 0 || s > sel {
				sel = s
			}
		}
	}
	best := -1
	for i, s := range scales {
		if s == sel && (best < 0 || cs[i][0]*cs[i][1] < cs[best][0]*cs[best][1]) {
			best = i
		}
	}
	return cs[best][0], cs[best][1], nil
}

// fitSize is get_max_res_without_distortion: the largest h × w within th
// × tw of the image's aspect ratio. A bound that is the canvas's own side
// (a torch scalar in transformers) divides in float32, one that is the
// image's (a Python int) in float64.
func fitSize(h, w, th, tw int, thTorch, twTorch bool) (int, int) {
	scale := func(t, o int, torch bool) float64 {
		if torch {
			return float64(float32(t) / float32(o))
		}
		return float64(t) / float64(o)
	}
	mul := func(o int, s float64, torch bool) int {
		if torch {
			return int(math.Floor(float64(float32(o) * float32(s))))
		}
		return int(math.Floor(float64(o) * s))
	}
	sw, sh := scale(tw, w, twTorch), scale(th, h, thTorch)
	var nh, nw int
	if sw < sh {
		nw, nh = tw, min(mul(h, sw, twTorch), th)
	} else {
		nh, nw = th, min(mul(w, sh, thTorch), tw)
	}
	return max(nh, 1), max(nw, 1)
}

// Tiles returns the normalized tiles, each channel-major [3][Tile][Tile]
// as pixel_values holds them, and the canvas (rows, cols).
func (p Llama4) Tiles(img *Image) (tiles [][]float32, rows, cols int, err error) {
	if img == nil {
		return nil, 0, 0, fmt.Errorf("vision: llama4: no image")
	}
	if rows, cols, err = p.Grid(img.H, img.W); err != nil {
		return nil, 0, 0, err
	}
	T := p.Tile
	if int64(cols*T)*int64(rows*T) > MaxPixels {
		return nil, 0, 0, fmt.Errorf("vision: llama4: %d×%d tiles of %d pixels exceed %d pixels", cols, rows, T, MaxPixels)
	}
	th, tw := rows*T, cols*T
	thTorch, twTorch := true, true
	if !p.MaxCanvas {
		// min(max(side, Tile), canvas): the canvas's side (a tensor)
		// only where it is the smaller.
		mh, mw := max(img.H, T), max(img.W, T)
		thTorch, twTorch = th < mh, tw < mw
		th, tw = min(mh, th), min(mw, tw)
	}
	nh, nw := fitSize(img.H, img.W, th, tw, thTorch, twTorch)
	r := ResizeTorchFloat(img, nw, nh, TorchBilinear)
	canvas := NewImage(cols*T, rows*T)
	for y := 0; y < nh; y++ {
		copy(canvas.Pix[y*canvas.W*3:], r.Pix[y*nw*3:(y+1)*nw*3])
	}
	for y := 0; y < rows; y++ {
		for x := 0; x < cols; x++ {
			tiles = append(tiles, NormalizeBF16(crop(canvas, x*T, y*T, T, T), p.Mean, p.Std))
		}
	}
	if len(tiles) > 1 {
		tiles = append(tiles, NormalizeBF16(ResizeTorchFloat(img, T, T, TorchBilinear), p.Mean, p.Std))
	}
	return tiles, rows, cols, nil
}

// NormalizeBF16 is Llama4ImageProcessorFast's rescale_and_normalize: the
// u8 image cast to bfloat16, times 1/255 (the product in float32, rounded
// to bfloat16), then torchvision's normalize in bfloat16 (mean and std
// rounded to bfloat16, each step rounded). Channel-major [3][H][W]; the
// values are bfloat16s held in float32, as pixel_values.float() gives
// them.
func NormalizeBF16(r *Image, mean, std [3]float32) []float32 {
	n := r.W * r.H
	var m, s [3]float32
	for c := range m {
		m[c], s[c] = RoundBF16(mean[c]), RoundBF16(std[c])
	}
	const rescale = float32(1.0 / 255)
	out := make([]float32, 3*n)
	for i := 0; i < n; i++ {
		for c := 0; c < 3; c++ {
			x := RoundBF16(float32(r.Pix[i*3+c]) * rescale)
			out[c*n+i] = RoundBF16(RoundBF16(x-m[c]) / s[c])
		}
	}
	return out
}

// RoundBF16 rounds x to the nearest bfloat16 (ties to even), as torch
// casts float32 to bfloat16.
func RoundBF16(x float32) float32 {
	b := math.Float32bits(x)
	if x != x {
		return x
	}
	b += 0x7fff + (b>>16)&1
	return math.Float32frombits(b &^ 0xffff)
}

// TorchBilinear is torch's antialiased bilinear (triangle) kernel.
var TorchBilinear = TorchFilter{Kernel: func(x float64) float64 {
	x = math.Abs(x)
	if x < 1 {
		return 1 - x
	}
	return 0
}, Support: 1}

// ResizeTorchFloat resizes src to w×h as torchvision's resize does a
// uint8 image with antialiased BILINEAR where it does not resize uint8
// natively: torchvision resizes uint8 bilinear natively only when torch's
// CPU capability string contains "AVX2", so on AVX512 (the machine
// reference.json was made on) or older CPUs it casts to float32, runs
// torch's separable antialiased kernel in float32 (weights computed and
// normalized in float32, the horizontal pass first, the intermediate kept
// in float32, each output a float32 sum in tap order) and rounds half to
// even back to uint8. A pass whose size does not change is skipped.
func ResizeTorchFloat(src *Image, w, h int, f TorchFilter) *Image {
	if w == src.W && h == src.H {
		return src
	}
	cur := make([]float32, len(src.Pix))
	for i, u := range src.Pix {
		cur[i] = float32(u)
	}
	cw, ch := src.W, src.H
	if w != cw {
		b, k, n := torchFloatCoeffs(cw, w, f)
		tmp := make([]float32, w*ch*3)
		for y := 0; y < ch; y++ {
			for x := 0; x < w; x++ {
				lo, cnt := b[2*x], b[2*x+1]
				for c := 0; c < 3; c++ {
					s := fmaSum(k[x*n:x*n+cnt], func(i int) float32 { return cur[(y*cw+lo+i)*3+c] })
					tmp[(y*w+x)*3+c] = s
				}
			}
		}
		cur, cw = tmp, w
	}
	if h != ch {
		b, k, n := torchFloatCoeffs(ch, h, f)
		tmp := make([]float32, cw*h*3)
		for y := 0; y < h; y++ {
			lo, cnt := b[2*y], b[2*y+1]
			for x := 0; x < cw; x++ {
				for c := 0; c < 3; c++ {
					s := fmaSum(k[y*n:y*n+cnt], func(i int) float32 { return cur[((lo+i)*cw+x)*3+c] })
					tmp[(y*cw+x)*3+c] = s
				}
			}
		}
		cur, ch = tmp, h
	}
	dst := NewImage(w, h)
	for i, v := range cur {
		r := math.RoundToEven(float64(v))
		dst.Pix[i] = uint8(min(max(r, 0), 255))
	}
	return dst
}

// torchFloatCoeffs is torch's _compute_index_ranges_weights with
// antialias in float32 (the arithmetic's types as in its C++): per output
// index its first input and count, and n weights each.
func torchFloatCoeffs(in, out int, f TorchFilter) (bounds []int, kk []float32, n int) {
	scale := float32(in) / float32(out)
	support := float32(f.Support)
	invscale := float32(1)
	if scale >= 1 {
		support = float32(f.Support) * scale
		invscale = float32(1.0 / float64(scale))
	}
	n = int(math.Ceil(float64(support)))*2 + 1
	bounds = make([]int, 2*out)
	kk = make([]float32, out*n)
	for i := 0; i < out; i++ {
		center := float32(float64(scale) * (float64(i) + 0.5))
		xmin := max(int(float64(center-support)+0.5), 0)
		xsize := min(max(min(int(float64(center+support)+0.5), in)-xmin, 0), n)
		w := kk[i*n : i*n+n]
		var total float32
		for j := 0; j < xsize; j++ {
			x := float32((float64(float32(j+xmin)-center) + 0.5) * float64(invscale))
			w[j] = float32(f.Kernel(float64(x)))
			total += w[j]
		}
		if total != 0 {
			for j := 0; j < xsize; j++ {
				w[j] /= total
			}
		}
		bounds[2*i], bounds[2*i+1] = xmin, xsize
	}
	return bounds, kk, n
}

// fmaSum is Σ w_i·x(i) as torch's compiled float kernel sums the taps
// (interpolate_aa_single_dim, as GCC builds it for this CPU): the first
// product, then the rest in order, in blocks of 4 whose products are
// rounded before each is added (a vectorized in-order reduction) and a
// remainder of 1 to 3 each fused into the sum (FMA). Measured against
// torch 2.6's F.interpolate on one-hot and image inputs: 4-tap sums fused
// throughout, 5-tap ones not at all, 6-tap ones only in the last tap.
func fmaSum(w []float32, x func(i int) float32) float32 {
	if len(w) == 0 {
		return 0
	}
	s := x(0) * w[0]
	i, blocks := 1, 1+(len(w)-1)/4*4
	for ; i < blocks; i++ {
		s += float32(x(i) * w[i]) // the conversion keeps Go from fusing it
	}
	for ; i < len(w); i++ {
		s = float32(math.FMA(float64(x(i)), float64(w[i]), float64(s)))
	}
	return s
}

// llama4MtmdSide is clip.cpp's largest llama4 grid side
// (set_llava_uhd_res_candidates(model, 3)).
const llama4MtmdSide = 3

// MtmdTiles is llama.cpp mtmd's Llama 4 preprocessing
// (mtmd_image_preprocessor_llava_uhd over clip.cpp's resolution
// candidates): an image no larger than Tile×Tile is stretched to one tile
// with mtmd's bilinear filter (no grid: rows, cols 0, 0); a larger one is
// sliced as llava-uhd slices with pinpoints (AnyRes's Mtmd) over every
// grid of 1 to 3 tiles across by 1 to 3 down but 1×1 (in clip.cpp's
// order: across outer, down inner; MaxPatches is not read), then the
// whole image stretched to one tile follows the slices. It returns the
// tiles before normalization and the grid (rows, cols).
func (p Llama4) MtmdTiles(img *Image) (tiles []*Image, rows, cols int, err error) {
	if p.Tile <= 0 || p.Tile > idefics3MaxSide {
		return nil, 0, 0, fmt.Errorf("vision: llama4: tile of %d pixels", p.Tile)
	}
	if img == nil || img.W <= 0 || img.H <= 0 {
		return nil, 0, 0, fmt.Errorf("vision: llama4: empty image")
	}
	if img.W <= p.Tile && img.H <= p.Tile {
		return []*Image{ResizeMtmd(img, p.Tile, p.Tile)}, 0, 0, nil
	}
	if side := int64(llama4MtmdSide * p.Tile); side*side > MaxPixels {
		return nil, 0, 0, fmt.Errorf("vision: llama4: a %d×%d grid candidate exceeds %d pixels", side, side, MaxPixels)
	}
	a := AnyRes{Tile: p.Tile, Method: Mtmd}
	for across := 1; across <= llama4MtmdSide; across++ {
		for down := 1; down <= llama4MtmdSide; down++ {
			if across == 1 && down == 1 {
				continue
			}
			a.Pinpoints = append(a.Pinpoints, [2]int{down * p.Tile, across * p.Tile})
		}
	}
	return a.Tiles(img)
}
