package convert

import (
	"fmt"
	"strings"

	"github.com/tfconv/tfconv/tensor"
)

// bert is the BERT encoder (BertModel, and the encoder of BertForMaskedLM
// and friends, whose names carry a "bert." prefix). llama.cpp runs BERT as
// an embedding model: post-LayerNorm blocks, absolute positions, token-type
// embeddings, bidirectional attention (bert.attention.causal = false).
//
// Renames: .gamma/.beta (old TF-converted checkpoints) become
// .weight/.bias. Dropped: the pooler (llama.cpp only produces token
// embeddings), the pre-training heads cls.predictions.* and
// cls.seq_relationship.*, and the embeddings.position_ids buffer. A GGUF
// has no pooler, so ToHF writes a BertModel without one: transformers
// initialises pooler.dense randomly and says so; last_hidden_state, what
// llama.cpp computes, is unaffected.
type bert struct{}

func init() { register(bert{}) }

func (bert) Name() string         { return "bert" }
func (bert) ModelTypes() []string { return []string{"bert"} }

var bertNames = nameTable{
	{"embeddings.word_embeddings", "token_embd"},
	{"embeddings.token_type_embeddings", "token_types"},
	{"embeddings.position_embeddings", "position_embd"},
	{"embeddings.LayerNorm", "token_embd_norm"},
	{"encoder.layer.{bid}.attention.self.query", "blk.{bid}.attn_q"},
	{"encoder.layer.{bid}.attention.self.key", "blk.{bid}.attn_k"},
	{"encoder.layer.{bid}.attention.self.value", "blk.{bid}.attn_v"},
	{"encoder.layer.{bid}.attention.output.dense", "blk.{bid}.attn_output"},
	{"encoder.layer.{bid}.attention.output.LayerNorm", "blk.{bid}.attn_output_norm"},
	{"encoder.layer.{bid}.intermediate.dense", "blk.{bid}.ffn_up"},
	{"encoder.layer.{bid}.output.dense", "blk.{bid}.ffn_down"},
	{"encoder.layer.{bid}.output.LayerNorm", "blk.{bid}.layer_output_norm"},
}

func (bert) names() nameTable { return bertNames }

// bertHFName normalises a BERT checkpoint name: no "bert." prefix, .gamma
// and .beta as .weight and .bias.
func bertHFName(name string) string {
	name = strings.TrimPrefix(name, "bert.")
	if s, ok := strings.CutSuffix(name, ".gamma"); ok {
		name = s + ".weight"
	} else if s, ok := strings.CutSuffix(name, ".beta"); ok {
		name = s + ".bias"
	}
	return name
}

func bertDrop(name string) string {
	n := bertHFName(name)
	switch {
	case n == "embeddings.position_ids":
		return "position-id buffer (0..n-1), not a weight"
	case strings.HasPrefix(n, "pooler."):
		return "pooler: llama.cpp's BERT outputs token embeddings and has no pooler layer"
	case strings.HasPrefix(name, "cls.predictions."), strings.HasPrefix(name, "cls.seq_relationship."):
		return "pre-training head, not part of the encoder llama.cpp runs"
	}
	return ""
}

func (bert) ToGGUF(cfg Config, in []tensor.Info) ([]Mapping, []Dropped, error) {
	norm := make([]tensor.Info, len(in))
	for i, t := range in {
		norm[i] = t
		norm[i].Name = bertHFName(t.Name)
	}
	out, dropped, err := mapTable(bertNames, norm, true, bertDrop)
	if err != nil {
		return nil, nil, err
	}
	// Report the checkpoint's own names.
	for i := range out {
		for j := range norm {
			if norm[j].Name == out[i].Source {
				out[i].Source = in[j].Name
				break
			}
		}
	}
	for i := range dropped {
		for j := range norm {
			if norm[j].Name == dropped[i].Name {
				dropped[i].Name = in[j].Name
				break
			}
		}
	}
	n, _ := cfg.Int("num_hidden_layers")
	if err := requireTensors(out, append([]string{"token_embd.weight", "position_embd.weight", "token_embd_norm.weight"},
		layerTensors(int(n), "blk.{bid}.attn_q.weight", "blk.{bid}.attn_k.weight", "blk.{bid}.attn_v.weight",
			"blk.{bid}.attn_output.weight", "blk.{bid}.attn_output_norm.weight", "blk.{bid}.ffn_up.weight",
			"blk.{bid}.ffn_down.weight", "blk.{bid}.layer_output_norm.weight")...)...); err != nil {
		return nil, nil, err
	}
	return out, dropped, nil
}

func (bert) GGUFMetadata(cfg Config, fileType uint32) (tensor.Metadata, error) {
	var md tensor.Metadata
	set := func(k string, v tensor.Value) { md = append(md, tensor.KV{Key: "bert." + k, Value: v}) }
	for _, k := range []struct{ key, gguf string }{
		{"num_hidden_layers", "block_count"},
		{"max_position_embeddings", "context_length"},
		{"hidden_size", "embedding_length"},
		{"intermediate_size", "feed_forward_length"},
		{"num_attention_heads", "attention.head_count"},
	} {
		v, err := requireInt(cfg, k.key)
		if err != nil {
			return nil, err
		}
		set(k.gguf, tensor.Uint32(v))
	}
	eps, err := requireFloat(cfg, "layer_norm_eps")
	if err != nil {
		return nil, err
	}
	set("attention.layer_norm_epsilon", tensor.Float32(eps))
	md = append(md, tensor.KV{Key: keyFileType, Value: tensor.Uint32(fileType)})
	set("attention.causal", tensor.Bool(false))
	return md, nil
}

func (bert) ToHF(md tensor.Metadata, in []tensor.Info) ([]Mapping, []Dropped, error) {
	return mapTable(bertNames, in, false, func(string) string { return "" })
}

func (bert) HFConfig(md tensor.Metadata, in []tensor.Info) (Config, error) {
	c := Config{"architectures": []string{"BertModel"}, "model_type": "bert", "hidden_act": "gelu",
		"position_embedding_type": "absolute"}
	for _, k := range []struct{ gguf, key string }{
		{"block_count", "num_hidden_layers"},
		{"context_length", "max_position_embeddings"},
		{"embedding_length", "hidden_size"},
		{"feed_forward_length", "intermediate_size"},
		{"attention.head_count", "num_attention_heads"},
	} {
		v, err := mdUint(md, "bert."+k.gguf)
		if err != nil {
			return nil, err
		}
		c[k.key] = v
	}
	eps, ok := mdFloat(md, "bert.attention.layer_norm_epsilon")
	if !ok {
		return nil, fmt.Errorf("convert: GGUF metadata has no bert.attention.layer_norm_epsilon")
	}
	c["layer_norm_eps"] = f32(eps)
	byName := infoByName(in)
	emb, ok := byName["token_embd.weight"]
	if !ok || len(emb.Shape) != 2 {
		return nil, fmt.Errorf("convert: missing tensor %q", "token_embd.weight")
	}
	c["vocab_size"] = emb.Shape[0]
	c["type_vocab_size"] = int64(2)
	if tt, ok := byName["token_types.weight"]; ok && len(tt.Shape) == 2 {
		c["type_vocab_size"] = tt.Shape[0]
	}
	addSpecialIDs(c, md)
	// llama.cpp's converter reads BERT's special tokens from config.json
	// when there is no tokenizer.json (gguf-py SpecialVocab), so they go
	// there; BERT's BOS is its [CLS].
	for _, k := range []struct{ gguf, key string }{
		{"tokenizer.ggml.unknown_token_id", "unk_token_id"},
		{"tokenizer.ggml.seperator_token_id", "sep_token_id"},
		{"tokenizer.ggml.mask_token_id", "mask_token_id"},
		{"tokenizer.ggml.bos_token_id", "cls_token_id"},
	} {
		if v, ok := md.Int(k.gguf); ok {
			c[k.key] = v
		}
	}
	if _, ok := c["pad_token_id"]; !ok {
		c["pad_token_id"] = int64(0)
	}
	return c, nil
}
