package tokenizer

import "container/heap"

// spmQueue orders candidates by score, highest first, then leftmost.
type spmQueue []bigram

func (q spmQueue) Len() int { return len(q) }
func (q spmQueue) Less(i, j int) bool {
	if q[i].score != q[j].score {
		return q[i].score > q[j].score
	}
	return q[i].left < q[j].left
}
func (q spmQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *spmQueue) Push(x any)   { *q = append(*q, x.(bigram)) }
func (q *spmQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// encodeSPM tokenizes text whose spaces are already "▁": start from single
// characters and keep merging the adjacent pair whose concatenation is the
// best-scored vocabulary entry. Pieces left that are not in the vocabulary
// are written as <0xXX> byte tokens.
func (t *Tokenizer) encodeSPM(w string, out []int) []int {
	if w == "" {
		return out
	}
	syms := splitSymbols(w)
	text := func(i int) string { return w[syms[i].start : syms[i].start+syms[i].n] }
	var q spmQueue
	add := func(l, r int) {
		if l < 0 || r < 0 {
			return
		}
		s := w[syms[l].start : syms[l].start+syms[l].n+syms[r].n]
		id, ok := t.index[s]
		if !ok {
			return
		}
		heap.Push(&q, bigram{left: l, right: r, text: s, score: t.scores[id]})
	}
	for i := 1; i < len(syms); i++ {
		add(i-1, i)
	}
	for q.Len() > 0 {
		b := heap.Pop(&q).(bigram)
		l, r := &syms[b.left], &syms[b.right]
		if l.n == 0 || r.n == 0 || l.n+r.n != len(b.text) || l.next != b.right {
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
		out = t.appendBytes(s, out)
	}
	return out
}

// appendBytes writes s as byte tokens (<0xXX>, or the one-byte token), or
// as UNK where the vocabulary has neither.
func (t *Tokenizer) appendBytes(s string, out []int) []int {
	for j := 0; j < len(s); j++ {
		if id := t.byteTok[s[j]]; id >= 0 {
			out = append(out, id)
		} else if id, ok := t.index[s[j:j+1]]; ok {
			out = append(out, id)
		} else if t.UNK >= 0 {
			out = append(out, t.UNK)
		}
	}
	return out
}
