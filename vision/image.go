package vision

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	_ "image/gif" // registered decoders
	_ "image/jpeg"
	_ "image/png"
	"io"
	"os"
)

// MaxPixels caps the decoded size of an image (width × height): a header
// may claim any size, and the decoder allocates what it claims.
const MaxPixels = 1 << 26

// ErrFormat reports an image that cannot be decoded.
var ErrFormat = errors.New("vision: not a decodable image")

// Image is an 8-bit RGB image: Pix holds W×H pixels row by row, three
// bytes (R, G, B) each, as stb_image and Pillow's RGB mode lay them out.
type Image struct {
	W, H int
	Pix  []uint8
}

// At returns the channel c of pixel (x, y).
func (m *Image) At(x, y, c int) uint8 { return m.Pix[(y*m.W+x)*3+c] }

// NewImage returns a black w×h image.
func NewImage(w, h int) *Image { return &Image{W: w, H: h, Pix: make([]uint8, w*h*3)} }

// ReadFile decodes the PNG, JPEG or GIF file at path into RGB.
func ReadFile(path string) (*Image, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("vision: %w", err)
	}
	m, err := Decode(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// Decode decodes a PNG, JPEG or GIF stream into RGB. Alpha is dropped
// without compositing (Pillow's convert("RGB") and stb_image with three
// channels do the same); 16-bit samples keep their high byte, as both do;
// gray replicates into the three channels.
func Decode(r io.ReadSeeker) (*Image, error) {
	cfg, format, err := image.DecodeConfig(r)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || int64(cfg.Width)*int64(cfg.Height) > MaxPixels {
		return nil, fmt.Errorf("%w: %s image of %d×%d pixels (at most %d pixels)", ErrFormat, format, cfg.Width, cfg.Height, MaxPixels)
	}
	if _, err := r.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("vision: %w", err)
	}
	src, _, err := image.Decode(r)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrFormat, format, err)
	}
	return FromImage(src), nil
}

// FromImage converts any image.Image to RGB as Decode does. A JPEG's
// subsampled chroma (4:2:0, 4:2:2) is upsampled with the triangle filter
// libjpeg calls fancy upsampling (jdsample.c h2v2/h2v1_fancy_upsample: ¾
// of the nearer sample, ¼ of the farther, in each subsampled direction,
// its rounding), as Pillow's libjpeg and stb_image (llama.cpp) both do,
// where Go's YCbCr.At takes the nearest sample (up to 100 levels apart at
// a sharp colour edge). What still parts the decoders is their inverse
// DCT and colour conversion: a few levels (3 on the test image).
func FromImage(src image.Image) *Image {
	if s, ok := src.(*image.YCbCr); ok && s.Bounds().Min == (image.Point{}) &&
		(s.SubsampleRatio == image.YCbCrSubsampleRatio420 || s.SubsampleRatio == image.YCbCrSubsampleRatio422) {
		return fancyYCbCr(s)
	}
	b := src.Bounds()
	m := NewImage(b.Dx(), b.Dy())
	i := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl := rgb8(src, x, y)
			m.Pix[i], m.Pix[i+1], m.Pix[i+2] = r, g, bl
			i += 3
		}
	}
	return m
}

// rgb8 is pixel (x, y) of src as 8-bit, non-premultiplied RGB.
func rgb8(src image.Image, x, y int) (r, g, b uint8) {
	switch s := src.(type) {
	case *image.RGBA:
		o := s.PixOffset(x, y)
		if a := s.Pix[o+3]; a != 0xff && a != 0 {
			c := color.NRGBAModel.Convert(s.RGBAAt(x, y)).(color.NRGBA)
			return c.R, c.G, c.B
		}
		return s.Pix[o], s.Pix[o+1], s.Pix[o+2]
	case *image.NRGBA:
		o := s.PixOffset(x, y)
		return s.Pix[o], s.Pix[o+1], s.Pix[o+2]
	case *image.NRGBA64:
		o := s.PixOffset(x, y)
		return s.Pix[o], s.Pix[o+2], s.Pix[o+4]
	case *image.RGBA64:
		c := color.NRGBA64Model.Convert(s.RGBA64At(x, y)).(color.NRGBA64)
		return uint8(c.R >> 8), uint8(c.G >> 8), uint8(c.B >> 8)
	case *image.Gray:
		v := s.GrayAt(x, y).Y
		return v, v, v
	case *image.Gray16:
		v := uint8(s.Gray16At(x, y).Y >> 8)
		return v, v, v
	case *image.YCbCr:
		c := s.YCbCrAt(x, y)
		return color.YCbCrToRGB(c.Y, c.Cb, c.Cr)
	case *image.Paletted:
		c := color.NRGBAModel.Convert(s.At(x, y)).(color.NRGBA)
		return c.R, c.G, c.B
	}
	c := color.NRGBA64Model.Convert(src.At(x, y)).(color.NRGBA64)
	return uint8(c.R >> 8), uint8(c.G >> 8), uint8(c.B >> 8)
}

// fancyYCbCr converts a 4:2:0 or 4:2:2 YCbCr image to RGB with libjpeg's
// fancy chroma upsampling (FromImage) and Go's YCbCr → RGB.
func fancyYCbCr(s *image.YCbCr) *Image {
	w, h := s.Rect.Dx(), s.Rect.Dy()
	cw := (w + 1) / 2
	ch := h
	if s.SubsampleRatio == image.YCbCrSubsampleRatio420 {
		ch = (h + 1) / 2
	}
	cb, cr := make([]uint8, w*h), make([]uint8, w*h)
	for _, pl := range []struct{ src, dst []uint8 }{{s.Cb, cb}, {s.Cr, cr}} {
		for y := 0; y < h; y++ {
			// h2v2: column sums of the nearer chroma row ×3 and the farther ×1.
			near, far := y, y
			if ch != h {
				near, far = y/2, y/2-1
				if y%2 == 1 {
					far = y/2 + 1
				}
				far = max(0, min(far, ch-1))
			}
			col := func(i int) int {
				return 3*int(pl.src[near*s.CStride+i]) + int(pl.src[far*s.CStride+i])
			}
			row := pl.src[near*s.CStride:]
			for x := 0; x < w; x++ {
				i := x / 2
				var v int
				switch {
				case ch == h: // h2v1: its own rounding, the edges copied
					switch {
					case cw == 1 || x == 0 || x%2 == 1 && i == cw-1:
						v = int(row[i])
					case x%2 == 0:
						v = (3*int(row[i]) + int(row[i-1]) + 1) >> 2
					default:
						v = (3*int(row[i]) + int(row[i+1]) + 2) >> 2
					}
				case cw == 1 || x%2 == 0 && i == 0:
					v = (4*col(i) + 8) >> 4
				case x%2 == 0:
					v = (3*col(i) + col(i-1) + 8) >> 4
				case i == cw-1:
					v = (4*col(i) + 7) >> 4
				default:
					v = (3*col(i) + col(i+1) + 7) >> 4
				}
				pl.dst[y*w+x] = uint8(v)
			}
		}
	}
	m := NewImage(w, h)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			r, g, b := color.YCbCrToRGB(s.Y[y*s.YStride+x], cb[y*w+x], cr[y*w+x])
			o := (y*w + x) * 3
			m.Pix[o], m.Pix[o+1], m.Pix[o+2] = r, g, b
		}
	}
	return m
}
