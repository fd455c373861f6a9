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
	text        string  // the merged text, to detect stale entries
	rank        int     // BPE: lower merges first
	score       float32 // SPM: higher merges first
}

// bpeQueue orders candidates by rank, then leftmost, as llama.cpp does.
type bpeQueue []bigram

func (q bpeQueue) Len() int { return len(q) }
func (q bpeQueue) Less(i, j int) bool {
	if q[i].rank != q[j].rank {
		return q[i].rank < q[j].rank
	}
	return q[i].left < q[j].left
}
func (q bpeQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *bpeQueue) Push(x any)   { *q = append(*q, x.(bigram)) }
func (q *bpeQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// splitSymbols cuts a word into one symbol per UTF-8 character (an invalid
// byte is a character of its own).
func splitSymbols(w string) []symbol {
	syms := make([]symbol, 0, len(w))
	for i := 0; i < len(w); {
		_, n := utf8.DecodeRuneInString(w[i:])
		syms = append(syms, symbol{start: i, n: n, prev: len(syms) - 1, next: len(syms) + 1})
		i += n
	}
	if len(syms) > 0 {
		syms[len(syms)-1].next = -1
	}
	return syms
}

// encodeBPEWord merges one byte-level-encoded word and appends its ids.
func (t *Tokenizer) encodeBPEWord(w string, out []int) []int {
	if w == "" {
		return out
	}
	if t.ignoreMerges {
		if id, ok := t.index[w]; ok {
			return append(out, id)
		}
	}
	syms := splitSymbols(w)
	text := func(i int) string { return w[syms[i].start : syms[i].start+syms[i].n] }
	var q bpeQueue
	add := func(l, r int) {
		if l < 0 || r < 0 {
			return
		}
		lt, rt := text(l), text(r)
		rank, ok := t.ranks[[2]string{lt, rt}]
		if !ok {
			return
		}
		heap.Push(&q, bigram{left: l, right: r, text: lt + rt, rank: rank})
	}
	for i := 1; i < len(syms); i++ {
		add(i-1, i)
	}
	for q.Len() > 0 {
		b := heap.Pop(&q).(bigram)
		l, r := &syms[b.left], &syms[b.right]
		if l.n == 0 || r.n == 0 || l.n+r.n != len(b.text) || w[l.start:l.start+l.n+r.n] != b.text || l.next != b.right {
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
	for i := 0; i >= 0 && i < len(syms); i = syms[i].next {
		s := text(i)
		if id, ok := t.index[s]; ok {
			out = append(out, id)
			continue
		}
		// A piece that is not a token: llama.cpp looks each of its bytes up
		// as a one-byte token and drops those that are not.
		for j := 0; j < len(s); j++ {
			if id, ok := t.index[s[j:j+1]]; ok {
				out = append(out, id)
			}
		}
	}
	return out
}
