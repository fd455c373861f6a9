package arch

import "github.com/tfconv/tfconv/tensor"

// BERT as transformers stores it (BertModel; BertFor* heads add a "bert."
// prefix; old TF-converted checkpoints name LayerNorm weights .gamma and
// .beta). llama.cpp runs it as an embedding model: post-LayerNorm blocks,
// absolute positions, token-type embeddings, bidirectional attention
// (bert.attention.causal = false). Dropped: the pooler (llama.cpp outputs
// token embeddings), the pre-training heads and the position-id buffer; a
// GGUF has no pooler, so GGUF → HF writes a BertModel without one.
var BERT = register(&Family{
	Name:       "bert",
	HFClasses:  []string{"BertModel", "BertForMaskedLM", "CamembertModel"},
	ModelTypes: []string{"bert"},
	HFClass:    "BertModel", ModelType: "bert",
	Params: []Param{
		u32("block_count", Required, "num_hidden_layers"),
		u32("context_length", Required, "max_position_embeddings"),
		u32("embedding_length", Required, "hidden_size"),
		u32("feed_forward_length", Required, "intermediate_size"),
		u32("attention.head_count", Required, "num_attention_heads"),
		f32p("attention.layer_norm_epsilon", Required, "layer_norm_eps"),
		{Key: FileType},
		{Key: "attention.causal", Kind: tensor.KindBool,
			Derive:  func(Config) (tensor.Value, bool, error) { return tensor.Bool(false), true, nil },
			Inverse: func(Config, tensor.Value, Meta) {}},
	},
	Tensors: withPrefix("bert.", []Tensor{
		{GGUF: "token_embd", HF: []string{"embeddings.word_embeddings"}, Shape: []Dim{DimVocab, DimHidden}},
		{GGUF: "token_types", HF: []string{"embeddings.token_type_embeddings"}, Shape: []Dim{DimTypes, DimHidden}, Optional: true},
		{GGUF: "position_embd", HF: []string{"embeddings.position_embeddings"}, Shape: []Dim{DimContext, DimHidden}},
		{GGUF: "token_embd_norm", HF: []string{"embeddings.LayerNorm"}, Shape: []Dim{DimHidden}},
		{GGUF: "blk.{bid}.attn_q", HF: []string{"encoder.layer.{bid}.attention.self.query"}, Shape: []Dim{DimQ, DimHidden}},
		{GGUF: "blk.{bid}.attn_k", HF: []string{"encoder.layer.{bid}.attention.self.key"}, Shape: []Dim{DimKV, DimHidden}},
		{GGUF: "blk.{bid}.attn_v", HF: []string{"encoder.layer.{bid}.attention.self.value"}, Shape: []Dim{DimKV, DimHidden}},
		{GGUF: "blk.{bid}.attn_output", HF: []string{"encoder.layer.{bid}.attention.output.dense"}, Shape: []Dim{DimHidden, DimQ}},
		{GGUF: "blk.{bid}.attn_output_norm", HF: []string{"encoder.layer.{bid}.attention.output.LayerNorm"}, Shape: []Dim{DimHidden}},
		{GGUF: "blk.{bid}.ffn_up", HF: []string{"encoder.layer.{bid}.intermediate.dense"}, Shape: []Dim{DimFFN, DimHidden}},
		{GGUF: "blk.{bid}.ffn_down", HF: []string{"encoder.layer.{bid}.output.dense"}, Shape: []Dim{DimHidden, DimFFN}},
		{GGUF: "blk.{bid}.layer_output_norm", HF: []string{"encoder.layer.{bid}.output.LayerNorm"}, Shape: []Dim{DimHidden}},
	}, false),
	HFWarning:     "GGUF BERT has no pooler: transformers will initialise pooler.dense randomly (last_hidden_state is unaffected)",
	SuffixAliases: map[string]string{".gamma": ".weight", ".beta": ".bias"},
	Drops: []Drop{
		{Name: "embeddings.position_ids", Reason: "position-id buffer (0..n-1), not a weight"},
		{Name: "bert.embeddings.position_ids", Reason: "position-id buffer (0..n-1), not a weight"},
		{Prefix: "pooler.", Reason: "pooler: llama.cpp's BERT outputs token embeddings and has no pooler layer"},
		{Prefix: "bert.pooler.", Reason: "pooler: llama.cpp's BERT outputs token embeddings and has no pooler layer"},
		{Prefix: "cls.predictions.", Reason: "pre-training head, not part of the encoder llama.cpp runs"},
		{Prefix: "cls.seq_relationship.", Reason: "pre-training head, not part of the encoder llama.cpp runs"},
	},
	ShapeKeys: []ShapeKey{{Key: "type_vocab_size", Tensor: "token_types.weight", Axis: 0, Default: 2}},
	// llama.cpp's converter reads BERT's special tokens from config.json
	// when there is no tokenizer.json (gguf-py SpecialVocab), so GGUF → HF
	// writes them there; BERT's BOS is its [CLS].
	SpecialConfig: []SpecialKey{
		{GGUF: "tokenizer.ggml.unknown_token_id", Key: "unk_token_id"},
		{GGUF: "tokenizer.ggml.seperator_token_id", Key: "sep_token_id"},
		{GGUF: "tokenizer.ggml.mask_token_id", Key: "mask_token_id"},
		{GGUF: "tokenizer.ggml.bos_token_id", Key: "cls_token_id"},
	},
	HFConst: map[string]any{"hidden_act": "gelu", "position_embedding_type": "absolute", "pad_token_id": int64(0)},
	Graph:   Graph{Norm: LayerNorm, FFN: Plain, Activation: "gelu", LearnedPositions: true, EncoderOnly: true},
})

// withPrefix adds to every tensor the HF pattern with prefix (BertFor*
// heads' "bert.") as an alternative; first puts it first, so GGUF → HF
// writes it (the class written to config.json uses the prefix).
func withPrefix(prefix string, ts []Tensor, first bool) []Tensor {
	for i := range ts {
		var alt []string
		for _, h := range ts[i].HF {
			alt = append(alt, prefix+h)
		}
		if first {
			ts[i].HF = append(alt, ts[i].HF...)
		} else {
			ts[i].HF = append(ts[i].HF, alt...)
		}
	}
	return ts
}
