package tokenizer

import (
	"fmt"

	"github.com/tfconv/tfconv/tensor"
)

// GGUF metadata keys of the tokenizer (llama.cpp's LLM_KV_TOKENIZER_*).
const (
	keyModel          = "tokenizer.ggml.model"
	keyPre            = "tokenizer.ggml.pre"
	keyTokens         = "tokenizer.ggml.tokens"
	keyTokenType      = "tokenizer.ggml.token_type"
	keyTokenTypeCount = "tokenizer.ggml.token_type_count"
	keyScores         = "tokenizer.ggml.scores"
	keyMerges         = "tokenizer.ggml.merges"
	keyAddBOS         = "tokenizer.ggml.add_bos_token"
	keyAddEOS         = "tokenizer.ggml.add_eos_token"
	keyAddSpacePrefix = "tokenizer.ggml.add_space_prefix"
	keyEOT            = "tokenizer.ggml.eot_token_id"
)

// specialKinds are the special token kinds in the order gguf-py's SpecialVocab
// knows them, with their id keys. ("seperator" is llama.cpp's spelling.)
var specialKinds = []struct{ kind, key string }{
	{"bos", "tokenizer.ggml.bos_token_id"},
	{"eos", "tokenizer.ggml.eos_token_id"},
	{"unk", "tokenizer.ggml.unknown_token_id"},
	{"sep", "tokenizer.ggml.seperator_token_id"},
	{"pad", "tokenizer.ggml.padding_token_id"},
	{"cls", "tokenizer.ggml.cls_token_id"},
	{"mask", "tokenizer.ggml.mask_token_id"},
}

func (t *Tokenizer) specialID(kind string) *int {
	switch kind {
	case "bos":
		return &t.BOS
	case "eos":
		return &t.EOS
	case "unk":
		return &t.UNK
	case "sep":
		return &t.SEP
	case "pad":
		return &t.PAD
	case "cls":
		return &t.CLS
	case "mask":
		return &t.MASK
	}
	return nil
}

// HasMetadata reports whether md holds a GGUF tokenizer (tokenizer.ggml.model
// and tokenizer.ggml.tokens).
func HasMetadata(md tensor.Metadata) bool {
	_, okm := md.Get(keyModel)
	_, okt := md.Get(keyTokens)
	return okm && okt
}

// FromMetadata builds the tokenizer described by GGUF tokenizer.ggml.*
// metadata, with llama.cpp's defaults for what is missing. file names the
// source in errors.
func FromMetadata(md tensor.Metadata, file string) (*Tokenizer, error) {
	var v vocab
	model, ok := md.Str(keyModel)
	if !ok {
		return nil, fmtErr(file, keyModel, "missing or not a string")
	}
	v.model = Model(model)
	v.pre, _ = md.Str(keyPre)
	arr, err := mdArray(md, keyTokens, file, true)
	if err != nil {
		return nil, err
	}
	toks, ok := arr.Data.([]string)
	if !ok {
		return nil, fmtErr(file, keyTokens, fmt.Sprintf("array of %s, want string", arr.Elem))
	}
	v.tokens = toks
	if arr, err := mdArray(md, keyTokenType, file, false); err != nil {
		return nil, err
	} else if arr.Data != nil {
		v.types = make([]TokenType, arr.Len())
		for i := range v.types {
			x, ok := arr.Index(i).Int()
			if !ok {
				return nil, fmtErr(file, keyTokenType, fmt.Sprintf("array of %s, want integers", arr.Elem))
			}
			v.types[i] = TokenType(x)
		}
	}
	if arr, err := mdArray(md, keyScores, file, false); err != nil {
		return nil, err
	} else if arr.Data != nil {
		v.scores = make([]float32, arr.Len())
		for i := range v.scores {
			x, ok := arr.Index(i).Float()
			if !ok {
				return nil, fmtErr(file, keyScores, fmt.Sprintf("array of %s, want numbers", arr.Elem))
			}
			v.scores[i] = float32(x)
		}
	}
	if arr, err := mdArray(md, keyMerges, file, v.model == BPE); err != nil {
		return nil, err
	} else if arr.Data != nil {
		m, ok := arr.Data.([]string)
		if !ok {
			return nil, fmtErr(file, keyMerges, fmt.Sprintf("array of %s, want string", arr.Elem))
		}
		v.merges = m
	}
	t, err := build(v, file)
	if err != nil {
		return nil, err
	}
	// llama.cpp's defaults for each model.
	switch t.model {
	case SPM:
		t.BOS, t.EOS, t.UNK = 1, 2, 0
		t.AddBOS, t.AddSpacePrefix = true, true
	case WordPiece:
		t.BOS, t.UNK, t.SEP, t.PAD, t.MASK = 101, 100, 102, 0, 103
		t.AddBOS = true
	case BPE:
		t.BOS, t.EOS = 11, 11
		switch t.pre {
		case "llama3", "llama-v3", "llama-bpe", "falcon3", "tekken", "chameleon":
			t.AddBOS = true
		}
	case Unigram:
		t.EOS, t.UNK, t.PAD = 1, 2, 0
		t.AddEOS, t.AddSpacePrefix = true, true
	}
	for _, p := range []*int{&t.BOS, &t.EOS, &t.UNK, &t.SEP, &t.PAD, &t.MASK} {
		if *p >= len(t.tokens) {
			*p = -1
		}
	}
	t.ggufIDs = []string{} // the file's own keys, none if it has none
	for _, sk := range specialKinds {
		val, ok := md.Get(sk.key)
		if !ok {
			continue
		}
		id, ok := val.Int()
		if !ok || id < 0 || id >= int64(len(t.tokens)) {
			return nil, fmtErr(file, sk.key, fmt.Sprintf("token id %v is outside the vocabulary of %d", val, len(t.tokens)))
		}
		*t.specialID(sk.kind) = int(id)
		t.ggufIDs = append(t.ggufIDs, sk.kind)
	}
	for _, f := range []struct {
		key     string
		val, ok *bool
	}{{keyAddBOS, &t.AddBOS, &t.hasAddBOS}, {keyAddEOS, &t.AddEOS, &t.hasAddEOS}, {keyAddSpacePrefix, &t.AddSpacePrefix, &t.hasAddSpacePrefix}} {
		val, ok := md.Get(f.key)
		if !ok {
			continue
		}
		b, ok := val.BoolValue()
		if !ok {
			return nil, fmtErr(file, f.key, fmt.Sprintf("%s value, want bool", val.Kind()))
		}
		*f.val, *f.ok = b, true
	}
	if n, ok := md.Int(keyTokenTypeCount); ok && n > 0 && n < 1<<20 {
		t.tokenTypeCount = int(n)
	}
	t.chat = chatFromMetadata(md)
	if t.model == WordPiece {
		t.CLS = t.BOS
	}
	return t, nil
}

// mdArray returns an array value; a missing optional key gives a zero Array.
func mdArray(md tensor.Metadata, key, file string, required bool) (tensor.Array, error) {
	val, ok := md.Get(key)
	if !ok {
		if required {
			return tensor.Array{}, fmtErr(file, key, "missing")
		}
		return tensor.Array{}, nil
	}
	a, ok := val.Array()
	if !ok {
		return tensor.Array{}, fmtErr(file, key, fmt.Sprintf("%s value, want an array", val.Kind()))
	}
	return a, nil
}

// GGUFMetadata returns the tokenizer.ggml.* entries llama.cpp's
// convert_hf_to_gguf.py writes for this tokenizer, in the order it writes
// them.
func (t *Tokenizer) GGUFMetadata() tensor.Metadata {
	var md tensor.Metadata
	if t.model == WordPiece && t.tokenTypeCount > 0 {
		md.Set(keyTokenTypeCount, tensor.Uint32(uint32(t.tokenTypeCount)))
	}
	md.Set(keyModel, tensor.String(string(t.model)))
	pre := t.pre
	if pre == "" {
		pre = "default"
	}
	if t.model != RWKV { // the converter's RWKV World vocabulary has none
		md.Set(keyPre, tensor.String(pre))
	}
	md.Set(keyTokens, tensor.ArrayOf(append([]string(nil), t.tokens...)))
	types := make([]int32, len(t.types))
	for i, ty := range t.types {
		types[i] = int32(ty)
	}
	if t.model == SPM || t.model == Unigram {
		md.Set(keyScores, tensor.ArrayOf(append([]float32(nil), t.scores...)))
		md.Set(keyTokenType, tensor.ArrayOf(types))
	} else {
		md.Set(keyTokenType, tensor.ArrayOf(types))
	}
	if t.model == BPE {
		md.Set(keyMerges, tensor.ArrayOf(append([]string(nil), t.merges...)))
	}
	ids := t.ggufIDs
	if ids == nil {
		for _, sk := range specialKinds {
			if sk.kind != "cls" && *t.specialID(sk.kind) >= 0 {
				ids = append(ids, sk.kind)
			}
		}
	}
	for _, kind := range ids {
		if kind == "eot" && t.eot >= 0 {
			md.Set(keyEOT, tensor.Uint32(uint32(t.eot)))
		}
		for _, sk := range specialKinds {
			if sk.kind == kind && kind != "cls" {
				md.Set(sk.key, tensor.Uint32(uint32(*t.specialID(kind))))
			}
		}
	}
	if t.hasAddBOS {
		md.Set(keyAddBOS, tensor.Bool(t.AddBOS))
	}
	if t.hasAddEOS {
		md.Set(keyAddEOS, tensor.Bool(t.AddEOS))
	}
	t.chatMetadata(&md)
	if t.hasAddSpacePrefix {
		md.Set(keyAddSpacePrefix, tensor.Bool(t.AddSpacePrefix))
	}
	return md
}
