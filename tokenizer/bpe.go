package tokenizer

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
	// llama.cpp merges the pair of lowest merge rank first.
	syms := mergeWord(w, func(left, right, _ string) (float64, bool) {
		rank, ok := t.ranks[[2]string{left, right}]
		return -float64(rank), ok
	})
	for i := 0; i >= 0 && i < len(syms); i = syms[i].next {
		s := w[syms[i].start : syms[i].start+syms[i].n]
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
