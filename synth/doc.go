// Package synth writes random-weight checkpoints with the shapes of real
// models, for benchmarks that need a full-size file but not trained weights:
// loading, converting, quantizing and running a 1–7 B model without
// downloading one.
//
// A [Shape] names an architecture and its hyper-parameters; [Shapes] lists
// the built-in ones (tinyllama-1.1b, llama-7b, gpt2-124m, bert-base) and any
// Shape value with other sizes works too. [WriteGGUF] streams a GGUF v3 file
// with the metadata llama.cpp's converter writes for that architecture and a
// real tokenizer, so llama.cpp loads it (llama-bench, llama-cli);
// [WriteHF] writes a Hugging Face folder (config.json, model.safetensors,
// sharded above 5 GB as transformers does) with transformers' tensor names.
//
// Memory stays at a few chunks of 64 Ki elements per CPU: tensors are
// generated and written one chunk at a time, never whole.
//
// # Values
//
// Weights are drawn from an approximately normal distribution with mean 0 and
// standard deviation 0.02 (the usual initializer range), norm weights are
// 1 + that noise, biases are that noise. The generator is splitmix64; each
// 64-bit draw is turned into one value as the centred sum of its four 16-bit
// quarters (Irwin–Hall with n = 4, which matches the normal's first four
// moments closely enough for benchmarking and costs one multiply-xorshift
// round per value). Every chunk of every tensor has its own stream, keyed by
// the seed, the tensor's name and the chunk index, so the output is
// byte-identical for the same (Shape, type, seed) whatever the CPU count, and
// the f16/bf16/q8_0 files hold exactly the rounding of the f32 file's values.
// The GGUF and HF outputs name their tensors differently and so hold
// different draws; they are two random models of the same shape.
//
// # Vocabularies
//
// The GGUF tokenizer keys (tokenizer.ggml.*) are copied from llama.cpp's own
// test vocabularies, embedded from vocab/ (llama.cpp commit c392e509,
// models/ggml-vocab-{llama-spm,gpt-2,bert-bge}.gguf): LLaMA's 32,000-token
// SentencePiece vocabulary, GPT-2's 50,257-token BPE and BERT's 30,522-token
// WordPiece (bert-base-uncased's). A Shape's Vocab is its vocabulary's size,
// or, for the decoder families, larger: the checkpoint's added tokens (Phi-3's)
// and then "[PADi]" tokens fill the rows, as convert_hf_to_gguf.py fills a
// vocabulary up to config.json's vocab_size (Qwen2.5's 151,936 rows over the
// GPT-2 vocabulary, Gemma's 256,000 over LLaMA's).
//
// # Families
//
// For every decoder family of package arch, the tensors (names, shapes, the
// head unless tied, the biases a shape names) and the GGUF keys come from the
// family's spec, given the config.json the shape writes; a test converts each
// built-in shape's HF folder and requires synth's own GGUF tensors and keys.
package synth
