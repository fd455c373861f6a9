package tokenizer

import (
	"math"
	"unicode/utf8"
)

// unknownPenalty is how much worse than the worst normal piece an unknown
// character scores in the Viterbi search: SentencePiece's kUnkPenalty (and
// llama.cpp's unknown_token_score_penalty).
const unknownPenalty = 10.0

type unigramInfo struct {
	unkScore float64
	trie     []trieNode // node 0 is the root
}

// trieNode is a node of a byte trie over the pieces the Viterbi search may
// use, so that the pieces starting at a position are found in one walk
// instead of one map lookup per length.
type trieNode struct {
	next map[byte]int32
	id   int32 // piece ending here, or -1
}

func newUnigramInfo(t *Tokenizer) unigramInfo {
	minScore := math.Inf(1)
	for i, ty := range t.types {
		if ty == TypeNormal {
			minScore = math.Min(minScore, float64(t.scores[i]))
		}
	}
	if math.IsInf(minScore, 1) {
		minScore = 0
	}
	u := unigramInfo{unkScore: minScore - unknownPenalty, trie: []trieNode{{id: -1}}}
	for id, tok := range t.tokens {
		ty := t.types[id]
		if ty != TypeNormal && ty != TypeUserDefined && ty != TypeUnused {
			continue
		}
		n := int32(0)
		for i := 0; i < len(tok); i++ {
			c, ok := u.trie[n].next[tok[i]]
			if !ok {
				if u.trie[n].next == nil {
					u.trie[n].next = map[byte]int32{}
				}
				c = int32(len(u.trie))
				u.trie[n].next[tok[i]] = c
				u.trie = append(u.trie, trieNode{id: -1})
			}
			n = c
		}
		if u.trie[n].id < 0 {
			u.trie[n].id = int32(id)
		}
	}
	return u
}

// encodeUnigram finds the segmentation of w (spaces already "▁") with the
// highest total score. Characters no piece covers become UNK (runs of them
// one UNK) or, when the vocabulary has byte pieces, their bytes.
func (t *Tokenizer) encodeUnigram(w string, out []int) []int {
	n := len(w)
	if n == 0 {
		return out
	}
	type best struct {
		id    int
		start int
		score float64
	}
	res := make([]best, n+1)
	for i := range res {
		res[i] = best{id: -1, score: math.Inf(-1)}
	}
	res[0].score = 0
	for i := 0; i < n; {
		_, cl := utf8.DecodeRuneInString(w[i:])
		if math.IsInf(res[i].score, -1) {
			i += cl
			continue
		}
		single := false
		node := int32(0)
		for j := i + 1; j <= n; j++ {
			c, ok := t.unigram.trie[node].next[w[j-1]]
			if !ok {
				break
			}
			node = c
			id := int(t.unigram.trie[node].id)
			if id < 0 {
				continue
			}
			ty := t.types[id]
			if j-i == cl {
				single = true
			}
			sc := float64(t.scores[id])
			if ty == TypeUserDefined {
				sc = 0
			}
			if s := res[i].score + sc; s > res[j].score {
				res[j] = best{id: id, start: i, score: s}
			}
		}
		if !single {
			if s := res[i].score + t.unigram.unkScore; s > res[i+cl].score {
				res[i+cl] = best{id: -1, start: i, score: s}
			}
		}
		i += cl
	}
	var rev []best
	for j := n; j > 0; j = res[j].start {
		b := res[j]
		rev = append(rev, best{id: b.id, start: b.start, score: float64(j)})
	}
	prevUnk := false
	for k := len(rev) - 1; k >= 0; k-- {
		b := rev[k]
		if b.id >= 0 {
			out = append(out, b.id)
			prevUnk = false
			continue
		}
		piece := w[b.start:int(b.score)]
		if t.byteTok[piece[0]] >= 0 {
			out = t.appendBytes(piece, out)
			continue
		}
		if !prevUnk && t.UNK >= 0 {
			out = append(out, t.UNK)
		}
		prevUnk = true
	}
	return out
}
