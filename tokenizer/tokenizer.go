package tokenizer

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Model names the tokenization algorithm, spelled as GGUF's
// tokenizer.ggml.model spells it.
type Model string

// The models.
const (
	// BPE is GPT-2's byte-level BPE: a pre-tokenizer splits the text into
	// words, each word's bytes are mapped to printable characters and merged
	// by the rank of the merge rules.
	BPE Model = "gpt2"
	// SPM is SentencePiece as LLaMA uses it: spaces become "▁", code points
	// are merged pairwise, the pair whose merged piece has the highest score
	// first, and pieces not in the vocabulary fall back to <0xXX> bytes.
	SPM Model = "llama"
	// WordPiece is BERT's: lower-casing and accent stripping, splitting on
	// white space and punctuation, then greedy longest-match-first.
	WordPiece Model = "bert"
	// Unigram is a SentencePiece unigram model (T5): the segmentation with
	// the highest total score (Viterbi).
	Unigram Model = "t5"
)

// TokenType is GGUF's token type (tokenizer.ggml.token_type).
type TokenType int32

// The token types, numbered as in llama.cpp's llama_token_type.
const (
	TypeUndefined   TokenType = 0
	TypeNormal      TokenType = 1
	TypeUnknown     TokenType = 2
	TypeControl     TokenType = 3
	TypeUserDefined TokenType = 4
	TypeUnused      TokenType = 5
	TypeByte        TokenType = 6
)

// Limits on what a tokenizer file may declare, so that a corrupt count cannot
// make us allocate without bound. The largest real vocabularies have ~260k
// entries (Gemma) and tokens of a few hundred bytes.
const (
	maxVocab    = 4 << 20
	maxTokenLen = 64 << 10
)

// Tokenizer encodes text to token ids and back. Build one with FromSource,
// LoadFile or FromMetadata; it is safe for concurrent use.
type Tokenizer struct {
	model  Model
	pre    string
	tokens []string
	types  []TokenType
	scores []float32 // nil when the source had none
	merges []string  // "left right", in rank order (BPE)

	index map[string]int
	ranks map[[2]string]int

	// Special token ids, -1 when absent.
	BOS, EOS, UNK, SEP, PAD, MASK, CLS int
	// AddBOS and AddEOS say whether Encode with AddSpecial adds BOS (or CLS)
	// and EOS (or SEP).
	AddBOS, AddEOS bool
	// AddSpacePrefix: SentencePiece prepends a space to the text.
	AddSpacePrefix bool
	// prefixFirst: the space goes before the text's start only, not also
	// after every special token in it as llama.cpp puts it (transformers'
	// SentencePiece tokenizers with legacy false; a Metaspace
	// pre-tokenizer with prepend_scheme "first").
	prefixFirst bool

	hasAddBOS, hasAddEOS, hasAddSpacePrefix bool     // the source said so explicitly
	tokenTypeCount                          int      // BERT's type_vocab_size, 0 if unknown
	ggufIDs                                 []string // special kinds whose ids the source gave, in order

	chat           []ChatTemplate // chat templates, the default first
	additional     []string       // HF additional_special_tokens, for chat templates
	hf             *hfPre         // vocab.hf, until identifyPre names the pre-tokenizer
	hfIgnoreMerges bool
	preRegex       string // a pre-tokenizer identifyPre could not name
	preNote        string // how identifyPre named it when no hash did

	ignoreMerges bool // LLaMA 3: a word that is a token is not merged
	pretok       *preTokenizer
	special      []int // control, user-defined and unknown tokens, longest first
	maxLen       int   // longest token in bytes
	byteTok      [256]int
	unigram      unigramInfo
	// RWKV: each token's bytes (the later id of equal ones), the longest,
	// and the end-of-turn id the converter sets (-1: none).
	rwkvIndex map[string]int
	rwkvMax   int
	eot       int
}

// EncodeOptions controls Encode.
type EncodeOptions struct {
	// AddSpecial adds the tokens the tokenizer's configuration asks for:
	// BOS (and EOS) for SentencePiece and BPE, CLS ... SEP for WordPiece.
	AddSpecial bool
	// ParseSpecial lets the text name control tokens ("<s>", "[SEP]"):
	// they become their ids instead of being tokenized as text.
	// User-defined tokens are always matched, as llama.cpp and HF do.
	ParseSpecial bool
}

// Model returns the tokenization algorithm.
func (t *Tokenizer) Model() Model { return t.model }

// Pre returns the pre-tokenizer name (tokenizer.ggml.pre), "" for none.
func (t *Tokenizer) Pre() string { return t.pre }

// Len returns the vocabulary size.
func (t *Tokenizer) Len() int { return len(t.tokens) }

// Piece returns the vocabulary entry of id as stored (byte-level BPE
// characters, "▁" for SentencePiece spaces), or "" when id is out of range.
func (t *Tokenizer) Piece(id int) string {
	if id < 0 || id >= len(t.tokens) {
		return ""
	}
	return t.tokens[id]
}

// Type returns the token type of id.
func (t *Tokenizer) Type(id int) TokenType {
	if id < 0 || id >= len(t.types) {
		return TypeUndefined
	}
	return t.types[id]
}

// ID returns the id of a vocabulary entry.
func (t *Tokenizer) ID(piece string) (int, bool) {
	id, ok := t.index[piece]
	return id, ok
}

// config holds what the sources say beyond the vocabulary.
type vocab struct {
	model  Model
	pre    string
	tokens []string
	types  []TokenType
	scores []float32
	merges []string
	// hf is a byte-level tokenizer.json's pre-tokenizer and
	// hfIgnoreMerges its model's ignore_merges: pre is then a guess that
	// identifyPre replaces.
	hf             *hfPre
	hfIgnoreMerges bool
}

// build checks a vocabulary and prepares the lookup tables. where names the
// source for errors.
func build(v vocab, where string) (*Tokenizer, error) {
	n := len(v.tokens)
	if n == 0 {
		return nil, fmtErr(where, "tokens", "empty vocabulary")
	}
	if n > maxVocab {
		return nil, fmtErr(where, "tokens", fmt.Sprintf("%d tokens is more than the limit %d", n, maxVocab))
	}
	if v.types != nil && len(v.types) != n {
		return nil, fmtErr(where, "token_type", fmt.Sprintf("%d entries for %d tokens", len(v.types), n))
	}
	if v.scores != nil && len(v.scores) != n {
		return nil, fmtErr(where, "scores", fmt.Sprintf("%d entries for %d tokens", len(v.scores), n))
	}
	t := &Tokenizer{
		model: v.model, pre: v.pre, tokens: v.tokens, types: v.types, scores: v.scores, merges: v.merges, hf: v.hf, hfIgnoreMerges: v.hfIgnoreMerges,
		BOS: -1, EOS: -1, UNK: -1, SEP: -1, PAD: -1, MASK: -1, CLS: -1, eot: -1,
	}
	if t.types == nil {
		t.types = make([]TokenType, n)
		for i := range t.types {
			t.types[i] = TypeNormal
		}
	}
	t.index = make(map[string]int, n)
	for i, s := range t.tokens {
		if len(s) > maxTokenLen {
			return nil, fmtErr(where, fmt.Sprintf("token %d", i), fmt.Sprintf("%d bytes is longer than the limit %d", len(s), maxTokenLen))
		}
		if _, dup := t.index[s]; !dup {
			t.index[s] = i
		}
		t.maxLen = max(t.maxLen, len(s))
	}
	switch t.model {
	case BPE:
		if !t.setPre(t.pre) {
			return nil, unsupportedErr(where, "tokenizer.ggml.pre", fmt.Sprintf("pre-tokenizer %q is not supported", t.pre))
		}
		t.ranks = make(map[[2]string]int, len(t.merges))
		for i, m := range t.merges {
			l, r, ok := splitMerge(m)
			if !ok {
				return nil, fmtErr(where, fmt.Sprintf("merge %d", i), fmt.Sprintf("%q is not two tokens separated by a space", m))
			}
			if _, ok := t.index[l]; !ok {
				return nil, fmtErr(where, fmt.Sprintf("merge %d", i), fmt.Sprintf("%q names unknown token %q", m, l))
			}
			if _, ok := t.index[r]; !ok {
				return nil, fmtErr(where, fmt.Sprintf("merge %d", i), fmt.Sprintf("%q names unknown token %q", m, r))
			}
			if _, dup := t.ranks[[2]string{l, r}]; !dup {
				t.ranks[[2]string{l, r}] = i
			}
		}
	case SPM:
		if t.scores == nil {
			t.scores = make([]float32, n)
		}
		for b := range t.byteTok {
			t.byteTok[b] = -1
			if id, ok := t.index[fmt.Sprintf("<0x%02X>", b)]; ok {
				t.byteTok[b] = id
			}
		}
	case WordPiece:
	case RWKV:
		t.rwkvTrie()
	case Unigram:
		if t.scores == nil {
			return nil, fmtErr(where, "scores", "a unigram model needs scores")
		}
		t.unigram = newUnigramInfo(t)
		for b := range t.byteTok {
			t.byteTok[b] = -1
			if id, ok := t.index[fmt.Sprintf("<0x%02X>", b)]; ok {
				t.byteTok[b] = id
			}
		}
	default:
		return nil, unsupportedErr(where, "tokenizer.ggml.model", fmt.Sprintf("tokenizer model %q is not supported", t.model))
	}
	for i, ty := range t.types {
		if ty == TypeControl || ty == TypeUserDefined || ty == TypeUnknown {
			if t.tokens[i] != "" {
				t.special = append(t.special, i)
			}
		}
	}
	sort.SliceStable(t.special, func(a, b int) bool { return len(t.tokens[t.special[a]]) > len(t.tokens[t.special[b]]) })
	return t, nil
}

// splitMerge splits "a b" at the first space after the first byte, as
// llama.cpp does (so a merge of " " with something still parses).
func splitMerge(m string) (string, string, bool) {
	if len(m) < 3 {
		return "", "", false
	}
	i := strings.IndexByte(m[1:], ' ')
	if i < 0 {
		return "", "", false
	}
	i++
	l, r := m[:i], m[i+1:]
	if l == "" || r == "" {
		return "", "", false
	}
	return l, r, true
}

// checkID reports an id outside the vocabulary.
func (t *Tokenizer) checkID(id int, where, key string) error {
	if id < -1 || id >= len(t.tokens) {
		return fmtErr(where, key, fmt.Sprintf("token id %d is outside the vocabulary of %d", id, len(t.tokens)))
	}
	return nil
}

// fragment is a piece of input: raw text, or a token already matched.
type fragment struct {
	text  string
	token int // -1 for text
}

// partition splits out the special tokens that appear literally in the text
// (llama.cpp's tokenizer_st_partition): user-defined tokens always, control
// and unknown tokens only when parseSpecial is set. Longer tokens first.
func (t *Tokenizer) partition(s string, parseSpecial bool) []fragment {
	frags := []fragment{{text: s, token: -1}}
	for _, id := range t.special {
		if !parseSpecial && t.types[id] != TypeUserDefined {
			continue
		}
		tok := t.tokens[id]
		var out []fragment
		changed := false
		for _, f := range frags {
			if f.token >= 0 || !strings.Contains(f.text, tok) {
				out = append(out, f)
				continue
			}
			changed = true
			rest := f.text
			for {
				i := strings.Index(rest, tok)
				if i < 0 {
					break
				}
				if i > 0 {
					out = append(out, fragment{text: rest[:i], token: -1})
				}
				out = append(out, fragment{token: id})
				rest = rest[i+len(tok):]
			}
			if rest != "" {
				out = append(out, fragment{text: rest, token: -1})
			}
		}
		if changed {
			frags = out
		}
	}
	return frags
}

// Encode returns the token ids of text.
func (t *Tokenizer) Encode(s string, opts EncodeOptions) ([]int, error) {
	var out []int
	var frags []fragment
	if s != "" {
		frags = t.partition(s, opts.ParseSpecial)
	}
	addBOS := opts.AddSpecial && (t.AddBOS || t.model == WordPiece)
	addEOS := opts.AddSpecial && (t.AddEOS || t.model == WordPiece)
	if addBOS {
		id := t.BOS
		if t.model == WordPiece && t.CLS >= 0 {
			id = t.CLS
		}
		if id < 0 {
			return nil, fmt.Errorf("tokenizer: the tokenizer asks for a BOS token but has none")
		}
		out = append(out, id)
	}
	switch t.model {
	case SPM:
		prevSpecial := true
		for i, f := range frags {
			if f.token >= 0 {
				out = append(out, f.token)
				prevSpecial = true
				continue
			}
			txt := f.text
			if t.AddSpacePrefix && prevSpecial && (i == 0 || !t.prefixFirst) {
				txt = " " + txt
			}
			out = t.encodeSPM(strings.ReplaceAll(txt, " ", "▁"), out)
			prevSpecial = false
		}
	case BPE:
		if t.pretok == nil {
			return nil, unsupportedErr("tokenizer", "tokenizer.ggml.pre", fmt.Sprintf("tfconv cannot split text as pre-tokenizer %q does", t.pre))
		}
		for _, f := range frags {
			if f.token >= 0 {
				out = append(out, f.token)
				continue
			}
			for _, w := range t.pretok.split(f.text) {
				out = t.encodeBPEWord(byteEncode(w), out)
			}
		}
	case WordPiece:
		for _, f := range frags {
			if f.token >= 0 {
				out = append(out, f.token)
				continue
			}
			out = t.encodeWPM(f.text, out)
		}
	case RWKV:
		for _, f := range frags {
			if f.token >= 0 {
				out = append(out, f.token)
				continue
			}
			var err error
			if out, err = t.encodeRWKV(f.text, out); err != nil {
				return nil, err
			}
		}
	case Unigram:
		prevSpecial := true
		for i, f := range frags {
			if f.token >= 0 {
				out = append(out, f.token)
				prevSpecial = true
				continue
			}
			txt := f.text
			if t.AddSpacePrefix && prevSpecial && (i == 0 || !t.prefixFirst) {
				txt = " " + txt
			}
			out = t.encodeUnigram(strings.ReplaceAll(txt, " ", "▁"), out)
			prevSpecial = false
		}
	}
	if addEOS {
		id := t.EOS
		if t.model == WordPiece {
			id = t.SEP
		}
		if id < 0 {
			return nil, fmt.Errorf("tokenizer: the tokenizer asks for an EOS/SEP token but has none")
		}
		out = append(out, id)
	}
	return out, nil
}

// Decode returns the text of ids. Control tokens (BOS, EOS, CLS, SEP, PAD)
// are left out, as llama.cpp and HF's skip_special_tokens do; bytes are
// reassembled, so a token that is half of a UTF-8 sequence decodes together
// with its neighbours.
func (t *Tokenizer) Decode(ids []int) (string, error) {
	var b strings.Builder
	first := true
	for _, id := range ids {
		if id < 0 || id >= len(t.tokens) {
			return "", fmt.Errorf("tokenizer: token id %d is outside the vocabulary of %d", id, len(t.tokens))
		}
		ty := t.types[id]
		if ty == TypeControl {
			continue
		}
		p := t.tokens[id]
		switch t.model {
		case RWKV:
			b.Write(rwkvUnescape(p))
		case BPE:
			if ty == TypeUserDefined {
				b.WriteString(p)
			} else {
				b.WriteString(byteDecode(p))
			}
		case SPM, Unigram:
			if ty == TypeByte {
				if v, ok := parseByteToken(p); ok {
					b.WriteByte(v)
					break
				}
			}
			p = strings.ReplaceAll(p, "▁", " ")
			if first && t.AddSpacePrefix && ty != TypeUserDefined {
				p = strings.TrimPrefix(p, " ")
			}
			b.WriteString(p)
		case WordPiece:
			if ty == TypeUnknown || ty == TypeUserDefined {
				if !first {
					b.WriteByte(' ')
				}
				b.WriteString(p)
			} else if rest, ok := strings.CutPrefix(p, "▁"); ok {
				if !first {
					b.WriteByte(' ')
				}
				b.WriteString(rest)
			} else {
				b.WriteString(p)
			}
		}
		first = false
	}
	s := b.String()
	if t.model == WordPiece {
		s = cleanUpSpaces(s)
	}
	return s, nil
}

// cleanUpSpaces is HF's clean_up_tokenization: the spaces WordPiece puts
// before punctuation and English contractions are removed.
func cleanUpSpaces(s string) string {
	r := strings.NewReplacer(" .", ".", " ?", "?", " !", "!", " ,", ",", " ' ", "'", " n't", "n't", " 'm", "'m", " 's", "'s", " 've", "'ve", " 're", "'re")
	return r.Replace(s)
}

func parseByteToken(p string) (byte, bool) {
	if len(p) != 6 || !strings.HasPrefix(p, "<0x") || p[5] != '>' {
		return 0, false
	}
	v, err := strconv.ParseUint(p[3:5], 16, 8)
	return byte(v), err == nil
}

// padToken is the name gguf-py gives the filler token of id i.
func padToken(i int) string { return fmt.Sprintf("[PAD%d]", i) }

// padTo extends the vocabulary to n tokens, as llama.cpp's converter does
// when config.json's vocab_size exceeds the tokenizer (the embedding has
// spare rows: Phi-3, Qwen2): "[PADi]" tokens of type unused, with score
// -10000 where the vocabulary has scores. Nothing happens when n is not
// larger.
func (t *Tokenizer) padTo(n int) {
	for i := len(t.tokens); i < n; i++ {
		s := padToken(i)
		t.tokens = append(t.tokens, s)
		t.types = append(t.types, TypeUnused)
		if t.scores != nil {
			t.scores = append(t.scores, PadScore)
		}
		if _, dup := t.index[s]; !dup {
			t.index[s] = i
		}
		t.maxLen = max(t.maxLen, len(s))
	}
}
