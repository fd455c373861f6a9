package vision

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The canvases in find_supported_resolutions' order (its docstring's
// max_num_chunks 4: ratios 1/4, 1, 4, 1/3, 3, 1/2, 2 as they first
// appear) and get_best_fit's choices, among them its docstring's 200×300
// image on 224 tiles (the smallest upscale, ties to the smaller area:
// 224×448).
func TestLlama4Grid(t *testing.T) {
	t.Parallel()
	p := Llama4{Tile: 224, MaxPatches: 4}
	cs, err := p.Canvases()
	if err != nil {
		t.Fatal(err)
	}
	want := [][2]int{{1, 4}, {2, 2}, {1, 1}, {4, 1}, {1, 3}, {3, 1}, {1, 2}, {2, 1}}
	if !slices.Equal(cs, want) {
		t.Fatalf("canvases %v, want %v", cs, want)
	}
	for _, c := range []struct{ h, w, rows, cols int }{
		{200, 300, 1, 2}, // scales 1.12 (1×2, 2×2): the smaller area
		{1000, 1000, 2, 2},
		{100, 900, 1, 4}, // downscale as little as possible
		{224, 224, 1, 1},
	} {
		r, cl, err := p.Grid(c.h, c.w)
		if err != nil || r != c.rows || cl != c.cols {
			t.Errorf("%d×%d: grid %d×%d (%v), want %d×%d", c.h, c.w, r, cl, err, c.rows, c.cols)
		}
	}
}

// Any image size and max_patches: an error or the canvas's tiles plus the
// global tile, each 3×Tile×Tile; never a panic.
func FuzzLlama4Tiles(f *testing.F) {
	f.Add(96, 40, 16, false)
	f.Add(45, 77, 16, true)
	f.Add(1, 300, 4, false)
	f.Add(0, 5, 1, false)
	f.Add(30, 30, 0, true)
	f.Fuzz(func(t *testing.T, w, h, maxPatches int, maxCanvas bool) {
		if w > 400 || h > 400 || w < -1 || h < -1 || maxPatches > 16 {
			return // keep each case small
		}
		p := Llama4{Tile: 14, MaxPatches: maxPatches, MaxCanvas: maxCanvas, Mean: [3]float32{0.5, 0.5, 0.5}, Std: [3]float32{0.5, 0.5, 0.5}}
		var img *Image
		if w > 0 && h > 0 {
			img = NewImage(w, h)
		} else {
			img = &Image{W: w, H: h}
		}
		tiles, rows, cols, err := p.Tiles(img)
		if err != nil {
			return
		}
		want := rows * cols
		if want > 1 {
			want++
		}
		if len(tiles) != want || rows*cols > maxPatches {
			t.Fatalf("%d×%d, max %d: %d tiles on %d×%d", w, h, maxPatches, len(tiles), rows, cols)
		}
		for _, tl := range tiles {
			if len(tl) != 3*14*14 {
				t.Fatalf("tile of %d values", len(tl))
			}
		}
	})
}

// Llama4ImageProcessorFast's pixel_values bit for bit (bfloat16) on four
// images at small tiles: upscaled, downscaled, unscaled, one tile and many
// (preprocess/llama4.json, made by transformers v4.57.6; the torchvision
// resize path of a non-AVX2 torch, as there), including the two that
// downscale ../images/wide.png both ways (96×40 to 33×14 and 66×28), whose
// 5- and 6-tap sums need fmaSum's order.
func TestLlama4TilesTransformers(t *testing.T) {
	t.Parallel()
	var ref struct {
		Cases []struct {
			Image       string `json:"image"`
			Tile        int    `json:"tile"`
			MaxPatches  int    `json:"max_patches"`
			AspectRatio [2]int `json:"aspect_ratio"`
			Shape       []int  `json:"shape"`
			BF16        string `json:"bf16"`
		} `json:"cases"`
	}
	b, err := os.ReadFile("../testdata/vision/preprocess/llama4.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	if len(ref.Cases) != 16 {
		t.Fatalf("%d cases, want 16", len(ref.Cases))
	}
	for _, c := range ref.Cases {
		img, err := ReadFile(filepath.Join("../testdata/vision/preprocess", c.Image))
		if err != nil {
			t.Fatal(err)
		}
		p := Llama4{Tile: c.Tile, MaxPatches: c.MaxPatches, Mean: [3]float32{0.5, 0.5, 0.5}, Std: [3]float32{0.5, 0.5, 0.5}}
		tiles, rows, cols, err := p.Tiles(img)
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("%s tile %d max %d", c.Image, c.Tile, c.MaxPatches)
		if [2]int{rows, cols} != c.AspectRatio || len(tiles) != c.Shape[0] {
			t.Errorf("%s: %d tiles on %d×%d, the processor's %d on %v", name, len(tiles), rows, cols, c.Shape[0], c.AspectRatio)
			continue
		}
		want, err := hex.DecodeString(c.BF16)
		if err != nil {
			t.Fatal(err)
		}
		got := slices.Concat(tiles...)
		if 2*len(got) != len(want) {
			t.Fatalf("%s: %d values, the processor's %d", name, len(got), len(want)/2)
		}
		bad := 0
		for i, v := range got {
			w := uint32(want[2*i])<<24 | uint32(want[2*i+1])<<16
			if math.Float32bits(v) != w {
				if bad == 0 {
					t.Errorf("%s: value %d is %v, the processor's %v", name, i, v, math.Float32frombits(w))
				}
				bad++
			}
		}
		if bad > 0 {
			t.Errorf("%s: %d of %d values differ", name, bad, len(got))
		}
	}
}

// mtmd's llama4 slicing: the grid llava-uhd picks over clip.cpp's 1–3 × 1–3
// candidates (the fixture's images: 1×2 and 2×1, as
// testdata/vision/llama4/gguf/mtmd.json records), the slices then the
// overview; an image no larger than a tile is that tile alone, no grid.
func TestLlama4MtmdTiles(t *testing.T) {
	t.Parallel()
	p := Llama4{Tile: 56}
	for _, c := range []struct{ w, h, rows, cols, n int }{
		{96, 40, 1, 2, 3}, {45, 77, 2, 1, 3}, {56, 56, 0, 0, 1}, {30, 50, 0, 0, 1}, {57, 56, 1, 2, 3},
		{300, 300, 3, 3, 10}, {500, 60, 1, 3, 4},
	} {
		tiles, rows, cols, err := p.MtmdTiles(NewImage(c.w, c.h))
		if err != nil {
			t.Fatal(err)
		}
		if rows != c.rows || cols != c.cols || len(tiles) != c.n {
			t.Errorf("%d×%d: %d tiles on %d×%d, want %d on %d×%d", c.w, c.h, len(tiles), rows, cols, c.n, c.rows, c.cols)
		}
		for _, tl := range tiles {
			if tl.W != 56 || tl.H != 56 {
				t.Fatalf("%d×%d: a %d×%d tile", c.w, c.h, tl.W, tl.H)
			}
		}
	}
	if _, _, _, err := (Llama4{Tile: 0}).MtmdTiles(NewImage(4, 4)); err == nil {
		t.Error("tile 0: no error")
	}
}

// Any image size gives mtmd's tiles (rows × cols slices and the overview,
// or one tile) or an error, never a panic.
func FuzzLlama4MtmdTiles(f *testing.F) {
	f.Add(96, 40, 14)
	f.Add(45, 77, 14)
	f.Add(1, 300, 14)
	f.Add(0, 5, 14)
	f.Add(30, 30, 0)
	f.Fuzz(func(t *testing.T, w, h, tile int) {
		if w > 400 || h > 400 || w < -1 || h < -1 || tile > 64 {
			return // keep each case small
		}
		var img *Image
		if w > 0 && h > 0 {
			img = NewImage(w, h)
		} else {
			img = &Image{W: w, H: h}
		}
		tiles, rows, cols, err := Llama4{Tile: tile}.MtmdTiles(img)
		if err != nil {
			return
		}
		want := rows*cols + 1
		if len(tiles) != want || rows > 3 || cols > 3 {
			t.Fatalf("%d×%d: %d tiles on %d×%d", w, h, len(tiles), rows, cols)
		}
		for _, tl := range tiles {
			if tl.W != tile || tl.H != tile {
				t.Fatalf("a %d×%d tile", tl.W, tl.H)
			}
		}
	})
}
