package safetensors

import (
	"reflect"
	"testing"
)

// Tile reports every gap in data order when told to go on, and only the
// first when told to stop.
func TestTile(t *testing.T) {
	// data order: c [0,4), a [6,10) (hole [4,6)), b [8,12) (overlap a, ends
	// at 10), d [12,20) past a 16-byte section; then trailing nothing.
	spans := []Span{{6, 10}, {8, 12}, {0, 4}, {12, 20}}
	var got []Gap
	order, end, last := Tile(spans, 16, func(g Gap) bool { got = append(got, g); return true })
	want := []Gap{
		{Kind: Hole, Index: 0, Prev: 2, From: 4, To: 6},
		{Kind: Overlap, Index: 1, Prev: 0, To: 10},
		{Kind: PastEnd, Index: 3, Prev: 1},
	}
	if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(order, []int{2, 0, 1, 3}) || end != 20 || last != 3 {
		t.Errorf("lenient: gaps %+v order %v end %d last %d", got, order, end, last)
	}
	got = nil
	Tile(spans, 16, func(g Gap) bool { got = append(got, g); return false })
	if len(got) != 1 || got[0] != want[0] {
		t.Errorf("strict: gaps %+v, want only %+v", got, want[0])
	}
	// A clean tiling with an empty tensor and trailing bytes.
	got = nil
	_, end, last = Tile([]Span{{0, 8}, {8, 8}, {8, 12}}, 14, func(g Gap) bool { got = append(got, g); return true })
	if len(got) != 0 || end != 12 || last != 2 {
		t.Errorf("clean: gaps %+v end %d last %d", got, end, last)
	}
}
