package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
)

type tjFile struct {
	AddedTokens []struct {
		ID      int    `json:"id"`
		Content string `json:"content"`
		Special bool   `json:"special"`
	} `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Model         struct {
		Type          string          `json:"type"`
		Vocab         json.RawMessage `json:"vocab"`
		Merges        json.RawMessage `json:"merges"`
		ByteFallback  bool            `json:"byte_fallback"`
		IgnoreMerges  bool            `json:"ignore_merges"`
		UnkToken      *string         `json:"unk_token"`
		UnkID         *int            `json:"unk_id"`
		ContinuingSub *string         `json:"continuing_subword_prefix"`
	} `json:"model"`
}

type tjPre struct {
	Type          string  `json:"type"`
	UseRegex      *bool   `json:"use_regex"`
	Pretokenizers []tjPre `json:"pretokenizers"`
	Pattern       *struct {
		Regex  *string `json:"Regex"`
		String *string `json:"String"`
	} `json:"pattern"`
}

// parseTokenizerJSON reads an HF tokenizers tokenizer.json.
func parseTokenizerJSON(b []byte, cfg *hfConfig) (*Tokenizer, []addedToken, error) {
	const file = "tokenizer.json"
	var tj tjFile
	if err := json.Unmarshal(b, &tj); err != nil {
		return nil, nil, jsonErr(file, err)
	}
	var added []addedToken
	for _, a := range tj.AddedTokens {
		if a.ID < 0 || a.ID >= maxVocab {
			return nil, nil, fmtErr(file, fmt.Sprintf("added_tokens %q", a.Content), fmt.Sprintf("id %d is out of range", a.ID))
		}
		added = append(added, addedToken{ID: a.ID, Content: a.Content, Special: a.Special})
	}
	var tokens []string
	var scores []float32
	var v vocab
	switch tj.Model.Type {
	case "BPE", "WordPiece":
		var m map[string]int
		if err := json.Unmarshal(tj.Model.Vocab, &m); err != nil {
			return nil, nil, jsonErr(file, err)
		}
		var err error
		if tokens, err = denseVocabWithAdded(m, added); err != nil {
			return nil, nil, err
		}
	case "Unigram":
		var pairs [][2]json.RawMessage
		if err := json.Unmarshal(tj.Model.Vocab, &pairs); err != nil {
			return nil, nil, jsonErr(file, err)
		}
		if len(pairs) > maxVocab {
			return nil, nil, fmtErr(file, "model.vocab", "too many tokens")
		}
		for i, p := range pairs {
			var s string
			var sc float64
			if json.Unmarshal(p[0], &s) != nil || json.Unmarshal(p[1], &sc) != nil {
				return nil, nil, fmtErr(file, fmt.Sprintf("model.vocab[%d]", i), "want [piece, score]")
			}
			tokens = append(tokens, s)
			scores = append(scores, float32(sc))
		}
	default:
		return nil, nil, unsupportedErr(file, "model.type", fmt.Sprintf("model type %q is not supported", tj.Model.Type))
	}
	types := make([]TokenType, len(tokens))
	for i := range types {
		types[i] = TypeNormal
		if strings.HasPrefix(tokens[i], "[PAD") && i >= len(tokens)-len(added) {
			types[i] = TypeUnused
		}
	}
	addedMap := map[int]addedToken{}
	for _, a := range added {
		addedMap[a.ID] = a
	}
	markAdded(types, tokens, addedMap)

	switch tj.Model.Type {
	case "WordPiece":
		for i, tok := range tokens {
			if types[i] == TypeNormal {
				tokens[i] = toPhantom(tok)
			}
		}
		v = vocab{model: WordPiece, pre: "default", tokens: tokens, types: types}
	case "Unigram":
		for i, tok := range tokens {
			if _, ok := parseByteToken(tok); ok && types[i] == TypeNormal {
				types[i] = TypeByte
			}
		}
		if tj.Model.UnkID != nil && *tj.Model.UnkID >= 0 && *tj.Model.UnkID < len(types) {
			types[*tj.Model.UnkID] = TypeUnknown
		}
		v = vocab{model: Unigram, pre: "default", tokens: tokens, types: types, scores: scores}
	case "BPE":
		merges, err := parseTJMerges(tj.Model.Merges)
		if err != nil {
			return nil, nil, err
		}
		byteLevel, regex, err := tjPreKind(tj.PreTokenizer)
		if err != nil {
			return nil, nil, err
		}
		if regex != "" && !byteLevel {
			return nil, nil, unsupportedErr("tokenizer.json", "pre_tokenizer", fmt.Sprintf("pre-tokenizer regex %q is not supported without ByteLevel", regex))
		}
		if byteLevel {
			// identifyPre names the pre-tokenizer: by the hash, else the
			// llama.cpp one that splits (or tokenizes) as the file's does.
			h, err := parseHFPre(tj.Normalizer, tj.PreTokenizer)
			if err != nil {
				return nil, nil, err
			}
			v = vocab{model: BPE, pre: "gpt-2", tokens: tokens, types: types, merges: merges, hf: h, hfIgnoreMerges: tj.Model.IgnoreMerges}
			break
		}
		// SentencePiece-style BPE (LLaMA, Mistral): "▁" for spaces and
		// <0xXX> byte fallback. Scores follow the merge order, so that
		// the score-driven merge makes the same choices as the ranks.
		scores = make([]float32, len(tokens))
		index := map[string]int{}
		for i, s := range tokens {
			index[s] = i
			scores[i] = 0
		}
		for i, m := range merges {
			l, r, ok := splitMerge(m)
			if !ok {
				continue
			}
			if id, ok := index[l+r]; ok && scores[id] == 0 {
				scores[id] = -float32(i + 1)
			}
		}
		for i, tok := range tokens {
			if _, ok := parseByteToken(tok); ok && types[i] == TypeNormal {
				types[i] = TypeByte
			}
		}
		if tj.Model.UnkToken != nil {
			if id, ok := index[*tj.Model.UnkToken]; ok {
				types[id] = TypeUnknown
			}
		}
		v = vocab{model: SPM, pre: "default", tokens: tokens, types: types, scores: scores}
	}
	t, err := build(v, file)
	if err != nil {
		return nil, nil, err
	}
	if t.model == SPM || t.model == Unigram {
		t.AddSpacePrefix, t.hasAddSpacePrefix = tjPrependsSpace(tj.Normalizer, tj.PreTokenizer), true
		t.prefixFirst = strings.Contains(string(tj.PreTokenizer), `"prepend_scheme":"first"`) ||
			strings.Contains(string(tj.PreTokenizer), `"prepend_scheme": "first"`)
	}
	if tj.Model.UnkToken != nil {
		if id, ok := t.index[*tj.Model.UnkToken]; ok {
			t.UNK = id
		}
	}
	if t.model == Unigram && tj.Model.UnkID != nil && *tj.Model.UnkID < len(t.tokens) {
		t.UNK = *tj.Model.UnkID
	}
	t.applyPostProcessor(tj.PostProcessor)
	return t, added, nil
}

// denseVocabWithAdded merges model.vocab with added_tokens; ids missing in
// between become "[PADn]" as gguf-py names them.
func denseVocabWithAdded(m map[string]int, added []addedToken) ([]string, error) {
	n := len(m)
	for _, a := range added {
		n = max(n, a.ID+1)
	}
	for _, id := range m {
		if id < 0 || id >= maxVocab {
			return nil, fmtErr("tokenizer.json", "model.vocab", fmt.Sprintf("token id %d is out of range", id))
		}
		n = max(n, id+1)
	}
	if n > maxVocab {
		return nil, fmtErr("tokenizer.json", "model.vocab", "too many tokens")
	}
	tokens := make([]string, n)
	set := make([]bool, n)
	for s, id := range m {
		tokens[id], set[id] = s, true
	}
	for _, a := range added {
		tokens[a.ID], set[a.ID] = a.Content, true
	}
	for i := range tokens {
		if !set[i] {
			tokens[i] = fmt.Sprintf("[PAD%d]", i)
		}
	}
	return tokens, nil
}

// parseTJMerges reads model.merges: "a b" strings or ["a", "b"] pairs.
func parseTJMerges(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var strs []string
	if err := json.Unmarshal(raw, &strs); err == nil {
		return strs, nil
	}
	var pairs [][2]string
	if err := json.Unmarshal(raw, &pairs); err != nil {
		return nil, jsonErr("tokenizer.json", err)
	}
	out := make([]string, len(pairs))
	for i, p := range pairs {
		out[i] = p[0] + " " + p[1]
	}
	return out, nil
}

// tjPreKind reads whether a pre_tokenizer is byte-level, and its first
// Split regex ("" for none).
func tjPreKind(raw json.RawMessage) (byteLevel bool, regex string, err error) {
	if len(raw) == 0 || string(raw) == "null" {
		return false, "", nil
	}
	var p tjPre
	if err := json.Unmarshal(raw, &p); err != nil {
		return false, "", jsonErr("tokenizer.json", err)
	}
	list := []tjPre{p}
	if p.Type == "Sequence" {
		list = p.Pretokenizers
	}
	for _, q := range list {
		switch q.Type {
		case "ByteLevel":
			byteLevel = true
		case "Split":
			if q.Pattern != nil && q.Pattern.Regex != nil && regex == "" {
				regex = *q.Pattern.Regex
			}
		}
	}
	return byteLevel, regex, nil
}

// tjPrependsSpace reports whether a SentencePiece-style tokenizer.json adds
// "▁" in front of the text (a Prepend normalizer or a Metaspace
// pre-tokenizer with prepend_scheme "first"/"always").
func tjPrependsSpace(norm, pre json.RawMessage) bool {
	return strings.Contains(string(norm), `"Prepend"`) ||
		(strings.Contains(string(pre), `"Metaspace"`) && !strings.Contains(string(pre), `"never"`))
}

// applyPostProcessor reads which special tokens the post-processor adds.
func (t *Tokenizer) applyPostProcessor(raw json.RawMessage) {
	if len(raw) == 0 || string(raw) == "null" {
		return
	}
	var pp struct {
		Type       string            `json:"type"`
		Processors []json.RawMessage `json:"processors"`
		Single     []map[string]struct {
			ID string `json:"id"`
		} `json:"single"`
		Cls []any `json:"cls"`
	}
	if json.Unmarshal(raw, &pp) != nil {
		return
	}
	switch pp.Type {
	case "Sequence":
		for _, p := range pp.Processors {
			t.applyPostProcessor(p)
		}
	case "TemplateProcessing":
		seenA := false
		for _, item := range pp.Single {
			if _, ok := item["Sequence"]; ok {
				seenA = true
				continue
			}
			st, ok := item["SpecialToken"]
			if !ok {
				continue
			}
			id, ok := t.index[st.ID]
			if !ok {
				continue
			}
			switch {
			case t.model == WordPiece && seenA:
				t.SEP = id
			case t.model == WordPiece:
				t.CLS, t.BOS = id, id
			case seenA:
				t.EOS, t.AddEOS, t.hasAddEOS = id, true, true
			default:
				t.BOS, t.AddBOS, t.hasAddBOS = id, true, true
			}
		}
	case "BertProcessing", "RobertaProcessing":
		t.AddBOS, t.AddEOS = true, true
	}
}
