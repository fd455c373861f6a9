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
	// Fast: transformers' fast image processor (Qwen2VLImageProcessorFast,
	// Qwen3-VL's): torch's antialiased bicubic on the uint8 image, and the
	// rescale folded into the normalization, (x − 255·mean)/(255·std) in
	// float32.
	Fast bool
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
	if img == nil || img.W <= 0 || img.H <= 0 {
		return 0, 0, fmt.Errorf("vision: no image")
	}
	size := SmartResize
	if q.Method == Mtmd {
		size = mtmdQwenSize
	}
	if h, w, err = size(img.H, img.W, q.Patch*q.Merge, q.MinPixels, q.MaxPixels); err != nil {
		return 0, 0, err
	}
	// min_pixels comes from a config file: the resized image, not only
	// the decoded one, stays within MaxPixels.
	if h <= 0 || w <= 0 || int64(h)*int64(w) > MaxPixels {
		return 0, 0, fmt.Errorf("vision: image %d×%d resizes to %d×%d (at most %d pixels)", img.W, img.H, w, h, MaxPixels)
	}
	return h, w, nil
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
	} else if q.Fast {
		r = ResizeTorch(img, w, h, TorchBicubic)
	} else {
		r = ResizePILFilter(img, w, h, PILBicubic)
	}
	var mean255, std255 [3]float32
	for c := range mean255 {
		mean255[c], std255[c] = q.Mean[c]*255, q.Std[c]*255
	}
	pix = make([]float32, 3*h*w)
	for i := 0; i < h*w; i++ {
		for c := 0; c < 3; c++ {
			u := r.Pix[i*3+c]
			var x float32
			if q.Method == Transformers && q.Fast {
				pix[c*h*w+i] = (float32(u) - mean255[c]) / std255[c]
				continue
			}
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

// ResizeTorch resizes src to w×h as torch's antialiased interpolate does on
// a uint8 CPU image (torchvision's resize with antialias, whose BICUBIC
// runs natively on uint8; the Qwen-VL fast image processors): Pillow's
// separable scheme, the kernel's support widened by the shrink factor, the
// weights in float64 normalized per output and rounded to int16 fixed point
// with as many fraction bits as keep the pass's largest weight below 2¹⁵,
// the horizontal pass first, each pass rounded and clamped to u8. A pass
// whose size does not change is skipped.
func ResizeTorch(src *Image, w, h int, f TorchFilter) *Image {
	cur := src
	if w != src.W {
		b, k, n, prec := torchCoeffs(src.W, w, f)
		tmp := NewImage(w, src.H)
		for y := 0; y < src.H; y++ {
			for x := 0; x < w; x++ {
				lo, cnt := b[2*x], b[2*x+1]
				for c := 0; c < 3; c++ {
					ss := int64(1) << (prec - 1)
					for i, kv := range k[x*n : x*n+cnt] {
						ss += int64(src.At(lo+i, y, c)) * int64(kv)
					}
					tmp.Pix[(y*w+x)*3+c] = clipShift(ss, prec)
				}
			}
		}
		cur = tmp
	}
	if h == cur.H {
		return cur
	}
	b, k, n, prec := torchCoeffs(cur.H, h, f)
	dst := NewImage(w, h)
	for y := 0; y < h; y++ {
		lo, cnt := b[2*y], b[2*y+1]
		for x := 0; x < w; x++ {
			for c := 0; c < 3; c++ {
				ss := int64(1) << (prec - 1)
				for i, kv := range k[y*n : y*n+cnt] {
					ss += int64(cur.At(x, lo+i, c)) * int64(kv)
				}
				dst.Pix[(y*w+x)*3+c] = clipShift(ss, prec)
			}
		}
	}
	return dst
}

// torchCoeffs is torch's _compute_index_ranges_int16_weights with
// antialias for filter f: per output index its first input and count, n
// int16 weights, and their fraction bits.
func torchCoeffs(in, out int, f TorchFilter) (bounds []int, kk []int32, n int, prec uint) {
	scale := float64(in) / float64(out)
	support := f.Support
	invscale := 1.0
	if scale >= 1 {
		support *= scale
		invscale = 1 / scale
	}
	n = int(math.Ceil(support))*2 + 1
	bounds = make([]int, 2*out)
	wts := make([]float64, out*n)
	wmax := 0.0
	for i := 0; i < out; i++ {
		center := scale * (float64(i) + 0.5)
		xmin := max(int(center-support+0.5), 0)
		xsize := min(max(min(int(center+support+0.5), in)-xmin, 0), n)
		w := wts[i*n : i*n+n]
		total := 0.0
		for j := 0; j < xsize; j++ {
			w[j] = f.Kernel((float64(j+xmin) - center + 0.5) * invscale)
			total += w[j]
		}
		if total != 0 {
			for j := 0; j < xsize; j++ {
				w[j] /= total
				wmax = max(wmax, w[j])
			}
		}
		bounds[2*i], bounds[2*i+1] = xmin, xsize
	}
	for prec = 0; prec < 22; prec++ {
		if int(0.5+wmax*float64(int(1)<<(prec+1))) >= 1<<15 {
			break
		}
	}
	kk = make([]int32, len(wts))
	for i, v := range wts {
		v *= float64(int(1) << prec)
		if v < 0 {
			kk[i] = int32(int16(int(-0.5 + v)))
		} else {
			kk[i] = int32(int16(int(0.5 + v)))
		}
	}
	return bounds, kk, n, prec
}

// clipShift is a fixed-point sum with prec fraction bits, shifted down and
// clamped to u8.
func clipShift(ss int64, prec uint) uint8 {
	v := ss >> prec
	switch {
	case v < 0:
		return 0
	case v > 255:
		return 255
	}
	return uint8(v)
}

// TorchFilter is an antialiasing kernel of torch's interpolate: the
// weight at distance x and its support at scale 1.
type TorchFilter struct {
	Kernel  func(x float64) float64
	Support float64
}

// TorchBicubic is torch's antialiased bicubic kernel (a = −0.5, its
// cubic-convolution form, evaluated in torch's order, which is not
// Pillow's: PILBicubic).
var TorchBicubic = TorchFilter{Kernel: func(x float64) float64 {
	const a = -0.5
	x = math.Abs(x)
	switch {
	case x < 1:
		return ((a+2)*x-(a+3))*x*x + 1
	case x < 2:
		return ((a*x-5*a)*x+8*a)*x - 4*a
	}
	return 0
}, Support: 2}
