package tokenizer

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/tfconv/tfconv/tensor"
)

// HFFiles reconstructs Hugging Face tokenizer files for this tokenizer, as
// the slow transformers tokenizer of its kind saves them: vocab.json and
// merges.txt (GPT2Tokenizer), tokenizer.model (LlamaTokenizer, T5Tokenizer)
// or vocab.txt (BertTokenizer), plus tokenizer_config.json and
// special_tokens_map.json. Keys are file base names.
func (t *Tokenizer) HFFiles() (map[string][]byte, error) {
	files := map[string][]byte{}
	cfg := map[string]any{}
	stm := map[string]any{}
	decoder := map[string]any{}
	for i, ty := range t.types {
		if ty != TypeControl && ty != TypeUserDefined && ty != TypeUnknown {
			continue
		}
		content := t.tokens[i]
		if t.model == WordPiece {
			content = fromPhantom(content)
		}
		decoder[strconv.Itoa(i)] = map[string]any{
			"content": content, "lstrip": false, "normalized": t.model == BPE, "rstrip": false,
			"single_word": false, "special": ty != TypeUserDefined,
		}
	}
	cfg["added_tokens_decoder"] = decoder
	if len(t.chat) > 0 {
		cfg["chat_template"] = chatConfigValue(t.chat)
	}
	name := func(id int) string {
		if t.model == WordPiece {
			return fromPhantom(t.tokens[id])
		}
		return t.tokens[id]
	}
	for _, sk := range specialKinds {
		id := *t.specialID(sk.kind)
		if id >= 0 && id < len(t.tokens) {
			cfg[sk.kind+"_token"] = name(id)
			stm[sk.kind+"_token"] = name(id)
		}
	}
	switch {
	case t.model == BPE && t.hunyuanLayout():
		// Hunyuan's own class reads hy.tiktoken (its module,
		// tokenization_hy.py, comes with the published checkpoints).
		files[hunyuanFile] = t.hunyuanRanks()
		cfg["tokenizer_class"] = "HYTokenizer"
		cfg["auto_map"] = map[string]any{"AutoTokenizer": []any{"tokenization_hy.HYTokenizer", nil}}
	case t.model == BPE:
		if t.pre != "gpt-2" && t.pre != "" && t.pre != "default" {
			return nil, tensor.Unsupported("tokenizer: cannot write vocab.json/merges.txt for pre-tokenizer %q: GPT2Tokenizer only knows GPT-2's split", t.pre)
		}
		var b bytes.Buffer
		b.WriteByte('{')
		for i, tok := range t.tokens {
			if i > 0 {
				b.WriteByte(',')
			}
			k, _ := json.Marshal(tok)
			b.Write(k)
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(i))
		}
		b.WriteString("}\n")
		files["vocab.json"] = b.Bytes()
		files["merges.txt"] = []byte("#version: 0.2\n" + strings.Join(t.merges, "\n") + "\n")
		cfg["tokenizer_class"] = "GPT2Tokenizer"
		cfg["add_bos_token"] = t.AddBOS
		cfg["add_prefix_space"] = false
	case t.model == SPM, t.model == Unigram:
		files["tokenizer.model"] = t.encodeSentencePiece()
		if t.model == SPM {
			cfg["tokenizer_class"] = "LlamaTokenizer"
			cfg["legacy"] = false
		} else {
			cfg["tokenizer_class"] = "T5Tokenizer"
		}
		cfg["add_bos_token"] = t.AddBOS
		cfg["add_eos_token"] = t.AddEOS
	case t.model == WordPiece:
		var b strings.Builder
		for _, tok := range t.tokens {
			b.WriteString(fromPhantom(tok))
			b.WriteByte('\n')
		}
		files["vocab.txt"] = []byte(b.String())
		cfg["tokenizer_class"] = "BertTokenizer"
		cfg["do_lower_case"] = true
		if t.CLS >= 0 {
			cfg["cls_token"] = name(t.CLS)
			stm["cls_token"] = name(t.CLS)
		}
		delete(cfg, "bos_token")
		delete(stm, "bos_token")
	case t.model == RWKV:
		files[rwkvVocabFile] = t.rwkvVocab()
	}
	var err error
	if files["tokenizer_config.json"], err = json.MarshalIndent(cfg, "", "  "); err != nil {
		return nil, err
	}
	if files["special_tokens_map.json"], err = json.MarshalIndent(stm, "", "  "); err != nil {
		return nil, err
	}
	return files, nil
}

// hunyuanLayout reports whether t is Hunyuan's tiktoken vocabulary as its
// class lays it out (pre-tokenizer hunyuan, the ranks up to 127957, then
// its 210 special tokens).
func (t *Tokenizer) hunyuanLayout() bool {
	specials := hunyuanSpecials()
	if t.pre != "hunyuan" || len(t.tokens) != hunyuanSpecialStart+len(specials) {
		return false
	}
	for i, s := range specials {
		if t.tokens[hunyuanSpecialStart+i] != s {
			return false
		}
	}
	return true
}

// hunyuanRanks is hy.tiktoken for t (hunyuanLayout): each rank's bytes in
// base64 and its id, in id order.
func (t *Tokenizer) hunyuanRanks() []byte {
	var b bytes.Buffer
	for i, tok := range t.tokens[:hunyuanSpecialStart] {
		b.WriteString(base64.StdEncoding.EncodeToString([]byte(byteDecode(tok))))
		b.WriteByte(' ')
		b.WriteString(strconv.Itoa(i))
		b.WriteByte('\n')
	}
	return b.Bytes()
}
