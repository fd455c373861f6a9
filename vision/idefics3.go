package vision

import (
	"fmt"
	"math"
)

// Idefics3 is SmolVLM's image preprocessing: transformers'
// Idefics3ImageProcessor (slow, PIL) or llama.cpp mtmd's
// mtmd_image_preprocessor_idefics3. Both cut the image, enlarged or shrunk
// towards LongestEdge and grown to multiples of Tile, into Tile×Tile tiles
// and add the whole image squeezed to one tile; they part in how they
// resize:
//
//   - Transformers: the longest edge to LongestEdge (the other edge
//     int(·) and made even), then each edge up to a multiple of Tile
//     (resize_for_vision_encoder, from the resized aspect ratio), both
//     with Pillow's Filter; the tiles are crops; the whole image is the
//     resized one squeezed to Tile×Tile with Filter.
//   - Mtmd: one float32 scale min(L/W, L/H), each scaled edge rounded up
//     to a multiple of Tile (calc_size_preserved_ratio); the image is
//     letterboxed into that size with mtmd's bicubic filter (black bars,
//     the default llava-uhd refinement) and cut; the whole image is the
//     original stretched to Tile×Tile with mtmd's bilinear filter.
type Idefics3 struct {
	LongestEdge int  // size.longest_edge (clip.vision.preproc_image_size)
	Tile        int  // max_image_size.longest_edge: the tower's image_size
	Split       bool // do_image_splitting (mtmd always splits)
	Filter      PILFilter
	Mean, Std   [3]float32
	Method      Method
}

// idefics3MaxSide is Idefics3's MAX_IMAGE_SIZE: no resized edge exceeds it.
const idefics3MaxSide = 4096

// Tiles returns the image's tiles row by row, then the whole image, each
// Tile×Tile, and the grid (rows, cols; 0, 0 when the image is not split).
func (p Idefics3) Tiles(img *Image) (tiles []*Image, rows, cols int, err error) {
	if p.Tile <= 0 || p.LongestEdge < 0 || p.LongestEdge > idefics3MaxSide || p.Tile > idefics3MaxSide {
		return nil, 0, 0, fmt.Errorf("vision: idefics3: tile %d, longest edge %d", p.Tile, p.LongestEdge)
	}
	if img.W <= 0 || img.H <= 0 {
		return nil, 0, 0, fmt.Errorf("vision: idefics3: empty image")
	}
	var refined, whole *Image
	if p.Method == Transformers {
		h, w := img.H, img.W
		if p.LongestEdge > 0 {
			h, w = idefics3Resize(h, w, p.LongestEdge)
		}
		r := ResizePILFilter(img, w, h, p.Filter)
		if !p.Split {
			return []*Image{ResizePILFilter(r, p.Tile, p.Tile, p.Filter)}, 0, 0, nil
		}
		// resize_for_vision_encoder.
		ar := float64(w) / float64(h)
		if w >= h {
			w = ceilTo(w, p.Tile)
			h = ceilTo(int(float64(w)/ar), p.Tile)
		} else {
			h = ceilTo(h, p.Tile)
			w = ceilTo(int(float64(h)*ar), p.Tile)
		}
		refined = ResizePILFilter(r, w, h, p.Filter)
		if refined.W <= p.Tile && refined.H <= p.Tile {
			return []*Image{refined}, 0, 0, nil
		}
		whole = ResizePILFilter(refined, p.Tile, p.Tile, p.Filter)
	} else {
		whole = ResizeMtmd(img, p.Tile, p.Tile)
		if p.LongestEdge <= 0 {
			return []*Image{whole}, 0, 0, nil
		}
		s := min(float32(p.LongestEdge)/float32(img.W), float32(p.LongestEdge)/float32(img.H))
		up := func(x float32) int {
			return int(math.Ceil(float64(float32(x/float32(p.Tile))))) * p.Tile
		}
		w, h := up(float32(img.W)*s), up(float32(img.H)*s)
		if w <= 0 || h <= 0 || w > idefics3MaxSide || h > idefics3MaxSide {
			return nil, 0, 0, fmt.Errorf("vision: idefics3: %d×%d image refines to %d×%d", img.W, img.H, w, h)
		}
		refined = LetterboxMtmdBicubic(img, w, h, [3]uint8{})
	}
	rows, cols = refined.H/p.Tile, refined.W/p.Tile
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			tiles = append(tiles, crop(refined, c*p.Tile, r*p.Tile, p.Tile, p.Tile))
		}
	}
	return append(tiles, whole), rows, cols, nil
}

// idefics3Resize is the processor's longest-edge size: the longest edge
// becomes L, the other int(L·ratio), bumped to even; then both capped at
// MAX_IMAGE_SIZE keeping the ratio.
func idefics3Resize(h, w, L int) (int, int) {
	ar := float64(w) / float64(h)
	if w >= h {
		w = L
		h = int(float64(w) / ar)
		if h%2 != 0 {
			h++
		}
	} else {
		h = L
		w = int(float64(h) * ar)
		if w%2 != 0 {
			w++
		}
	}
	h, w = max(h, 1), max(w, 1)
	ar = float64(w) / float64(h)
	if w >= h && w > idefics3MaxSide {
		w = idefics3MaxSide
		h = int(float64(w) / ar)
	} else if h > w && h > idefics3MaxSide {
		h = idefics3MaxSide
		w = int(float64(h) * ar)
	}
	return max(h, 1), max(w, 1)
}

func ceilTo(x, m int) int { return (x + m - 1) / m * m }

// crop returns the w×h part of src at (x, y).
func crop(src *Image, x, y, w, h int) *Image {
	dst := NewImage(w, h)
	for r := 0; r < h; r++ {
		copy(dst.Pix[r*w*3:(r+1)*w*3], src.Pix[((y+r)*src.W+x)*3:])
	}
	return dst
}
