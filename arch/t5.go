package arch

import (
	"strconv"

	"github.com/tfconv/tfconv/tensor"
)

// T5 is Google's T5 encoder-decoder (T5ForConditionalGeneration) as
// llama.cpp's T5Model converts it: relative position buckets (only block 0
// of each stack holds relative_attention_bias), RMS layer norms without
// bias, a ReLU (wi) or gated (wi_0 gate, wi_1 up) feed-forward, and the
// tensors split into enc.* and dec.*.
//
// Tied: T5 stores its embedding as shared.weight, and some checkpoints again
// as encoder.embed_tokens.weight / decoder.embed_tokens.weight; the converter
// keeps the first of them it meets as token_embd and skips the others.
// lm_head.weight, when present, is output.weight.
//
// There is no llama.cpp-made T5 fixture (its converter needs the protobuf
// form of the SentencePiece model, which the tools here lack): this follows
// convert_hf_to_gguf.py's T5Model and gguf-py's tensor_mapping.py, and the
// tests check the round trip and that the GGUF runs to transformers'
// logits.
var T5 = register(&Family{
	Name:       "t5",
	HFClasses:  []string{"T5ForConditionalGeneration", "T5WithLMHeadModel"},
	ModelTypes: []string{"t5"},
	HFClass:    "T5ForConditionalGeneration", ModelType: "t5",
	HeadKeys:  []string{"num_heads"},
	LayerKeys: []string{"num_layers"},
	Params: []Param{
		{Key: "context_length", HF: []string{"n_positions"}, Kind: tensor.KindUint32, Need: Default, Default: 512},
		u32("embedding_length", Required, "d_model"),
		u32("feed_forward_length", Required, "d_ff"),
		u32("block_count", Required, "num_layers"),
		u32("attention.head_count", Required, "num_heads"),
		u32("attention.key_length", Required, "d_kv"),
		{Key: "attention.value_length", HF: []string{"d_kv"}, Kind: tensor.KindUint32, Need: Required,
			Inverse: func(Config, tensor.Value, Meta) {}},
		f32p("attention.layer_norm_epsilon", Required, "layer_norm_epsilon"),
		u32("attention.relative_buckets_count", Required, "relative_attention_num_buckets"),
		{Key: "attention.layer_norm_rms_epsilon", HF: []string{"layer_norm_epsilon"}, Kind: tensor.KindFloat32, Need: Required,
			Inverse: func(Config, tensor.Value, Meta) {}},
		u32("decoder_start_token_id", Required, "decoder_start_token_id"),
		{Key: FileType},
	},
	Tensors: t5Tensors(),
	// Not in a GGUF: transformers' defaults, which llama.cpp assumes too.
	HFConst:  map[string]any{"is_encoder_decoder": true, "relative_attention_max_distance": int64(128), "pad_token_id": int64(0), "eos_token_id": int64(1), "feed_forward_proj": "relu"},
	HFRename: t5HFNames,
	Graph:    Graph{Norm: RMSNorm, EncoderDecoder: true},
})

// t5Tensors is the schema; the layer tensors are optional (the decoder may
// have another depth than the encoder, and only block 0 has the relative
// position bias), so a missing one is found when the model loads.
func t5Tensors() []Tensor {
	d := []Dim{DimHidden}
	ts := []Tensor{
		{GGUF: "token_embd", HF: []string{"shared", "encoder.embed_tokens", "decoder.embed_tokens"}, Shape: []Dim{DimVocab, DimHidden}, Aliases: true},
		{GGUF: "output", HF: []string{"lm_head"}, Shape: []Dim{DimVocab, DimHidden}, Optional: true},
		{GGUF: "enc.output_norm", HF: []string{"encoder.final_layer_norm"}, Shape: d},
		{GGUF: "dec.output_norm", HF: []string{"decoder.final_layer_norm"}, Shape: d},
	}
	for _, st := range []struct{ gguf, hf, ffn string }{{"enc", "encoder", "1"}, {"dec", "decoder", "2"}} {
		b, h := st.gguf+".blk.{bid}.", st.hf+".block.{bid}.layer."
		opt := func(t Tensor) Tensor { t.Optional = true; return t }
		ts = append(ts,
			opt(Tensor{GGUF: b + "attn_norm", HF: []string{h + "0.layer_norm"}, Shape: d}),
			opt(Tensor{GGUF: b + "attn_rel_b", HF: []string{h + "0.SelfAttention.relative_attention_bias"}}),
			opt(Tensor{GGUF: b + "ffn_norm", HF: []string{h + st.ffn + ".layer_norm"}, Shape: d}),
			opt(Tensor{GGUF: b + "ffn_up", HF: []string{h + st.ffn + ".DenseReluDense.wi", h + st.ffn + ".DenseReluDense.wi_1"}, Shape: []Dim{DimFFN, DimHidden}}),
			opt(Tensor{GGUF: b + "ffn_gate", HF: []string{h + st.ffn + ".DenseReluDense.wi_0"}, Shape: []Dim{DimFFN, DimHidden}}),
			opt(Tensor{GGUF: b + "ffn_down", HF: []string{h + st.ffn + ".DenseReluDense.wo"}, Shape: []Dim{DimHidden, DimFFN}}),
		)
		for _, p := range []string{"q", "k", "v", "o"} {
			ts = append(ts, opt(Tensor{GGUF: b + "attn_" + p, HF: []string{h + "0.SelfAttention." + p}}))
		}
		if st.gguf == "dec" {
			ts = append(ts, opt(Tensor{GGUF: b + "cross_attn_norm", HF: []string{h + "1.layer_norm"}, Shape: d}))
			for _, p := range []string{"q", "k", "v", "o"} {
				ts = append(ts, opt(Tensor{GGUF: b + "cross_attn_" + p, HF: []string{h + "1.EncDecAttention." + p}}))
			}
		}
	}
	return ts
}

// t5HFNames states on GGUF → HF what the tensors say: the decoder's depth,
// and a gated feed-forward (ffn_gate present), whose up projection is wi_1.
func t5HFNames(c Config, has func(gguf string) bool) map[string]string {
	n := 0
	for has("dec.blk." + strconv.Itoa(n) + ".attn_q.weight") {
		n++
	}
	c["num_decoder_layers"] = int64(n)
	if !has("enc.blk.0.ffn_gate.weight") {
		return nil
	}
	c["feed_forward_proj"] = "gated-gelu"
	c["is_gated_act"] = true
	return map[string]string{
		"enc.blk.{bid}.ffn_up": "encoder.block.{bid}.layer.1.DenseReluDense.wi_1",
		"dec.blk.{bid}.ffn_up": "decoder.block.{bid}.layer.2.DenseReluDense.wi_1",
	}
}
