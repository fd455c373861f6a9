package vision

import "math"

// ResizeMtmd resizes src to w×h with llama.cpp mtmd's bilinear filter
// (img_tool::resize_bilinear): corner-aligned sampling (output x maps to
// source x·(W−1)/(w−1)), the four neighbours blended in float32 and the
// result truncated to u8. It does not antialias.
func ResizeMtmd(src *Image, w, h int) *Image {
	w, h = max(w, 1), max(h, 1)
	dst := NewImage(w, h)
	if src.W == 0 || src.H == 0 {
		return dst
	}
	var xr, yr float32
	if w > 1 {
		xr = float32(src.W-1) / float32(w-1)
	}
	if h > 1 {
		yr = float32(src.H-1) / float32(h-1)
	}
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			// Rounded as products (float32(…)): Go may otherwise fuse them
			// into the subtractions below as FMAs, as it does on arm64.
			px, py := float32(float32(x)*xr), float32(float32(y)*yr)
			x0, y0 := min(int(px), src.W-1), min(int(py), src.H-1)
			x1, y1 := min(x0+1, src.W-1), min(y0+1, src.H-1)
			xf, yf := px-float32(x0), py-float32(y0)
			o := (y*w + x) * 3
			for c := 0; c < 3; c++ {
				top := lerp(float32(src.At(x0, y0, c)), float32(src.At(x1, y0, c)), xf)
				bot := lerp(float32(src.At(x0, y1, c)), float32(src.At(x1, y1, c)), xf)
				dst.Pix[o+c] = uint8(lerp(top, bot, yf))
			}
		}
	}
	return dst
}

// lerp is mtmd's s + (e − s)·t with the product rounded before the sum:
// the conversion keeps Go from fusing them into one FMA (which arm64 does,
// and which moves a pixel by one level against mtmd's x86 build).
func lerp(s, e, t float32) float32 { return s + float32((e-s)*t) }

// LetterboxMtmd fits src into a w×h canvas of colour pad as mtmd's
// img_tool::resize does with PAD_CEIL: one scale s = min(w/W, h/H) in
// float32, the image resized (ResizeMtmd) to ⌈W·s⌉×⌈H·s⌉ (capped at the
// canvas) and pasted at ((w−w')/2, (h−h')/2), integer halves. An image of
// the canvas's size is copied as it is.
func LetterboxMtmd(src *Image, w, h int, pad [3]uint8) *Image {
	if src.W == w && src.H == h {
		return &Image{W: w, H: h, Pix: append([]uint8(nil), src.Pix...)}
	}
	s := min(float32(w)/float32(src.W), float32(h)/float32(src.H))
	nw := min(int(math.Ceil(float64(float32(src.W)*s))), w)
	nh := min(int(math.Ceil(float64(float32(src.H)*s))), h)
	r := ResizeMtmd(src, nw, nh)
	dst := NewImage(w, h)
	for i := 0; i < len(dst.Pix); i += 3 {
		dst.Pix[i], dst.Pix[i+1], dst.Pix[i+2] = pad[0], pad[1], pad[2]
	}
	ox, oy := (w-r.W)/2, (h-r.H)/2
	for y := 0; y < r.H; y++ {
		copy(dst.Pix[((oy+y)*w+ox)*3:], r.Pix[y*r.W*3:(y+1)*r.W*3])
	}
	return dst
}

// pilBits is Pillow's fixed-point precision for 8-bit resampling
// (PRECISION_BITS = 32 − 8 − 2 in Resample.c).
const pilBits = 22

// ResizePIL resizes src to w×h as Pillow's Image.resize(…, BILINEAR) does
// for an RGB image (Pillow 11, Resample.c): a triangle filter whose support
// is the shrink factor (at least 1), so shrinking averages; weights
// normalized in float64 and rounded to 22-bit fixed point; a horizontal
// pass over the rows the vertical pass needs, rounded and clipped to u8,
// then the vertical pass. A pass whose size does not change is skipped.
func ResizePIL(src *Image, w, h int) *Image { return ResizePILFilter(src, w, h, PILBilinear) }

// PILFilter is one of Pillow's resampling filters: its kernel and support
// (the kernel's half-width at scale 1).
type PILFilter struct {
	Kernel  func(x float64) float64
	Support float64
}

// PILBilinear and PILBicubic are Pillow's BILINEAR (triangle) and BICUBIC
// (cubic convolution with a = −0.5) filters (Resample.c).
var (
	PILBilinear = PILFilter{Kernel: func(x float64) float64 {
		x = math.Abs(x)
		if x < 1 {
			return 1 - x
		}
		return 0
	}, Support: 1}
	PILBicubic = PILFilter{Kernel: func(x float64) float64 {
		const a = -0.5
		x = math.Abs(x)
		switch {
		case x < 1:
			return ((a+2)*x-(a+3))*x*x + 1
		case x < 2:
			return (((x-5)*x+8)*x - 4) * a
		}
		return 0
	}, Support: 2}
)

// ResizePILFilter is ResizePIL with Pillow's filter f (BICUBIC for the
// Qwen-VL processors).
func ResizePILFilter(src *Image, w, h int, f PILFilter) *Image {
	if src.W == w && src.H == h {
		return &Image{W: w, H: h, Pix: append([]uint8(nil), src.Pix...)}
	}
	hb, hk, hn := pilCoeffs(src.W, w, f)
	vb, vk, vn := pilCoeffs(src.H, h, f)
	cur := src
	if w != src.W {
		first, last := vb[0], vb[2*(h-1)]+vb[2*(h-1)+1]
		if h == src.H {
			first, last = 0, src.H
		}
		tmp := NewImage(w, last-first)
		for y := 0; y < tmp.H; y++ {
			for x := 0; x < w; x++ {
				lo, n := hb[2*x], hb[2*x+1]
				k := hk[x*hn : x*hn+n]
				for c := 0; c < 3; c++ {
					ss := int64(1) << (pilBits - 1)
					for i, kv := range k {
						ss += int64(src.At(lo+i, y+first, c)) * int64(kv)
					}
					tmp.Pix[(y*w+x)*3+c] = clip8(ss)
				}
			}
		}
		for y := 0; y < h; y++ {
			vb[2*y] -= first
		}
		cur = tmp
	}
	if h == src.H {
		return cur
	}
	dst := NewImage(w, h)
	for y := 0; y < h; y++ {
		lo, n := vb[2*y], vb[2*y+1]
		k := vk[y*vn : y*vn+n]
		for x := 0; x < w; x++ {
			for c := 0; c < 3; c++ {
				ss := int64(1) << (pilBits - 1)
				for i, kv := range k {
					ss += int64(cur.At(x, lo+i, c)) * int64(kv)
				}
				dst.Pix[(y*w+x)*3+c] = clip8(ss)
			}
		}
	}
	return dst
}

// pilCoeffs is Pillow's precompute_coeffs + normalize_coeffs_8bpc for
// filter f over the whole input (box 0..in): for each output index its
// first input index and count (bounds) and ksize fixed-point weights.
func pilCoeffs(in, out int, f PILFilter) (bounds []int, kk []int32, ksize int) {
	scale := float64(float32(in)) / float64(out)
	fs := max(scale, 1)
	support := f.Support * fs
	ksize = int(math.Ceil(support))*2 + 1
	bounds = make([]int, 2*out)
	kk = make([]int32, out*ksize)
	k := make([]float64, ksize)
	for xx := 0; xx < out; xx++ {
		center := (float64(xx) + 0.5) * scale
		ss := 1 / fs
		xmin := max(int(center-support+0.5), 0)
		xmax := min(int(center+support+0.5), in) - xmin
		var ww float64
		for x := 0; x < xmax; x++ {
			wv := f.Kernel((float64(x+xmin) - center + 0.5) * ss)
			k[x] = wv
			ww += wv
		}
		for x := 0; x < ksize; x++ {
			v := 0.0
			if x < xmax {
				v = k[x]
				if ww != 0 {
					v /= ww
				}
			}
			if v < 0 {
				kk[xx*ksize+x] = int32(-0.5 + v*(1<<pilBits))
			} else {
				kk[xx*ksize+x] = int32(0.5 + v*(1<<pilBits))
			}
		}
		bounds[2*xx], bounds[2*xx+1] = xmin, xmax
	}
	return bounds, kk, ksize
}

// clip8 is Pillow's clip8: the fixed-point sum shifted down and clamped.
func clip8(ss int64) uint8 {
	v := ss >> pilBits
	switch {
	case v < 0:
		return 0
	case v > 255:
		return 255
	}
	return uint8(v)
}
