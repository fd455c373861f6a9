package vision

import "fmt"

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
