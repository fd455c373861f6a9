package tokenizer

// encodeSPM tokenizes text whose spaces are already "▁": start from single
// characters and keep merging the adjacent pair whose concatenation is the
// best-scored vocabulary entry. Pieces left that are not in the vocabulary
// are written as <0xXX> byte tokens.
func (t *Tokenizer) encodeSPM(w string, out []int) []int {
	if w == "" {
		return out
	}
	// SentencePiece merges the pair whose concatenation scores highest.
	syms := mergeWord(w, func(_, _, merged string) (float64, bool) {
		id, ok := t.index[merged]
		if !ok {
			return 0, false
		}
		return float64(t.scores[id]), true
	})
	for i := 0; i >= 0 && i < len(syms); i = syms[i].next {
		s := w[syms[i].start : syms[i].start+syms[i].n]
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
