// Package convert converts checkpoints between ecosystems, architecture by
// architecture: a Hugging Face directory to the GGUF llama.cpp's
// convert_hf_to_gguf.py would write (same tensor names, types, bytes and
// metadata keys), a GGUF back to a Hugging Face directory transformers
// loads, and either into tfconv's native format.
//
// Data flow, one tensor at a time (memory: one chunk, or the largest tensor
// that needs a transpose or permutation):
//
//	checkpoint.Open(SRC) ──► Family.ToGGUF / ToHF ──► []Mapping ──► plan (dtype per tensor)
//	                                                                    │
//	source tensor ─► read ─► float32 ─► Transform ─► encode (f32/f16/bf16/q8_0) ─► writer.Next ─► DST (temp, sync, rename)
//	                                                                                     │
//	                                                         CRC-32C per tensor ─► self-check re-reads DST
//
// Conversion policy is data in package arch, one file per family: the
// config.json ↔ GGUF keys, the tensor names, the layout changes (LLaMA's
// Q/K row permutation, GPT-2's Conv1D transposes, fused QKV regrouping,
// Gemma's norm + 1), the tensors dropped on purpose with the reason, tied
// copies and generated tensors (Llama 3's rope_freqs). arch applies it in
// both directions too (Family.ToGGUF, ToHF, Layout.Transform); family.go
// holds the part that reads or makes tensor data (the generated tensors,
// config.json entries read off them, whether a copy is really one). Marian and BART have no llama.cpp architecture:
// GGUF output is refused for them, and native or safetensors output
// repacks them as they are.
//
// Per-tensor types for GGUF (GGUFTensorType) follow convert_hf_to_gguf.py
// at llama.cpp c392e509: 1-D tensors, *_norm.weight, position_embd,
// token_types and non-.weight tensors stay F32; Q8_0 falls back to F16 for
// rows that are not whole blocks. --outtype auto is the converter's: F16
// when the first tensor is float16, else BF16. BF16 NaNs follow gguf-py.
// Hugging Face output keeps each tensor's float type by default (quantized
// ones become F32), so GGUF → HF → GGUF loses nothing; every tensor written
// in a type that cannot hold its source's values is reported (lossless).
//
// Metadata equals the converter's key for key and in order, except the
// ProvenanceKeys (general.name, and .organization, .basename, .finetune,
// .version when the name yields them): both derive them from config.json's
// _name_or_path or the source directory's name as gguf-py's Metadata.load
// does (metadata.go: "TinyLlama-1.1B-Chat-v1.0" gives basename TinyLlama,
// size label 1.1B, finetune Chat, version v1.0), so they differ whenever the
// directories' names do; a Hugging Face cache snapshot stands for its
// repository, not its commit hash. The --metadata override file and
// --model-name apply on top, and GGUF output given no file name is named
// with the converter's naming convention. The model card (README.md front
// matter), which llama.cpp also reads, is not read.
//
// A PEFT LoRA adapter (checkpoint.LoRA) converts to the GGUF adapter
// llama.cpp's convert_lora_to_gguf.py writes (lora.go: the weight's GGUF
// name and row layout come from the same arch schema; the factors stay
// F32), and MergeLoRA writes base + adapter as a merged checkpoint through
// the same writers: the merged weights are lazy tensors of a view of the
// base (checkpoint.WithTensors), computed as each is written.
//
// GGUFName and HFName export the tensor name mapping for other tools
// (tfconv diff pairs HF and GGUF tensors through them).
package convert
