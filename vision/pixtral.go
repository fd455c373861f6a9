package vision

import (
	"fmt"
	"math"
)

// Pixtral is the preprocessing of Pixtral towers (Mistral 3.1): the image
// keeps its aspect ratio and is resized to a multiple of Unit (the patch
// size times the merge size) a side, then normalized. There is no tiling:
// the tower reads any size.
type Pixtral struct {
	// Unit is the patch size times spatial_merge_size: both sides of the
	// resized image are multiples of it.
	Unit int
	// LongestEdge is transformers' size.longest_edge.
	LongestEdge int
	// MinPixels and MaxPixels bound mtmd's resized area (its
	// image_min_pixels / image_max_pixels: 8 and 1024 merged tokens).
	MinPixels, MaxPixels int
	Mean, Std            [3]float32
	Method               Method
}

// maxPixtralSide caps a side Size computes before anything is allocated.
const maxPixtralSide = 1 << 15

// Size is the w×h an image of W×H is resized to.
//
// Transformers (PixtralProcessor, which hands PixtralImageProcessor the
// patch size times spatial_merge_size): the image is shrunk, when a side
// exceeds LongestEdge, by r = max(W, H)/LongestEdge with each side
// floored, then each side is rounded up to a multiple of Unit.
//
// Mtmd (mtmd_image_preprocessor_dyn_size's calc_size_preserved_ratio, in
// float32): each side rounded to the nearest multiple of Unit (at least
// Unit); when the area is above MaxPixels both sides are scaled by
// 1/√(WH/MaxPixels) and floored to multiples, when below MinPixels scaled
// by √(MinPixels/WH) and rounded up.
func (p Pixtral) Size(W, H int) (w, h int, err error) {
	if W <= 0 || H <= 0 || p.Unit <= 0 {
		return 0, 0, fmt.Errorf("vision: pixtral: image %d×%d, unit %d", W, H, p.Unit)
	}
	u := p.Unit
	if p.Method == Transformers {
		if p.LongestEdge <= 0 {
			return 0, 0, fmt.Errorf("vision: pixtral: longest edge %d", p.LongestEdge)
		}
		fh, fw := float64(H), float64(W)
		if r := max(fh/float64(p.LongestEdge), fw/float64(p.LongestEdge)); r > 1 {
			fh, fw = math.Floor(fh/r), math.Floor(fw/r)
		}
		h, w = ((int(fh)-1)/u+1)*u, ((int(fw)-1)/u+1)*u
	} else {
		if p.MinPixels <= 0 || p.MaxPixels < p.MinPixels {
			return 0, 0, fmt.Errorf("vision: pixtral: pixel bounds %d..%d", p.MinPixels, p.MaxPixels)
		}
		f := float32(u)
		round := func(x float32) int { return int(math.Round(float64(x/f))) * u }
		ceil := func(x float32) int { return int(math.Ceil(float64(x/f))) * u }
		floor := func(x float32) int { return int(math.Floor(float64(x/f))) * u }
		h, w = max(u, round(float32(H))), max(u, round(float32(W)))
		if h*w > p.MaxPixels {
			beta := float32(math.Sqrt(float64(float32(H*W) / float32(p.MaxPixels))))
			h, w = max(u, floor(float32(H)/beta)), max(u, floor(float32(W)/beta))
		} else if h*w < p.MinPixels {
			beta := float32(math.Sqrt(float64(float32(p.MinPixels) / float32(H*W))))
			h, w = ceil(float32(float32(H)*beta)), ceil(float32(float32(W)*beta))
		}
	}
	if w <= 0 || h <= 0 || w > maxPixtralSide || h > maxPixtralSide {
		return 0, 0, fmt.Errorf("vision: pixtral: image %d×%d resizes to %d×%d", W, H, w, h)
	}
	return w, h, nil
}

// Resized returns the u8 image the tower reads: Pillow's BICUBIC stretch
// (PixtralImageProcessor's resample 3) or mtmd's bilinear letterbox on
// black (img_tool::resize with PAD_CEIL, the pixtral default).
func (p Pixtral) Resized(img *Image) (*Image, error) {
	w, h, err := p.Size(img.W, img.H)
	if err != nil {
		return nil, err
	}
	if p.Method == Transformers {
		return ResizePILFilter(img, w, h, PILBicubic), nil
	}
	return LetterboxMtmd(img, w, h, [3]uint8{}), nil
}

// Pixels returns the normalized image [3][h][w] and its size.
func (p Pixtral) Pixels(img *Image) (px []float32, w, h int, err error) {
	r, err := p.Resized(img)
	if err != nil {
		return nil, 0, 0, err
	}
	return Normalize(r, p.Mean, p.Std, p.Method), r.W, r.H, nil
}
