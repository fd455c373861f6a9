package vision

import (
	"testing"
)

// smart_resize's cases from the fixtures (testdata/vision/qwen2_5_vl and
// qwen3_vl reference.json's image_grid_thw, mtmd.json's tiles): transformers'
// in float64 with half-to-even rounding, mtmd's in float32.
func TestQwenSizes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		h, w, factor, lo, hi int
		mtmd                 bool
		wantH, wantW         int
	}{
		{252, 448, 28, 3136, 25088, false, 112, 196}, // Qwen2.5-VL, scaled down past max_pixels
		{170, 130, 28, 3136, 25088, false, 168, 140},
		{252, 448, 32, 4096, 32768, false, 128, 224}, // Qwen3-VL
		{170, 130, 32, 4096, 32768, false, 160, 128},
		{252, 448, 28, 8 * 784, 4096 * 784, true, 252, 448}, // mtmd's limits: 8–4096 tokens
		{170, 130, 28, 8 * 784, 4096 * 784, true, 168, 140},
		{252, 448, 32, 8 * 1024, 4096 * 1024, true, 256, 448},
		{170, 130, 32, 8 * 1024, 4096 * 1024, true, 160, 128},
		{10, 10, 28, 3136, 25088, false, 56, 56}, // scaled up to min_pixels
	} {
		size := SmartResize
		if c.mtmd {
			size = mtmdQwenSize
		}
		h, w, err := size(c.h, c.w, c.factor, c.lo, c.hi)
		if err != nil || h != c.wantH || w != c.wantW {
			t.Errorf("%d×%d by %d (mtmd %v): %d×%d, %v; want %d×%d", c.w, c.h, c.factor, c.mtmd, w, h, err, c.wantW, c.wantH)
		}
	}
	if _, _, err := SmartResize(1, 300, 28, 3136, 25088); err == nil {
		t.Error("aspect ratio 300: no error")
	}
	q := QwenVL{Patch: 14, Merge: 2, Temporal: 2, MinPixels: 1 << 40, MaxPixels: 1 << 41, Method: Transformers}
	if _, _, _, err := q.Patches(NewImage(40, 30)); err == nil {
		t.Error("min_pixels 2^40: no error")
	}
}

// Any image size and pixel limits: an error or patches of the grid's size,
// never a panic.
func FuzzQwenPatches(f *testing.F) {
	f.Add(uint16(130), uint16(170), uint32(3136), uint32(25088), true, false)
	f.Add(uint16(1), uint16(199), uint32(1), uint32(1), false, true)
	f.Fuzz(func(t *testing.T, w, h uint16, lo, hi uint32, mtmd, fast bool) {
		if w == 0 || h == 0 || int(w)*int(h) > 1<<16 || hi > 1<<20 {
			return
		}
		m := Transformers
		if mtmd {
			m = Mtmd
		}
		q := QwenVL{Patch: 14, Merge: 2, Temporal: 2, MinPixels: int(lo), MaxPixels: int(hi), Method: m, Fast: fast,
			Mean: [3]float32{0.5, 0.5, 0.5}, Std: [3]float32{0.5, 0.5, 0.5}}
		pix, gh, gw, err := q.Patches(NewImage(int(w), int(h)))
		if err != nil {
			return
		}
		if gh%2 != 0 || gw%2 != 0 || len(pix) != gh*gw*3*2*14*14 {
			t.Fatalf("%d×%d: grid %d×%d, %d values", w, h, gw, gh, len(pix))
		}
	})
}
