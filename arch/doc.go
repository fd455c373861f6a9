// Package arch states each model architecture once, as data, for every
// consumer, with the code that gives the data its meaning: a Family maps
// Hugging Face tensors to GGUF ones and back (ToGGUF, ToHF: names, shapes,
// drops, stacks, copies), a Layout applies its change to values
// (Transform), and the metadata keys are derived both ways (GGUFMetadata,
// HFConfigOf). convert writes the mapping's tensors, verify pairs a GGUF's
// tensors with Hugging Face's through it, model loads weights by role
// through it, and synth draws shapes from it. Registering a family twice
// (a GGUF name, model_type or config.json class another already has)
// panics at init.
//
// A Family holds
//
//   - Params: the hyper-parameters, each with the config.json keys it is
//     read from (first present wins, as convert_hf_to_gguf.py's
//     find_hparam), its GGUF key, its type, and what happens when it is
//     absent (left out, required, a default, or derived from other keys). The
//     order is the order llama.cpp's converter writes the keys in.
//   - Tensors: the tensor schema. Each entry is one weight role under its
//     GGUF name ("blk.{bid}.attn_q"), its Hugging Face name patterns, and
//     its layout change between the two forms (LLaMA's Q/K row permutation,
//     Gemma's norm weight + 1, …). The ".weight"/".bias" suffix carries
//     over unchanged. "{bid}" is the layer number.
//   - Drops: Hugging Face tensors left out of the GGUF on purpose, with the
//     reason (buffers, a tied head the converter skips).
//
// The package sits below convert, verify, model and synth and imports only
// tensor.
// One file per family (llama.go, qwen2.go, gemma2.go, falcon.go, …); the
// shared llama-shaped schema and parameter builders are in decoder.go.
// Adding a llama-shaped family is one file here plus its fixture under
// testdata/arch; the supported list that convert --help, inspect and the
// README show comes from Families.
package arch
