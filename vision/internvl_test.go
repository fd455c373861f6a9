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
