package vision

import "testing"

// The grids get_optimal_tiled_canvas picks (transformers v4.57.6,
// min_patches 1, max_patches 12, 56-pixel tiles): the fixture's two images
// (testdata/vision/internvl/hf/reference.json: 11 and 7 tiles with the
// thumbnail), a square one, an exact 3/2, a long strip, and the tie rule
// (max_patches 4: aspect 1.25 lies as close to 1/1 as to 2/2; the bigger
// grid wins when the image's area exceeds half of it).
func TestInternVLGrid(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ max, w, h, cols, rows int }{
		{12, 96, 40, 5, 2}, {12, 45, 77, 2, 3}, {12, 56, 56, 1, 1}, {12, 600, 400, 3, 2}, {12, 1000, 10, 12, 1},
		{4, 70, 56, 1, 1}, {4, 700, 560, 2, 2},
	} {
		p := InternVL{Tile: 56, MinTiles: 1, MaxTiles: c.max}
		cols, rows, err := p.Grid(c.h, c.w)
		if err != nil {
			t.Fatal(err)
		}
		if cols != c.cols || rows != c.rows {
			t.Errorf("%d×%d: grid %d×%d, want %d×%d", c.w, c.h, cols, rows, c.cols, c.rows)
		}
	}
	for _, bad := range []InternVL{{Tile: 56}, {Tile: 56, MinTiles: 3, MaxTiles: 2}, {Tile: 0, MinTiles: 1, MaxTiles: 1}, {Tile: 56, MinTiles: 1, MaxTiles: 1 << 20}} {
		if _, _, err := bad.Grid(10, 10); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

// mtmd's InternVL slicing: an image within one tile is stretched to it,
// unsliced (grid 0, 0); a wider one takes the llava-uhd pinpoint over
// InternVL's grids (96×40: 2 across, 1 down; 45×77: 1 across, 2 down —
// the 3 tiles mtmd gives the fixture's images), the overview last.
func TestInternVLMtmdTiles(t *testing.T) {
	t.Parallel()
	p := InternVL{Tile: 56, MinTiles: 1, MaxTiles: 12}
	for _, c := range []struct{ w, h, tiles, cols, rows int }{{40, 30, 1, 0, 0}, {56, 56, 1, 0, 0}, {96, 40, 3, 2, 1}, {45, 77, 3, 1, 2}} {
		tiles, cols, rows, err := p.MtmdTiles(NewImage(c.w, c.h))
		if err != nil {
			t.Fatal(err)
		}
		if len(tiles) != c.tiles || cols != c.cols || rows != c.rows {
			t.Errorf("%d×%d: %d tiles, grid %d×%d; want %d, %d×%d", c.w, c.h, len(tiles), cols, rows, c.tiles, c.cols, c.rows)
		}
		for _, tl := range tiles {
			if tl.W != 56 || tl.H != 56 {
				t.Errorf("%d×%d: a %d×%d tile", c.w, c.h, tl.W, tl.H)
			}
		}
	}
	if _, _, _, err := (InternVL{Tile: 56}).MtmdTiles(NewImage(80, 80)); err == nil {
		t.Error("no tile counts: no error")
	}
}

// Any image size and tile counts give tiles of the tile's size (cols ×
// rows of them, and the overview or thumbnail where there are several) or
// an error, never a panic.
func FuzzInternVLTiles(f *testing.F) {
	f.Add(96, 40, 1, 12, true)
	f.Add(45, 77, 1, 12, false)
	f.Add(1, 300, 2, 6, true)
	f.Add(0, 5, 1, 1, false)
	f.Add(30, 30, 0, 3, true)
	f.Fuzz(func(t *testing.T, w, h, lo, hi int, mtmd bool) {
		if w > 400 || h > 400 || w < -1 || h < -1 || hi > 16 {
			return // keep each case small
		}
		p := InternVL{Tile: 14, MinTiles: lo, MaxTiles: hi}
		var img *Image
		if w > 0 && h > 0 {
			img = NewImage(w, h)
		} else {
			img = &Image{W: w, H: h}
		}
		tiles, cols, rows, err := p.Tiles(img, true)
		if mtmd {
			tiles, cols, rows, err = p.MtmdTiles(img)
		}
		if err != nil {
			return
		}
		want := cols * rows
		if want > 1 || mtmd && want > 0 {
			want++
		}
		if mtmd && want == 0 {
			want = 1
		}
		if len(tiles) != want {
			t.Fatalf("%d×%d, tiles %d–%d: %d tiles for a %d×%d grid", w, h, lo, hi, len(tiles), cols, rows)
		}
		for _, tl := range tiles {
			if tl.W != 14 || tl.H != 14 {
				t.Fatalf("a %d×%d tile", tl.W, tl.H)
			}
		}
	})
}
