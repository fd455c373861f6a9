package tokenizer

import (
	"container/heap"
	"unicode/utf8"
)

// symbol is one piece of a word while it is being merged: a byte range of
// the word, linked to its neighbours. A symbol merged into its left
// neighbour gets n == 0.
type symbol struct {
	start, n   int
	prev, next int
}

// bigram is a candidate merge of two adjacent symbols.
type bigram struct {
	left, right int
	n           int     // byte length of the merged text, to detect stale entries
	prio        float64 // higher merges first
}

// bigramQueue orders candidates by priority, then leftmost, as llama.cpp's
// BPE and SentencePiece tokenizers both do.
type bigramQueue []bigram

func (q bigramQueue) Len() int { return len(q) }
func (q bigramQueue) Less(i, j int) bool {
	if q[i].prio != q[j].prio {
		return q[i].prio > q[j].prio
	}
	return q[i].left < q[j].left
}
func (q bigramQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *bigramQueue) Push(x any)   { *q = append(*q, x.(bigram)) }
func (q *bigramQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// mergeWord cuts w into one symbol per UTF-8 character (an invalid byte is a
// character of its own) and keeps merging the adjacent pair of highest
// priority, leftmost first, until no pair may merge. prio is given the two
// symbols' texts and their concatenation (a slice of w) and says whether they
// may merge and with what priority. It returns the symbols, linked from
// index 0 through next; merged-away symbols have n == 0.
func mergeWord(w string, prio func(left, right, merged string) (float64, bool)) []symbol {
	syms := make([]symbol, 0, len(w))
	for i := 0; i < len(w); {
		_, n := utf8.DecodeRuneInString(w[i:])
		syms = append(syms, symbol{start: i, n: n, prev: len(syms) - 1, next: len(syms) + 1})
		i += n
	}
	if len(syms) == 0 {
		return syms
	}
	syms[len(syms)-1].next = -1

	var q bigramQueue
	add := func(l, r int) {
		if l < 0 || r < 0 {
			return
		}
		sl, sr := syms[l], syms[r]
		// Adjacent symbols are contiguous in w, so the merge is a slice.
		merged := w[sl.start : sl.start+sl.n+sr.n]
		if p, ok := prio(merged[:sl.n], merged[sl.n:], merged); ok {
			heap.Push(&q, bigram{left: l, right: r, n: len(merged), prio: p})
		}
	}
	for i := 1; i < len(syms); i++ {
		add(i-1, i)
	}
	for q.Len() > 0 {
		b := heap.Pop(&q).(bigram)
		l, r := &syms[b.left], &syms[b.right]
		// A symbol's start never moves, so an entry is still current when
		// both symbols live, are neighbours and span the same bytes.
		if l.n == 0 || r.n == 0 || l.next != b.right || l.n+r.n != b.n {
			continue
		}
		l.n += r.n
		r.n = 0
		l.next = r.next
		if r.next >= 0 {
			syms[r.next].prev = b.left
		}
		add(l.prev, b.left)
		add(b.left, l.next)
	}
	return syms
}
