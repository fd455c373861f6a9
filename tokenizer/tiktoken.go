package tokenizer

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strconv"
)

// tiktokenFile is the vocabulary file Kimi K2's tokenizer class
// (tokenization_kimi.py, TikTokenTokenizer) reads: tiktoken's ranks format.
const tiktokenFile = "tiktoken.model"

// kimiReserved is how many ids Kimi's tokenizer class reserves for special
// tokens after the ranks (num_reserved_special_tokens).
const kimiReserved = 256

// parseTiktokenRanks reads tiktoken's ranks format (what tiktoken's
// load_tiktoken_bpe reads): one "base64-token rank" per line, blank lines
// skipped. It returns the tokens in file order and their ranks; the ranks
// must be 0..n-1, each once, and the tokens distinct and non-empty.
func parseTiktokenRanks(b []byte, file string) (toks [][]byte, ranks []int, err error) {
	var off int64
	seen := map[string]int{}
	var rankLine []int // 1-based line of each rank, 0 when unseen
	for line := 1; len(b) > 0; line++ {
		l := b
		n := len(b)
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			l, n = b[:i], i+1
		}
		start := off
		off += int64(n)
		b = b[n:]
		l = bytes.TrimRight(l, "\r")
		if len(l) == 0 {
			continue
		}
		fields := bytes.Fields(l)
		item := fmt.Sprintf("line %d", line)
		if len(fields) != 2 {
			return nil, nil, fmtErrAt(file, start, item, fmt.Sprintf("%d fields, want a base64 token and a rank", len(fields)))
		}
		tok, err := base64.StdEncoding.DecodeString(string(fields[0]))
		if err != nil {
			return nil, nil, fmtErrAt(file, start, item, "token is not base64: "+err.Error())
		}
		if len(tok) == 0 || len(tok) > maxTokenLen {
			return nil, nil, fmtErrAt(file, start, item, fmt.Sprintf("token of %d bytes (want 1..%d)", len(tok), maxTokenLen))
		}
		r, err := strconv.Atoi(string(fields[1]))
		if err != nil || r < 0 || r >= maxVocab {
			return nil, nil, fmtErrAt(file, start, item, fmt.Sprintf("rank %q is not an integer in 0..%d", fields[1], maxVocab-1))
		}
		if prev, dup := seen[string(tok)]; dup {
			return nil, nil, fmtErrAt(file, start, item, fmt.Sprintf("token %q is also on line %d", tok, prev))
		}
		seen[string(tok)] = line
		for len(rankLine) <= r {
			rankLine = append(rankLine, 0)
		}
		if rankLine[r] != 0 {
			return nil, nil, fmtErrAt(file, start, item, fmt.Sprintf("rank %d is also on line %d", r, rankLine[r]))
		}
		rankLine[r] = line
		toks, ranks = append(toks, tok), append(ranks, r)
	}
	if len(toks) == 0 {
		return nil, nil, fmtErr(file, "", "no ranks")
	}
	if len(rankLine) != len(toks) {
		for r, l := range rankLine {
			if l == 0 {
				return nil, nil, fmtErr(file, fmt.Sprintf("rank %d", r), fmt.Sprintf("missing: %d ranks go up to %d", len(toks), len(rankLine)-1))
			}
		}
	}
	return toks, ranks, nil
}

// tiktokenMerge is the pair a token of rank maxRank is made of: byte-pair
// merging of its bytes with only the ranks below maxRank, the lowest rank
// first, as llama.cpp's converter recovers merges from a ranks file (it
// keeps the pair when the merging ends in two parts).
func tiktokenMerge(rank map[string]int, tok []byte, maxRank int) (string, string, bool) {
	parts := make([][]byte, len(tok))
	for i := range tok {
		parts[i] = tok[i : i+1]
	}
	buf := make([]byte, 0, len(tok))
	for len(parts) > 1 {
		best, bestRank := -1, 0
		for i := 0; i+1 < len(parts); i++ {
			buf = append(append(buf[:0], parts[i]...), parts[i+1]...)
			if r, ok := rank[string(buf)]; ok && (best < 0 || r < bestRank) {
				best, bestRank = i, r
			}
		}
		if best < 0 || bestRank >= maxRank {
			break
		}
		merged := tok[offsetIn(tok, parts, best) : offsetIn(tok, parts, best)+len(parts[best])+len(parts[best+1])]
		parts = append(append(parts[:best:best], merged), parts[best+2:]...)
	}
	if len(parts) != 2 {
		return "", "", false
	}
	return byteEncode(string(parts[0])), byteEncode(string(parts[1])), true
}

// offsetIn is where parts[i] starts in tok (parts cut tok in order).
func offsetIn(tok []byte, parts [][]byte, i int) int {
	n := 0
	for _, p := range parts[:i] {
		n += len(p)
	}
	return n
}

// parseTiktoken builds Kimi K2's tokenizer from its tiktoken.model the way
// llama.cpp's converter does (d32676d7, DeepseekV2Model.set_vocab, pre
// "kimi-k2"): the ranks become byte-level tokens with ids equal to their
// ranks, merges are recovered from them (tiktokenMerge, in file order), and
// the ids from the ranks' end to config.json's vocab_size are the class's
// reserved special tokens (control), named by tokenizer_config.json's
// added_tokens_decoder or "<|reserved_token_ID|>".
func parseTiktoken(b []byte, cfg *hfConfig) (*Tokenizer, error) {
	toks, ranks, err := parseTiktokenRanks(b, tiktokenFile)
	if err != nil {
		return nil, err
	}
	nBase := len(toks)
	switch {
	case cfg.vocabSize == 0:
		return nil, fmtErr("config.json", "vocab_size", "missing: "+tiktokenFile+" needs it (the reserved special tokens end there)")
	case cfg.vocabSize < nBase:
		return nil, fmtErr("config.json", "vocab_size", fmt.Sprintf("%d is less than the %d ranks of %s", cfg.vocabSize, nBase, tiktokenFile))
	case cfg.vocabSize > nBase+kimiReserved:
		return nil, unsupportedErr("config.json", "vocab_size", fmt.Sprintf("%d is more than the %d ranks of %s and the %d special tokens Kimi's tokenizer reserves after them", cfg.vocabSize, nBase, tiktokenFile, kimiReserved))
	}
	rank := make(map[string]int, nBase)
	for i, t := range toks {
		rank[string(t)] = ranks[i]
	}
	tokens := make([]string, cfg.vocabSize)
	types := make([]TokenType, cfg.vocabSize)
	var merges []string
	for i, t := range toks {
		tokens[ranks[i]], types[ranks[i]] = byteEncode(string(t)), TypeNormal
		if len(t) == 1 {
			continue
		}
		if l, r, ok := tiktokenMerge(rank, t, ranks[i]); ok {
			merges = append(merges, l+" "+r)
		}
	}
	for id := nBase; id < cfg.vocabSize; id++ {
		tokens[id], types[id] = fmt.Sprintf("<|reserved_token_%d|>", id), TypeControl
		if a, ok := cfg.added[id]; ok {
			tokens[id] = a.Content
		}
	}
	return build(vocab{model: BPE, pre: "kimi-k2", tokens: tokens, types: types, merges: merges}, tiktokenFile)
}

// hunyuanFile is the vocabulary file of Hunyuan's tokenizer class
// (tokenization_hy.py, HYTokenizer): tiktoken's ranks format, ids counted
// in file order.
const hunyuanFile = "hy.tiktoken"

// hunyuanSpecialStart is the id of Hunyuan's first special token: its
// class numbers them from this fixed id whatever the ranks file holds, and
// asserts the ranks fill every id below it.
const hunyuanSpecialStart = 127957

// hunyuanSpecials are the special tokens of Hunyuan's class, in id order
// from hunyuanSpecialStart: five named ones, then <|extra_0|> …
// <|extra_204|>.
func hunyuanSpecials() []string {
	s := []string{"<|endoftext|>", "<|startoftext|>", "<|bos|>", "<|eos|>", "<|pad|>"}
	for i := range 205 {
		s = append(s, fmt.Sprintf("<|extra_%d|>", i))
	}
	return s
}

// parseHunyuanTiktoken builds Hunyuan's tokenizer from its hy.tiktoken the
// way llama.cpp's converter does (d32676d7, HunYuanMoEModel.set_vocab and
// the dense form's without tokenizer.json; pre "hunyuan"): the ranks become
// byte-level tokens with ids in file order, merges are recovered from them
// (tiktokenMerge, in file order), and the special tokens (control) follow
// at their fixed ids. The converter asserts the tokenizer's size equals
// config.json's vocab_size, and the class that it loads asserts the ranks
// end where the special tokens begin: a file or config that breaks either
// is refused, naming it.
func parseHunyuanTiktoken(b []byte, cfg *hfConfig) (*Tokenizer, error) {
	toks, _, err := parseTiktokenRanks(b, hunyuanFile)
	if err != nil {
		return nil, err
	}
	specials := hunyuanSpecials()
	n := hunyuanSpecialStart + len(specials)
	switch {
	case len(toks) != hunyuanSpecialStart:
		return nil, unsupportedErr(hunyuanFile, "", fmt.Sprintf("%d ranks: Hunyuan's tokenizer class numbers its special tokens from %d and needs the ranks to fill every id below", len(toks), hunyuanSpecialStart))
	case cfg.vocabSize != n:
		return nil, unsupportedErr("config.json", "vocab_size", fmt.Sprintf("%d, not the %d ids of %s and Hunyuan's special tokens (the converter requires them equal)", cfg.vocabSize, n, hunyuanFile))
	}
	rank := make(map[string]int, len(toks))
	for i, t := range toks {
		rank[string(t)] = i
	}
	tokens := make([]string, n)
	types := make([]TokenType, n)
	var merges []string
	for i, t := range toks {
		tokens[i], types[i] = byteEncode(string(t)), TypeNormal
		if len(t) == 1 {
			continue
		}
		if l, r, ok := tiktokenMerge(rank, t, i); ok {
			merges = append(merges, l+" "+r)
		}
	}
	for i, s := range specials {
		tokens[hunyuanSpecialStart+i], types[hunyuanSpecialStart+i] = s, TypeControl
	}
	return build(vocab{model: BPE, pre: "hunyuan", tokens: tokens, types: types, merges: merges}, hunyuanFile)
}
