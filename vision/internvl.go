package vision

import "fmt"

// InternVL is InternVL's dynamic tiling as transformers'
// GotOcr2ImageProcessorFast does it with crop_to_patches (what
// InternVLProcessor asks for an image): among the grids of cols × rows
// tiles with MinTiles ≤ cols·rows ≤ MaxTiles, the one whose aspect ratio
// cols/rows lies closest to the image's (ties: the later grid in the order
// of growing tile count, while the image's area exceeds half the grid's);
// the image resized to that grid of Tile×Tile tiles and cut row by row;
// then, when there is more than one tile, the whole image resized to one
// tile (the thumbnail). The original checkpoints' own load_image
// (dynamic_preprocess) picks the grid the same way.
type InternVL struct {
	Tile               int // size.height = size.width: the tower's image_size
	MinTiles, MaxTiles int // min_patches, max_patches
	Mean, Std          [3]float32
}

// internVLMaxTiles caps max_patches (a config value) before it sizes a
// loop or an allocation.
const internVLMaxTiles = 1024

// Grid returns the tile grid (cols, rows) for an image of h × w pixels:
// transformers' get_optimal_tiled_canvas over
// get_all_supported_aspect_ratios.
func (p InternVL) Grid(h, w int) (cols, rows int, err error) {
	if p.MinTiles < 1 || p.MaxTiles < p.MinTiles || p.MaxTiles > internVLMaxTiles || p.Tile <= 0 || p.Tile > idefics3MaxSide {
		return 0, 0, fmt.Errorf("vision: internvl: tiles %d to %d of %d pixels", p.MinTiles, p.MaxTiles, p.Tile)
	}
	if h <= 0 || w <= 0 {
		return 0, 0, fmt.Errorf("vision: internvl: empty image")
	}
	// The grids (width, height), width outer, height inner, stably
	// sorted by tile count: by count, then width.
	var grids [][2]int
	for n := p.MinTiles; n <= p.MaxTiles; n++ {
		for c := 1; c <= n; c++ {
			if n%c == 0 {
				grids = append(grids, [2]int{c, n / c})
			}
		}
	}
	aspect := float64(w) / float64(h)
	area := float64(w) * float64(h)
	best, bestDiff := [2]int{1, 1}, -1.0
	for _, g := range grids {
		diff := aspect - float64(g[0])/float64(g[1])
		if diff < 0 {
			diff = -diff
		}
		switch {
		case bestDiff < 0 || diff < bestDiff:
			best, bestDiff = g, diff
		case diff == bestDiff && area > 0.5*float64(p.Tile)*float64(p.Tile)*float64(g[0]*g[1]):
			best = g
		}
	}
	return best[0], best[1], nil
}

// Tiles returns the tiles row by row, then the thumbnail when there is
// more than one, and the grid (cols, rows). fast resizes with torch's
// antialiased bicubic (GotOcr2ImageProcessorFast), else with Pillow's
// bicubic (GotOcr2ImageProcessor, the original checkpoints' load_image).
func (p InternVL) Tiles(img *Image, fast bool) (tiles []*Image, cols, rows int, err error) {
	if img == nil {
		return nil, 0, 0, fmt.Errorf("vision: internvl: no image")
	}
	if cols, rows, err = p.Grid(img.H, img.W); err != nil {
		return nil, 0, 0, err
	}
	T := p.Tile
	if int64(cols*T)*int64(rows*T) > MaxPixels {
		return nil, 0, 0, fmt.Errorf("vision: internvl: %d×%d tiles of %d pixels exceed %d pixels", cols, rows, T, MaxPixels)
	}
	resize := func(w, h int) *Image { return ResizePILFilter(img, w, h, PILBicubic) }
	if fast {
		resize = func(w, h int) *Image { return ResizeTorch(img, w, h, TorchBicubic) }
	}
	r := resize(cols*T, rows*T)
	for y := 0; y < rows; y++ {
		for x := 0; x < cols; x++ {
			tiles = append(tiles, crop(r, x*T, y*T, T, T))
		}
	}
	if len(tiles) > 1 {
		tiles = append(tiles, resize(T, T))
	}
	return tiles, cols, rows, nil
}

// MtmdTiles is llama.cpp mtmd's InternVL preprocessing
// (mtmd_image_preprocessor_internvl): an image no larger than Tile×Tile
// is stretched to one tile; a larger one is sliced as llava-uhd slices
// with pinpoints (AnyRes's Mtmd) over the grids clip.cpp lists for
// InternVL (set_internvl_dhr_res_candidates: a tiles across, b down, a
// from MinTiles to MaxTiles, b from max(⌈MinTiles/a⌉, MinTiles) to
// ⌊MaxTiles/a⌋), the whole image stretched to one tile after the slices.
// It returns the tiles and the grid (cols, rows; 0, 0 unsliced).
func (p InternVL) MtmdTiles(img *Image) (tiles []*Image, cols, rows int, err error) {
	if p.MinTiles < 1 || p.MaxTiles < p.MinTiles || p.MaxTiles > internVLMaxTiles || p.Tile <= 0 || p.Tile > idefics3MaxSide {
		return nil, 0, 0, fmt.Errorf("vision: internvl: tiles %d to %d of %d pixels", p.MinTiles, p.MaxTiles, p.Tile)
	}
	if img == nil || img.W <= 0 || img.H <= 0 {
		return nil, 0, 0, fmt.Errorf("vision: internvl: empty image")
	}
	if img.W <= p.Tile && img.H <= p.Tile {
		return []*Image{ResizeMtmd(img, p.Tile, p.Tile)}, 0, 0, nil
	}
	a := AnyRes{Tile: p.Tile, Method: Mtmd}
	for across := p.MinTiles; across <= p.MaxTiles; across++ {
		for down := max((p.MinTiles+across-1)/across, p.MinTiles); down <= min(p.MaxTiles/across, p.MaxTiles); down++ {
			a.Pinpoints = append(a.Pinpoints, [2]int{down * p.Tile, across * p.Tile})
		}
	}
	for _, r := range a.Pinpoints {
		if int64(r[0])*int64(r[1]) > MaxPixels {
			return nil, 0, 0, fmt.Errorf("vision: internvl: a %d×%d grid candidate exceeds %d pixels", r[1], r[0], MaxPixels)
		}
	}
	tiles, rows, cols, err = a.Tiles(img)
	return tiles, cols, rows, err
}
