package convert

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tfconv/tfconv/tensor"
)

// t5 is Google's T5 encoder-decoder (T5ForConditionalGeneration) as
// llama.cpp's T5Model converts it: relative position buckets (only block 0
// of each stack holds relative_attention_bias), RMS layer norms without
// bias, ReLU (wi) or gated (wi_0, wi_1) feed-forward, tensors split into
// enc.* and dec.*.
//
// Tied: T5 stores its embedding as shared.weight, and some checkpoints also
// as encoder.embed_tokens.weight / decoder.embed_tokens.weight; llama.cpp
// keeps the first of the three it meets as token_embd and skips the rest
// (the tie). lm_head.weight, when the checkpoint has it, is output.weight;
// without it llama.cpp reuses token_embd.
//
// There is no llama.cpp-made T5 fixture, so this mapping follows
// convert_hf_to_gguf.py's T5Model and gguf-py's tensor_mapping.py; the
// tests check that it round-trips transformers' checkpoint bit for bit.
type t5 struct{}

func init() { register(t5{}) }

func (t5) Name() string         { return "t5" }
func (t5) ModelTypes() []string { return []string{"t5"} }

var t5Names = func() nameTable {
	t := nameTable{
		{"shared", "token_embd"},
		{"lm_head", "output"},
		{"encoder.final_layer_norm", "enc.output_norm"},
		{"decoder.final_layer_norm", "dec.output_norm"},
		{"encoder.block.{bid}.layer.0.layer_norm", "enc.blk.{bid}.attn_norm"},
		{"encoder.block.{bid}.layer.0.SelfAttention.relative_attention_bias", "enc.blk.{bid}.attn_rel_b"},
		{"encoder.block.{bid}.layer.1.layer_norm", "enc.blk.{bid}.ffn_norm"},
		{"encoder.block.{bid}.layer.1.DenseReluDense.wi", "enc.blk.{bid}.ffn_up"},
		{"encoder.block.{bid}.layer.1.DenseReluDense.wi_0", "enc.blk.{bid}.ffn_gate"},
		{"encoder.block.{bid}.layer.1.DenseReluDense.wi_1", "enc.blk.{bid}.ffn_up"},
		{"encoder.block.{bid}.layer.1.DenseReluDense.wo", "enc.blk.{bid}.ffn_down"},
		{"decoder.block.{bid}.layer.0.layer_norm", "dec.blk.{bid}.attn_norm"},
		{"decoder.block.{bid}.layer.0.SelfAttention.relative_attention_bias", "dec.blk.{bid}.attn_rel_b"},
		{"decoder.block.{bid}.layer.1.layer_norm", "dec.blk.{bid}.cross_attn_norm"},
		{"decoder.block.{bid}.layer.2.layer_norm", "dec.blk.{bid}.ffn_norm"},
		{"decoder.block.{bid}.layer.2.DenseReluDense.wi", "dec.blk.{bid}.ffn_up"},
		{"decoder.block.{bid}.layer.2.DenseReluDense.wi_0", "dec.blk.{bid}.ffn_gate"},
		{"decoder.block.{bid}.layer.2.DenseReluDense.wi_1", "dec.blk.{bid}.ffn_up"},
		{"decoder.block.{bid}.layer.2.DenseReluDense.wo", "dec.blk.{bid}.ffn_down"},
	}
	for _, p := range []string{"q", "k", "v", "o"} {
		t = append(t,
			struct{ hf, gguf string }{"encoder.block.{bid}.layer.0.SelfAttention." + p, "enc.blk.{bid}.attn_" + p},
			struct{ hf, gguf string }{"decoder.block.{bid}.layer.0.SelfAttention." + p, "dec.blk.{bid}.attn_" + p},
			struct{ hf, gguf string }{"decoder.block.{bid}.layer.1.EncDecAttention." + p, "dec.blk.{bid}.cross_attn_" + p})
	}
	return t
}()

func (t5) names() nameTable { return t5Names }

// t5Gated reports whether the checkpoint uses the gated feed-forward, where
// ffn_up comes from wi_1 and HFName must say so.
func t5Gated(in []tensor.Info) bool {
	for _, t := range in {
		if strings.Contains(t.Name, ".ffn_gate.") || strings.Contains(t.Name, ".wi_0.") {
			return true
		}
	}
	return false
}

func (t5) ToGGUF(cfg Config, in []tensor.Info) ([]Mapping, []Dropped, error) {
	// The first embedding copy met is the token embedding; the others are
	// the same tensor saved again (tied).
	var embed string
	var renamed []tensor.Info
	orig := map[string]string{}
	for _, t := range in {
		switch t.Name {
		case "shared.weight", "encoder.embed_tokens.weight", "decoder.embed_tokens.weight":
			if embed == "" {
				embed = t.Name
				orig["shared.weight"] = t.Name
				t.Name = "shared.weight"
			}
		}
		renamed = append(renamed, t)
	}
	out, dropped, err := mapTable(t5Names, renamed, true, func(name string) string {
		switch name {
		case "encoder.embed_tokens.weight", "decoder.embed_tokens.weight":
			return "tied copy of the shared token embedding (" + embed + " is used)"
		}
		return ""
	})
	if err != nil {
		return nil, nil, err
	}
	for i := range out {
		if o, ok := orig[out[i].Source]; ok {
			out[i].Source = o
		}
	}
	n, _ := cfg.Int("num_layers")
	if err := requireTensors(out, append([]string{"token_embd.weight", "enc.output_norm.weight", "dec.output_norm.weight"},
		layerTensors(int(n), "enc.blk.{bid}.attn_q.weight", "enc.blk.{bid}.attn_o.weight", "enc.blk.{bid}.ffn_down.weight")...)...); err != nil {
		return nil, nil, err
	}
	return out, dropped, nil
}

func (t5) GGUFMetadata(cfg Config, fileType uint32) (tensor.Metadata, error) {
	var md tensor.Metadata
	set := func(k string, v tensor.Value) { md = append(md, tensor.KV{Key: "t5." + k, Value: v}) }
	ctx, ok := cfg.Int("n_positions")
	if !ok {
		ctx = 512 // convert_hf_to_gguf.py's assumption
	}
	set("context_length", tensor.Uint32(uint32(ctx)))
	for _, k := range []struct{ key, gguf string }{
		{"d_model", "embedding_length"},
		{"d_ff", "feed_forward_length"},
		{"num_layers", "block_count"},
		{"num_heads", "attention.head_count"},
		{"d_kv", "attention.key_length"},
		{"d_kv", "attention.value_length"},
	} {
		v, err := requireInt(cfg, k.key)
		if err != nil {
			return nil, err
		}
		set(k.gguf, tensor.Uint32(v))
	}
	eps, err := requireFloat(cfg, "layer_norm_epsilon")
	if err != nil {
		return nil, err
	}
	set("attention.layer_norm_epsilon", tensor.Float32(eps))
	buckets, err := requireInt(cfg, "relative_attention_num_buckets")
	if err != nil {
		return nil, err
	}
	set("attention.relative_buckets_count", tensor.Uint32(buckets))
	set("attention.layer_norm_rms_epsilon", tensor.Float32(eps))
	start, err := requireInt(cfg, "decoder_start_token_id")
	if err != nil {
		return nil, err
	}
	set("decoder_start_token_id", tensor.Uint32(start))
	md = append(md, tensor.KV{Key: keyFileType, Value: tensor.Uint32(fileType)})
	return md, nil
}

func (t5) ToHF(md tensor.Metadata, in []tensor.Info) ([]Mapping, []Dropped, error) {
	out, dropped, err := mapTable(t5Names, in, false, func(string) string { return "" })
	if err != nil {
		return nil, nil, err
	}
	if t5Gated(in) {
		for i := range out {
			if strings.HasSuffix(out[i].Name, ".DenseReluDense.wi.weight") {
				out[i].Name = strings.TrimSuffix(out[i].Name, ".wi.weight") + ".wi_1.weight"
			}
		}
	}
	return out, dropped, nil
}

func (t5) HFConfig(md tensor.Metadata, in []tensor.Info) (Config, error) {
	c := Config{"architectures": []string{"T5ForConditionalGeneration"}, "model_type": "t5", "is_encoder_decoder": true,
		// Not in GGUF; transformers' default, which llama.cpp also assumes.
		"relative_attention_max_distance": int64(128),
		"pad_token_id":                    int64(0), "eos_token_id": int64(1)}
	for _, k := range []struct{ gguf, key string }{
		{"context_length", "n_positions"},
		{"embedding_length", "d_model"},
		{"feed_forward_length", "d_ff"},
		{"block_count", "num_layers"},
		{"attention.head_count", "num_heads"},
		{"attention.key_length", "d_kv"},
		{"attention.relative_buckets_count", "relative_attention_num_buckets"},
		{"decoder_start_token_id", "decoder_start_token_id"},
	} {
		v, err := mdUint(md, "t5."+k.gguf)
		if err != nil {
			return nil, err
		}
		c[k.key] = v
	}
	eps, ok := mdFloat(md, "t5.attention.layer_norm_epsilon")
	if !ok {
		return nil, fmt.Errorf("convert: GGUF metadata has no t5.attention.layer_norm_epsilon")
	}
	c["layer_norm_epsilon"] = f32(eps)
	byName := infoByName(in)
	emb, ok := byName["token_embd.weight"]
	if !ok || len(emb.Shape) != 2 {
		return nil, fmt.Errorf("convert: missing tensor %q", "token_embd.weight")
	}
	c["vocab_size"] = emb.Shape[0]
	_, hasOutput := byName["output.weight"]
	c["tie_word_embeddings"] = !hasOutput
	dec := int64(0)
	for _, t := range in {
		if rest, ok := strings.CutPrefix(t.Name, "dec.blk."); ok {
			if b, err := strconv.Atoi(rest[:strings.IndexByte(rest+".", '.')]); err == nil && int64(b)+1 > dec {
				dec = int64(b) + 1
			}
		}
	}
	c["num_decoder_layers"] = dec
	c["feed_forward_proj"] = "relu"
	if t5Gated(in) {
		c["feed_forward_proj"] = "gated-gelu"
		c["is_gated_act"] = true
	}
	addSpecialIDs(c, md)
	return c, nil
}
