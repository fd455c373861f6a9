package vision

import (
	"fmt"
	"math"
)

// QwenVL is the Qwen2-VL family's image preprocessing (Qwen2.5-VL,
// Qwen3-VL): the image is resized, not tiled, to a grid of whole merged
// patches whose pixel count lies between MinPixels and MaxPixels, and cut
// into patches of Temporal frames (a still image is repeated).
type QwenVL struct {
	Patch, Merge, Temporal int
	MinPixels, MaxPixels   int
	Mean, Std              [3]float32
	Method                 Method
}

// SmartResize is transformers' smart_resize (Qwen2VLImageProcessor): the
// height and width rounded (half to even) to multiples of factor, then
// scaled by one factor to fit [minPixels, maxPixels] with the multiples
// floored (too many pixels) or ceiled (too few).
func SmartResize(height, width, factor, minPixels, maxPixels int) (int, int, error) {
	if height <= 0 || width <= 0 || factor <= 0 {
		return 0, 0, fmt.Errorf("vision: smart_resize of %d×%d by %d", width, height, factor)
	}
	if float64(max(height, width))/float64(min(height, width)) > 200 {
		return 0, 0, fmt.Errorf("vision: image %d×%d: aspect ratio over 200", width, height)
	}
	h, w, f := float64(height), float64(width), float64(factor)
	hb := int(math.RoundToEven(h/f)) * factor
	wb := int(math.RoundToEven(w/f)) * factor
	switch {
	case hb*wb > maxPixels:
		beta := math.Sqrt(h * w / float64(maxPixels))
		hb = max(factor, int(math.Floor(h/beta/f))*factor)
		wb = max(factor, int(math.Floor(w/beta/f))*factor)
	case hb*wb < minPixels:
		beta := math.Sqrt(float64(minPixels) / (h * w))
		hb = int(math.Ceil(h*beta/f)) * factor
		wb = int(math.Ceil(w*beta/f)) * factor
	}
	return hb, wb, nil
}

// Size returns the resized image's height and width for img.
func (q QwenVL) Size(img *Image) (h, w int, err error) {
	if q.Patch <= 0 || q.Merge <= 0 || q.Temporal <= 0 {
		return 0, 0, fmt.Errorf("vision: Qwen-VL patch %d, merge %d, temporal patch %d", q.Patch, q.Merge, q.Temporal)
	}
	if q.Method == Mtmd {
		return mtmdQwenSize(img.H, img.W, q.Patch*q.Merge, q.MinPixels, q.MaxPixels)
	}
	return SmartResize(img.H, img.W, q.Patch*q.Merge, q.MinPixels, q.MaxPixels)
}

// Tile returns the resized and normalized image, channel-major [3][h][w]
// (transformers: Pillow's BICUBIC, x·(1/255) in float64; mtmd: letterboxed
// with its bilinear filter, x/255 in float32), and its height and width.
func (q QwenVL) Tile(img *Image) (pix []float32, h, w int, err error) {
	if h, w, err = q.Size(img); err != nil {
		return nil, 0, 0, err
	}
	var r *Image
	if q.Method == Mtmd {
		// mtmd_image_preprocessor_dyn_size: the Qwen-VL projectors keep
		// clip.cpp's default PAD_CEIL, so the image is letterboxed on
		// black into the aligned size with mtmd's bilinear filter.
		r = LetterboxMtmd(img, w, h, [3]uint8{})
	} else {
		r = ResizePILFilter(img, w, h, PILBicubic)
	}
	pix = make([]float32, 3*h*w)
	for i := 0; i < h*w; i++ {
		for c := 0; c < 3; c++ {
			u := r.Pix[i*3+c]
			var x float32
			if q.Method == Transformers {
				x = float32(float64(u) * (1.0 / 255)) // rescale in float64, then float32
			} else {
				x = float32(u) / 255
			}
			pix[c*h*w+i] = (x - q.Mean[c]) / q.Std[c]
		}
	}
	return pix, h, w, nil
}

// Patches preprocesses img (Tile) and lays it out as the processor's
// flattened patches [gh·gw][3·Temporal·p·p]: patches in merge order (rows
// of merged patches, then within each the merge×merge patches row by row),
// each (channel, frame, y, x) with the frames equal. It returns the patches
// and the patch grid's height and width.
func (q QwenVL) Patches(img *Image) (pix []float32, gh, gw int, err error) {
	norm, h, w, err := q.Tile(img)
	if err != nil {
		return nil, 0, 0, err
	}
	p, m, T := q.Patch, q.Merge, q.Temporal
	gh, gw = h/p, w/p
	row := 3 * T * p * p
	pix = make([]float32, gh*gw*row)
	n := 0
	for by := 0; by < gh/m; by++ {
		for bx := 0; bx < gw/m; bx++ {
			for my := 0; my < m; my++ {
				for mx := 0; mx < m; mx++ {
					py, px := by*m+my, bx*m+mx
					dst := pix[n*row : (n+1)*row]
					for c := 0; c < 3; c++ {
						for t := 0; t < T; t++ {
							for y := 0; y < p; y++ {
								o := ((c*T+t)*p + y) * p
								copy(dst[o:o+p], norm[c*h*w+(py*p+y)*w+px*p:][:p])
							}
						}
					}
					n++
				}
			}
		}
	}
	return pix, gh, gw, nil
}

// mtmdQwenSize is mtmd's smart_resize (img_tool::calc_size_preserved_ratio
// with min and max pixels, clip.cpp d32676d7): as transformers' but in
// float32, rounding half away from zero, and each side at least factor.
func mtmdQwenSize(height, width, factor, minPixels, maxPixels int) (int, int, error) {
	if height <= 0 || width <= 0 || factor <= 0 {
		return 0, 0, fmt.Errorf("vision: image %d×%d for a factor %d", width, height, factor)
	}
	f := float32(factor)
	round := func(x float32) int { return int(math.Round(float64(x/f))) * factor }
	ceil := func(x float32) int { return int(math.Ceil(float64(x/f))) * factor }
	floor := func(x float32) int { return int(math.Floor(float64(x/f))) * factor }
	hb, wb := max(factor, round(float32(height))), max(factor, round(float32(width)))
	switch {
	case hb*wb > maxPixels:
		beta := float32(math.Sqrt(float64(float32(height*width) / float32(maxPixels))))
		hb = max(factor, floor(float32(height)/beta))
		wb = max(factor, floor(float32(width)/beta))
	case hb*wb < minPixels:
		beta := float32(math.Sqrt(float64(float32(minPixels) / float32(height*width))))
		hb, wb = ceil(float32(height)*beta), ceil(float32(width)*beta)
	}
	return hb, wb, nil
}
