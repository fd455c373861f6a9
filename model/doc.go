// Package model is tfconv's reference transformer: it runs any checkpoint
// tfconv reads, in the precision it is stored in, and computes what the
// original framework (Hugging Face transformers, llama.cpp for GGUF-only
// details) computes, to float32 rounding.
//
// One file per architecture, each with its equations at the top, a Config
// built from config.json or GGUF metadata, a weights struct with every
// shape, and a step function whose lines follow the equations:
//
//	gpt2.go    learned positions, pre-LN, fused QKV, tanh-GELU, tied head
//	llama.go   RoPE (rotate-half for HF names, interleaved for GGUF names, as
//	           llama.cpp's converter permutes Q/K), RMSNorm, GQA, SwiGLU
//	bert.go    encoder only: token-type embeddings, post-LN, erf-GELU, pooler
//	bart.go    encoder-decoder with cross-attention, learned positions
//	           (offset 2), embedding LayerNorm, post-LN
//	marian.go  the BART stack with sinusoidal positions and √d embedding scale
//	t5.go      relative position buckets, RMSNorm without mean, unscaled
//	           scores, tied head rescaled by d_model^-0.5
//	bloom.go   ALiBi (per-head linear bias on key positions, slopes as
//	           transformers' build_alibi_tensor), embedding LayerNorm,
//	           per-head interleaved fused QKV, Megatron tanh-GELU
//	deepseek2.go  DeepSeek-V2/V3: multi-head latent attention (decompressed;
//	           the cache keeps the latent), YaRN, leading dense layers, routed
//	           and shared experts (V3's biased, grouped choice)
//	gemma3n.go Gemma 3n's text model: AltUp streams, LAuReL, per-layer
//	           embeddings, gaussian top-k gate sparsity, key/value sharing
//	vision.go  the image encoders (LoadVision): one encoder per projector
//	           type behind Vision, the shared ViT layer (vitBlock), patch
//	           unfolding; image.go builds a prompt with an image
//	           (Model.ImageInput: each token's feature row)
//	siglip.go  Gemma 3's encoder: SigLIP ViT, average pool, RMSNorm
//	           (1 + w), projection; soft tokens in one bidirectional group
//
// Padding follows transformers' attention_mask (Input.Mask, and
// Input.DecoderMask for encoder-decoder models): masked keys are left out
// of every softmax (transformers adds finfo.min, which underflows to the
// same zero weight), padded query rows are still computed, position ids
// stay 0..n-1 (what transformers' forward pass uses when it is given only
// an attention_mask), and ALiBi counts positions over real tokens, as
// build_alibi_tensor does. The encoder mask of an encoder-decoder model
// masks the encoder's self-attention and the decoder's cross-attention.
// BERT's token types come in Input.TokenTypes.
//
// Weights stay in their checkpoint dtype (f32, f16, bf16, int8, ggml blocks)
// and are used by the kernels package directly; only 1-D tensors (norms,
// biases) are decoded to float32. GPT-2's Hugging Face Conv1D weights
// ([in][out]) are transposed once at load, keeping their dtype.
//
// Incremental decoding goes through a Session holding the KV cache
// (cache.go); Generate (generate.go) does greedy decoding, beam search with
// transformers' scoring, and seeded sampling on top of it. Forward runs one
// whole sequence and can record per-layer hidden states and one attention
// map in a Trace (the probabilities are recomputed in plain Go, since the
// attention kernel never builds the score matrix).
package model
