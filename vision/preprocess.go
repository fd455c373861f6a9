package vision

import "fmt"

// Method says whose preprocessing Preprocess reproduces.
type Method int

const (
	// Mtmd is llama.cpp mtmd's fixed-size path (Gemma 3): letterbox on
	// black with mtmd's bilinear filter, x/255 in float32.
	Mtmd Method = iota
	// Transformers is transformers' slow image processor (Gemma 3):
	// stretch with Pillow's BILINEAR, x·(1/255) in float64.
	Transformers
)

// String names the method as the CLI does.
func (m Method) String() string {
	switch m {
	case Mtmd:
		return "llamacpp"
	case Transformers:
		return "transformers"
	}
	return fmt.Sprintf("Method(%d)", int(m))
}

// ParseMethod reads a method's String.
func ParseMethod(s string) (Method, error) {
	switch s {
	case "llamacpp", "mtmd", "llama.cpp":
		return Mtmd, nil
	case "transformers", "hf":
		return Transformers, nil
	}
	return 0, fmt.Errorf("vision: unknown preprocessing %q (llamacpp or transformers)", s)
}

// Preprocess is a fixed-size image preprocessor: the image becomes one
// Size×Size tile normalized with Mean and Std.
type Preprocess struct {
	Size      int
	Mean, Std [3]float32
	Method    Method
}

// Resized returns the u8 image the tower's tile is made of, before
// normalization.
func (p Preprocess) Resized(img *Image) *Image {
	if p.Method == Transformers {
		return ResizePIL(img, p.Size, p.Size)
	}
	return LetterboxMtmd(img, p.Size, p.Size, [3]uint8{})
}

// Pixels returns the normalized tile, channel-major [3][Size][Size] as
// pixel_values holds it (mtmd keeps it pixel-major; the values are the same).
func (p Preprocess) Pixels(img *Image) []float32 {
	return Normalize(p.Resized(img), p.Mean, p.Std, p.Method)
}

// Normalize turns a resized image into pixel values, channel-major
// [3][H][W], as method m's reference rescales and normalizes it.
func Normalize(r *Image, mean, std [3]float32, m Method) []float32 {
	n := r.W * r.H
	out := make([]float32, 3*n)
	for i := 0; i < n; i++ {
		for c := 0; c < 3; c++ {
			u := r.Pix[i*3+c]
			var x float32
			if m == Transformers {
				// rescale: image.astype(float64) * (1/255), then float32.
				x = float32(float64(u) * (1.0 / 255))
			} else {
				// clip_image_f32::from_u8: (float) u / 255.0f.
				x = float32(u) / 255
			}
			out[c*n+i] = (x - mean[c]) / std[c]
		}
	}
	return out
}

// NormalizeFast is Normalize as transformers' fast (torchvision) image
// processors do it: the rescale folded into the normalization,
// (x − mean/rescale)/(std/rescale) in float32 with rescale 1/255.
func NormalizeFast(r *Image, mean, std [3]float32) []float32 {
	n := r.W * r.H
	var m, s [3]float32
	for c := range m {
		m[c], s[c] = float32(float64(mean[c])*255), float32(float64(std[c])*255)
	}
	out := make([]float32, 3*n)
	for i := 0; i < n; i++ {
		for c := 0; c < 3; c++ {
			out[c*n+i] = (float32(r.Pix[i*3+c]) - m[c]) / s[c]
		}
	}
	return out
}
