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

// FromImage converts any image.Image to RGB as Decode does.
func FromImage(src image.Image) *Image {
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
