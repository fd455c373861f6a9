// Package checkpoint opens any checkpoint tfconv reads — a safetensors file,
// a sharded Hugging Face directory, a PyTorch pytorch_model.bin (single or
// sharded), a GGUF file or split set, or a native .tfn file — and presents the same listing whatever the format: tensors in a
// stable order with lazy data readers, format metadata, and the Hugging Face
// side files (config.json, tokenizer files) where the checkpoint has them.
//
// Opening reads headers only; tensor data is read when a tensor is opened.
//
// Open is the entry point the rest of tfconv builds on: convert.Run,
// quantize.Plan and quantize.Write, model.Load and verify all read what it
// opens, so a program embedding tfconv reads any supported checkpoint the
// same way (see the example).
package checkpoint
