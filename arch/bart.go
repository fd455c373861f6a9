package arch

// BART and Marian are transformers' post-LayerNorm encoder-decoders
// (BartForConditionalGeneration, MarianMTModel): llama.cpp has no
// architecture for them, so they have no GGUF form (NoGGUF) and their roles
// carry names of the GGUF style only so that the one schema serves the
// model loader; nothing is written under them. Marian is BART's stack with
// sinusoidal positions (no position tables) and no embedding norms.

// seq2seqTensors is the BART/Marian schema; positions: BART's learned
// tables (Marian computes its own).
func seq2seqTensors(positions bool) []Tensor {
	d := []Dim{DimHidden}
	opt := func(t Tensor) Tensor { t.Optional = true; return t }
	ts := []Tensor{
		{GGUF: "token_embd", HF: []string{"model.shared"}, Shape: []Dim{DimVocab, DimHidden}},
		opt(Tensor{GGUF: "output", HF: []string{"lm_head"}, Shape: []Dim{DimVocab, DimHidden}}),
	}
	for _, st := range []struct{ gguf, hf string }{{"enc", "model.encoder"}, {"dec", "model.decoder"}} {
		b, h := st.gguf+".blk.{bid}.", st.hf+".layers.{bid}."
		ts = append(ts,
			opt(Tensor{GGUF: st.gguf + ".token_embd_norm", HF: []string{st.hf + ".layernorm_embedding"}, Shape: d}),
			opt(Tensor{GGUF: st.gguf + ".output_norm", HF: []string{st.hf + ".layer_norm"}, Shape: d}),
			opt(Tensor{GGUF: b + "attn_q", HF: []string{h + "self_attn.q_proj"}, Shape: []Dim{DimQ, DimHidden}}),
			opt(Tensor{GGUF: b + "attn_k", HF: []string{h + "self_attn.k_proj"}, Shape: []Dim{DimKV, DimHidden}}),
			opt(Tensor{GGUF: b + "attn_v", HF: []string{h + "self_attn.v_proj"}, Shape: []Dim{DimKV, DimHidden}}),
			opt(Tensor{GGUF: b + "attn_output", HF: []string{h + "self_attn.out_proj"}, Shape: []Dim{DimHidden, DimQ}}),
			opt(Tensor{GGUF: b + "attn_norm", HF: []string{h + "self_attn_layer_norm"}, Shape: d}),
			opt(Tensor{GGUF: b + "ffn_up", HF: []string{h + "fc1"}, Shape: []Dim{DimFFN, DimHidden}}),
			opt(Tensor{GGUF: b + "ffn_down", HF: []string{h + "fc2"}, Shape: []Dim{DimHidden, DimFFN}}),
			opt(Tensor{GGUF: b + "ffn_norm", HF: []string{h + "final_layer_norm"}, Shape: d}),
		)
		if positions {
			ts = append(ts, Tensor{GGUF: st.gguf + ".position_embd", HF: []string{st.hf + ".embed_positions"}, Shape: []Dim{DimContext, DimHidden}})
		}
		if st.gguf == "dec" {
			ts = append(ts,
				opt(Tensor{GGUF: b + "cross_attn_q", HF: []string{h + "encoder_attn.q_proj"}, Shape: []Dim{DimQ, DimHidden}}),
				opt(Tensor{GGUF: b + "cross_attn_k", HF: []string{h + "encoder_attn.k_proj"}, Shape: []Dim{DimKV, DimHidden}}),
				opt(Tensor{GGUF: b + "cross_attn_v", HF: []string{h + "encoder_attn.v_proj"}, Shape: []Dim{DimKV, DimHidden}}),
				opt(Tensor{GGUF: b + "cross_attn_o", HF: []string{h + "encoder_attn.out_proj"}, Shape: []Dim{DimHidden, DimQ}}),
				opt(Tensor{GGUF: b + "cross_attn_norm", HF: []string{h + "encoder_attn_layer_norm"}, Shape: d}),
			)
		}
	}
	return ts
}

// BART is BartForConditionalGeneration.
var BART = register(&Family{
	Name:       "bart",
	HFClasses:  []string{"BartForConditionalGeneration", "BartModel"},
	ModelTypes: []string{"bart"},
	HFClass:    "BartForConditionalGeneration", ModelType: "bart",
	NoGGUF:  "llama.cpp has no BART architecture, so a GGUF of it would load nowhere",
	Tensors: seq2seqTensors(true),
	Graph:   Graph{Norm: LayerNorm, FFN: Plain, LearnedPositions: true, EncoderDecoder: true},
})

// Marian is MarianMTModel.
var Marian = register(&Family{
	Name:       "marian",
	HFClasses:  []string{"MarianMTModel"},
	ModelTypes: []string{"marian"},
	HFClass:    "MarianMTModel", ModelType: "marian",
	NoGGUF:  "llama.cpp has no Marian architecture (sinusoidal positions, post-LN encoder-decoder), so a GGUF of it would load nowhere",
	Tensors: seq2seqTensors(false),
	Graph:   Graph{Norm: LayerNorm, FFN: Plain, EncoderDecoder: true},
})
