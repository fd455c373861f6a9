package vision

import (
	"fmt"
	"math"
)

// CLIP is LLaVA-1.5's image preprocessing to one Crop×Crop tile:
// transformers' CLIPImageProcessor (slow, PIL) or llama.cpp mtmd's
// fixed-size path for the mlp projector.
//
//   - Transformers: the shortest edge to Shortest (the other int(S·long/
//     short)) with Pillow's Filter, then the centre Crop×Crop cut out
//     (offsets (H − Crop)//2, (W − Crop)//2).
//   - Mtmd: the whole image letterboxed into Crop×Crop with mtmd's bicubic
//     filter on Pad (clip.cpp's {122, 116, 104} for LLaVA: the CLIP mean
//     in u8), nothing cut.
type CLIP struct {
	Shortest, Crop int
	Filter         PILFilter
	Pad            [3]uint8
	Method         Method
}

// Tile returns the preprocessed tile before normalization.
func (p CLIP) Tile(img *Image) (*Image, error) {
	if p.Crop <= 0 || p.Crop > 1<<14 || p.Shortest <= 0 || p.Shortest > 1<<14 || img.W <= 0 || img.H <= 0 {
		return nil, fmt.Errorf("vision: clip: crop %d, shortest edge %d, image %d×%d", p.Crop, p.Shortest, img.W, img.H)
	}
	if p.Method != Transformers {
		return LetterboxMtmdBicubic(img, p.Crop, p.Crop, p.Pad), nil
	}
	w, h := p.Shortest, p.Shortest
	if img.W <= img.H {
		h = int(float64(p.Shortest) * float64(img.H) / float64(img.W))
	} else {
		w = int(float64(p.Shortest) * float64(img.W) / float64(img.H))
	}
	r := ResizePILFilter(img, w, h, p.Filter)
	if r.W < p.Crop || r.H < p.Crop {
		return nil, fmt.Errorf("vision: clip: %d×%d resized image is smaller than the %d×%d crop (the processor pads; tfconv does not)", r.W, r.H, p.Crop, p.Crop)
	}
	return crop(r, (r.W-p.Crop)/2, (r.H-p.Crop)/2, p.Crop, p.Crop), nil
}

// AnyRes is LLaVA-NeXT's any-resolution preprocessing (transformers'
// LlavaNextImageProcessor, slow): the image resized into the best of
// Pinpoints (height, width; select_best_resolution: the most of the
// image's pixels kept, then the least canvas wasted), keeping its ratio
// (each edge ceil'ed, capped), centred on black, cut into Tile×Tile
// tiles row by row; before them the whole image stretched to Tile×Tile.
// Each goes through CLIP's shortest edge and centre crop, no-ops at the
// tile size. Filter is Pillow's.
//
// Mtmd is llama.cpp mtmd's llava-uhd slicing with pinpoints: the best
// pinpoint by the same rule in float32, the image letterboxed into it with
// mtmd's bicubic filter on black, cut row by row; the whole image stretched
// to Tile×Tile with mtmd's bilinear filter, after the tiles.
type AnyRes struct {
	Tile      int
	Pinpoints [][2]int
	Filter    PILFilter
	Method    Method
}

// BestResolution is transformers' select_best_resolution for an h×w
// image: the pinpoint (height, width).
func (p AnyRes) BestResolution(h, w int) ([2]int, error) {
	best, bestEff, bestWaste := [2]int{}, 0, math.MaxInt
	for _, r := range p.Pinpoints {
		if r[0] <= 0 || r[1] <= 0 || r[0] > 1<<14 || r[1] > 1<<14 {
			return best, fmt.Errorf("vision: anyres: pinpoint %v", r)
		}
		s := min(float64(r[1])/float64(w), float64(r[0])/float64(h))
		dw, dh := int(float64(w)*s), int(float64(h)*s)
		if p.Method == Mtmd {
			// resize_maintain_aspect_ratio, in float.
			s := min(float32(r[1])/float32(w), float32(r[0])/float32(h))
			dw, dh = int(float32(w)*s), int(float32(h)*s)
		}
		eff := min(dw*dh, w*h)
		waste := r[0]*r[1] - eff
		if eff > bestEff || eff == bestEff && waste < bestWaste {
			best, bestEff, bestWaste = r, eff, waste
		}
	}
	if bestEff == 0 {
		return best, fmt.Errorf("vision: anyres: no pinpoint fits a %d×%d image", w, h)
	}
	return best, nil
}

// Tiles returns the whole image, then the tiles row by row (Mtmd: the
// tiles, then the whole image), and the grid (rows, cols).
func (p AnyRes) Tiles(img *Image) (tiles []*Image, rows, cols int, err error) {
	if p.Tile <= 0 || p.Tile > 1<<14 || img.W <= 0 || img.H <= 0 {
		return nil, 0, 0, fmt.Errorf("vision: anyres: tile %d, image %d×%d", p.Tile, img.W, img.H)
	}
	best, err := p.BestResolution(img.H, img.W)
	if err != nil {
		return nil, 0, 0, err
	}
	th, tw := best[0], best[1]
	if th%p.Tile != 0 || tw%p.Tile != 0 {
		return nil, 0, 0, fmt.Errorf("vision: anyres: pinpoint %d×%d is not made of %d×%d tiles", tw, th, p.Tile, p.Tile)
	}
	rows, cols = th/p.Tile, tw/p.Tile
	if p.Method == Mtmd {
		refined := LetterboxMtmdBicubic(img, tw, th, [3]uint8{})
		for y := 0; y < rows; y++ {
			for x := 0; x < cols; x++ {
				tiles = append(tiles, crop(refined, x*p.Tile, y*p.Tile, p.Tile, p.Tile))
			}
		}
		return append(tiles, ResizeMtmd(img, p.Tile, p.Tile)), rows, cols, nil
	}
	// get_patch_output_size.
	sw, sh := float64(tw)/float64(img.W), float64(th)/float64(img.H)
	nw, nh := tw, th
	if sw < sh {
		nh = min(int(math.Ceil(float64(img.H)*sw)), th)
	} else {
		nw = min(int(math.Ceil(float64(img.W)*sh)), tw)
	}
	r := ResizePILFilter(img, nw, nh, p.Filter)
	canvas := NewImage(tw, th)
	ox, oy := (tw-nw)/2, (th-nh)/2
	for y := 0; y < nh; y++ {
		copy(canvas.Pix[((oy+y)*tw+ox)*3:], r.Pix[y*nw*3:(y+1)*nw*3])
	}
	tiles = append(tiles, ResizePILFilter(img, p.Tile, p.Tile, p.Filter))
	for y := 0; y < rows; y++ {
		for x := 0; x < cols; x++ {
			tiles = append(tiles, crop(canvas, x*p.Tile, y*p.Tile, p.Tile, p.Tile))
		}
	}
	return tiles, rows, cols, nil
}
