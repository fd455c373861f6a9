package vision

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"os"
	"testing"
)

// transformersRef is testdata/vision/preprocess/transformers.json,
// written by its gen_preprocess.py with Pillow and transformers.
type transformersRef struct {
	Pillow       string `json:"pillow"`
	Transformers string `json:"transformers"`
	Images       map[string]struct {
		Width       int               `json:"width"`
		Height      int               `json:"height"`
		PILBilinear map[string]string `json:"pil_bilinear"`
		Gemma3PV16  []float32         `json:"gemma3_pixel_values_16"`
	} `json:"images"`
	JPEG struct {
		File      string `json:"file"`
		Width     int    `json:"width"`
		Height    int    `json:"height"`
		PillowRGB string `json:"pillow_rgb"`
	} `json:"jpeg"`
}

// maxJPEGDiff bounds |Go's decoding − Pillow's| of a 4:2:0 JPEG in levels:
// the chroma upsampling is libjpeg's (FromImage); the inverse DCTs and
// YCbCr → RGB conversions still differ (3 measured; nearest-sample chroma,
// Go's own, was 102 on the same file).
const maxJPEGDiff = 4

func readRef(t *testing.T) transformersRef {
	t.Helper()
	b, err := os.ReadFile("../testdata/vision/preprocess/transformers.json")
	if err != nil {
		t.Fatal(err)
	}
	var r transformersRef
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Images) != 2 {
		t.Fatalf("reference has %d images, want 2", len(r.Images))
	}
	return r
}

// Pillow's BILINEAR resize, shrinking and enlarging each axis, is
// reproduced byte for byte.
func TestResizePIL(t *testing.T) {
	t.Parallel()
	ref := readRef(t)
	for name, rec := range ref.Images {
		img, err := ReadFile("../testdata/vision/preprocess/" + name + ".png")
		if err != nil {
			t.Fatal(err)
		}
		if img.W != rec.Width || img.H != rec.Height {
			t.Fatalf("%s: decoded %d×%d, Pillow %d×%d", name, img.W, img.H, rec.Width, rec.Height)
		}
		if len(rec.PILBilinear) == 0 {
			t.Fatalf("%s: no resizes in the reference", name)
		}
		for size, want := range rec.PILBilinear {
			var w, h int
			if _, err := fmt.Sscanf(size, "%dx%d", &w, &h); err != nil {
				t.Fatal(err)
			}
			got := hex.EncodeToString(ResizePIL(img, w, h).Pix)
			if got != want {
				n := 0
				for i := 0; i < len(got); i += 2 {
					if got[i:i+2] != want[i:i+2] {
						n++
					}
				}
				t.Errorf("%s → %s: %d of %d bytes differ from Pillow %s", name, size, n, len(want)/2, ref.Pillow)
			}
		}
	}
}

// transformers' Gemma3ImageProcessor pixel_values are reproduced exactly
// (stretch with Pillow, float64 rescale, float32 normalize).
func TestPreprocessTransformers(t *testing.T) {
	t.Parallel()
	ref := readRef(t)
	p := Preprocess{Size: 16, Mean: [3]float32{0.5, 0.5, 0.5}, Std: [3]float32{0.5, 0.5, 0.5}, Method: Transformers}
	for name, rec := range ref.Images {
		img, err := ReadFile("../testdata/vision/preprocess/" + name + ".png")
		if err != nil {
			t.Fatal(err)
		}
		got := p.Pixels(img)
		if len(got) != len(rec.Gemma3PV16) {
			t.Fatalf("%s: %d values, transformers %d", name, len(got), len(rec.Gemma3PV16))
		}
		for i := range got {
			if got[i] != rec.Gemma3PV16[i] {
				t.Fatalf("%s: pixel_values[%d] = %v, transformers %v", name, i, got[i], rec.Gemma3PV16[i])
			}
		}
	}
}

// mtmd's letterbox keeps the aspect ratio and centres on black; its
// bilinear filter is corner-aligned (the corners are the source's).
func TestLetterboxMtmd(t *testing.T) {
	t.Parallel()
	src := NewImage(4, 2)
	for i := range src.Pix {
		src.Pix[i] = uint8(10 + 20*i%250)
	}
	dst := LetterboxMtmd(src, 8, 8, [3]uint8{})
	// scale min(8/4, 8/2) = 2 → 8×4 at rows 2..5.
	for y := 0; y < 8; y++ {
		for x := 0; x < 8; x++ {
			inside := y >= 2 && y < 6
			if !inside && (dst.At(x, y, 0)|dst.At(x, y, 1)|dst.At(x, y, 2)) != 0 {
				t.Fatalf("pixel (%d,%d) outside the image is not black", x, y)
			}
		}
	}
	for c := 0; c < 3; c++ {
		if dst.At(0, 2, c) != src.At(0, 0, c) || dst.At(7, 5, c) != src.At(3, 1, c) {
			t.Fatalf("channel %d: corners %d,%d; source %d,%d", c, dst.At(0, 2, c), dst.At(7, 5, c), src.At(0, 0, c), src.At(3, 1, c))
		}
	}
	// A value halfway between two pixels is truncated, not rounded:
	// x=1 of 3 samples source x=1/3·... use a 2-pixel row to 3 pixels.
	row := &Image{W: 2, H: 1, Pix: []uint8{0, 0, 0, 255, 255, 255}}
	mid := ResizeMtmd(row, 3, 1)
	if mid.At(1, 0, 0) != 127 {
		t.Fatalf("midpoint of 0 and 255 = %d, mtmd truncates 127.5 to 127", mid.At(1, 0, 0))
	}
}

// A JPEG decodes to within maxJPEGDiff of Pillow's (libjpeg's) pixels.
func TestDecodeJPEG(t *testing.T) {
	t.Parallel()
	ref := readRef(t)
	m, err := ReadFile("../testdata/vision/preprocess/" + ref.JPEG.File)
	if err != nil {
		t.Fatal(err)
	}
	want, err := hex.DecodeString(ref.JPEG.PillowRGB)
	if err != nil || m.W != ref.JPEG.Width || m.H != ref.JPEG.Height || len(want) != len(m.Pix) {
		t.Fatalf("decoded %d×%d, Pillow %d×%d (%v)", m.W, m.H, ref.JPEG.Width, ref.JPEG.Height, err)
	}
	worst := 0
	for i := range want {
		worst = max(worst, int(want[i])-int(m.Pix[i]), int(m.Pix[i])-int(want[i]))
	}
	if worst > maxJPEGDiff {
		t.Errorf("JPEG pixels differ from Pillow's by up to %d levels", worst)
	}
	t.Logf("max |Go − Pillow| = %d levels", worst)
}

// Alpha is dropped without compositing; gray replicates.
func TestDecode(t *testing.T) {
	t.Parallel()
	src := image.NewNRGBA(image.Rect(0, 0, 2, 1))
	src.SetNRGBA(0, 0, color.NRGBA{200, 100, 50, 0})
	src.SetNRGBA(1, 0, color.NRGBA{1, 2, 3, 128})
	var buf bytes.Buffer
	if err := png.Encode(&buf, src); err != nil {
		t.Fatal(err)
	}
	m, err := Decode(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if want := []uint8{200, 100, 50, 1, 2, 3}; !bytes.Equal(m.Pix, want) {
		t.Fatalf("decoded %v, want %v", m.Pix, want)
	}
	g := image.NewGray(image.Rect(0, 0, 1, 1))
	g.Pix[0] = 77
	buf.Reset()
	png.Encode(&buf, g)
	if m, err = Decode(bytes.NewReader(buf.Bytes())); err != nil || !bytes.Equal(m.Pix, []uint8{77, 77, 77}) {
		t.Fatalf("gray: %v %v", m, err)
	}
	// JPEGs of awkward sizes (Go's encoder writes 4:2:0): the chroma
	// upsampling's edges, and a flat colour stays flat.
	for _, sz := range [][2]int{{1, 1}, {1, 2}, {2, 1}, {3, 3}, {5, 4}, {17, 9}} {
		src := image.NewRGBA(image.Rect(0, 0, sz[0], sz[1]))
		for i := range src.Pix {
			src.Pix[i] = []uint8{200, 60, 30, 255}[i%4]
		}
		buf.Reset()
		if err := jpeg.Encode(&buf, src, &jpeg.Options{Quality: 100}); err != nil {
			t.Fatal(err)
		}
		m, err := Decode(bytes.NewReader(buf.Bytes()))
		if err != nil || m.W != sz[0] || m.H != sz[1] {
			t.Fatalf("%v: %v %v", sz, m, err)
		}
		for i, v := range m.Pix {
			if d := int(v) - int([]uint8{200, 60, 30}[i%3]); d > 3 || d < -3 {
				t.Fatalf("%v: flat colour decoded as %v", sz, m.Pix[:6])
			}
		}
	}
	if _, err := Decode(bytes.NewReader([]byte("not an image"))); !errors.Is(err, ErrFormat) {
		t.Fatalf("garbage: %v, want ErrFormat", err)
	}
}

// FuzzDecode: no input panics or allocates past MaxPixels.
func FuzzDecode(f *testing.F) {
	for _, name := range []string{"wide", "tall"} {
		b, err := os.ReadFile("../testdata/vision/preprocess/" + name + ".png")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	jpg, err := os.ReadFile("../testdata/vision/preprocess/wide.jpg")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(jpg)
	f.Add([]byte("\xff\xd8\xff\xe0"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Decode(bytes.NewReader(b))
		if err == nil && len(m.Pix) != m.W*m.H*3 {
			t.Fatalf("%d×%d image with %d bytes", m.W, m.H, len(m.Pix))
		}
	})
}

// Pixtral.Size gives the sizes the references resized the fixture's images
// to (testdata/vision/mistral3: transformers' image_sizes in
// hf/reference.json, mtmd's tiles in gguf/mtmd.json), and refuses empty
// images.
func TestPixtralSize(t *testing.T) {
	t.Parallel()
	u := 28 // patch 14 × spatial_merge_size 2
	hf := Pixtral{Unit: u, LongestEdge: 84, Method: Transformers}
	mtmd := Pixtral{Unit: u, MinPixels: 8 * u * u, MaxPixels: 1024 * u * u, Method: Mtmd}
	for _, c := range []struct {
		p          Pixtral
		W, H, w, h int
	}{
		{hf, 96, 40, 84, 56}, {hf, 45, 77, 56, 84},
		{mtmd, 96, 40, 140, 56}, {mtmd, 45, 77, 84, 112},
	} {
		w, h, err := c.p.Size(c.W, c.H)
		if err != nil || w != c.w || h != c.h {
			t.Errorf("%v: %d×%d → %d×%d (%v), want %d×%d", c.p.Method, c.W, c.H, w, h, err, c.w, c.h)
		}
	}
	bad := []struct {
		p    Pixtral
		W, H int
	}{
		{hf, 0, 5}, {mtmd, 5, 0}, {Pixtral{Unit: u, Method: Mtmd}, 96, 40}, {Pixtral{Unit: u, Method: Transformers}, 96, 40},
		{mtmd, 1 << 20, 1}, // 1M pixels wide even at the area bound
	}
	for _, c := range bad {
		if w, h, err := c.p.Size(c.W, c.H); err == nil {
			t.Errorf("%+v: %d×%d → %d×%d, no error", c.p, c.W, c.H, w, h)
		}
	}
}
