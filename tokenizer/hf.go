package tokenizer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/tfconv/tfconv/internal/pyjson"
	"io/fs"
	"slices"
	"sort"
	"strings"
)

// Limits on HF side files: the largest real tokenizer.json files are ~35 MB
// (Gemma 3); configs are a few kB.
const (
	maxTokenizerFile = 256 << 20
	maxConfigFile    = 16 << 20
)

// readAux reads an optional side file; a missing one gives nil, nil.
func readAux(src Source, name string, limit int) ([]byte, error) {
	b, err := src.ReadAux(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %w", name, err)
	}
	if len(b) > limit {
		return nil, fmtErr(name, "", fmt.Sprintf("%d bytes is more than the limit %d", len(b), limit))
	}
	return b, nil
}

// jsonErr turns a JSON error into a FormatError with its byte offset.
func jsonErr(file string, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		// Offset counts the bytes read, the bad one included.
		return fmtErrAt(file, max(se.Offset-1, 0), "", "bad JSON: "+se.Error())
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmtErrAt(file, te.Offset, fmt.Sprintf("%q", te.Field), fmt.Sprintf("JSON %s where %s was expected", te.Value, te.Type))
	}
	return fmtErr(file, "", "bad JSON: "+err.Error())
}

// hfConfig is what tokenizer_config.json, special_tokens_map.json and
// config.json say about special tokens.
type hfConfig struct {
	tokens map[string]string // kind → token text ("bos" → "<s>"), from either file
	// tcTokens are the token texts of tokenizer_config.json alone: the
	// only ones gguf-py's SpecialVocab reads.
	tcTokens  map[string]string
	ids       map[string]int  // kind → id from config.json *_token_id (JSON integers ≥ 0 only)
	add       map[string]bool // "bos"/"eos" → add_*_token of tokenizer_config.json (JSON booleans only)
	added     map[int]addedToken
	typeVocab int // config.json type_vocab_size
	// vocabSize is config.json's vocab_size: the embedding's rows, which
	// the converter pads the vocabulary to (0: not stated).
	vocabSize int
	// addedJSON is added_tokens.json (token → id), which the converter
	// reads for SentencePiece vocabularies.
	addedJSON map[string]int
	lower     *bool
	// legacy is tokenizer_config.json's legacy (nil: unset, which
	// transformers' SentencePiece classes take as true).
	legacy *bool
	chat   []ChatTemplate
	// additional is additional_special_tokens (token texts).
	additional []string
}

type addedToken struct {
	Content string `json:"content"`
	Special bool   `json:"special"`
	ID      int    `json:"id"`
}

func readHFConfig(src Source) (*hfConfig, error) {
	c := &hfConfig{tokens: map[string]string{}, tcTokens: map[string]string{}, ids: map[string]int{}, add: map[string]bool{},
		added: map[int]addedToken{}}
	// tokenText is a token entry as SpecialVocab takes it: a string, or an
	// object whose content is a string; null or anything else is no token.
	tokenText := func(raw json.RawMessage) (string, bool) {
		var s *string
		if json.Unmarshal(raw, &s) == nil {
			return derefOK(s)
		}
		var o struct {
			Content *string `json:"content"`
		}
		if json.Unmarshal(raw, &o) == nil {
			return derefOK(o.Content)
		}
		return "", false
	}
	for _, name := range []string{"special_tokens_map.json", "tokenizer_config.json"} {
		b, err := readAux(src, name, maxConfigFile)
		if err != nil {
			return nil, err
		}
		if b == nil {
			continue
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, jsonErr(name, err)
		}
		for _, sk := range specialKinds {
			if raw, ok := m[sk.kind+"_token"]; ok {
				if s, ok := tokenText(raw); ok {
					c.tokens[sk.kind] = s
					if name == "tokenizer_config.json" {
						c.tcTokens[sk.kind] = s
					}
				}
			}
			// transformers and gguf-py take add_bos_token/add_eos_token
			// from tokenizer_config.json only, and only a JSON boolean
			// (null is unset, not false).
			if raw, ok := m["add_"+sk.kind+"_token"]; ok && name == "tokenizer_config.json" {
				var v *bool
				if json.Unmarshal(raw, &v) == nil && v != nil {
					c.add[sk.kind] = *v
				}
			}
		}
		if raw, ok := m["additional_special_tokens"]; ok {
			var list []json.RawMessage
			var texts []string
			if json.Unmarshal(raw, &list) == nil {
				for _, e := range list {
					if s, ok := tokenText(e); ok {
						texts = append(texts, s)
					}
				}
			}
			// transformers takes special_tokens_map.json's list when
			// tokenizer_config.json's is empty.
			if len(texts) > 0 {
				c.additional = texts
			}
		}
		if raw, ok := m["chat_template"]; ok && name == "tokenizer_config.json" {
			c.chat = parseChatTemplate(raw)
		}
		if raw, ok := m["legacy"]; ok && name == "tokenizer_config.json" {
			var v *bool
			if json.Unmarshal(raw, &v) == nil && v != nil {
				c.legacy = v
			}
		}
		if raw, ok := m["do_lower_case"]; ok {
			var v bool
			if json.Unmarshal(raw, &v) == nil {
				c.lower = &v
			}
		}
		if raw, ok := m["added_tokens_decoder"]; ok {
			var dec map[string]addedToken
			if err := json.Unmarshal(raw, &dec); err != nil {
				return nil, jsonErr(name, err)
			}
			for k, v := range dec {
				var id int
				if _, err := fmt.Sscan(k, &id); err != nil || id < 0 || id >= maxVocab {
					return nil, fmtErr(name, fmt.Sprintf("added_tokens_decoder %q", k), "not a token id")
				}
				v.ID = id
				c.added[id] = v
			}
		}
	}
	if c.chat == nil {
		if err := c.readChatTemplateFiles(src); err != nil {
			return nil, err
		}
	}
	b, err := readAux(src, "config.json", maxConfigFile)
	if err != nil {
		return nil, err
	}
	if b != nil {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(pyjson.Standard(b), &m); err != nil {
			return nil, jsonErr("config.json", err)
		}
		// SpecialVocab takes a *_token_id only when it is a JSON integer:
		// null (Phi-3's, OLMo's pad_token_id), a list (Llama 3.1's
		// eos_token_id) or a float set nothing. A negative id makes
		// gguf-py refuse the whole conversion; tfconv sets nothing for it
		// either, as it never names a token.
		// A multimodal config.json nests its text model's in text_config:
		// SpecialVocab looks there for an id the top level lacks (or has
		// null), and the converter reads vocab_size from the merged
		// config (text_config's over the top level's).
		var text map[string]json.RawMessage
		if raw, ok := m["text_config"]; ok {
			json.Unmarshal(raw, &text)
		}
		for _, sk := range specialKinds {
			raw, ok := m[sk.kind+"_token_id"]
			if t, inText := text[sk.kind+"_token_id"]; inText && (!ok || string(raw) == "null") {
				raw, ok = t, true
			}
			if ok {
				var id *int
				if json.Unmarshal(raw, &id) == nil && id != nil && *id >= 0 {
					c.ids[sk.kind] = *id
				}
			}
		}
		// The original InternVL layout's llm_config is its text_config to
		// the converter, which renames it before reading vocab_size
		// (gguf-py's SpecialVocab reads config.json as written: ids only
		// from text_config).
		sizes := text
		if raw, ok := m["llm_config"]; ok && text == nil {
			json.Unmarshal(raw, &sizes)
		}
		for _, k := range []string{"type_vocab_size", "vocab_size"} {
			if raw, ok := sizes[k]; ok {
				m[k] = raw
			}
		}
		if raw, ok := m["type_vocab_size"]; ok {
			json.Unmarshal(raw, &c.typeVocab)
		}
		if raw, ok := m["vocab_size"]; ok {
			var n int
			if json.Unmarshal(raw, &n) == nil && n > 0 && n <= maxVocab {
				c.vocabSize = n
			}
		}
	}
	b, err = readAux(src, "added_tokens.json", maxConfigFile)
	if err != nil {
		return nil, err
	}
	if b != nil {
		if err := json.Unmarshal(b, &c.addedJSON); err != nil {
			return nil, jsonErr("added_tokens.json", err)
		}
		for tok, id := range c.addedJSON {
			if id < 0 || id >= maxVocab {
				return nil, fmtErr("added_tokens.json", fmt.Sprintf("%q", tok), fmt.Sprintf("token id %d is out of range", id))
			}
		}
	}
	return c, nil
}

// readChatTemplateFiles reads the chat template that transformers 4.43+
// saves beside tokenizer_config.json instead of in it: chat_template.jinja,
// else the "chat_template" of chat_template.json (a processor's), as
// gguf-py's SpecialVocab falls back to them when tokenizer_config.json has
// none. (Named templates in additional_chat_templates/ are not read.)
func (c *hfConfig) readChatTemplateFiles(src Source) error {
	b, err := readAux(src, "chat_template.jinja", maxConfigFile)
	if err != nil {
		return err
	}
	if b != nil {
		c.chat = []ChatTemplate{{Template: string(b)}}
		return nil
	}
	if b, err = readAux(src, "chat_template.json", maxConfigFile); err != nil || b == nil {
		return err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return jsonErr("chat_template.json", err)
	}
	if raw, ok := m["chat_template"]; ok {
		c.chat = parseChatTemplate(raw)
	}
	return nil
}

// fromHF builds a tokenizer from HF files: tokenizer.json if present, else
// tokenizer.model, else Kimi's tiktoken.model, else Hunyuan's hy.tiktoken,
// else RWKV's world vocabulary, else vocab.json with merges.txt, else
// vocab.txt; a BPE tokenizer's pre-tokenizer is then named.
func fromHF(src Source) (*Tokenizer, error) {
	t, tiktoken, err := readHF(src)
	if err != nil {
		return nil, err
	}
	if tiktoken {
		// Kimi's pattern; llama.cpp's converter names it by the hash of
		// Kimi's full vocabulary, which a trimmed one cannot give.
		if !t.namePre() {
			t.preNote = "tiktoken.model is read by Kimi K2's tokenizer class: its split pattern is llama.cpp's \"kimi-k2\""
			if t.pre == "hunyuan" {
				t.preNote = "hy.tiktoken is read by Hunyuan's tokenizer class: its split pattern is llama.cpp's \"hunyuan\""
			}
			if t.pre == "hunyuan" {
				t.preNote = "hy.tiktoken is read by Hunyuan's tokenizer class: its split pattern is llama.cpp's \"hunyuan\""
			}
		}
	} else if t.model == BPE {
		if err := t.identifyPre(); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// readHF reads the HF files as fromHF says, without naming a BPE
// pre-tokenizer (tiktoken reports a tiktoken.model).
func readHF(src Source) (t *Tokenizer, tiktoken bool, err error) {
	cfg, err := readHFConfig(src)
	if err != nil {
		return nil, false, err
	}
	var tjAdded []addedToken
	// tokenizer.model comes first, as llama.cpp's converter reads it for
	// every SentencePiece family (LLaMA, Mistral, Phi-3, Gemma) even when
	// a tokenizer.json is beside it: its scores and types are the ones
	// the GGUF must carry.
	if b, err := readAux(src, "tokenizer.model", maxTokenizerFile); err != nil {
		return nil, false, err
	} else if b != nil {
		t, err = parseSentencePiece(b, "tokenizer.model", cfg)
		if err != nil {
			return nil, false, err
		}
		// transformers' slow SentencePiece tokenizers with legacy false
		// put the space prefix before the text's start only (their fast
		// twins convert to a Metaspace with prepend_scheme "first").
		t.prefixFirst = cfg.legacy != nil && !*cfg.legacy
	} else if b, err := readAux(src, "tokenizer.json", maxTokenizerFile); err != nil {
		return nil, false, err
	} else if b != nil {
		t, tjAdded, err = parseTokenizerJSON(b, cfg)
		if err != nil {
			return nil, false, err
		}
	} else if b, err := readAux(src, tiktokenFile, maxTokenizerFile); err != nil {
		return nil, false, err
	} else if b != nil {
		if t, err = parseTiktoken(b, cfg); err != nil {
			return nil, false, err
		}
		tiktoken = true
	} else if b, err := readAux(src, hunyuanFile, maxTokenizerFile); err != nil {
		return nil, false, err
	} else if b != nil {
		if t, err = parseHunyuanTiktoken(b, cfg); err != nil {
			return nil, false, err
		}
		tiktoken = true
	} else if b, err := readAux(src, rwkvVocabFile, maxTokenizerFile); err != nil {
		return nil, false, err
	} else if b != nil {
		if t, err = parseRWKV(b, cfg); err != nil {
			return nil, false, err
		}
	} else if b, err := readAux(src, "vocab.json", maxTokenizerFile); err != nil {
		return nil, false, err
	} else if b != nil {
		m, err := readAux(src, "merges.txt", maxTokenizerFile)
		if err != nil {
			return nil, false, err
		}
		if m == nil {
			return nil, false, fmtErr("merges.txt", "", "vocab.json needs merges.txt beside it")
		}
		t, err = parseVocabMerges(b, m, cfg)
		if err != nil {
			return nil, false, err
		}
	} else if b, err := readAux(src, "vocab.txt", maxTokenizerFile); err != nil {
		return nil, false, err
	} else if b != nil {
		t, err = parseVocabTxt(b, cfg)
		if err != nil {
			return nil, false, err
		}
	} else {
		return nil, false, fmt.Errorf("tokenizer: %w", errNoTokenizer)
	}
	t.padTo(cfg.vocabSize)
	t.applyConfig(cfg, tjAdded)
	if t.model == RWKV {
		t.rwkvSpecial()
		if len(t.chat) == 0 {
			// The converter writes its own rwkv-world template file, or,
			// without it, the name llama.cpp knows that template by.
			t.chat = []ChatTemplate{{Template: "rwkv-world"}}
		}
	}
	return t, tiktoken, nil
}

// applyConfig sets the special tokens and add-BOS/EOS flags the way
// transformers and gguf-py's SpecialVocab read them.
func (t *Tokenizer) applyConfig(cfg *hfConfig, tjAdded []addedToken) {
	t.chat = cfg.chat
	t.additional = cfg.additional
	seen := map[string]bool{}
	// gguf-py resolves the token texts of tokenizer_config.json (not
	// special_tokens_map.json) only through the first of tokenizer.json's
	// added_tokens with that content, then falls back to config.json; an
	// id past the vocabulary is skipped. (gguf-py writes such an id when
	// the converter gives SpecialVocab no n_vocab, as its GPT-2 path does;
	// llama.cpp ignores it on load and tfconv writes no key for it.)
	t.ggufIDs = []string{}
	for _, sk := range specialKinds {
		text, ok := cfg.tcTokens[sk.kind]
		if !ok {
			continue
		}
		i := slices.IndexFunc(tjAdded, func(a addedToken) bool { return a.Content == text })
		if i < 0 {
			continue
		}
		if a := tjAdded[i]; a.ID >= 0 && a.ID < len(t.tokens) {
			*t.specialID(sk.kind) = a.ID
			seen[sk.kind] = true
			if sk.kind != "cls" {
				t.ggufIDs = append(t.ggufIDs, sk.kind)
			}
		}
	}
	for _, sk := range specialKinds {
		if seen[sk.kind] {
			continue
		}
		if id, ok := cfg.ids[sk.kind]; ok && id >= 0 && id < len(t.tokens) {
			*t.specialID(sk.kind) = id
			seen[sk.kind] = true
			if sk.kind != "cls" {
				t.ggufIDs = append(t.ggufIDs, sk.kind)
			}
		}
	}
	// Transformers itself finds the token texts in the vocabulary.
	for _, sk := range specialKinds {
		if seen[sk.kind] {
			continue
		}
		if text, ok := cfg.tokens[sk.kind]; ok {
			if id, ok := t.index[text]; ok {
				*t.specialID(sk.kind) = id
			} else if id, ok := t.index[phantomSpace+text]; ok && t.model == WordPiece {
				*t.specialID(sk.kind) = id
			}
		}
	}
	if v, ok := cfg.add["bos"]; ok {
		t.AddBOS, t.hasAddBOS = v, true
	}
	if v, ok := cfg.add["eos"]; ok {
		t.AddEOS, t.hasAddEOS = v, true
	}
	if t.model == WordPiece {
		if t.CLS < 0 {
			t.CLS = t.BOS
		}
		if t.BOS < 0 {
			t.BOS = t.CLS
		}
		t.tokenTypeCount = cfg.typeVocab
	}
}

// markAdded sets the type of tokens listed in added_tokens_decoder the way
// gguf-py does: special ones are control tokens, the others user-defined.
func markAdded(types []TokenType, tokens []string, added map[int]addedToken) {
	for id, a := range added {
		if id >= len(types) || tokens[id] != a.Content {
			continue
		}
		if a.Special || looksSpecial(a.Content) {
			types[id] = TypeControl
		} else {
			types[id] = TypeUserDefined
		}
	}
}

// looksSpecial is gguf-py's does_token_look_special.
func looksSpecial(s string) bool {
	switch s {
	case "<pad>", "<mask>", "<2mass>", "[@BOS@]":
		return true
	}
	return (strings.HasPrefix(s, "<|") && strings.HasSuffix(s, "|>")) ||
		(strings.HasPrefix(s, "<｜") && strings.HasSuffix(s, "｜>")) ||
		(strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]"))
}

// parseVocabMerges reads GPT-2's vocab.json ({"token": id}) and merges.txt.
func parseVocabMerges(vocabJSON, mergesTxt []byte, cfg *hfConfig) (*Tokenizer, error) {
	var m map[string]int
	if err := json.Unmarshal(vocabJSON, &m); err != nil {
		return nil, jsonErr("vocab.json", err)
	}
	tokens, err := denseVocab(m, "vocab.json")
	if err != nil {
		return nil, err
	}
	merges, err := parseMergesTxt(mergesTxt)
	if err != nil {
		return nil, err
	}
	types := make([]TokenType, len(tokens))
	for i := range types {
		types[i] = TypeNormal
	}
	markAdded(types, tokens, cfg.added)
	return build(vocab{model: BPE, pre: "gpt-2", tokens: tokens, types: types, merges: merges}, "merges.txt")
}

// denseVocab turns {"token": id} into a slice indexed by id; ids must be
// 0..n-1 without gaps or repeats.
func denseVocab(m map[string]int, file string) ([]string, error) {
	if len(m) > maxVocab {
		return nil, fmtErr(file, "", fmt.Sprintf("%d tokens is more than the limit %d", len(m), maxVocab))
	}
	tokens := make([]string, len(m))
	set := make([]bool, len(m))
	for s, id := range m {
		if id < 0 || id >= len(m) {
			return nil, fmtErr(file, fmt.Sprintf("token %q", s), fmt.Sprintf("id %d is outside 0..%d", id, len(m)-1))
		}
		if set[id] {
			return nil, fmtErr(file, fmt.Sprintf("token %q", s), fmt.Sprintf("id %d is also %q", id, tokens[id]))
		}
		tokens[id], set[id] = s, true
	}
	return tokens, nil
}

// parseMergesTxt reads merges.txt: an optional "#version" line, then one
// "left right" pair per line.
func parseMergesTxt(b []byte) ([]string, error) {
	var merges []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, maxTokenLen*2+2)
	off := int64(0)
	for line := 1; sc.Scan(); line++ {
		l := sc.Text()
		lineOff := off
		off += int64(len(l)) + 1
		if line == 1 && strings.HasPrefix(l, "#version") {
			continue
		}
		if strings.TrimSpace(l) == "" {
			continue
		}
		if _, _, ok := splitMerge(l); !ok {
			return nil, fmtErrAt("merges.txt", lineOff, fmt.Sprintf("line %d", line), fmt.Sprintf("%q is not two tokens separated by a space", l))
		}
		merges = append(merges, l)
	}
	if err := sc.Err(); err != nil {
		return nil, fmtErrAt("merges.txt", off, "", err.Error())
	}
	return merges, nil
}

// parseVocabTxt reads BERT's vocab.txt (one token per line, id = line
// number) into llama.cpp's phantom-space form.
func parseVocabTxt(b []byte, cfg *hfConfig) (*Tokenizer, error) {
	s := string(b)
	s = strings.TrimSuffix(s, "\n")
	lines := strings.Split(s, "\n")
	if len(lines) > maxVocab {
		return nil, fmtErr("vocab.txt", "", fmt.Sprintf("%d tokens is more than the limit %d", len(lines), maxVocab))
	}
	tokens := make([]string, len(lines))
	types := make([]TokenType, len(lines))
	for i, l := range lines {
		tokens[i] = strings.TrimSuffix(l, "\r")
		types[i] = TypeNormal
	}
	markAdded(types, tokens, cfg.added)
	for i, tok := range tokens {
		tokens[i] = toPhantom(tok)
	}
	return build(vocab{model: WordPiece, pre: "default", tokens: tokens, types: types}, "vocab.txt")
}

// toPhantom converts a WordPiece entry to llama.cpp's form: "##piece" →
// "piece", "[CLS]" stays, "word" → "▁word".
func toPhantom(tok string) string {
	if strings.HasPrefix(tok, "[") && strings.HasSuffix(tok, "]") {
		return tok
	}
	if rest, ok := strings.CutPrefix(tok, "##"); ok {
		return rest
	}
	return phantomSpace + tok
}

// fromPhantom is the inverse of toPhantom.
func fromPhantom(tok string) string {
	if strings.HasPrefix(tok, "[") && strings.HasSuffix(tok, "]") {
		return tok
	}
	if rest, ok := strings.CutPrefix(tok, phantomSpace); ok {
		return rest
	}
	return "##" + tok
}

// sortedAdded returns added tokens in id order.
func sortedAdded(m map[int]addedToken) []addedToken {
	out := make([]addedToken, 0, len(m))
	for _, a := range m {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// errNoTokenizer reports a source without any vocabulary file. It matches
// fs.ErrNotExist; LoadFile adds the directory it looked in.
var errNoTokenizer = fmt.Errorf("no tokenizer found (tokenizer.json, tokenizer.model, vocab.json + merges.txt or vocab.txt): %w", fs.ErrNotExist)

// derefOK returns *p and whether p is set.
func derefOK[T any](p *T) (T, bool) {
	if p == nil {
		var zero T
		return zero, false
	}
	return *p, true
}
