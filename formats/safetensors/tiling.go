package safetensors

import (
	"cmp"
	"slices"
)

// Span is one tensor's data_offsets: [Begin, End) of the data section.
type Span struct{ Begin, End int64 }

// GapKind says what is wrong with the data section's tiling at one tensor.
type GapKind int

const (
	// Hole: bytes [From, To) of the data section belong to no tensor.
	Hole GapKind = iota
	// Overlap: the tensor begins before To, where the tensor before it
	// in data order ends.
	Overlap
	// PastEnd: the tensor's data runs past the end of the data section.
	PastEnd
)

// Gap is one breach of the tiling rule: sorted by data_offsets, the
// tensors cover the data section from 0 with no hole and no overlap, and
// none runs past its end.
type Gap struct {
	Kind     GapKind
	Index    int   // the span at fault
	Prev     int   // the span before it in data order, -1 for none
	From, To int64 // Hole: the uncovered bytes; Overlap: To is where Prev ends
}

// Tile walks spans in data order (by Begin, then End; ties keep their
// order, so empty tensors at one offset stay deterministic) and calls gap
// for each breach of the tiling rule until it returns false. It returns
// the spans' indices in data order, where the covered data ends (bytes
// [end, dataLen) after it are trailing bytes) and the span that ends there
// (-1 for none). Both the strict
// reader (which stops at the first gap) and check (which reports all of
// them) apply the rule through Tile.
func Tile(spans []Span, dataLen int64, gap func(Gap) bool) (order []int, end int64, last int) {
	order = make([]int, len(spans))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if spans[a].Begin != spans[b].Begin {
			return cmp.Compare(spans[a].Begin, spans[b].Begin)
		}
		return cmp.Compare(spans[a].End, spans[b].End)
	})
	var cursor int64
	prev := -1
	for _, i := range order {
		s := spans[i]
		var g *Gap
		switch {
		case s.Begin > cursor && cursor < dataLen:
			g = &Gap{Kind: Hole, Index: i, Prev: prev, From: cursor, To: min(s.Begin, dataLen)}
		case s.Begin < cursor:
			g = &Gap{Kind: Overlap, Index: i, Prev: prev, To: cursor}
		}
		if g != nil && !gap(*g) {
			return order, cursor, prev
		}
		if s.End > dataLen && !gap(Gap{Kind: PastEnd, Index: i, Prev: prev}) {
			return order, cursor, prev
		}
		if s.End >= cursor {
			cursor, prev = s.End, i
		}
	}
	return order, cursor, prev
}
